"""The in-place check through the real sandbox: a Run asked for it (``options=("in_place",)``) of right and
wrong in-place Functions, each wrong one failing with its named cause (the child really runs; the
judge decides: service/grading/in_place.py)."""

from __future__ import annotations

import pytest

X = [{"name": "x", "type": "tensor", "shape": [3, 4], "range": [-2.0, 2.0]}]

HEADER = "import torch\n\n\n"

RELU_ = HEADER + '''class ReluInPlace(torch.autograd.Function):
    """ReLU in place: the output it saves is all backward needs."""
    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (y > 0)
'''

SIN_ = HEADER + '''class SinInPlace(torch.autograd.Function):
    """sin in place, a copy of x saved before the change."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.clone())
        x.sin_()
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)
'''

SCALE_ = HEADER + '''class ScaleInPlace(torch.autograd.Function):
    """x * factor in place, a number beside the tensor."""
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        x.mul_(factor)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor, None
'''

ADD_ = HEADER + '''class AddInPlace(torch.autograd.Function):
    """x += y, two inputs requiring grad, the first changed."""
    @staticmethod
    def forward(ctx, x, y):
        x.add_(y)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, grad_output
'''

NO_MARK_DIRTY = RELU_.replace("        ctx.mark_dirty(x)\n", "")
NEW_TENSOR_RETURNED = RELU_.replace("        return x\n", "        return x.clone()\n")
SAVED_BEFORE_CHANGE = SIN_.replace("ctx.save_for_backward(x.clone())", "ctx.save_for_backward(x)")
KEPT_ON_CTX = SIN_.replace("ctx.save_for_backward(x.clone())", "ctx.x = x").replace(
    "(x,) = ctx.saved_tensors", "x = ctx.x")
THROUGH_DATA = RELU_.replace("x.clamp_(min=0)\n        ctx.mark_dirty(x)", "x.data.clamp_(min=0)")
MARKS_ITS_OUTPUT = HEADER + '''class ScaleInPlace(torch.autograd.Function):
    """Thinks ctx.mark_dirty marks the output: computes out of place."""
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        y = x * factor
        ctx.mark_dirty(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor, None
'''
WRONG_FACTOR = SCALE_.replace("return grad_output * ctx.factor, None", "return grad_output * 2.0, None")

SCALE_INPUTS = X + [{"name": "factor", "type": "float", "value": 3.0}]
ADD_INPUTS = X + [{"name": "y", "type": "tensor", "shape": [3, 4], "range": [-1.0, 1.0]}]


def _in_place(result: dict) -> dict:
    checks = {c["name"]: c for c in result.get("checks", [])}
    assert "in_place" in checks, result
    return checks["in_place"]


@pytest.mark.parametrize(("source", "entry", "inputs"), [
    (RELU_, "ReluInPlace", X),
    (SIN_, "SinInPlace", X),
    (SCALE_, "ScaleInPlace", SCALE_INPUTS),
    (ADD_, "AddInPlace", ADD_INPUTS),
    (RELU_, "ReluInPlace", [dict(X[0], dtype="float32")]),  # checked on float64 copies
])
def test_a_right_in_place_function_passes(judge, source, entry, inputs):
    result = judge.run(source, entry, inputs, options=("in_place",))
    check = _in_place(result)
    assert check["passed"], check
    # called on clones, every other check passes too (on the leaves themselves torch refuses forward)
    assert result["status"] == "ok" and result["passed"], [c for c in result["checks"] if not c["passed"]]
    assert "marked dirty" in check["message"] and "torch refused the in-place change" in check["message"]


@pytest.mark.parametrize(("source", "entry", "inputs", "cause"), [
    (NO_MARK_DIRTY, "ReluInPlace", X, "not_marked_dirty"),
    (THROUGH_DATA, "ReluInPlace", X, "not_marked_dirty"),
    (NEW_TENSOR_RETURNED, "ReluInPlace", X, "dirty_not_returned"),
    (SAVED_BEFORE_CHANGE, "SinInPlace", X, "overwritten_input"),
    (KEPT_ON_CTX, "SinInPlace", X, "overwritten_input"),
    (MARKS_ITS_OUTPUT, "ScaleInPlace", SCALE_INPUTS, "dirty_not_input"),
    (WRONG_FACTOR, "ScaleInPlace", SCALE_INPUTS, "constant_factor"),
])
def test_a_wrong_in_place_function_fails_with_its_cause(judge, source, entry, inputs, cause):
    result = judge.run(source, entry, inputs, options=("in_place",))
    check = _in_place(result)
    assert not check["passed"] and check["likely_cause"] == cause, check


def test_without_mark_dirty_the_numbers_show_the_bypass(judge):
    """The use of x after the call reaches the leaf around backward: the judge's finite differences of
    the expression disagree with the gradient, and a leaf requiring grad is changed without a word."""
    check = _in_place(judge.run(NO_MARK_DIRTY, "ReluInPlace", X, options=("in_place",)))
    assert "torch returned a view of x (output 0) in its place" in check["message"]
    assert "finite differences of the expression give" in check["message"] and check["diagnostics"]
    assert "a leaf that requires grad, forward changed it and torch said nothing" in check["message"]


def test_an_out_of_place_function_passes_and_the_check_is_only_asked_for(judge):
    source = HEADER + '''class Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)
'''
    result = judge.run(source, "Relu", X, options=("in_place",))
    assert result["passed"] and _in_place(result)["message"].startswith("forward changes no input in place")
    assert "in_place" not in {c["name"] for c in judge.run(source, "Relu", X)["checks"]}


def test_a_large_input_is_checked_along_random_directions(judge):
    large = [dict(X[0], shape=[20, 20])]
    right = _in_place(judge.run(SIN_, "SinInPlace", large, options=("in_place",)))
    assert right["passed"], right
    wrong = _in_place(judge.run(SAVED_BEFORE_CHANGE, "SinInPlace", large, options=("in_place",)))
    assert not wrong["passed"] and wrong["likely_cause"] == "overwritten_input", wrong
    assert "random direction" in wrong["message"]


# ---------------------------------------------------------------- grades: `in_place = true` in [code]

SIN_TOML = '''title = "SinInPlace"
kind = "code"
prompt = "Write SinInPlace: sine computed in place, marked dirty."
topics = ["in-place"]

[code]
entry_point = "SinInPlace"
in_place = true

[[code.inputs]]
name = "x"
type = "tensor"
shape = [3, 4]
range = [-2.0, 2.0]
'''


def test_a_grade_asked_for_in_place_calls_the_function_on_clones_and_checks_it(judge):
    import tomllib

    exercise = {"slug": "sin-in-place", "spec": tomllib.loads(SIN_TOML), "files": {"reference.py": SIN_, "starter.py": SIN_}}
    right = judge.grade(exercise, SIN_)
    assert right["score"] == 1.0, [c for c in right["checks"] if not c["passed"]]
    wrong = judge.grade(exercise, SAVED_BEFORE_CHANGE)
    checks = {c["name"]: c for c in wrong["checks"]}
    assert not checks["in_place"]["passed"] and checks["in_place"]["likely_cause"] == "overwritten_input"
    assert wrong["score"] < 1.0
