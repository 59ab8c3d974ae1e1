# expect: wrong_value
# fails: gradcheck, gradient
import torch


class MaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(dim=1)
        ctx.mark_non_differentiable(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        return grad_values.unsqueeze(1).expand(ctx.shape).clone()
