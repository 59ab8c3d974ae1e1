# expect: backward_not_differentiable
# fails: gradgradcheck, technique
import torch


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = torch.exp(-x)
        ctx.save_for_backward(e)  # neither an input nor the output: no history
        return 1 / (1 + e)

    @staticmethod
    def backward(ctx, grad_output):
        (e,) = ctx.saved_tensors
        return grad_output * e / (1 + e) ** 2
