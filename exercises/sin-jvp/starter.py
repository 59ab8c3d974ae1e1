import torch


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        # save what jvp needs, too

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)

    @staticmethod
    def jvp(ctx, x_t):
        # x_t: the tangent of x; return the tangent of sin(x)
        ...
