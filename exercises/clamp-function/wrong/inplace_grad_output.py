# expect: grad_output_modified
# fails: grad_output_unchanged
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
        grad_output[(x < ctx.low) | (x > ctx.high)] = 0
        return grad_output, None, None
