# corpus: correct
# entry_point: GatherFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.1, 0.2, 0.3, 0.4], [1.0, -1.0, 2.0, -2.0], [0.5, 1.5, -0.5, 3.0]]}, {"name": "dim", "type": "int", "value": 1}, {"name": "index", "type": "tensor", "dtype": "int64", "value": [[0, 0], [3, 1], [2, 2]]}]
# why: torch.gather with an int64 index tensor (no grad) that repeats positions, so backward must accumulate with scatter_add_, not overwrite with scatter_.
import torch


class GatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.save_for_backward(index)
        ctx.dim = dim
        ctx.x_shape = x.shape
        return torch.gather(x, dim, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        grad_x = grad_output.new_zeros(ctx.x_shape)
        grad_x.scatter_add_(ctx.dim, index, grad_output)
        return grad_x, None, None
