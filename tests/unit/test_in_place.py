"""The in-place check (service/grading/in_place.py) on hand-made reports: a pure-Python stand-in for
harness._in_place computes the numbers an honest child would send for an elementwise Function, its
report is parsed as the judge parses a child's, and the check decides. No judge, no torch."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from service.grading.cases import Arg, Case, InPlacePlan, ProjectionPlan
from service.grading.draws import in_place_vectors, projection_vectors
from service.grading.errors import BadOutput
from service.grading.in_place import check_in_place
from service.grading.reports import parse_report
from service.grading.terms import CAUSES

X = [-1.5, -0.25, 0.5, 1.25, 2.0, -0.75]
SHAPE = [2, 3]
LEAF_ERROR = "a leaf Variable that requires grad has been used in an in-place operation."


def relu(x: float) -> float:
    return max(x, 0.0)


def step(x: float) -> float:
    return 1.0 if x > 0 else 0.0


def _plan(max_side: int = 256, k: int = 4) -> InPlacePlan:
    return InPlacePlan(seed=11, eps=1e-6, atol=1e-5, rtol=1e-3, max_side=max_side,
                       projections=ProjectionPlan(seed=12, k=k, max_elements=6144))


def _case(plan: InPlacePlan, values: list[float] = X, shape: list[int] = SHAPE) -> Case:
    arg = Arg("tensor", dtype="float64", shape=shape, values=values, requires_grad=True)
    return Case(id="run", kind="run", name="run", args=(arg,), in_place=plan)


def _error(message: str, where: str = "forward", type_: str = "RuntimeError") -> dict:
    return {"where": where, "type": type_, "message": message, "traceback": "", "line": None}


def child(plan: InPlacePlan, f: Callable[[float], float], backward: Callable[[float], float], *, marked: bool = True,
          changes: bool = True, values: list[float] = X, leaf_raises: bool | None = None, leaf_changes: bool | None = None,
          warnings: tuple[str, ...] = (), **over) -> dict:
    """What harness._in_place reports for an elementwise Function y = f(x) whose backward multiplies
    grad_output by backward(x) (x: the input's original values), which changes x in place to f(x)
    (`changes`) and marks it dirty (`marked`; unmarked, torch returns a view of x)."""
    n = len(values)
    out = [f(x) for x in values]
    after = out if changes else list(values)
    w, v = in_place_vectors(plan.seed, [n, n])

    def expression(xs: list[float]) -> list[float]:
        ys = [f(x) for x in xs]
        return [y * wk for y, wk in zip(ys, w[0])] + [(y if changes else x) * wk for x, y, wk in zip(xs, ys, w[1])]

    # autograd: the output goes through backward; x after the call too when marked dirty (its history
    # moved onto the Function), around it (the clone's own history: d x / d leaf = 1) when not
    through = [v[0][j] * w[0][j] + (v[1][j] * w[1][j] if marked else 0.0) for j in range(n)]
    grads = [backward(x) * t + (0.0 if marked else v[1][j] * w[1][j]) for j, (x, t) in enumerate(zip(values, through))]
    mode = "full" if n <= plan.max_side and 2 * n <= plan.max_side else "projections"
    if mode == "full":
        moves = [[plan.eps if i == j else 0.0 for i in range(n)] for j in range(n)]
    else:
        moves = [[plan.eps * u for u in us] for us in projection_vectors(plan.projections.seed, "u", plan.projections.k, n)]
    minus = [expression([x - d for x, d in zip(values, m)]) for m in moves]
    plus = [expression([x + d for x, d in zip(values, m)]) for m in moves]
    bump = (1 if changes else 0) + (1 if marked else 0)
    leaf_raises = marked if leaf_raises is None else leaf_raises
    leaf_changes = changes if leaf_changes is None else leaf_changes
    rep = {
        "ok": True, "stage": None, "warnings": list(warnings),
        "outputs": [{"kind": "tensor", "shape": SHAPE if n == 6 else [n], "dtype": "float64", "rg": True, "values": out}],
        "grads": [grads], "mode": mode, "minus": minus, "plus": plus,
        "inputs": [{"version_before": 0, "version_after": bump, "values_after": after,
                    "returned_as": 0 if marked else None, "view_of": None if marked else 0}],
        "leaf": {"raised": leaf_raises, "error": _error(LEAF_ERROR) if leaf_raises else None,
                 "inputs": [{"version_before": 0, "version_after": bump if leaf_changes else 0,
                             "values_after": out if leaf_changes else list(values)}]},
        "ms": 1.0,
    }
    rep.update(over)
    return rep


def parse(case: Case, in_place: dict | None):
    """The child's main report for one case whose forward on the leaves raised (as a right in-place
    Function's does), parsed as the judge parses it."""
    rep = {"id": case.id, "forward": {"ok": False, "error": _error(LEAF_ERROR)}}
    if in_place is not None:
        rep["in_place"] = in_place
    report = {"type": "main", "load": {"ok": True}, "entry": {"found": True, "is_class": True, "is_function": True},
              "cases": [rep]}
    return parse_report(report, [case]).cases[0]


def decide(plan: InPlacePlan, numbers: dict, *, ref: dict | None = None, values: list[float] = X):
    shape = SHAPE if len(values) == 6 else [len(values)]
    case = _case(plan, values, shape)
    return check_in_place(case, parse(case, numbers), ["x"], ref=None if ref is None else parse(case, ref))


# --------------------------------------------------------------------------- right ones


def test_a_right_in_place_relu_passes():
    plan = _plan()
    out = decide(plan, child(plan, relu, step))
    assert out.passed, out.message
    assert "x itself, marked dirty (its version counter went from 0 to 2)" in out.message
    assert "torch refused the in-place change, as it should" in out.message


def test_a_function_that_changes_nothing_in_place_passes_a_run():
    plan = _plan()
    out = decide(plan, child(plan, math.sin, math.cos, marked=False, changes=False))
    assert out.passed and "changes no input in place" in out.message


def test_marked_dirty_without_a_change_passes():
    """ctx.mark_dirty on an input left as it was: torch bumps the counter and returns it; nothing is wrong."""
    plan = _plan()
    numbers = child(plan, lambda x: x, lambda x: 1.0)
    numbers["inputs"][0]["version_after"] = 1
    assert decide(plan, numbers).passed


def test_by_random_directions_when_the_input_is_large():
    plan = _plan(max_side=8, k=4)
    values = [((j * 37) % 23) / 7.0 - 1.5 for j in range(12)]
    out = decide(plan, child(plan, relu, step, values=values), values=values)
    assert out.passed, out.message
    wrong = decide(plan, child(plan, relu, lambda x: -step(x), values=values), values=values)
    assert not wrong.passed and wrong.likely_cause == "wrong_sign", wrong.message
    assert "random direction u1" in wrong.message


# --------------------------------------------------------------------------- wrong ones


def test_no_mark_dirty():
    plan = _plan()
    out = decide(plan, child(plan, relu, step, marked=False))
    assert not out.passed and out.likely_cause == "not_marked_dirty"
    assert "without marking it with ctx.mark_dirty(x)" in out.message
    assert "torch returned a view of x (output 0) in its place" in out.message
    # the numbers show it: the use of x after the call reaches the leaf around backward
    assert "finite differences of the expression give" in out.message and out.diagnostics
    assert "Called on x itself, a leaf that requires grad, forward changed it and torch said nothing" in out.message


def test_a_change_through_data_moves_no_version_counter_but_is_seen():
    plan = _plan()
    numbers = child(plan, relu, step, marked=False)
    numbers["inputs"][0]["version_after"] = 0
    out = decide(plan, numbers)
    assert out.likely_cause == "not_marked_dirty" and "version counter" not in out.message.split("without")[0]


def test_marked_dirty_but_a_new_tensor_returned():
    plan = _plan()
    numbers = child(plan, relu, step)
    message = ("Some elements marked as dirty during the forward method were not returned as output. The inputs that are "
               "modified inplace must all be outputs of the Function.")
    numbers = {"ok": False, "stage": "forward", "error": _error(message), "warnings": [],
               "inputs": [dict(numbers["inputs"][0], returned_as=None, view_of=None)],
               "leaf": {"raised": True, "error": _error(message), "inputs": numbers["leaf"]["inputs"]}}
    out = decide(plan, numbers)
    assert not out.passed and out.likely_cause == "dirty_not_returned" and out.error is not None


def test_backward_reads_the_overwritten_input():
    """forward saves x, then x.sin_(): backward's cos(x) is cos(sin(x))."""
    plan = _plan()
    out = decide(plan, child(plan, math.sin, lambda x: math.cos(math.sin(x))))
    assert not out.passed and out.likely_cause == "overwritten_input", out.message
    assert "forward overwrote x" in out.message and out.diagnostics[0].likely_cause == "overwritten_input"


def test_a_wrong_sign_is_named_as_such():
    plan = _plan()
    out = decide(plan, child(plan, relu, lambda x: -step(x)))
    assert out.likely_cause == "wrong_sign"


def test_mark_dirty_of_a_tensor_that_is_not_an_input():
    plan = _plan()
    warning = ("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been mutated "
               "should be passed to ctx.mark_dirty(). (Triggered internally at custom_function.cpp:320.)")
    out = decide(plan, child(plan, lambda x: 2 * x, lambda x: 2.0, marked=False, changes=False, warnings=(warning,)))
    assert not out.passed and out.likely_cause == "dirty_not_input"
    assert "Triggered" not in out.message


def test_a_leaf_changed_without_torch_objecting():
    """The clone is marked dirty, yet on a leaf forward changes it and nothing is raised (forward
    treats leaves apart): the change went past autograd."""
    plan = _plan()
    out = decide(plan, child(plan, relu, step, leaf_raises=False, leaf_changes=True))
    assert not out.passed and out.likely_cause == "leaf_in_place"


def test_backward_raised():
    plan = _plan()
    numbers = child(plan, relu, step)
    for key in ("grads", "mode", "minus", "plus"):
        numbers.pop(key)
    numbers.update(ok=False, stage="backward", error=_error("boom", "backward", "ValueError"))
    out = decide(plan, numbers)
    assert out.likely_cause == "backward_error" and "ValueError" in out.message
    numbers["error"] = _error("Output 0 of F is a view and its base or another view of its base has been modified "
                              "inplace.", "backward")
    assert decide(plan, numbers).likely_cause == "backward_error"  # marked dirty: the message alone decides nothing
    unmarked = child(plan, relu, step, marked=False)
    for key in ("grads", "mode", "minus", "plus"):
        unmarked.pop(key)
    unmarked.update(ok=False, stage="backward", error=numbers["error"])
    assert decide(plan, unmarked).likely_cause == "not_marked_dirty"


def test_forward_raised_inside_the_expression():
    plan = _plan()
    numbers = {"ok": False, "stage": "forward", "error": _error("shape mismatch"), "warnings": [],
               "inputs": child(plan, relu, step)["inputs"], "leaf": {"raised": True, "error": _error("shape mismatch"),
                                                                     "inputs": []}}
    numbers["inputs"][0].update(returned_as=None, view_of=None)
    out = decide(plan, numbers)
    assert out.likely_cause == "forward_error" and "x.clone()" in out.message


def test_too_large():
    plan = _plan(max_side=2, k=2)
    plan = InPlacePlan(plan.seed, plan.eps, plan.atol, plan.rtol, 2, ProjectionPlan(12, 2, 4))
    numbers = child(plan, relu, step, mode="too_large", minus=[], plus=[])
    out = decide(plan, numbers)
    assert not out.passed and out.likely_cause is None and "too large" in out.message


# --------------------------------------------------------------------------- a grade: beside the model answer


def test_a_grade_wants_the_input_changed_when_the_model_answer_does():
    plan = _plan()
    ref = child(plan, relu, step)
    out = decide(plan, child(plan, relu, step, marked=False, changes=False), ref=ref)
    assert not out.passed and out.likely_cause == "not_in_place"
    assert decide(plan, child(plan, relu, step), ref=ref).passed


def test_a_grade_compares_the_gradient_with_the_model_answers():
    """Consistent with its own forward (finite differences agree), yet not the model answer's gradient."""
    plan = _plan()
    ref = child(plan, relu, step)
    out = decide(plan, child(plan, lambda x: 2 * relu(x), lambda x: 2 * step(x)), ref=ref)
    assert not out.passed and out.likely_cause == "constant_factor" and "model answer's" in out.message


# --------------------------------------------------------------------------- the parser


@pytest.mark.parametrize("breakage", [
    lambda r: r.pop("leaf"),
    lambda r: r.update(mode="projections"),
    lambda r: r.update(minus=r["minus"][:-1]),
    lambda r: r.update(plus=[row[:-1] for row in r["plus"]]),
    lambda r: r["inputs"][0].update(returned_as=3),
    lambda r: r["inputs"][0].update(version_before=5),
    lambda r: r["inputs"][0].update(values_after=[1.0]),
    lambda r: r.update(grads=[[0.0]]),
    lambda r: r.update(stage="forward"),
    lambda r: r.update(warnings=["w"] * 5),
    lambda r: r["leaf"].update(raised=True, error=None),
    lambda r: r.update(inputs=[]),
])
def test_a_malformed_report_is_refused(breakage):
    plan = _plan()
    numbers = child(plan, relu, step)
    breakage(numbers)
    with pytest.raises(BadOutput):
        decide(plan, numbers)


def test_a_report_without_the_numbers_is_refused():
    plan = _plan()
    case = _case(plan)
    with pytest.raises(BadOutput):
        parse(case, None)


def test_every_cause_named_has_its_words():
    for cause in ("not_marked_dirty", "dirty_not_returned", "overwritten_input", "leaf_in_place", "dirty_not_input",
                  "not_in_place"):
        assert cause in CAUSES


def test_the_wire_form():
    plan = _plan()
    wire = _case(plan).to_wire()
    assert wire["in_place"] == {"seed": 11, "eps": 1e-6, "max_side": 256,
                                "projections": {"seed": 12, "k": 4, "max_elements": 6144}}
    assert "in_place" not in Case(id="c", kind="run", name="c", args=()).to_wire()
