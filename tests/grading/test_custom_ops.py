"""Custom ops (torch.library.custom_op) through the real sandbox: a run of a right op passes
torch.library.opcheck's four checks and the gradient checks through the op; each typical mistake
fails its check with its named cause; and each verdict agrees with torch.library.opcheck, run here
in the test process on the values the run used (our autograd-registration check is stricter than
opcheck's, which passes every custom op: a forgotten register_autograd or a setup_context that
saves wrongly fails it here, and fails opcheck's AOT dispatch test there)."""

from __future__ import annotations

import pytest

from service.grading.custom_ops import OP_CHECKS
from tests.grading.agreement_support import DTYPES

torch = pytest.importorskip("torch")

SCALED_SIN = '''import torch


@torch.library.custom_op("mylib::scaled_sin", mutates_args=())
def scaled_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.sin(x) * scale


@scaled_sin.register_fake
def _(x, scale):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    x, scale = inputs
    ctx.save_for_backward(x)
    ctx.scale = scale


def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * torch.cos(x) * ctx.scale, None


scaled_sin.register_autograd(backward, setup_context=setup_context)
'''

CLAMP = '''import torch


@torch.library.custom_op("mylib::clamp", mutates_args=())
def clamp(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
    return x.clamp(low, high)


@clamp.register_fake
def _(x, low, high):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    x, low, high = inputs
    ctx.save_for_backward(x)
    ctx.low, ctx.high = low, high


def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None


clamp.register_autograd(backward, setup_context=setup_context)
'''

SIN_INPUTS = [{"name": "x", "type": "tensor", "shape": [3, 4]}, {"name": "scale", "type": "float", "value": 2.0}]
CLAMP_INPUTS = [{"name": "x", "type": "tensor", "shape": [3, 4], "range": [-2.0, 2.0], "avoid": [-1.0, 1.0],
                 "avoid_margin": 0.05}, {"name": "low", "type": "float", "value": -1.0},
                {"name": "high", "type": "float", "value": 1.0}]

# Each mistake, the check it fails and the cause named there.
WRONG = {
    "wrong_fake_shape": (SCALED_SIN.replace("    return torch.empty_like(x)\n", "    return x.new_empty(x.shape[0])\n"),
                         "op_fake_tensor", "op_fake_wrong_metadata"),
    "no_register_autograd": (SCALED_SIN.replace("scaled_sin.register_autograd(backward, setup_context=setup_context)\n", ""),
                             "op_autograd_registration", "op_no_autograd_formula"),
    "undeclared_mutation": (SCALED_SIN.replace("    return torch.sin(x) * scale\n",
                                               "    x.mul_(scale)\n    return torch.sin(x)\n"),
                            "op_schema", "op_undeclared_mutation"),
    "wrong_fake_dtype": (SCALED_SIN.replace("    return torch.empty_like(x)\n",
                                            "    return torch.empty_like(x, dtype=torch.float32)\n"),
                         "op_fake_tensor", "op_fake_wrong_metadata"),
    "no_register_fake": (SCALED_SIN.replace("@scaled_sin.register_fake\ndef _(x, scale):\n    return torch.empty_like(x)\n", ""),
                         "op_fake_tensor", "op_no_fake_kernel"),
    "returns_a_view_of_its_input": (SCALED_SIN.replace("    return torch.sin(x) * scale\n", "    return x.view(-1)\n")
                                    .replace("    return torch.empty_like(x)\n", "    return x.new_empty(x.numel())\n"),
                                    "op_schema", "op_output_aliases_input"),
    "setup_context_saves_the_inputs_tuple": (SCALED_SIN.replace("    x, scale = inputs\n    ctx.save_for_backward(x)\n",
                                                                "    ctx.save_for_backward(inputs)\n    scale = inputs[1]\n"),
                                             "op_autograd_registration", "op_setup_context_error"),
    "setup_context_saves_nothing": (SCALED_SIN.replace("    ctx.save_for_backward(x)\n", ""),
                                    "op_autograd_registration", "op_setup_context_error"),
    "fake_kernel_reads_values": (SCALED_SIN.replace("    return torch.empty_like(x)\n",
                                                    "    return torch.empty_like(x) * float(x.sum())\n"),
                                 "op_aot_dispatch", "op_fake_kernel_error"),
}

OPCHECK_TESTS = {"op_schema": "test_schema", "op_autograd_registration": "test_autograd_registration",
                 "op_fake_tensor": "test_faketensor", "op_aot_dispatch": "test_aot_dispatch_dynamic"}


def _checks(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result.get("checks", [])}


def _args(inputs: list[dict]) -> tuple:
    """The run's inputs as it used them (the op checks run on them as given)."""
    out = []
    for item in inputs:
        if item["type"] == "tensor":
            t = torch.tensor(item["values"], dtype=DTYPES[item["dtype"]]).reshape(item["shape"])
            out.append(t.requires_grad_(item["requires_grad"]))
        else:
            out.append(item["value"])
    return tuple(out)


def _opcheck(source: str, entry_point: str, args: tuple) -> dict[str, bool]:
    namespace: dict = {"__name__": "opcheck_agreement"}
    exec(compile(source, "<opcheck>", "exec"), namespace)  # our own test sources
    results = torch.library.opcheck(namespace[entry_point], args, raise_exception=False)
    return {ours: results[theirs] == "SUCCESS" for ours, theirs in OPCHECK_TESTS.items()}


@pytest.mark.parametrize(("source", "entry_point", "inputs"), [(SCALED_SIN, "scaled_sin", SIN_INPUTS),
                                                               (CLAMP, "clamp", CLAMP_INPUTS)], ids=["scaled_sin", "clamp"])
def test_a_right_custom_op_passes_opchecks_and_the_gradient_checks(judge, source, entry_point, inputs):
    r = judge.run(source, entry_point, inputs)
    assert r["status"] == "ok" and r["passed"] is True, r
    checks = _checks(r)
    assert [n for n in checks if n in OP_CHECKS] == list(OP_CHECKS)
    assert {"gradcheck", "random_vjp", "backward_arity", "inputs_unchanged"} <= set(checks)
    assert all(c["passed"] for c in checks.values()), checks
    assert r["gradcheck"]["passed"] is True and "12x12 Jacobian" in r["gradcheck"]["message"]
    assert checks["op_fake_tensor"]["description"].startswith("The op has a fake kernel")
    assert r["gradients"]["x"] and len(r["gradients"]["x"]) == 12
    assert _opcheck(source, entry_point, _args(r["inputs"])) == dict.fromkeys(OP_CHECKS, True)


@pytest.mark.parametrize("mistake", list(WRONG))
def test_each_mistake_fails_its_check_with_its_cause_and_agrees_with_opcheck(judge, mistake):
    source, check, cause = WRONG[mistake]
    r = judge.run(source, "scaled_sin", SIN_INPUTS)
    assert r["status"] in ("ok", "error") and r["passed"] is False, r
    checks = _checks(r)
    assert checks[check]["passed"] is False, checks
    assert checks[check]["likely_cause"] == cause, checks[check]
    assert cause in r["likely_causes"]
    ours = {name: checks[name]["passed"] for name in OP_CHECKS}
    theirs = _opcheck(source, "scaled_sin", _args(r["inputs"]))
    for name in OP_CHECKS:
        if name == "op_autograd_registration" and ours[name] != theirs[name]:
            # stricter than opcheck's (which a custom op always passes: it has an Autograd kernel);
            # opcheck fails the same op elsewhere
            assert cause in ("op_no_autograd_formula", "op_setup_context_error") and not ours[name] and theirs[name]
            assert not all(theirs.values())
            continue
        assert ours[name] == theirs[name], (mistake, name, checks[name], theirs)


def test_a_forgotten_register_autograd_is_named_by_the_gradient_checks_too(judge):
    r = judge.run(WRONG["no_register_autograd"][0], "scaled_sin", SIN_INPUTS)
    checks = _checks(r)
    assert checks["gradcheck"]["likely_cause"] == "op_no_autograd_formula"
    assert checks["backward_arity"]["likely_cause"] == "op_no_autograd_formula"
    assert "no autograd formula" in checks["op_aot_dispatch"]["message"]
    assert r["error"]["type"] == "RuntimeError" and "register_autograd" in r["error"]["message"]


def test_an_error_in_setup_context_points_at_the_learners_line(judge):
    source = SCALED_SIN.replace("    x, scale = inputs\n", "    x, scale, extra = inputs\n")
    r = judge.run(source, "scaled_sin", SIN_INPUTS)
    assert r["status"] == "error" and r["passed"] is False
    checks = _checks(r)
    reg = checks["op_autograd_registration"]
    assert reg["passed"] is False and reg["likely_cause"] == "op_setup_context_error"
    assert "your setup_context raised ValueError" in reg["message"]
    line = source.splitlines().index("    x, scale, extra = inputs") + 1
    assert r["error"]["line"] == line and "in setup_context" in r["error"]["traceback"], r["error"]


def test_a_function_entry_point_gets_no_op_checks_and_a_non_op_is_refused(judge):
    fn = ('import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n'
          '        return x * 2\n    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n')
    never_called = '\ndef unused():\n    return torch.library.custom_op("mylib::unused", mutates_args=())\n'
    r = judge.run(fn + never_called, "F", [{"name": "x", "type": "tensor", "shape": [3]}])  # planned, not reported
    assert r["passed"] is True and not set(_checks(r)) & set(OP_CHECKS)
    r = judge.run(SCALED_SIN + "\nnot_an_op = 3\n", "not_an_op", SIN_INPUTS)
    assert r["status"] == "error" and "custom op" in r["error"]["message"]


# ---------------------------------------------------------------- grades: `custom_op = true` in [code]

SIN_TOML = '''title = "scaled_sin as a custom op"
kind = "code"
prompt = "Write the custom op mylib::scaled_sin with its autograd formula and fake kernel."
topics = ["custom-op"]

[code]
entry_point = "scaled_sin"
custom_op = true

[[code.inputs]]
name = "x"
type = "tensor"
shape = [3, 4]

[[code.inputs]]
name = "scale"
type = "float"
value = 2.0
'''


def test_a_grade_of_a_custom_op_exercise_makes_opchecks_tests(judge):
    import tomllib

    exercise = {"slug": "scaled-sin-op", "spec": tomllib.loads(SIN_TOML),
                "files": {"reference.py": SCALED_SIN, "starter.py": SCALED_SIN}}
    right = judge.grade(exercise, SCALED_SIN)
    assert right["score"] == 1.0, [c for c in right["checks"] if not c["passed"]]
    assert {"op_schema", "op_autograd_registration", "op_fake_tensor", "op_aot_dispatch"} <= {c["name"] for c in right["checks"]}
    assert right["checks"][1]["message"].startswith("scaled_sin is a custom op")
    source, check, cause = WRONG["wrong_fake_shape"]
    wrong = judge.grade(exercise, source)
    checks = {c["name"]: c for c in wrong["checks"]}
    assert not checks[check]["passed"] and checks[check]["likely_cause"] == cause, checks[check]
    assert checks["forward"]["passed"] and checks["gradcheck"]["passed"] and wrong["score"] < 1.0


def test_a_grade_names_a_forgotten_register_autograd_as_a_run_does(judge):
    import tomllib

    exercise = {"slug": "scaled-sin-op", "spec": tomllib.loads(SIN_TOML),
                "files": {"reference.py": SCALED_SIN, "starter.py": SCALED_SIN}}
    wrong = judge.grade(exercise, WRONG["no_register_autograd"][0])
    checks = {c["name"]: c for c in wrong["checks"]}
    assert checks["gradcheck"]["likely_cause"] == "op_no_autograd_formula", checks["gradcheck"]
    assert checks["backward_arity"]["likely_cause"] == "op_no_autograd_formula"
    assert "backward_error" not in wrong["likely_causes"]


def test_a_judge_without_custom_ops_says_so_and_runs_functions_as_ever():
    """GRADING_CUSTOM_OPS off: the zygote skips the custom ops' preload (a sandboxed child could not
    import what an op's first call imports), so code that defines one is answered so, without a
    child; a Function runs as ever; a custom-op exercise cannot be graded (the grader's fault)."""
    import tomllib

    from service.config import Settings
    from service.grading.errors import GraderFault
    from service.grading.judge import Judge
    from tests.grading.support import SECRET

    assert Settings.from_env({}).grading_custom_ops is True
    assert Settings.from_env({"GRADING_CUSTOM_OPS": "0"}).grading_custom_ops is False
    with Judge(SECRET, slots=1, custom_ops=False) as judge:
        off = judge.run(SCALED_SIN, "scaled_sin", SIN_INPUTS)
        assert off["status"] == "error" and "GRADING_CUSTOM_OPS" in off["error"]["message"], off
        assert judge.run(CLAMP_AS_FUNCTION, "ClampFn", CLAMP_INPUTS)["passed"] is True
        exercise = {"slug": "scaled-sin-op", "spec": tomllib.loads(SIN_TOML),
                    "files": {"reference.py": SCALED_SIN, "starter.py": SCALED_SIN}}
        with pytest.raises(GraderFault, match="custom ops"):
            judge.grade(exercise, SCALED_SIN)


CLAMP_AS_FUNCTION = '''import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None
'''
