# corpus: correct
# entry_point: MaxDimFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.3, 1.7, -0.4, 0.9], [2.5, -1.0, 0.1, 1.2], [-0.6, -0.2, -1.5, -0.9]]}, {"name": "dim", "type": "int", "value": 1}]
# why: Returns (values, indices) like torch.max(x, dim): the int64 indices are marked non-differentiable and backward takes one grad per output, scattering grad_values to the argmax.
import torch


class MaxDimFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        values, indices = torch.max(x, dim=dim)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.dim = dim
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape)
        grad.scatter_(ctx.dim, indices.unsqueeze(ctx.dim), grad_values.unsqueeze(ctx.dim))
        return grad, None
