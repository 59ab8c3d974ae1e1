# expect: constant_factor
# fails: gradient
import torch


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return -grad_output, None
