import torch


class TanhFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        ...

    @staticmethod
    def setup_context(ctx, inputs, output):
        ...

    @staticmethod
    def backward(ctx, grad_output):
        ...
