"""The technique check reads the source: what it accepts and what it refuses."""

import pytest

from service.grading.spec import load_code_spec, validate_code_exercise
from service.grading.technique import missing_techniques

SAVES_OUTPUT = """
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y
"""
SAVES_INPUT = SAVES_OUTPUT.replace("ctx.save_for_backward(y)", "ctx.save_for_backward(x)")
SETUP_CONTEXT_OUTPUT = """
class F(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        values = output
        ctx.save_for_backward(values)
"""
MARKED_IN_SETUP_CONTEXT = """
class F(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.max(dim=1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        values, indices = output
        ctx.mark_non_differentiable(indices)
"""


NUMPY_SIN = """
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return torch.from_numpy(np.sin(x.detach().numpy()))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        return grad_output
"""


@pytest.mark.parametrize(("source", "required", "missing"), [
    (NUMPY_SIN, ["materialize_grads_off", "once_differentiable"], []),
    (NUMPY_SIN.replace("@once_differentiable", "@torch.autograd.function.once_differentiable"), ["once_differentiable"], []),
    (NUMPY_SIN.replace("set_materialize_grads(False)", "set_materialize_grads(value=False)"), ["materialize_grads_off"], []),
    # True (the default), a variable, or the call outside forward and setup_context does not count.
    (NUMPY_SIN.replace("set_materialize_grads(False)", "set_materialize_grads(True)"), ["materialize_grads_off"],
     ["materialize_grads_off"]),
    (NUMPY_SIN.replace("set_materialize_grads(False)", "set_materialize_grads(flag)"), ["materialize_grads_off"],
     ["materialize_grads_off"]),
    (NUMPY_SIN.replace("ctx.set_materialize_grads(False)\n", "").replace("return grad_output",
                                                                        "ctx.set_materialize_grads(False)"),
     ["materialize_grads_off"], ["materialize_grads_off"]),
    # The decorator on backward, not on forward, and not commented out.
    (NUMPY_SIN.replace("    @once_differentiable\n", ""), ["once_differentiable"], ["once_differentiable"]),
    (NUMPY_SIN.replace("    @once_differentiable\n", "").replace("def forward", "@once_differentiable\n    def forward"),
     ["once_differentiable"], ["once_differentiable"]),
    (SAVES_OUTPUT, ["saves_output"], []),
    (SAVES_INPUT, ["saves_output"], ["saves_output"]),
    (SETUP_CONTEXT_OUTPUT, ["saves_output", "setup_context"], []),
    (SAVES_OUTPUT, ["setup_context"], ["setup_context"]),
    (MARKED_IN_SETUP_CONTEXT, ["mark_non_differentiable", "setup_context"], []),
    (SAVES_OUTPUT, ["mark_non_differentiable"], ["mark_non_differentiable"]),
    # A call outside the class (or a class of another name) does not count.
    ("ctx.mark_non_differentiable(i)\n" + SAVES_OUTPUT, ["mark_non_differentiable"], ["mark_non_differentiable"]),
    (SAVES_OUTPUT.replace("class F", "class G"), ["saves_output"], ["saves_output"]),
    ("class F(:\n", ["setup_context"], ["setup_context"]),
    # The last definition is the one Python keeps.
    (SAVES_OUTPUT + SAVES_INPUT, ["saves_output"], ["saves_output"]),
])
def test_missing_techniques(source, required, missing):
    assert missing_techniques(source, "F", required) == missing


def test_validation_refuses_unknown_techniques_and_a_reference_without_its_technique():
    spec = {"code": {"entry_point": "F", "technique": ["saves_output"],
                     "inputs": [{"name": "x", "type": "tensor", "shape": [3], "range": [-1.0, 1.0]}]}}
    files = {"reference.py": SAVES_INPUT, "starter.py": "class F: pass\n",
             "wrong/a.py": "# expect: wrong_sign\nclass F: pass\n"}
    problems = validate_code_exercise(spec, files)
    assert [p for p in problems if p[0] == "reference.py" and "saves_output" in p[1]], problems
    assert not validate_code_exercise(spec, {**files, "reference.py": SAVES_OUTPUT})
    _, problems = load_code_spec({"code": {**spec["code"], "technique": ["telepathy"]}})
    assert [p for p in problems if p[0] == "code.technique[0]"], problems
