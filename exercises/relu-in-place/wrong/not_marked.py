# expect: not_marked_dirty
# fails: in_place
import torch


class ReluInPlaceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)  # x changes, and autograd is not told
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (y > 0)
