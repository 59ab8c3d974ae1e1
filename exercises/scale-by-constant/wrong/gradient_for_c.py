# expect: gradient_for_non_tensor
# fails: backward_arity, gradient
import torch


class ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, c):
        ctx.save_for_backward(x)
        ctx.c = c
        return x * c

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ctx.c, (grad_output * x).sum()
