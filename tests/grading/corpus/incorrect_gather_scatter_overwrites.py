# corpus: incorrect
# entry_point: GatherFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.1, 0.2, 0.3, 0.4], [1.0, -1.0, 2.0, -2.0], [0.5, 1.5, -0.5, 3.0]]}, {"name": "dim", "type": "int", "value": 1}, {"name": "index", "type": "tensor", "dtype": "int64", "value": [[0, 0], [3, 1], [2, 2]]}]
# failing_check: gradcheck
# cause: wrong_value
# why: backward of gather uses scatter (overwrite) instead of scatter_add, so gradients of repeated indices are lost instead of summed.
import torch


class GatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.save_for_backward(index)
        ctx.dim = dim
        ctx.x_shape = x.shape
        return x.gather(dim, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        grad_x = torch.zeros(ctx.x_shape, dtype=grad_output.dtype)
        grad_x.scatter_(ctx.dim, index, grad_output)
        return grad_x, None, None
