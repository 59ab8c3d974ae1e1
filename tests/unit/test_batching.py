"""The batching checks' decisions (service/grading/batching.py) and their report's parsing, on
hand-made numbers: an honest child simulated in Python for an elementwise Function, then changed
the ways a wrong Function (or a lying child) changes them. No judge, no torch."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from service.grading import batching, draws
from service.grading.cases import Arg, Case, VmapConfig, plan_batched_grad, plan_vmap, vmap_configs
from service.grading.errors import BadOutput
from service.grading.reports import CaseReport, ChildError, parse_report

X = Arg("tensor", "float64", [3], [-1.5, 0.25, 0.75], True)
LOW, HIGH = Arg("float", value=-1.0), Arg("float", value=1.0)
CLAMP_ARGS = (X, LOW, HIGH)
NAMES = ["x", "low", "high"]


def clamp(x: float, low: float = -1.0, high: float = 1.0) -> float:
    return min(max(x, low), high)


def clamp_grad(x: float, low: float = -1.0, high: float = 1.0) -> float:
    return 1.0 if low <= x <= high else 0.0


def _case(args: Sequence[Arg], seed: int = 11) -> Case:
    return Case("c", "random", "c", tuple(args), diff_outputs=[0], grad_outputs=[], vmap=plan_vmap(args, seed),
                batched_grad=plan_batched_grad(args, seed + 1))


def _out(values: list[float], shape: list[int], rg: bool = True) -> dict[str, Any]:
    return {"kind": "tensor", "shape": shape, "dtype": "float64", "rg": rg, "values": values}


def _err(message: str, where: str = "vmap", type_: str = "RuntimeError") -> dict[str, Any]:
    return {"where": where, "type": type_, "message": message, "traceback": "", "line": None}


def honest_vmap(case: Case, f: Callable[..., float], df: Callable[..., Sequence[float]], rule: str = "generate") -> dict:
    """What harness._vmap_numbers reports for an elementwise Function f of the case's tensors (all of
    one shape; df: its partial derivatives, one per tensor)."""
    plan = case.vmap
    assert plan is not None
    args = case.args
    tensors = [i for i, a in enumerate(args) if a.kind == "tensor"]
    diff = [i for i in tensors if args[i].requires_grad]
    shape = args[tensors[0]].shape
    n = args[tensors[0]].numel
    batch, scales = plan.batch, plan.scales

    def entry(cfg: VmapConfig, b: int) -> dict[int, list[float]]:
        return {i: [v * scales[b] if cfg.in_dims[i] is not None else v for v in args[i].values] for i in tensors}

    def outputs(vals: dict[int, list[float]]) -> list[float]:
        return [f(*(vals[i][j] for i in tensors)) for j in range(n)]

    configs, alone_done = [], {}
    for c, cfg in enumerate(plan.configs):
        src = draws.alone_source([k.in_dims for k in plan.configs], c)
        entries = [entry(cfg, b) for b in range(batch)]
        singles = [outputs(e) for e in entries]
        vsets = draws.batch_grad_outputs(plan.seed, batch, [n])
        single_grads = [[[vsets[b][0][j] * df(*(e[i][j] for i in tensors))[tensors.index(i)] for j in range(n)]
                         for i in diff] for b, e in enumerate(entries)]
        rep: dict[str, Any] = {}
        if src == c:
            rep["single"] = [[_out(s, shape)] for s in singles]
            rep["diff_outputs"] = [0]
            rep["single_grads"] = single_grads
            alone_done[c] = True
        d = batching._batch_position(cfg.out_dims, len(shape))
        pre, post = draws.numel(shape[:d]), draws.numel(shape[d:])
        batched = [singles[b][p * post + q] for p in range(pre) for b in range(batch) for q in range(post)]
        rep["vmap"] = [_out(batched, shape[:d] + [batch] + shape[d:])]
        if cfg.grads:
            vg = []
            for pos, i in enumerate(diff):
                rows = [single_grads[b][pos] for b in range(batch)]
                vg.append(rows if cfg.in_dims[i] is not None else [[math.fsum(col) for col in zip(*rows)]])
            rep["vmap_grads"] = vg
        configs.append(rep)
    return {"rule": rule, "setup_context": True, "configs": configs}


def honest_batched_grad(case: Case, df: Callable[..., Sequence[float]]) -> dict:
    plan = case.batched_grad
    assert plan is not None
    args = case.args
    tensors = [i for i, a in enumerate(args) if a.kind == "tensor"]
    diff = [i for i in tensors if args[i].requires_grad]
    n = args[tensors[0]].numel
    vsets = draws.batch_grad_outputs(plan.seed, plan.batch, [n])
    single = [[[vsets[b][0][j] * df(*(args[i].values[j] for i in tensors))[tensors.index(i)] for j in range(n)]
               for i in diff] for b in range(plan.batch)]
    batched = [[x for b in range(plan.batch) for x in single[b][pos]] for pos in range(len(diff))]
    return {"ok": True, "outputs": [{"index": 0, "single": single, "batched": batched}]}


def report(case: Case, vmap: dict | None, batched_grad: dict | None, *, strict: bool = False,
           out_rg: bool = True) -> CaseReport:
    """The case's report through the real parser (as the judge reads a child's); unless `strict`,
    against the case without the plan whose numbers are not given."""
    if not strict:
        case = dataclasses.replace(case, vmap=case.vmap if vmap is not None else None,
                                   batched_grad=case.batched_grad if batched_grad is not None else None)
    x = case.args[0]
    rep: dict[str, Any] = {"id": case.id, "forward": {"ok": True, "outputs": [_out(list(x.values), x.shape, out_rg)], "count": 1,
                                                      "inputs_after": [a.values if a.kind == "tensor" else None
                                                                       for a in case.args]},
                           "vjps": [], "returned_inputs": []}
    if vmap is not None:
        rep["vmap"] = vmap
    if batched_grad is not None:
        rep["batched_grad"] = batched_grad
    frame = {"type": "main", "load": {"ok": True}, "entry": {"found": True, "is_class": True, "is_function": True},
             "cases": [rep]}
    return parse_report(frame, [case]).cases[0]


@pytest.fixture
def clamp_case() -> Case:
    return _case(CLAMP_ARGS)


def clamp_vmap(case: Case, rule: str = "generate") -> dict:
    return honest_vmap(case, clamp, lambda x: (clamp_grad(x),), rule)


# --------------------------------------------------------------------------- plans


def test_the_plan_batches_at_the_front_then_at_the_end_and_shares_tensors():
    y = Arg("tensor", "float64", [3], [0.5, 1.0, 2.0], True)
    assert vmap_configs(CLAMP_ARGS) == (VmapConfig((0, None, None), 0, grads=False), VmapConfig((1, None, None), -1))
    assert vmap_configs((X, y)) == (VmapConfig((0, 0), 0, False), VmapConfig((1, 1), -1), VmapConfig((0, None), 0),
                                    VmapConfig((None, 0), 0))
    scalar = Arg("tensor", "float64", [], [0.5], True)
    assert vmap_configs((scalar,)) == (VmapConfig((0,), 0),)  # no dimension to batch at the end
    assert vmap_configs((LOW,)) == () and plan_vmap((LOW,), 1) is None
    # the batch is none of the inputs' sizes: a batch dimension in the wrong place changes a shape
    assert draws.batch_size([[3, 4]]) == 2 and draws.batch_size([[2, 3]]) == 5
    plan = plan_vmap(CLAMP_ARGS, 5)
    assert plan is not None and plan.batch == 2 and plan.scales[0] == 1.0 and 0.5 <= plan.scales[1] <= 0.95
    assert plan.scales == draws.batch_scales(5, 2)  # the same numbers on both sides, every time


def test_a_case_sends_the_batching_plans_only_when_made():
    plain = Case("c", "random", "c", CLAMP_ARGS, diff_outputs=[0])
    assert "vmap" not in plain.to_wire() and "batched_grad" not in plain.to_wire()
    wire = _case(CLAMP_ARGS, seed=3).to_wire()
    assert wire["vmap"] == {"seed": 3, "batch": 2, "grads": True, "configs": [
        {"in_dims": [0, None, None], "out_dims": 0, "grads": False}, {"in_dims": [1, None, None], "out_dims": -1, "grads": True}]}
    assert wire["batched_grad"] == {"seed": 4, "batch": 2}


# --------------------------------------------------------------------------- vmap


def test_an_honest_report_passes(clamp_case):
    rep = report(clamp_case, clamp_vmap(clamp_case), honest_batched_grad(clamp_case, lambda x: (clamp_grad(x),)))
    vm = batching.check_vmap(clamp_case, rep, NAMES)
    assert vm.passed, vm.message
    assert "batch of 2" in vm.message and "2 ways" in vm.message
    assert batching.check_batched_grad(clamp_case, rep, NAMES).passed


@pytest.mark.parametrize(("message", "rule", "cause"), [
    ("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), it must override "
     "the setup_context staticmethod.", "generate", "vmap_setup_context_missing"),
    ("You tried to vmap over ClampFn, but it does not have vmap support. Please override and implement the vmap "
     "staticmethod or set generate_vmap_rule=True.", "none", "vmap_rule_missing"),
    ("You tried to vmap over ClampFn, but it has both generate_vmap_rule=True and an overridden vmap staticmethod.",
     "both", "vmap_rule_missing"),
    ("vmap: It looks like you're calling .item() on a Tensor.", "generate", "vmap_data_dependent"),
    ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow.", "generate",
     "vmap_data_dependent"),
    ("vmap: We do not support batching operators that can support dynamic shape. Attempting to batch over indexing "
     "with a boolean mask.", "generate", "vmap_data_dependent"),
    ("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
     "that has more elements than `self`.", "generate", "vmap_in_place"),
    ("An input that has been returned as-is as output is being saved for backward.", "generate", "vmap_in_place"),
    ("Expected the vmap staticmethod to have two returns, an output and out_dims", "staticmethod", "vmap_wrong_out_dims"),
    ("Dimension out of range (expected to be in range of [-3, 2], but got 5)", "staticmethod", "vmap_wrong_out_dims"),
    ("Dimension out of range (expected to be in range of [-3, 2], but got 5)", "generate", "vmap_error"),
    ("something else entirely", "generate", "vmap_error"),
])
def test_an_exception_under_vmap_names_its_cause(clamp_case, message, rule, cause):
    vm = clamp_vmap(clamp_case, rule)
    del vm["configs"][0]["vmap"]
    vm["configs"][0]["vmap_error"] = _err(message)
    vm["configs"][1] = {"vmap_error": _err(message)}
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert not out.passed and out.likely_cause == cause
    assert out.error is not None and out.error.message == message
    assert "in_dims=(0, None, None) and out_dims=0" in out.message and "low, high shared" in out.message


def test_forward_raising_alone_is_forward_error(clamp_case):
    vm = {"rule": "generate", "setup_context": True, "configs": [{"single_error": _err("boom", "forward")}, {}]}
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert not out.passed and out.likely_cause == "forward_error"


def test_a_batch_in_the_wrong_place_is_a_shape_error(clamp_case):
    vm = clamp_vmap(clamp_case, "staticmethod")
    # the batch at the end (in_dims 1, out_dims -1): a [2, 3] result where [3, 2] was due
    vals = vm["configs"][1]["vmap"][0]["values"]
    vm["configs"][1]["vmap"][0] = _out(vals, [2, 3])
    del vm["configs"][1]["vmap_grads"]
    vm["configs"][1]["vmap_grads_error"] = _err("Mismatch in shape", "vmap backward")
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert not out.passed and out.likely_cause == "vmap_wrong_out_dims"
    assert "shape [2, 3]" in out.message and "should have shape [3, 2]" in out.message
    assert out.shapes == {"output": "the output", "vmap": [2, 3], "expected": [3, 2]}
    # the same shape from a generated rule is no out_dims of the learner's
    vm["rule"] = "generate"
    assert batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES).likely_cause == "vmap_mismatch"


def test_a_wrong_value_of_one_batch_entry_is_named(clamp_case):
    vm = clamp_vmap(clamp_case)
    # config 0: batch at dim 0, shape [2, 3]; entry 1, element 2 is at flat index 5
    vm["configs"][0]["vmap"][0]["values"][5] += 0.5
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert not out.passed and out.likely_cause == "vmap_mismatch"
    assert "batch entry 1 (the batched inputs times" in out.message and "at index [2]" in out.message


def test_values_right_in_front_and_wrong_at_the_end_are_a_staticmethods_out_dims(clamp_case):
    vm = clamp_vmap(clamp_case, "staticmethod")
    v = vm["configs"][1]["vmap"][0]["values"]  # shape [3, 2]: the entries interleaved; a rule that stacked them
    vm["configs"][1]["vmap"][0]["values"] = [v[0], v[2], v[4], v[1], v[3], v[5]]  # in front reads them scrambled
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert not out.passed and out.likely_cause == "vmap_wrong_out_dims"
    vm["rule"] = "generate"
    assert batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES).likely_cause == "vmap_mismatch"


def test_nan_where_both_have_nan_is_the_same_value(clamp_case):
    vm = clamp_vmap(clamp_case)
    for c, where in ((0, (0, 3)), (1, (0, 1))):  # element 0 of both entries: batch in front [2, 3], at the end [3, 2]
        for j in where:
            vm["configs"][c]["vmap"][0]["values"][j] = math.nan
    for entry in vm["configs"][0]["single"]:
        entry[0]["values"][0] = math.nan
    assert batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES).passed
    vm["configs"][0]["single"][0][0]["values"][0] = 0.0  # only vmap's is NaN
    assert not batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES).passed
    # infinities: equal ones are the same value, opposite ones are not close (as torch.allclose)
    assert batching._same(math.inf, math.inf, 1e-8, 1e-5, nan_equal=False)
    assert not batching._same(math.inf, -math.inf, 1e-8, 1e-5, nan_equal=True)
    assert not batching._same(1.0, math.inf, 1e-8, 1e-5, nan_equal=True)


def test_gradients_through_vmap_are_each_entrys_own(clamp_case):
    vm = clamp_vmap(clamp_case)
    vm["configs"][1]["vmap_grads"][0][1][1] *= 2.0
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert not out.passed and out.likely_cause == "vmap_mismatch"
    assert "gradient for x of batch entry 1" in out.message and "at index [1]" in out.message
    vm = clamp_vmap(clamp_case)
    del vm["configs"][1]["vmap_grads"]
    vm["configs"][1]["vmap_grads_error"] = _err("vmap: It looks like you're calling .item() on a Tensor.", "vmap backward")
    out = batching.check_vmap(clamp_case, report(clamp_case, vm, None), NAMES)
    assert out.likely_cause == "vmap_data_dependent" and out.message.startswith("Through vmap")


def test_a_shared_input_gets_the_sum_of_the_entries_gradients():
    y = Arg("tensor", "float64", [3], [0.5, -1.0, 2.0], True)
    case = _case((X, y))
    vm = honest_vmap(case, lambda a, b: a * b, lambda a, b: (b, a))
    assert batching.check_vmap(case, report(case, vm, None), ["x", "y"]).passed
    # config 3 batches y only: x is shared, its one gradient the sum over the batch
    assert case.vmap is not None and case.vmap.configs[3].in_dims == (None, 0)
    assert len(vm["configs"][3]["vmap_grads"][0]) == 1
    vm["configs"][3]["vmap_grads"][0][0][1] += 1.0
    out = batching.check_vmap(case, report(case, vm, None), ["x", "y"])
    assert not out.passed and "the sum of backward's gradients for each batch entry alone" in out.message
    assert "(x shared by the whole batch)" in out.message


def test_in_a_grade_the_entries_alone_must_be_the_model_answers(clamp_case):
    ref = report(clamp_case, clamp_vmap(clamp_case), None)
    assert batching.check_vmap(clamp_case, report(clamp_case, clamp_vmap(clamp_case), None), NAMES, ref=ref).passed
    # a child that reports one wrong set of numbers twice (vmap and alone agree) is found out
    twice = honest_vmap(clamp_case, lambda x: 2 * clamp(x), lambda x: (2 * clamp_grad(x),))
    assert batching.check_vmap(clamp_case, report(clamp_case, twice, None), NAMES).passed
    out = batching.check_vmap(clamp_case, report(clamp_case, twice, None), NAMES, ref=ref)
    assert not out.passed and out.likely_cause == "forward_wrong" and "model answer" in out.message
    # a reference that does not run under vmap checks nothing of the submission's
    broken = clamp_vmap(clamp_case)
    del broken["configs"][0]["vmap"]
    broken["configs"][0]["vmap_error"] = _err("boom")
    broken["configs"][1] = {"vmap_error": _err("boom")}
    assert batching.check_vmap(clamp_case, report(clamp_case, twice, None), NAMES,
                               ref=report(clamp_case, broken, None)).passed


# --------------------------------------------------------------------------- batched gradients


def test_a_batched_backward_that_differs_is_named(clamp_case):
    bg = honest_batched_grad(clamp_case, lambda x: (clamp_grad(x),))
    bg["outputs"][0]["batched"][0][4] += 1e-3  # grad_output 1, element 1
    out = batching.check_batched_grad(clamp_case, report(clamp_case, None, bg), NAMES)
    assert not out.passed and out.likely_cause == "batched_grad_mismatch"
    assert "for grad_output 1 at index [1]" in out.message
    # as torch.allclose in gradcheck: NaN is never close, even to NaN
    bg = honest_batched_grad(clamp_case, lambda x: (clamp_grad(x),))
    bg["outputs"][0]["batched"][0][0] = math.nan
    bg["outputs"][0]["single"][0][0][0] = math.nan
    assert not batching.check_batched_grad(clamp_case, report(clamp_case, None, bg), NAMES).passed


@pytest.mark.parametrize(("message", "cause"), [
    ("vmap: It looks like you're calling .item() on a Tensor.", "vmap_data_dependent"),
    ("Cannot access data pointer of Tensor that doesn't have storage", "vmap_data_dependent"),
    ("vmap: index_put_(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that has "
     "more elements than `self`. This happened due to `other` being vmapped over but `self` not being vmapped over in "
     "a vmap.", "vmap_in_place"),
    ("output with shape [3, 4] doesn't match the broadcast shape [3, 3, 4]", "vmap_in_place"),
    ("a message of its own", "backward_error"),
])
def test_a_batched_backward_that_raises_names_its_cause(clamp_case, message, cause):
    bg = honest_batched_grad(clamp_case, lambda x: (clamp_grad(x),))
    del bg["outputs"][0]["batched"]
    bg["outputs"][0]["batched_error"] = _err(message, "batched backward")
    out = batching.check_batched_grad(clamp_case, report(clamp_case, None, bg), NAMES)
    assert not out.passed and out.likely_cause == cause and "at once raised" in out.message


def test_batched_gradients_in_a_grade_are_the_model_answers(clamp_case):
    ref = report(clamp_case, None, honest_batched_grad(clamp_case, lambda x: (clamp_grad(x),)))
    wrong = report(clamp_case, None, honest_batched_grad(clamp_case, lambda x: (-clamp_grad(x),)))
    assert batching.check_batched_grad(clamp_case, wrong, NAMES).passed  # consistent with itself
    out = batching.check_batched_grad(clamp_case, wrong, NAMES, ref=ref)
    assert not out.passed and out.likely_cause == "wrong_value"


def test_no_output_requiring_grad_has_nothing_to_batch(clamp_case):
    out = batching.check_batched_grad(clamp_case, report(clamp_case, None, {"ok": True, "outputs": []}, out_rg=False),
                                      NAMES)
    assert out.passed
    # a forged report that names no output while forward's requires grad would compare nothing
    forged = batching.check_batched_grad(clamp_case, report(clamp_case, None, {"ok": True, "outputs": []}), NAMES)
    assert not forged.passed and forged.likely_cause == "forward_not_repeatable"


# --------------------------------------------------------------------------- parsing


def _bad(case: Case, vm: dict | None = None, bg: dict | None = None) -> None:
    with pytest.raises(BadOutput):
        report(case, vm, bg, strict=True)


def test_the_report_is_parsed_strictly_against_the_plan(clamp_case):
    good = clamp_vmap(clamp_case)
    good_bg = honest_batched_grad(clamp_case, lambda x: (clamp_grad(x),))
    report(clamp_case, good, good_bg, strict=True)
    _bad(clamp_case, None, good_bg)  # planned, missing
    _bad(clamp_case, good, None)
    for change in (
        lambda v: v.update(rule="mine"),
        lambda v: v["configs"].pop(),                                       # one call short
        lambda v: v["configs"][0]["single"].pop(),                          # one batch entry short
        lambda v: v["configs"][1].update(single=v["configs"][0]["single"]),  # the numbers alone given twice
        lambda v: v["configs"][0].update(vmap_grads=[]),                    # gradients the plan did not ask for
        lambda v: v["configs"][1]["vmap_grads"][0].pop(),                    # one entry's gradient short
        lambda v: v["configs"][0]["single_grads"][0][0].pop(),               # a gradient of the wrong size
        lambda v: v["configs"][0].update(diff_outputs=[3]),
        lambda v: v["configs"][1]["vmap"][0]["values"].pop(),                # values and shape disagree
    ):
        vm = copy.deepcopy(good)
        change(vm)
        _bad(clamp_case, vm, good_bg)
    for change in (
        lambda b: b["outputs"][0]["single"].pop(),
        lambda b: b["outputs"][0]["batched"][0].pop(),
        lambda b: b["outputs"].append(copy.deepcopy(b["outputs"][0])),      # the same output twice
        lambda b: b.update(ok="yes"),
    ):
        bg = copy.deepcopy(good_bg)
        change(bg)
        _bad(clamp_case, good, bg)


def test_a_child_error_is_a_child_error():
    err = ChildError("vmap", "RuntimeError", "vmap: inplace arithmetic(self, *extra_args) is not possible", "", None)
    assert batching.vmap_error_cause(err) == "vmap_in_place"


def test_a_vmap_report_without_gradients_for_a_differentiable_output_is_refused(clamp_case):
    """A forged report naming no output that requires grad would have its gradients never compared."""
    forged = clamp_vmap(clamp_case)
    for cfg in forged["configs"]:
        if "diff_outputs" in cfg:
            cfg["diff_outputs"] = []
        for key in ("single_grads", "vmap_grads"):
            cfg.pop(key, None)
    out = batching.check_vmap(clamp_case, report(clamp_case, forged, None), NAMES)
    assert not out.passed and out.likely_cause == "forward_not_repeatable", out
