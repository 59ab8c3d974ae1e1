"""The forward-mode check through the real sandbox: a run asked for it (options=("forward_ad",)) with right and
wrong jvps beside right backwards, each wrong one failing the check with its named cause while the
gradient checks pass, and the verdict held to torch.autograd.gradcheck(check_forward_ad=True), run
here in the test process on the inputs the run reports it used (with the run's tolerances)."""

from __future__ import annotations

import pytest

from service.grading.spec import DEFAULT_TOLERANCES
from tests.grading.agreement_support import args_from_run, load_function

torch = pytest.importorskip("torch")

CLAMP = '''
import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None

    @staticmethod
    def jvp(ctx, x_t, low_t, high_t):
        (x,) = ctx.saved_tensors
        return x_t * ((x >= ctx.low) & (x <= ctx.high))
'''
RIGHT_JVP = "return x_t * ((x >= ctx.low) & (x <= ctx.high))"
CLAMP_INPUTS = [{"name": "x", "type": "tensor", "dtype": "float64", "shape": [3, 4], "range": [-2, 2]},
                {"name": "low", "type": "float", "value": -1.0}, {"name": "high", "type": "float", "value": 1.0}]

EXP = '''
import torch


class ExpFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.exp(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y

    @staticmethod
    def jvp(ctx, x_t):
        (y,) = ctx.saved_tensors
        return x_t * y
'''
EXP_INPUTS = [{"name": "x", "type": "tensor", "dtype": "float64", "shape": [5], "range": [-2, 2]}]

MUL = '''
import torch


class MulFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, y)
        ctx.save_for_forward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_output):
        if grad_output is None:
            return None, None
        x, y = ctx.saved_tensors
        return grad_output * y, grad_output * x

    @staticmethod
    def jvp(ctx, x_t, y_t):
        x, y = ctx.saved_tensors
        out = torch.zeros_like(x)
        if x_t is not None:
            out = out + x_t * y
        if y_t is not None:
            out = out + x * y_t
        return out
'''
MUL_INPUTS = [{"name": "x", "type": "tensor", "dtype": "float64", "shape": [2, 3], "range": [-2, 2]},
              {"name": "y", "type": "tensor", "dtype": "float64", "shape": [2, 3], "range": [-2, 2]}]
MUL_NO_NONE = MUL.replace('''        out = torch.zeros_like(x)
        if x_t is not None:
            out = out + x_t * y
        if y_t is not None:
            out = out + x * y_t
        return out''', '''        return x_t * y + x * y_t''')

MAX = '''
import torch


class MaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(dim=1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(x, indices)
        ctx.save_for_forward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        x, indices = ctx.saved_tensors
        grad = torch.zeros_like(x)
        return grad.scatter(1, indices.unsqueeze(1), grad_values.unsqueeze(1))

    @staticmethod
    def jvp(ctx, x_t):
        (indices,) = ctx.saved_tensors
        return x_t.gather(1, indices.unsqueeze(1)).squeeze(1), None
'''
MAX_INPUTS = [{"name": "x", "type": "tensor", "dtype": "float64", "shape": [3, 4], "range": [-2, 2]}]
SINCOS = '''
import torch


class SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) - grad_cos * torch.sin(x)

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return x_t * torch.cos(x), -x_t * torch.sin(x)
'''
SINCOS_INPUTS = [{"name": "x", "type": "tensor", "dtype": "float64", "shape": [4], "range": [-3, 3]}]

NO_JVP = CLAMP.split("    @staticmethod\n    def jvp")[0]

#: (label, source, entry point, inputs, our verdict, our cause); each right backward passes gradcheck.
FUNCTIONS = [
    ("clamp right", CLAMP, "ClampFn", CLAMP_INPUTS, True, None),
    ("exp right (setup_context)", EXP, "ExpFn", EXP_INPUTS, True, None),
    ("exp right, float32 input", EXP, "ExpFn", [dict(EXP_INPUTS[0], dtype="float32")], True, None),
    ("mul right, None tangents handled", MUL, "MulFn", MUL_INPUTS, True, None),
    ("clamp jvp forgets the tangent", CLAMP.replace(RIGHT_JVP, "return ((x >= ctx.low) & (x <= ctx.high)).to(x.dtype)"),
     "ClampFn", CLAMP_INPUTS, False, "jvp_ignores_tangent"),
    ("clamp jvp wrong derivative (factor 2)", CLAMP.replace(RIGHT_JVP, "return 2 * x_t * ((x >= ctx.low) & (x <= ctx.high))"),
     "ClampFn", CLAMP_INPUTS, False, "jvp_wrong_derivative"),
    ("clamp jvp wrong derivative (x_t everywhere)", CLAMP.replace(RIGHT_JVP, "return x_t.clone()"),
     "ClampFn", CLAMP_INPUTS, False, "jvp_wrong_derivative"),
    ("clamp jvp returns one value per input, as backward", CLAMP.replace(RIGHT_JVP, RIGHT_JVP + ", None, None"),
     "ClampFn", CLAMP_INPUTS, False, "jvp_wrong_count"),
    ("clamp jvp returns a summed tangent", CLAMP.replace(RIGHT_JVP, "return (x_t * ((x >= ctx.low) & (x <= ctx.high))).sum()"),
     "ClampFn", CLAMP_INPUTS, False, "jvp_wrong_shape"),
    ("clamp without jvp", NO_JVP, "ClampFn", CLAMP_INPUTS, False, "jvp_missing"),
    ("clamp jvp without save_for_forward", CLAMP.replace("        ctx.save_for_forward(x)\n", ""), "ClampFn",
     CLAMP_INPUTS, False, "jvp_not_saved_for_forward"),
    ("clamp jvp with backward's arguments", CLAMP.replace("def jvp(ctx, x_t, low_t, high_t)", "def jvp(ctx, x_t)"),
     "ClampFn", CLAMP_INPUTS, False, "jvp_signature"),
    ("mul jvp does not handle a None tangent", MUL_NO_NONE, "MulFn", MUL_INPUTS, False, "jvp_missing_tangent"),
    ("max with indices right (a non-differentiable output)", MAX, "MaxFn", MAX_INPUTS, True, None),
    ("max jvp picks the wrong element", MAX.replace("x_t.gather(1, indices.unsqueeze(1)).squeeze(1)", "x_t[:, 0]"),
     "MaxFn", MAX_INPUTS, False, "jvp_wrong_derivative"),
    ("sincos right (two outputs)", SINCOS, "SinCos", SINCOS_INPUTS, True, None),
    ("sincos jvp wrong sign on the second output", SINCOS.replace("-x_t * torch.sin(x)", "x_t * torch.sin(x)"),
     "SinCos", SINCOS_INPUTS, False, "jvp_wrong_derivative"),
    ("sincos jvp returns the first output's tangent only", SINCOS.replace(", -x_t * torch.sin(x)", ""),
     "SinCos", SINCOS_INPUTS, False, "jvp_wrong_count"),
    ("exp right jvp, backward wrong (sign)", EXP.replace("return grad_output * y", "return -grad_output * y"),
     "ExpFn", EXP_INPUTS, False, "jvp_backward_disagree"),
]


def _torch_forward_gradcheck(source: str, entry_point: str, args: tuple) -> tuple[bool, str]:
    """torch's own verdict with the run's tolerances (fast_mode off, backward checked too: its default)."""
    fn = load_function(source, entry_point)
    tol = DEFAULT_TOLERANCES
    args = tuple(a.detach().double().requires_grad_(True) if isinstance(a, torch.Tensor) and a.requires_grad else a
                 for a in args)
    try:
        torch.autograd.gradcheck(lambda *a: fn.apply(*a), args, eps=tol.eps, atol=tol.gradcheck_atol,
                                 rtol=tol.gradcheck_rtol, check_forward_ad=True)
        return True, "passed"
    except Exception as exc:  # noqa: BLE001 - torch's failure, of whatever type, is the verdict
        return False, f"{type(exc).__name__}: {exc}"


def _check(result: dict, name: str) -> dict:
    return next(c for c in result["checks"] if c["name"] == name)


@pytest.mark.parametrize(("label", "source", "entry_point", "inputs", "passes", "cause"), FUNCTIONS,
                         ids=[f[0] for f in FUNCTIONS])
def test_forward_mode_check_names_the_cause_and_agrees_with_torch(judge, label, source, entry_point, inputs, passes, cause):
    result = judge.run(source, entry_point, inputs, options=("forward_ad",))
    assert result["status"] == "ok", result
    fa = _check(result, "forward_ad")
    assert fa["passed"] is passes, (label, fa)
    assert fa.get("likely_cause") == cause, (label, fa)
    if "backward wrong" not in label:
        # the gradient checks do not see a wrong jvp: only the forward-mode check fails
        assert result["gradcheck"]["passed"] is True, (label, result["gradcheck"])
        assert result["passed"] is passes
        assert all(c["passed"] for c in result["checks"] if c["name"] != "forward_ad"), result["checks"]
    torch_passed, message = _torch_forward_gradcheck(source, entry_point, args_from_run(result["inputs"]))
    assert torch_passed is passes, (label, fa, message)


def test_a_jvp_that_changes_its_tangent_in_place_fails_here_though_torch_passes(judge):
    """Stricter than torch, on purpose (as grad_output unchanged is for backward): a jvp that writes into
    the caller's tangent passes gradcheck's basis tangents, which it sets and resets itself."""
    source = CLAMP.replace(RIGHT_JVP, "x_t.mul_((x >= ctx.low) & (x <= ctx.high))\n        return x_t")
    result = judge.run(source, "ClampFn", CLAMP_INPUTS, options=("forward_ad",))
    fa = _check(result, "forward_ad")
    assert fa["passed"] is False and fa["likely_cause"] == "jvp_modifies_tangent", fa
    assert "tangent of x in place" in fa["message"]
    assert _torch_forward_gradcheck(source, "ClampFn", args_from_run(result["inputs"]))[0] is True


EXP_ = """
import torch


class ExpInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.exp_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y

    @staticmethod
    def jvp(ctx, x_t):
        (y,) = ctx.saved_tensors
        return x_t.mul_(y)
"""


def test_an_in_place_functions_jvp_updates_the_dirty_tangent_in_place_and_passes_on_clones(judge):
    """With in_place the run calls the Function on clones, so its own call returns a clone, not the
    input: the dual call's returned input (tangent_returned) is what lets jvp change that tangent."""
    result = judge.run(EXP_, "ExpInPlace", EXP_INPUTS, options=("forward_ad", "in_place"))
    assert result["passed"] is True, [c for c in result["checks"] if not c["passed"]]
    assert _check(result, "forward_ad")["passed"] and _check(result, "in_place")["passed"]
    fn = load_function(EXP_, "ExpInPlace")
    args = args_from_run(result["inputs"])
    assert torch.autograd.gradcheck(lambda x: fn.apply(x.clone()), args, check_forward_ad=True)


def test_the_check_is_made_only_when_asked(judge):
    result = judge.run(NO_JVP, "ClampFn", CLAMP_INPUTS)
    assert result["passed"] is True and "forward_ad" not in {c["name"] for c in result["checks"]}


def test_the_failure_message_names_input_output_and_element(judge):
    source = CLAMP.replace(RIGHT_JVP, "return 2 * x_t * ((x >= ctx.low) & (x <= ctx.high))")
    fa = _check(judge.run(source, "ClampFn", CLAMP_INPUTS, options=("forward_ad",)), "forward_ad")
    assert fa["message"].startswith("For a random tangent of x (at x[") and "for output[" in fa["message"]
    assert "off by a factor of 2" in fa["message"]
    (diag,) = fa["diagnostics"]
    assert diag["check"] == "forward_ad" and diag["input"] == "x" and len(diag["index"]) == 2
    assert diag["likely_cause"] == "jvp_wrong_derivative" and diag["factor"] == 2.0


# ---------------------------------------------------------------- grades: `forward_ad = true` in [code]

EXP_TOML = '''title = "ExpFn with its jvp"
kind = "code"
prompt = "Write ExpFn with backward and jvp."
topics = ["forward-mode"]

[code]
entry_point = "ExpFn"
forward_ad = true

[[code.inputs]]
name = "x"
type = "tensor"
shape = [5]
range = [-2.0, 2.0]
'''


def _exp_exercise() -> dict:
    import tomllib

    return {"slug": "exp-jvp", "spec": tomllib.loads(EXP_TOML), "files": {"reference.py": EXP, "starter.py": EXP}}


def test_a_grade_asked_for_forward_mode_checks_the_jvp_against_the_reference(judge):
    exercise = _exp_exercise()
    right = judge.grade(exercise, EXP)
    assert right["score"] == 1.0, [c for c in right["checks"] if not c["passed"]]
    assert "forward_ad" in [c["name"] for c in right["checks"]]

    wrong = judge.grade(exercise, EXP.replace("return x_t * y", "return y"))
    checks = {c["name"]: c for c in wrong["checks"]}
    assert not checks["forward_ad"]["passed"] and checks["forward_ad"]["likely_cause"] == "jvp_ignores_tangent"
    assert checks["gradcheck"]["passed"] and checks["gradient"]["passed"]
    assert wrong["score"] < 1.0


def test_an_exercise_without_forward_mode_keeps_its_checks_and_its_draws():
    from service.grading.plan import canonical
    from service.grading.spec import load_code_spec

    with_fwd, _ = load_code_spec(_exp_exercise()["spec"])
    without, _ = load_code_spec({"code": {k: v for k, v in _exp_exercise()["spec"]["code"].items() if k != "forward_ad"}})
    assert with_fwd is not None and without is not None
    assert "forward_ad" in with_fwd.checks and "forward_ad" not in without.checks
    assert "forward_ad" not in without.weights and "forward_ad" not in canonical(without.as_dict())
