# expect: constant_factor
# fails: gradcheck, gradient, boundary
import torch


class DoubleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
