import torch


class MulFn(torch.autograd.Function):
    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a, b)
        # save what jvp needs, too

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * a

    @staticmethod
    def jvp(ctx, a_t, b_t):
        # one tangent per input; return the tangent of a * b
        ...
