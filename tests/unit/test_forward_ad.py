"""The forward-mode check (service/grading/forward_ad.py) decided on handmade numbers: no judge, no torch.

Each report is made here the way harness._forward_ad makes it, from plain Python functions standing
for forward, jvp and backward, with the tangents and grad_output the judge draws from the plan's
seed, then parsed by reports.parse_report, so the strict parse is exercised too.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from service.grading import terms
from service.grading.cases import Arg, Case, ForwardAdPlan, diff_inputs
from service.grading.errors import BadOutput
from service.grading.forward_ad import check_forward_ad
from service.grading.reports import parse_report

Vec = list[float]
PLAN = ForwardAdPlan(seed=1234, k=3, eps=1e-6, atol=1e-5, rtol=1e-3)
X = [0.3, -1.2, 0.8, 1.7]
Y = [0.5, 2.0, -0.7, 1.1]


def _case(values: Sequence[Vec], plan: ForwardAdPlan = PLAN, shape: Sequence[int] | None = None) -> Case:
    args = tuple(Arg("tensor", "float64", list(shape or [len(v)]), list(v), True) for v in values)
    return Case("c", "run", "case", args, diff_outputs=[0], forward_ad=plan)


def _error(where: str, type_: str, message: str) -> dict[str, Any]:
    return {"where": where, "type": type_, "message": message, "traceback": "", "line": None}


def _numbers(case: Case, f: Callable[..., list[Vec]], jvp: Callable[..., list[Vec | None]],
             vjp: Callable[..., list[Vec | None]], out_shapes: Sequence[Sequence[int]], /, **over: Any) -> dict[str, Any]:
    """What an honest child reports for forward `f`, its `jvp` and backward `vjp` (plain functions of
    the inputs' flat values, tangents (None: no tangent) and grad_outputs)."""
    plan = case.forward_ad
    assert plan is not None
    xs = [list(case.args[i].values) for i in diff_inputs(case.args)]
    sizes = [len(x) for x in xs]
    tangents = plan.tangents(sizes)
    alone = [[v if q == p else None for q, v in enumerate(tangents[0])] for p in range(len(xs))] if len(xs) > 1 else []
    minus, plus = [], []
    for t in tangents + alone:
        for sign, rows in ((-1.0, minus), (1.0, plus)):
            moved = [x if v is None else [a + sign * plan.eps * b for a, b in zip(x, v)] for x, v in zip(xs, t)]
            rows.append([y for out in f(*moved) for y in out])
    u = plan.grad_outputs([math.prod(s) for s in out_shapes])
    raw = {"ok": True, "stage": None, "has_jvp": True, "out_rg": [True] * len(out_shapes),
           "out_shapes": [list(s) for s in out_shapes], "minus": minus, "plus": plus,
           "jvps": [jvp(xs, t) for t in tangents], "zero": jvp(xs, [[0.0] * n for n in sizes]),
           "alone": [jvp(xs, t) for t in alone], "vjp": vjp(xs, u), "returned": None, "tangent_changed": []}
    raw.update(over)
    return raw


def _report(case: Case, raw_fa: dict[str, Any], f: Callable[..., list[Vec]], out_shapes: Sequence[Sequence[int]],
            returned_inputs: Sequence[int] = ()):
    xs = [list(case.args[i].values) for i in diff_inputs(case.args)]
    rgs = raw_fa.get("out_rg") or [True] * len(out_shapes)  # the plain forward's, as forward mode's
    outs = [{"kind": "tensor", "shape": list(s), "dtype": "float64", "rg": rg, "values": v}
            for s, v, rg in zip(out_shapes, f(*xs), rgs)]
    rep = {"id": case.id, "forward": {"ok": True, "outputs": outs, "count": len(outs), "tuple": len(outs) > 1,
                                      "inputs_after": [list(a.values) for a in case.args]},
           "vjps": [], "returned_inputs": list(returned_inputs), "forward_ad": raw_fa}
    report = {"type": "main", "load": {"ok": True}, "entry": {"found": True, "is_class": True, "is_function": True},
              "cases": [rep]}
    return parse_report(report, [case]).cases[0]


# --------------------------------------------------------------------------- one input: sin


def sin_f(x: Vec) -> list[Vec]:
    return [[math.sin(a) for a in x]]


def sin_jvp(xs: list[Vec], ts: list[Vec | None]) -> list[Vec | None]:
    (x,), (t,) = xs, ts
    return [[math.cos(a) * (b if t is not None else 0.0) for a, b in zip(x, t or x)]]


def sin_vjp(xs: list[Vec], us: list[Vec]) -> list[Vec | None]:
    (x,), (u,) = xs, us
    return [[math.cos(a) * b for a, b in zip(x, u)]]


def _sin(jvp=sin_jvp, vjp=sin_vjp, f=sin_f, case: Case | None = None, **over: Any):
    case = case or _case([X])
    raw = _numbers(case, f, jvp, vjp, [[4]], **over)
    return case, _report(case, raw, sin_f, [[4]])


def test_a_right_jvp_passes():
    case, rep = _sin()
    out = check_forward_ad(case, rep, ["x"])
    assert out.passed, out.message
    assert "3 random tangents" in out.message and out.likely_cause is None


def test_a_jvp_that_ignores_the_tangent_fails_with_that_cause():
    case, rep = _sin(jvp=lambda xs, ts: [[math.cos(a) for a in xs[0]]])
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "jvp_ignores_tangent", out
    assert out.message.startswith("For a random tangent of x (at x[") and "finite differences" in out.message
    (diag,) = out.diagnostics
    assert diag.check == "forward_ad" and diag.input == "x" and diag.output == 0
    assert diag.extra["tangent_value"] in case.forward_ad.tangents([4])[0][0]


def test_a_wrong_sign_or_factor_is_a_wrong_derivative_with_its_factor():
    case, rep = _sin(jvp=lambda xs, ts: [[-2 * v for v in sin_jvp(xs, ts)[0]]])
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "jvp_wrong_derivative"
    assert "off by a factor of -2" in out.message and out.diagnostics[0].extra["factor"] == -2.0


def test_a_wrong_derivative_names_the_output_element():
    case, rep = _sin(jvp=lambda xs, ts: [[math.sin(a) * b for a, b in zip(xs[0], ts[0])]])  # sin, not cos
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "jvp_wrong_derivative" and "factor" not in out.message
    assert "for output[" in out.message


def test_a_zero_tangent_must_give_exactly_zero():
    def jvp(xs, ts):  # right for every nonzero tangent, 1e-3 for a zero one
        out = sin_jvp(xs, ts)[0]
        return [[v if any(ts[0]) else 1e-3 for v in out]]

    case, rep = _sin(jvp=jvp)
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "jvp_ignores_tangent" and "for zero tangents" in out.message


def test_a_child_reporting_zeros_for_everything_fails():
    case, rep = _sin(jvp=lambda xs, ts: [[0.0] * 4], vjp=lambda xs, us: [[0.0] * 4], f=lambda x: [[0.0] * 4])
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "forward_not_repeatable", out
    # honest forward values, zero tangents: finite differences say otherwise
    case, rep = _sin(jvp=lambda xs, ts: [[0.0] * 4], vjp=lambda xs, us: [[0.0] * 4])
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "jvp_wrong_derivative", out
    # honest jvp, backward of zeros: the dot-product test
    case, rep = _sin(vjp=lambda xs, us: [[0.0] * 4])
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == "jvp_backward_disagree", out
    assert "<J v, u> by jvp is" in out.message and "backward is the one to look at" in out.message


def test_the_judge_uses_its_own_tangents_not_the_childs():
    # numbers made for other tangents (another seed) fail: the finite differences do not match them
    case = _case([X])
    other = _case([X], ForwardAdPlan(seed=99, k=3, eps=1e-6))
    raw = _numbers(other, sin_f, sin_jvp, sin_vjp, [[4]])
    minus_plus = {k: raw[k] for k in ("minus", "plus")}
    honest = _numbers(case, sin_f, sin_jvp, sin_vjp, [[4]])
    rep = _report(case, {**honest, "jvps": raw["jvps"]}, sin_f, [[4]])
    assert not check_forward_ad(case, rep, ["x"]).passed
    rep = _report(case, {**honest, **minus_plus}, sin_f, [[4]])
    assert not check_forward_ad(case, rep, ["x"]).passed


def test_a_tangent_changed_in_place_fails_unless_forward_returns_that_input():
    case = _case([X])
    raw = _numbers(case, sin_f, sin_jvp, sin_vjp, [[4]], tangent_changed=[0])
    out = check_forward_ad(case, _report(case, raw, sin_f, [[4]]), ["x"])
    assert not out.passed and out.likely_cause == "jvp_modifies_tangent" and "tangent of x in place" in out.message
    assert check_forward_ad(case, _report(case, raw, sin_f, [[4]], returned_inputs=[0]), ["x"]).passed


def test_a_grade_compares_the_tangents_with_the_references():
    case, ref = _sin()
    _, sub = _sin()
    assert check_forward_ad(case, sub, ["x"], ref=ref).passed
    # a submission whose numbers hang together but whose jvp is not the reference's (another forward)
    def f2(x): return [[math.sin(2 * a) / 2 for a in x]]
    def j2(xs, ts): return [[math.cos(2 * a) * b for a, b in zip(xs[0], ts[0])]]
    def v2(xs, us): return [[math.cos(2 * a) * b for a, b in zip(xs[0], us[0])]]
    raw = _numbers(case, f2, j2, v2, [[4]])
    sub = _report(case, raw, f2, [[4]])
    assert check_forward_ad(case, sub, ["x"]).passed  # consistent with itself
    out = check_forward_ad(case, sub, ["x"], ref=ref)
    assert not out.passed and "model answer's jvp gives" in out.message and out.likely_cause == "jvp_wrong_derivative"


# --------------------------------------------------------------------------- errors, as the child reports them


def _failed(stage: str, error: dict[str, Any], **over: Any) -> dict[str, Any]:
    case = _case([X])
    raw = _numbers(case, sin_f, sin_jvp, sin_vjp, [[4]])
    raw.update(ok=False, stage=stage, error=error, **over)
    for key, after in (("jvps", "jvp"), ("zero", "zero_tangent"), ("vjp", "backward")):
        order = ("forward", "numerical", "jvp", "zero_tangent", "input_without_tangent", "backward")
        if order.index(after) >= order.index(stage):
            raw.pop(key)
    return raw


@pytest.mark.parametrize(("stage", "error", "over", "cause", "words"), [
    ("jvp", _error("jvp", "NotImplementedError", "You must implement the jvp function for custom autograd.Function to "
                   "use it with forward mode AD."), {"has_jvp": False}, "jvp_missing", "has no jvp"),
    ("jvp", _error("jvp", "RuntimeError", "Function's jvp returned an invalid number of forward gradients (expected 1 "
                   "but got 3)"), {"returned": {"count": 3, "items": [{"kind": "tensor", "shape": [4], "dtype": "float64"},
                                                                    {"kind": "none"}, {"kind": "none"}]}},
     "jvp_wrong_count", "jvp returned 3 value(s) for 1 forward output(s)"),
    ("jvp", _error("jvp", "RuntimeError", "Trying to set a forward gradient that has a different size than that of the "
                   "original Tensor"), {"returned": {"count": 1, "items": [{"kind": "tensor", "shape": [], "dtype": "float64"}]}},
     "jvp_wrong_shape", "tangent of shape [] for output, whose shape is [4]"),
    ("jvp", _error("jvp", "RuntimeError", "(new_grad_base.is_floating_point()) INTERNAL ASSERT FAILED: Expected both tensor "
                   "and its forward grad to be floating point or complex"),
     {"returned": {"count": 1, "items": [{"kind": "none"}]}}, "jvp_wrong_count", "returned None for output"),
    ("jvp", _error("jvp", "TypeError", "jvp() takes 2 positional arguments but 4 were given"), {}, "jvp_signature",
     "raised TypeError"),
    ("jvp", _error("jvp", "ValueError", "not enough values to unpack (expected 1, got 0)"), {}, "jvp_not_saved_for_forward", ""),
    ("jvp", _error("jvp", "RuntimeError", "An inplace custom Function is not modifying the forward mode gradients "
                   "inplace."), {}, "jvp_not_in_place", ""),
    ("jvp", _error("jvp", "ZeroDivisionError", "division by zero"), {}, "jvp_error", "for a random tangent"),
    ("zero_tangent", _error("zero_tangent", "ZeroDivisionError", "float division by zero"), {}, "jvp_error",
     "for zero tangents"),
    ("backward", _error("backward", "RuntimeError", "boom"), {}, "backward_error", "dot-product test"),
    ("numerical", _error("numerical", "RuntimeError", "boom"), {}, "forward_error", "forward raised"),
])
def test_each_failure_of_the_child_gets_its_cause(stage, error, over, cause, words):
    case = _case([X])
    rep = _report(case, _failed(stage, error, **over), sin_f, [[4]])
    out = check_forward_ad(case, rep, ["x"])
    assert not out.passed and out.likely_cause == cause, out
    assert words in out.message and out.error is not None
    assert cause in terms.CAUSES


# --------------------------------------------------------------------------- two inputs: x * y


def mul_f(x: Vec, y: Vec) -> list[Vec]:
    return [[a * b for a, b in zip(x, y)]]


def mul_jvp(xs, ts):
    (x, y), (tx, ty) = xs, ts
    tx, ty = tx or [0.0] * 4, ty or [0.0] * 4
    return [[a * dy + b * dx for a, b, dx, dy in zip(x, y, tx, ty)]]


def mul_vjp(xs, us):
    (x, y), (u,) = xs, us
    return [[b * g for b, g in zip(y, u)], [a * g for a, g in zip(x, u)]]


def test_two_inputs_each_alone_with_a_tangent():
    case = _case([X, Y])
    rep = _report(case, _numbers(case, mul_f, mul_jvp, mul_vjp, [[4]]), mul_f, [[4]])
    out = check_forward_ad(case, rep, ["x", "y"])
    assert out.passed and "each input alone with a tangent (2)" in out.message, out.message

    def no_tangent_wrong(xs, ts):  # a jvp that, without y's tangent, forgets x's part as well
        if ts[1] is None:
            return [[0.0] * 4]
        return mul_jvp(xs, ts)

    rep = _report(case, _numbers(case, mul_f, no_tangent_wrong, mul_vjp, [[4]]), mul_f, [[4]])
    out = check_forward_ad(case, rep, ["x", "y"])
    assert not out.passed and out.likely_cause == "jvp_missing_tangent"
    assert out.message.startswith("With a tangent for x only (y without one") and out.diagnostics[0].input == "x"


def test_a_wrong_part_for_one_input_is_named():
    def wrong_y(xs, ts):
        (x, y), (tx, ty) = xs, ts
        tx, ty = tx or [0.0] * 4, ty or [0.0] * 4
        return [[b * dx + 2 * a * dy for a, b, dx, dy in zip(x, y, tx, ty)]]

    case = _case([X, Y])
    rep = _report(case, _numbers(case, mul_f, wrong_y, mul_vjp, [[4]]), mul_f, [[4]])
    out = check_forward_ad(case, rep, ["x", "y"])
    assert not out.passed and out.likely_cause == "jvp_wrong_derivative"
    assert out.message.startswith("For a random tangent of y (at y[") and out.diagnostics[0].input == "y"


def test_a_jvp_failing_on_a_missing_tangent():
    case = _case([X, Y])
    raw = _numbers(case, mul_f, mul_jvp, mul_vjp, [[4]])
    raw.update(ok=False, stage="input_without_tangent", alone=raw["alone"][:1], vjp=None,
               error=_error("input_without_tangent", "TypeError", "unsupported operand type(s) for *: 'NoneType' and 'Tensor'"))
    raw.pop("vjp")
    out = check_forward_ad(case, _report(case, raw, mul_f, [[4]]), ["x", "y"])
    assert not out.passed and out.likely_cause == "jvp_missing_tangent" and "only one input had a tangent" in out.message


# --------------------------------------------------------------------------- no differentiable output, too large


def test_no_differentiable_output_must_not_depend_on_the_inputs():
    case = _case([X])
    const = _numbers(case, lambda x: [[1.0] * 4], lambda xs, ts: [None], lambda xs, us: [None], [[4]],
                     out_rg=[False], vjp=None)
    assert check_forward_ad(case, _report(case, const, lambda x: [[1.0] * 4], [[4]]), ["x"]).passed
    detached = _numbers(case, sin_f, lambda xs, ts: [None], lambda xs, us: [None], [[4]], out_rg=[False], vjp=None)
    out = check_forward_ad(case, _report(case, detached, sin_f, [[4]]), ["x"])
    assert not out.passed and out.likely_cause == "output_detached"


def test_too_large_is_refused_unless_the_plan_says_so():
    plan = ForwardAdPlan(seed=1, k=2, eps=1e-6, max_elements=6)
    case = _case([X], plan)
    raw = {"ok": True, "stage": None, "has_jvp": True, "out_rg": [True], "out_shapes": [[4]], "too_large": True,
           "returned": None, "tangent_changed": []}
    out = check_forward_ad(case, _report(case, raw, sin_f, [[4]]), ["x"])
    assert not out.passed and out.message.startswith("Not checked")
    with pytest.raises(BadOutput):
        _report(_case([X]), raw, sin_f, [[4]])  # no limit in this plan: a child may not skip the work


# --------------------------------------------------------------------------- the parse


@pytest.mark.parametrize("damage", [
    lambda r: r["minus"].pop(),
    lambda r: r["plus"][0].append(0.0),
    lambda r: r["jvps"][0].append(None),
    lambda r: r["jvps"][1][0].pop(),
    lambda r: r.pop("zero"),
    lambda r: r["vjp"][0].pop(),
    lambda r: r.update(tangent_changed=[1]),
    lambda r: r.update(stage="jvp"),
    lambda r: r.update(ok=False),
    lambda r: r.update(has_jvp=1),
    lambda r: r["minus"][0].__setitem__(0, "1"),
])
def test_a_malformed_report_is_refused(damage):
    case = _case([X])
    raw = _numbers(case, sin_f, sin_jvp, sin_vjp, [[4]])
    _report(case, copy.deepcopy(raw), sin_f, [[4]])  # the undamaged one parses
    damage(raw)
    with pytest.raises(BadOutput):
        _report(case, raw, sin_f, [[4]])


def test_the_wire_form_is_sent_only_when_asked():
    case = _case([X])
    assert case.to_wire()["forward_ad"] == {"seed": 1234, "k": 3, "eps": 1e-6}
    assert "forward_ad" not in _case([X], None).to_wire()  # type: ignore[arg-type]


def test_a_forward_that_is_not_repeatable_is_named_and_a_nan_at_x_is_left_to_the_differences():
    case = _case([X])
    noisy = _numbers(case, lambda x: [[v + 1e-3 for v in sin_f(x)[0]]], sin_jvp, sin_vjp, [[4]])
    out = check_forward_ad(case, _report(case, noisy, sin_f, [[4]]), ["x"])
    assert not out.passed and out.likely_cause == "forward_not_repeatable"
    assert "averages" in out.message and "random tangent 1" in out.message

    def nan_f(x):
        return [[math.nan if i == 0 else math.sin(a) for i, a in enumerate(x)]]

    raw = _numbers(case, nan_f, sin_jvp, sin_vjp, [[4]])
    out = check_forward_ad(case, _report(case, raw, nan_f, [[4]]), ["x"])
    assert not out.passed and out.likely_cause == "jvp_wrong_derivative" and "give nan" in out.message


def test_a_grade_refuses_forward_mode_outputs_other_than_forwards_and_the_model_answers():
    """A forged report whose forward-mode outputs claim no gradient (finite differences of a constant)
    would pass untested: its outputs must be forward's own, and in a grade the model answer's."""
    case, honest = _sin()
    forged_raw = _numbers(case, lambda x: [[1.0] * 4], lambda xs, ts: [None], lambda xs, us: [None], [[4]],
                          out_rg=[False], vjp=None)
    forged = _report(case, forged_raw, sin_f, [[4]])
    rgs_kept = parse_report({"type": "main", "load": {"ok": True},
                             "entry": {"found": True, "is_class": True, "is_function": True},
                             "cases": [{**_raw_case(case, forged_raw), "forward": _plain_forward(case, rg=True)}]},
                            [case]).cases[0]
    mismatch = check_forward_ad(case, rgs_kept, ["x"])
    assert not mismatch.passed and mismatch.likely_cause == "forward_not_repeatable"
    graded = check_forward_ad(case, forged, ["x"], ref=honest)
    assert not graded.passed and graded.likely_cause == "output_detached", graded
    assert check_forward_ad(case, honest, ["x"], ref=honest).passed


def _plain_forward(case: Case, *, rg: bool) -> dict[str, Any]:
    out = {"kind": "tensor", "shape": [4], "dtype": "float64", "rg": rg, "values": sin_f(list(case.args[0].values))[0]}
    return {"ok": True, "outputs": [out], "count": 1, "tuple": False, "inputs_after": [list(case.args[0].values)]}


def _raw_case(case: Case, raw_fa: dict[str, Any]) -> dict[str, Any]:
    return {"id": case.id, "vjps": [], "returned_inputs": [], "forward_ad": raw_fa}
