# expect: wrong_number_of_returns
# fails: backward_arity, gradient
import torch


class ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, c):
        ctx.c = c
        return x * c

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.c
