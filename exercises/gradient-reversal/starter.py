import torch


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ...

    @staticmethod
    def backward(ctx, grad_output):
        ...
