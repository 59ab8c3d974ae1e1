# expect: overwritten_input
# fails: gradcheck, gradient, in_place
import torch


class ReluInPlaceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)  # saved as given, but clamp_ overwrites these very values
        x.clamp_(min=0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x >= 0)  # right for the input; every value is >= 0 now
