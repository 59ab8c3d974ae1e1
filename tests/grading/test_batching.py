"""The batching checks end to end: real Functions run in the sandbox (Judge.run with vmap), each
wrong one failing with its named cause, and our batched-gradient verdict beside torch's own
gradcheck(check_batched_grad=True) on the same Functions (torch runs in this process)."""

from __future__ import annotations

import textwrap
import warnings

import pytest

INPUTS = [{"name": "x", "type": "tensor", "shape": [3, 4], "range": [-2.0, 2.0], "avoid": [-1.0, 1.0],
           "avoid_margin": 0.05},
          {"name": "low", "type": "float", "value": -1.0}, {"name": "high", "type": "float", "value": 1.0}]

FORWARD = "return x.clamp(low, high)"
BACKWARD = "return grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None"


def clamp_fn(forward: str = FORWARD, backward: str = BACKWARD, *, head: str = "    generate_vmap_rule = True\n",
             extra: str = "") -> str:
    """A ClampFn in torch 2's style (forward without ctx, setup_context), with these bodies."""
    return textwrap.dedent('''\
        import torch


        class ClampFn(torch.autograd.Function):
        {head}
            @staticmethod
            def forward(x, low, high):
        {forward}

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, low, high = inputs
                ctx.save_for_backward(x)
                ctx.low, ctx.high = low, high

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
        {backward}
        {extra}
        ''').format(head=head, forward=textwrap.indent(forward, " " * 8), backward=textwrap.indent(backward, " " * 8),
                    extra=textwrap.indent(extra, " " * 4))


RIGHT = clamp_fn()
RULE = '''
@staticmethod
def vmap(info, in_dims, x, low, high):
    return ClampFn.apply(x, low, high), in_dims[0]
'''
RIGHT_STATICMETHOD = clamp_fn(head="", extra=RULE)
WRONG_OUT_DIMS = clamp_fn(head="", extra=RULE.replace("in_dims[0]\n", "0\n"))
NO_RULE = clamp_fn(head="")
OLD_STYLE = textwrap.dedent('''\
    import torch


    class ClampFn(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(ctx, x, low, high):
            ctx.save_for_backward(x)
            ctx.low, ctx.high = low, high
            return x.clamp(low, high)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None
    ''')
ITEM_IN_FORWARD = clamp_fn("if x.min().item() >= low and x.max().item() <= high:\n    return x.clone()\n" + FORWARD)
IN_PLACE_BUFFER = clamp_fn("out = torch.zeros(x.shape, dtype=x.dtype)\nout.copy_(x)\nreturn out.clamp(low, high)")
# forward(x, scale) scales x in place: under vmap, with x shared by the batch and scale batched, torch refuses
SCALE_IN_PLACE = textwrap.dedent('''\
    import torch


    class ScaleFn(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, scale):
            x.mul_(scale)
            return x.clone()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, scale = inputs
            ctx.save_for_backward(x, scale)

        @staticmethod
        def backward(ctx, grad_output):
            x, scale = ctx.saved_tensors
            return grad_output * scale, grad_output * x
    ''')
SCALE_INPUTS = [{"name": "x", "type": "tensor", "shape": [4], "range": [-2.0, 2.0]},
                {"name": "scale", "type": "tensor", "shape": [4], "range": [0.5, 2.0]}]
MASK = "((x >= ctx.low) & (x <= ctx.high))"
BACKWARD_ITEM = clamp_fn(backward=f"""largest = grad_output.abs().max().item()
return grad_output * {MASK} * (1.0 if largest >= 0 else 0.0), None, None""")
BACKWARD_BUFFER = clamp_fn(backward=f"""out = torch.zeros(x.shape, dtype=x.dtype)
m = {MASK}
out[m] = grad_output[m]
return out, None, None""")
BACKWARD_NUMPY = clamp_fn(backward=f"""g = torch.from_numpy(grad_output.numpy().copy())
return g * {MASK}, None, None""")
BACKWARD_IF = clamp_fn(backward=f"""if (grad_output > 0).all():
    return grad_output.clone(), None, None
return grad_output * {MASK}, None, None""")
BACKWARD_IN_PLACE_ON_GRAD_OUTPUT = clamp_fn(backward="""g = grad_output.clone()
g[(x < ctx.low) | (x > ctx.high)] = 0
return g, None, None""")
BACKWARD_EINSUM = clamp_fn(backward=f"return torch.einsum('ij,ij->ij', grad_output, {MASK}.to(grad_output.dtype)), None, None")

def _checks(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result.get("checks", [])}


def _run(judge, source: str, entry: str = "ClampFn", inputs: list | None = None) -> dict:
    result = judge.run(source, entry, inputs or INPUTS, options={"vmap"})
    assert result["status"] == "ok", result
    return result


@pytest.mark.parametrize("source", [RIGHT, RIGHT_STATICMETHOD], ids=["generate_vmap_rule", "vmap_staticmethod"])
def test_a_function_ready_for_vmap_passes(judge, source):
    result = _run(judge, source)
    checks = _checks(result)
    assert checks["vmap"]["passed"] and checks["batched_grad"]["passed"], checks
    assert result["passed"] is True
    assert "vmap over a batch of 2" in checks["vmap"]["message"] and "2 ways of batching" in checks["vmap"]["message"]
    assert checks["vmap"]["description"].startswith("torch.func.vmap of your Function")


def test_a_run_without_vmap_has_no_batching_checks(judge):
    result = judge.run(RIGHT, "ClampFn", INPUTS)
    assert result["passed"] is True and not {"vmap", "batched_grad"} & set(_checks(result))


@pytest.mark.parametrize(("source", "entry", "inputs", "cause", "words"), [
    (OLD_STYLE, "ClampFn", INPUTS, "vmap_setup_context_missing", "must override the setup_context"),
    (NO_RULE, "ClampFn", INPUTS, "vmap_rule_missing", "does not have vmap support"),
    (ITEM_IN_FORWARD, "ClampFn", INPUTS, "vmap_data_dependent", ".item()"),
    (IN_PLACE_BUFFER, "ClampFn", INPUTS, "vmap_in_place", "inplace"),
    (SCALE_IN_PLACE, "ScaleFn", SCALE_INPUTS, "vmap_in_place", "inplace"),
    (WRONG_OUT_DIMS, "ClampFn", INPUTS, "vmap_wrong_out_dims", "should have shape [3, 4, 2]"),
    (BACKWARD_ITEM, "ClampFn", INPUTS, "vmap_data_dependent", ".item()"),
], ids=["old_style_forward", "no_vmap_rule", "item_in_forward", "in_place_into_a_buffer", "in_place_on_a_shared_input",
        "wrong_out_dims", "item_in_backward"])
def test_a_function_that_breaks_under_vmap_fails_with_its_cause(judge, source, entry, inputs, cause, words):
    result = _run(judge, source, entry, inputs)
    vmap = _checks(result)["vmap"]
    assert vmap["passed"] is False and vmap["likely_cause"] == cause, vmap
    assert words in vmap["message"]
    assert result["passed"] is False and cause in result["likely_causes"]


def test_in_place_on_a_shared_input_is_named_with_the_call_that_shares_it(judge):
    vmap = _checks(_run(judge, SCALE_IN_PLACE, "ScaleFn", SCALE_INPUTS))["vmap"]
    assert "in_dims=(None, 0)" in vmap["message"] and "(x shared by the whole batch)" in vmap["message"]


def test_the_wrong_out_dims_passes_with_the_batch_in_front_and_fails_at_the_end(judge):
    vmap = _checks(_run(judge, WRONG_OUT_DIMS))["vmap"]
    assert "in_dims=(2, None, None) and out_dims=-1" in vmap["message"]
    assert vmap["shapes"] == {"output": "the output", "vmap": [4, 2, 3], "expected": [3, 4, 2]}


@pytest.mark.parametrize(("source", "cause"), [
    (BACKWARD_ITEM, "vmap_data_dependent"),
    (BACKWARD_BUFFER, "vmap_in_place"),
    (BACKWARD_NUMPY, "vmap_data_dependent"),
    (BACKWARD_IF, "vmap_data_dependent"),
], ids=["item", "zeros_buffer", "numpy", "python_if"])
def test_a_backward_that_breaks_for_a_batch_of_grad_outputs_fails_with_its_cause(judge, source, cause):
    batched = _checks(_run(judge, source))["batched_grad"]
    assert batched["passed"] is False and batched["likely_cause"] == cause, batched
    assert "for a batch of 2 grad_outputs of the output at once raised" in batched["message"]


# --------------------------------------------------------------------------- beside torch's own check


def _torch_batched_grad(source: str) -> bool | None:
    """torch.autograd.gradcheck(check_batched_grad=True)'s verdict on its batched-gradient test
    (None: gradcheck fails without it, so that test says nothing)."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(source, "submission.py", "exec"), namespace)  # noqa: S102 - our own test Functions
    fn = namespace["ClampFn"]
    x = torch.tensor([[-1.7, -0.6, 0.2, 0.9], [1.4, -1.3, 0.5, -0.2], [0.1, 1.8, -0.8, 0.7]], dtype=torch.float64,
                     requires_grad=True)

    def check(batched: bool) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return bool(torch.autograd.gradcheck(lambda t: fn.apply(t, -1.0, 1.0), (x,), check_batched_grad=batched,
                                                 raise_exception=False))

    return check(True) if check(False) else None


AGREEMENT = [RIGHT, RIGHT_STATICMETHOD, OLD_STYLE, NO_RULE, BACKWARD_ITEM, BACKWARD_BUFFER, BACKWARD_NUMPY, BACKWARD_IF,
             BACKWARD_IN_PLACE_ON_GRAD_OUTPUT]


@pytest.mark.parametrize("source", AGREEMENT, ids=["right", "staticmethod", "old_style", "no_rule", "backward_item",
                                                   "backward_buffer", "backward_numpy", "backward_if",
                                                   "in_place_on_a_copy"])
def test_our_batched_gradient_verdict_is_torchs(judge, source):
    theirs = _torch_batched_grad(source)
    assert theirs is not None, "gradcheck without check_batched_grad must pass: only the batched test is compared"
    ours = _checks(_run(judge, source))["batched_grad"]["passed"]
    assert ours is theirs


def test_where_torchs_older_vmap_has_no_batching_rule_we_differ_on_purpose(judge):
    """gradcheck batches backward with torch's older prototype vmap (torch._vmap_internals), which has no
    batching rule for einsum (nor flatten): it fails this right backward. We batch with torch.func.vmap,
    the vmap learners use, which batches it, and pass it."""
    assert _torch_batched_grad(BACKWARD_EINSUM) is False
    assert _checks(_run(judge, BACKWARD_EINSUM))["batched_grad"]["passed"] is True


# ---------------------------------------------------------------- grades: `vmap = true` in [code]

CLAMP_VMAP_TOML = '''title = "ClampFn under vmap"
kind = "code"
prompt = "Write ClampFn so that it works under torch.func.vmap."
topics = ["vmap"]

[code]
entry_point = "ClampFn"
vmap = true

[[code.inputs]]
name = "x"
type = "tensor"
shape = [3, 4]
range = [-2.0, 2.0]
avoid = [-1.0, 1.0]

[[code.inputs]]
name = "low"
type = "float"
value = -1.0

[[code.inputs]]
name = "high"
type = "float"
value = 1.0
'''


def test_a_grade_asked_for_vmap_checks_batching_against_the_reference(judge):
    import tomllib

    exercise = {"slug": "clamp-vmap", "spec": tomllib.loads(CLAMP_VMAP_TOML),
                "files": {"reference.py": RIGHT, "starter.py": RIGHT}}
    right = judge.grade(exercise, RIGHT)
    assert right["score"] == 1.0, [c for c in right["checks"] if not c["passed"]]
    assert {"vmap", "batched_grad"} <= {c["name"] for c in right["checks"]}
    wrong = judge.grade(exercise, ITEM_IN_FORWARD)
    checks = {c["name"]: c for c in wrong["checks"]}
    assert not checks["vmap"]["passed"] and checks["vmap"]["likely_cause"] == "vmap_data_dependent", checks["vmap"]
    assert checks["gradcheck"]["passed"] and wrong["score"] < 1.0
