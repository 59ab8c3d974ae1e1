# expect: input_modified
# fails: inputs_unchanged
import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x.clone())
        ctx.low, ctx.high = low, high
        return x.clamp_(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        mask = (x >= ctx.low) & (x <= ctx.high)
        return grad_output * mask, None, None
