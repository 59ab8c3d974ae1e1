# corpus: incorrect
# entry_point: numpy_sin
# inputs: [{"name": "x", "type": "tensor", "value": [[0.4, -1.3, 2.2, 0.0], [-0.6, 1.7, -2.5, 0.9]]}]
# failing_check: op_autograd_registration
# cause: op_no_autograd_formula
# why: a custom op whose implementation calls a torch.autograd.Function for its gradient instead of registering a formula with register_autograd: inside the op the Function is invisible to autograd, so no gradient flows (the composition pytorch/tutorials advanced_source/python_custom_ops.py warns against).
import torch


class _SinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x)


@torch.library.custom_op("corpus::sin_via_function", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    return _SinFn.apply(x)


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)
