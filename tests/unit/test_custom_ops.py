"""The judge's decisions on a custom op's facts (service/grading/custom_ops.py), on hand-made
reports shaped as the harness sends them and parsed as the judge parses them (reports.parse_report):
no torch, no child."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from service.grading import custom_ops
from service.grading.cases import Arg, Case, CustomOpPlan
from service.grading.errors import BadOutput
from service.grading.reports import parse_report
from service.grading.runs import plan_run

X = [0.5, -1.5, 0.25, 1.0, -0.75, 2.0]
SHAPE = [2, 3]
NAMES = ["x", "scale"]


def _case(rg: bool = True, plan: CustomOpPlan | None = None) -> Case:
    args = (Arg("tensor", "float64", SHAPE, X, rg), Arg("float", value=2.0))
    return Case("run", "run", "run", args, grad_output_seed=7, random_grad_outputs=2, custom_op=plan or CustomOpPlan())


def _contiguous(shape: list[Any]) -> list[Any]:
    strides, n = [], 1
    for d in reversed(shape):
        strides.insert(0, n)
        n *= d or 1
    return strides


def _meta(shape: list[Any] = SHAPE, dtype: str = "float64", strides: list[Any] | None = None) -> dict[str, Any]:
    return {"kind": "tensor", "shape": shape, "dtype": dtype, "device": "cpu", "strides": strides or _contiguous(shape),
            "storage_offset": 0, "rg": False, "conj": False, "neg": False}


def _side(**meta: Any) -> dict[str, Any]:
    return {"ok": True, "count": 1, "outputs": [_meta(**meta)], "alias_inputs": False, "are_inputs": False,
            "alias_each_other": False}


def _value(values: list[float], shape: list[int] = SHAPE) -> dict[str, Any]:
    return {"kind": "tensor", "shape": shape, "dtype": "float64", "values": values}


def _error(message: str, where: str = "op call", type_: str = "RuntimeError", line: int | None = None) -> dict[str, Any]:
    return {"where": where, "type": type_, "message": message, "traceback": f"{type_}: {message}\n", "line": line}


Y = [2.0 * v for v in X]
G = [1.0, -1.0, 0.5, 0.25, 2.0, -0.5]


def right_op() -> dict[str, Any]:
    """The custom-op block of a right op (a scaled sine), as the harness reports it."""
    return {
        "ms": {"schema": 0.3, "autograd_registration": 0.3, "fake_tensor": 3.0, "aot_dispatch": 90.0},
        "schema": {"ok": True, "source": "op", "call": {"ok": True},
                   "inputs": [{"arg": 0, "version_bumped": False, "resized": False, "storage_changed": False,
                               "changed": False, "close": True, "values": list(X)}],
                   "outputs": [{"tensor": True, "is_input": None, "aliases": []}], "outputs_alias_each_other": False,
                   "count": 1},
        "autograd_registration": {"ok": True, "skipped": False, "autograd_kernel": True, "call": {"ok": True},
                                  "outputs_rg": [True], "backward": {"ok": True}},
        "fake_tensor": {"ok": True, "call": {"ok": True}, "seen": True, "fake": _side(), "real": _side()},
        "aot_dispatch": {"ok": True,
                         "eager": {"ok": True, "stage": None, "count": 1, "outputs": [_value(Y)], "check_gradients": True,
                                   "grads": [_value(G)]},
                         "aot": {"ok": True, "stage": None, "count": 1, "outputs": [_value(Y)], "grads": [_value(G)]}},
    }


def op_facts(**changes: Any) -> dict[str, Any]:
    facts = {"qualname": "mylib::scaled_sin", "schema": "mylib::scaled_sin(Tensor x, float scale) -> Tensor",
             "args": ["x", "scale"], "mutates_args": [], "returns": 1, "has_autograd": True, "has_setup_context": True,
             "has_fake": True, "trivial_fake": False, "autograd_kernel": True, "has_meta": True}
    facts.update(changes)
    return facts


def report(block: dict[str, Any] | None, facts: dict[str, Any] | None = None, *, forward_ok: bool = True,
           is_op: bool = True) -> dict[str, Any]:
    entry = ({"found": True, "is_class": False, "is_function": False, "is_custom_op": True, "op": facts or op_facts()}
             if is_op else {"found": True, "is_class": True, "is_function": True})
    forward = ({"ok": True, "outputs": [{"kind": "tensor", "shape": SHAPE, "dtype": "float64", "rg": True, "values": Y}],
                "count": 1, "inputs_after": [list(X), None]} if forward_ok
               else {"ok": False, "error": _error("The output of this custom operator (1) must not also be an input",
                                                  "forward")})
    case: dict[str, Any] = {"id": "run", "forward": forward}
    if block is not None:
        case["custom_op"] = block
    return {"type": "main", "load": {"ok": True}, "entry": entry, "cases": [case]}


def decide(block: dict[str, Any], facts: dict[str, Any] | None = None, *, case: Case | None = None,
           forward_ok: bool = True) -> dict[str, custom_ops.Outcome]:
    case = case or _case()
    rep = parse_report(report(block, facts, forward_ok=forward_ok), [case]).cases[0]
    return custom_ops.op_checks(case, rep, NAMES)


def failed(outcomes: dict[str, custom_ops.Outcome]) -> dict[str, str | None]:
    return {n: o.likely_cause for n, o in outcomes.items() if not o.passed}


# --------------------------------------------------------------------------- a right op


def test_a_right_op_passes_the_four_checks_in_opchecks_order():
    out = decide(right_op())
    assert list(out) == list(custom_ops.OP_CHECKS)
    assert failed(out) == {}
    assert "same outputs and gradients" in out["op_aot_dispatch"].message


def test_the_plan_asks_for_the_facts_when_the_code_makes_a_custom_op():
    source = ('import torch\n@torch.library.custom_op("a::b", mutates_args=())\n'
              'def b(x: torch.Tensor) -> torch.Tensor:\n    return x\n')
    inputs = [{"name": "x", "type": "tensor", "shape": [3]}]
    assert custom_ops.defines_custom_op(source) and not custom_ops.defines_custom_op("import torch\nx = 1\n")
    assert custom_ops.defines_custom_op("from torch.library import custom_op\nop = custom_op('a::c', f, mutates_args=())\n")
    assert not custom_ops.defines_custom_op("def (")
    plan = plan_run(source, "b", inputs)
    assert plan.cases[0].custom_op == CustomOpPlan()
    assert plan.cases[0].to_wire()["custom_op"] == {"tests": ["schema", "autograd_registration", "fake_tensor",
                                                              "aot_dispatch"], "max_values": 6144}
    plain = "import torch\n\n\nclass B(torch.autograd.Function):\n    pass\n"
    assert plan_run(plain, "B", inputs).cases[0].custom_op == CustomOpPlan()  # the child reports for an op only
    f32 = plan_run(source, "b", [dict(inputs[0], dtype="float32")])
    assert f32.cases[0].custom_op is not None and f32.cases[1].custom_op is None  # on the inputs as given, once
    with pytest.raises(ValueError):
        CustomOpPlan(tests=("schema", "schema"))


# --------------------------------------------------------------------------- schema


def test_an_undeclared_change_of_an_input_fails_the_schema_check():
    block = right_op()
    block["schema"]["inputs"][0].update(version_bumped=True, changed=True, close=False, values=[v + 1 for v in X])
    out = decide(block)
    assert failed(out) == {"op_schema": "op_undeclared_mutation"}
    assert "changes the values of its input x" in out["op_schema"].message and "declares: none" in out["op_schema"].message
    # declared: passes, and says so
    out = decide(block, op_facts(mutates_args=["x"]))
    assert out["op_schema"].passed and "as its schema declares" in out["op_schema"].message


def test_the_schema_check_counts_a_change_as_opcheck_does():
    block = right_op()
    # written in place, values as they were (x.mul_(1.0)): opcheck passes it; we pass it with a note
    block["schema"]["inputs"][0].update(version_bumped=True)
    out = decide(block)
    assert out["op_schema"].passed and "writes into x in place" in out["op_schema"].message
    # a change within torch.allclose's tolerance is none to opcheck's SchemaCheckMode
    block["schema"]["inputs"][0].update(changed=True, values=[v * (1 + 1e-9) for v in X])
    assert decide(block)["op_schema"].passed
    # the judge decides from the values it knows: a report that hides a change in `close` is no help
    block["schema"]["inputs"][0].update(close=True, values=[v + 0.5 for v in X])
    assert failed(decide(block)) == {"op_schema": "op_undeclared_mutation"}
    # resized, or its memory replaced: changed whatever the values
    block = right_op()
    block["schema"]["inputs"][0].update(resized=True, values=[1.0])
    assert "resizes its input x" in decide(block)["op_schema"].message
    # values too large to send: the child's fact of opcheck's own rule decides
    block = right_op()
    block["schema"]["inputs"][0].update(values=None, changed=True, close=False)
    assert failed(decide(block)) == {"op_schema": "op_undeclared_mutation"}


def test_an_output_that_is_or_views_an_input_fails_the_schema_check():
    block = right_op()
    block["schema"].update(source="implementation", call={"ok": False, "error": _error(
        "scaled_sin: The output of this custom operator (1) must not also be an input to this custom operator"),
        "role": None})
    block["schema"]["outputs"] = [{"tensor": True, "is_input": 0, "aliases": [0]}]
    out = decide(block)
    assert out["op_schema"].likely_cause == "op_output_aliases_input"
    assert "is its input x itself" in out["op_schema"].message
    block["schema"]["outputs"] = [{"tensor": True, "is_input": None, "aliases": [0]}]
    assert "shares memory with its input x" in decide(block)["op_schema"].message
    block = right_op()
    block["schema"].update(outputs_alias_each_other=True)
    assert decide(block)["op_schema"].likely_cause == "op_output_aliases_input"


def test_an_op_that_raises_fails_the_schema_check_as_it_fails_opchecks():
    block = right_op()
    err = _error("save_for_backward can only save variables, but argument 0 is of type tuple", type_="TypeError")
    block["schema"].update(source="implementation", call={"ok": False, "error": err, "role": None})
    out = decide(block)["op_schema"]
    assert not out.passed and out.likely_cause == "op_setup_context_error" and out.error is not None
    # the learner's function raised too, called alone
    block["schema"] = {"ok": True, "source": "implementation", "call": {"ok": False, "error": err, "role": None},
                       "implementation": {"ok": False, "error": _error("boom", "op implementation", "ValueError", 5),
                                          "role": "implementation"}}
    assert decide(block)["op_schema"].likely_cause == "op_setup_context_error"


# --------------------------------------------------------------------------- autograd registration


def test_a_forgotten_register_autograd_fails_the_autograd_check():
    block = right_op()
    block["autograd_registration"]["backward"] = {"ok": False, "role": None, "error": _error(
        "Trying to backward through mylib.scaled_sin.default but no autograd formula was registered.", "backward")}
    out = decide(block, op_facts(has_autograd=False, has_setup_context=False))
    assert out["op_autograd_registration"].likely_cause == "op_no_autograd_formula"
    assert not out["op_autograd_registration"].passed


def test_setup_context_saving_wrongly_fails_the_autograd_check():
    block = right_op()
    block["autograd_registration"]["backward"] = {"ok": False, "role": "backward", "ctx_attribute": "scale",
                                                  "error": _error("'BackwardCFunction' object has no attribute 'scale'",
                                                                  "backward", "AttributeError", 19)}
    out = decide(block)["op_autograd_registration"]
    assert out.likely_cause == "op_setup_context_error" and "ctx.scale" in out.message
    block["autograd_registration"]["backward"] = {"ok": False, "role": "backward", "saved": 0, "error": _error(
        "not enough values to unpack (expected 1, got 0)", "backward", "ValueError", 18)}
    assert decide(block)["op_autograd_registration"].likely_cause == "op_setup_context_error"
    # a backward that raises for its own reasons is the gradient checks' to name
    block["autograd_registration"]["backward"] = {"ok": False, "role": "backward", "saved": 1, "error": _error(
        "boom", "backward", "ZeroDivisionError", 18)}
    assert decide(block)["op_autograd_registration"].passed
    block = right_op()
    block["autograd_registration"].update(call={"ok": False, "role": "setup_context", "error": _error(
        "not enough values to unpack", type_="ValueError", line=14)})
    del block["autograd_registration"]["outputs_rg"], block["autograd_registration"]["backward"]
    out = decide(block)["op_autograd_registration"]
    assert out.likely_cause == "op_setup_context_error" and "your setup_context raised ValueError" in out.message


def test_the_autograd_check_follows_opcheck_where_it_decides():
    # nothing requires grad: opcheck skips the test
    block = right_op()
    block["autograd_registration"] = {"ok": True, "skipped": True}
    block["aot_dispatch"]["eager"].update(check_gradients=False)
    del block["aot_dispatch"]["eager"]["grads"], block["aot_dispatch"]["aot"]["grads"]
    case = _case(rg=False)
    rep = report(block)
    rep["cases"][0]["forward"]["outputs"][0]["rg"] = False
    out = custom_ops.op_checks(case, parse_report(rep, [case]).cases[0], NAMES)
    assert failed(out) == {} and out["op_autograd_registration"].message.startswith("Not checked")
    # no kernel at an autograd key, and outputs requiring grad anyway: opcheck's failure
    block = right_op()
    block["autograd_registration"].update(autograd_kernel=False, fallback_outputs_rg=True)
    assert failed(decide(block, op_facts(autograd_kernel=False))) == {"op_autograd_registration": "op_autograd_wrong_key"}


# --------------------------------------------------------------------------- fake tensors


def test_a_fake_kernel_of_the_wrong_shape_dtype_or_strides_fails():
    for meta, words in (({"shape": [2]}, "has shape [2]; the real one has shape [2, 3]"),
                        ({"dtype": "float32"}, "has dtype float32; the real one has dtype float64"),
                        ({"strides": [1, 2]}, "has strides [1, 2]; the real one has strides [3, 1]")):
        block = right_op()
        block["fake_tensor"]["fake"] = _side(**meta)
        out = decide(block)["op_fake_tensor"]
        assert out.likely_cause == "op_fake_wrong_metadata" and words in out.message, out.message
    # a symbolic size (an unbacked one) matches any, as opcheck allows; strides of dimensions of size 1 do not count
    block = right_op()
    block["fake_tensor"]["fake"] = _side(shape=[2, None], strides=[None, 1])
    assert decide(block)["op_fake_tensor"].passed
    block["fake_tensor"]["fake"] = _side(shape=[1, 3], strides=[7, 1])
    block["fake_tensor"]["real"] = _side(shape=[1, 3], strides=[3, 1])
    assert decide(block)["op_fake_tensor"].passed
    block["fake_tensor"]["fake"]["count"] = 2
    block["fake_tensor"]["fake"]["outputs"].append(_meta())
    assert "returns 2 output(s); the op returns 1" in decide(block)["op_fake_tensor"].message


def test_no_fake_kernel_or_one_that_raises_fails():
    block = right_op()
    block["fake_tensor"]["fake"] = {"ok": False, "role": None, "error": _error(
        "There was no fake impl registered for <CustomOpDef(mylib::scaled_sin)>.", "fake tensors")}
    assert decide(block, op_facts(has_fake=False))["op_fake_tensor"].likely_cause == "op_no_fake_kernel"
    block["fake_tensor"]["fake"] = {"ok": False, "role": "fake kernel", "error": _error(
        "Cannot access data pointer of Tensor (e.g. FakeTensor)", "fake tensors", line=11)}
    out = decide(block)["op_fake_tensor"]
    assert out.likely_cause == "op_fake_kernel_error" and out.error is not None and out.error.line == 11
    # inputs FakeTensorMode cannot take: opcheck passes
    block["fake_tensor"]["fake"] = {"ok": True, "unsupported": True}
    assert decide(block)["op_fake_tensor"].passed


def test_the_fake_check_fails_when_the_call_fails_after_the_outputs_agree():
    block = right_op()
    block["fake_tensor"]["call"] = {"ok": False, "role": None, "error": _error(
        "save_for_backward can only save variables, but argument 0 is of type tuple", type_="TypeError")}
    assert decide(block)["op_fake_tensor"].likely_cause == "op_setup_context_error"


# --------------------------------------------------------------------------- AOT dispatch


def test_compiled_outputs_and_gradients_are_compared_as_assert_close_compares():
    block = right_op()
    block["aot_dispatch"]["aot"]["outputs"] = [_value([y * (1 + 5e-8) for y in Y])]  # within float64's 1e-7
    assert decide(block)["op_aot_dispatch"].passed
    block["aot_dispatch"]["aot"]["grads"] = [_value([g + 1e-3 for g in G])]
    out = decide(block)["op_aot_dispatch"]
    assert out.likely_cause == "op_compiled_differs" and "The gradient for x differs at element 0" in out.message
    nan = right_op()
    for side in ("eager", "aot"):
        nan["aot_dispatch"][side]["outputs"] = [_value([float("nan")] + Y[1:])]
    assert not decide(nan)["op_aot_dispatch"].passed  # assert_close: NaN is not equal to NaN
    with_tol = decide(block, case=_case(plan=CustomOpPlan(atol=1e-2, rtol=1e-2)))["op_aot_dispatch"]
    assert with_tol.passed


def test_a_compiled_failure_is_named_by_what_the_fake_kernel_got_wrong():
    block = right_op()
    block["fake_tensor"]["fake"] = _side(shape=[2])
    block["aot_dispatch"]["aot"] = {"ok": False, "stage": "forward", "role": "backward", "error": _error(
        "The size of tensor a (s26) must match the size of tensor b (s49) at non-singleton dimension 1", "compiled")}
    out = decide(block)
    assert failed(out) == {"op_fake_tensor": "op_fake_wrong_metadata", "op_aot_dispatch": "op_fake_wrong_metadata"}
    block = right_op()
    block["aot_dispatch"]["aot"] = {"ok": False, "stage": "forward", "role": None, "error": _error(
        "Pending unbacked symbols {zuf1} not in returned outputs", "compiled")}
    assert failed(decide(block)) == {"op_aot_dispatch": "op_not_traceable"}


def test_an_eager_backward_without_formula_fails_the_aot_check_as_opcheck_does():
    block = right_op()
    block["aot_dispatch"] = {"ok": True, "eager": {
        "ok": False, "stage": "backward", "count": 1, "outputs": [_value(Y)], "check_gradients": True, "role": None,
        "error": _error("Trying to backward through mylib.scaled_sin.default but no autograd formula was registered.",
                        "backward")}}
    block["autograd_registration"]["backward"] = {"ok": False, "role": None, "error": _error("no autograd formula", "backward")}
    out = decide(block, op_facts(has_autograd=False, has_setup_context=False))
    assert failed(out) == {"op_autograd_registration": "op_no_autograd_formula", "op_aot_dispatch": "op_no_autograd_formula"}


def test_values_too_large_to_send_are_not_checked():
    case = _case(plan=CustomOpPlan(max_values=4))
    block = right_op()
    for side in ("eager", "aot"):
        block["aot_dispatch"][side]["outputs"][0]["values"] = None
        block["aot_dispatch"][side]["grads"][0]["values"] = None
    block["schema"]["inputs"][0]["values"] = None
    out = decide(block, case=case)["op_aot_dispatch"]
    assert not out.passed and out.message.startswith("Not checked") and out.likely_cause is None


def test_the_gradient_checks_of_an_op_without_formula_name_it():
    from service.grading.checks import Outcome

    rep = parse_report(report(right_op(), op_facts(has_autograd=False)), [_case()]).cases[0]
    outcomes = {"gradcheck": Outcome(False, "backward raised RuntimeError", "backward_error"),
                "backward_arity": Outcome(False, "backward was never called", "output_detached"),
                "inputs_unchanged": Outcome(True, "")}
    out = custom_ops.with_op_causes(outcomes, rep.custom_op)
    assert out["gradcheck"].likely_cause == "op_no_autograd_formula" and out["inputs_unchanged"].passed
    assert "no autograd formula" in out["backward_arity"].message


# --------------------------------------------------------------------------- strict parsing


@pytest.mark.parametrize("breakage", [
    lambda b: b.pop("fake_tensor"),
    lambda b: b.update(extra={"ok": True}),
    lambda b: b["ms"].pop("schema"),
    lambda b: b["schema"]["inputs"][0].update(values=[1.0]),
    lambda b: b["schema"]["inputs"][0].update(arg=1),
    lambda b: b["schema"]["outputs"][0].update(aliases=[5]),
    lambda b: b["schema"].update(count=3),
    lambda b: b["autograd_registration"].update(skipped=True),
    lambda b: b["autograd_registration"].pop("backward"),
    lambda b: b["fake_tensor"]["fake"]["outputs"][0].update(shape=[-1, 3]),
    lambda b: b["fake_tensor"]["fake"]["outputs"][0].update(strides=[1]),
    lambda b: b["fake_tensor"]["fake"].update(role="somewhere"),
    lambda b: b["fake_tensor"].pop("fake"),
    lambda b: b["aot_dispatch"]["aot"]["outputs"][0].update(values=[1.0, 2.0]),
    lambda b: b["aot_dispatch"]["aot"].update(grads=[]),
    lambda b: b["aot_dispatch"]["eager"].update(check_gradients="yes"),
    lambda b: b["aot_dispatch"]["eager"].update(ok=False, stage="forward", error=_error("x", "forward")),
], ids=lambda f: "")
def test_a_malformed_report_is_refused(breakage):
    block = copy.deepcopy(right_op())
    breakage(block)
    with pytest.raises(BadOutput):
        parse_report(report(block), [_case()])


def test_the_facts_are_reported_exactly_when_planned_for_a_custom_op():
    with pytest.raises(BadOutput):  # a custom op whose facts are missing
        parse_report(report(None), [_case()])
    with pytest.raises(BadOutput):  # a Function reporting them
        parse_report(report(right_op(), is_op=False), [_case()])
    plain = Case("run", "run", "run", _case().args, grad_output_seed=7, random_grad_outputs=2)
    with pytest.raises(BadOutput):  # not planned
        parse_report(report(right_op()), [plain])
    assert parse_report(report(None), [plain]).cases[0].custom_op is None
    with pytest.raises(BadOutput):
        parse_report(report(right_op(), op_facts(mutates_args=["y"])), [_case()])
    with pytest.raises(BadOutput):  # a Function cannot also be a custom op
        bad = report(right_op())
        bad["entry"]["is_function"] = True
        parse_report(bad, [_case()])
    # a custom op whose forward raised still reports them (a refused alias says why)
    rep = parse_report(report(right_op(), forward_ok=False), [_case()]).cases[0]
    assert not rep.forward.ok and rep.custom_op is not None and rep.custom_op.op.qualname == "mylib::scaled_sin"


def test_facts_the_harness_could_not_collect_fail_their_check():
    block = right_op()
    block["fake_tensor"] = {"ok": False, "error": _error("internal", "harness")}
    out = decide(block)["op_fake_tensor"]
    assert not out.passed and out.message.startswith("Not checked: the grader could not collect")
