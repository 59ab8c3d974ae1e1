# corpus: incorrect
# entry_point: ClampFn
# inputs: [{"name": "x", "type": "tensor", "value": [-2.0, -0.5, 0.3, 2.0]}, {"name": "low", "type": "float", "value": -1.0}, {"name": "high", "type": "float", "value": 1.0}]
# failing_check: backward_arity
# cause: gradient_for_non_tensor
# why: backward returns 0.0 for each float bound instead of None.
import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        inside = ((x >= ctx.low) & (x <= ctx.high)).to(grad_output.dtype)
        return grad_output * inside, 0.0, 0.0
