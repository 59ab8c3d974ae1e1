# expect: forgot_grad_output
# fails: gradcheck, gradient
import torch


class DoubleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return torch.full_like(grad_output, 2.0)
