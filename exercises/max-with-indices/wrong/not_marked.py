# expect: not_marked_non_differentiable
# fails: technique
import torch


class MaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(dim=1)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad_x = grad_values.new_zeros(ctx.shape)
        return grad_x.scatter(1, indices.unsqueeze(1), grad_values.unsqueeze(1))
