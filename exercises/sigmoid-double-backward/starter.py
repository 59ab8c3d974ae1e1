import torch


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ...

    @staticmethod
    def backward(ctx, grad_output):
        # torch operations only: this backward is differentiated again
        ...
