# expect: backward_not_differentiable
# fails: gradgradcheck
import torch


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        y = y.detach()  # cuts y from SigmoidFn: its part of the second derivative is lost
        return grad_output * y * (1 - y)
