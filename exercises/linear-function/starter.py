import torch


class LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        # bias may be None
        ...

    @staticmethod
    def backward(ctx, grad_output):
        # use ctx.needs_input_grad to skip what is not needed
        ...
