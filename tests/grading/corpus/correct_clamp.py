# corpus: correct
# entry_point: ClampFn
# inputs: [{"name": "x", "type": "tensor", "value": [-2.0, -0.5, 0.3, 2.0]}, {"name": "low", "type": "float", "value": -1.0}, {"name": "high", "type": "float", "value": 1.0}]
# why: The classic first custom Function: two float bounds that take no gradient (None in their slots) and a mask saved from forward.
import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low = low
        ctx.high = high
        return x.clamp(min=low, max=high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        inside = (x >= ctx.low) & (x <= ctx.high)
        return grad_output * inside.to(grad_output.dtype), None, None
