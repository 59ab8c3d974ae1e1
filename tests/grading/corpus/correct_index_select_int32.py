# corpus: correct
# entry_point: RowSelectFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, 1.0, -1.5], [2.0, -0.25, 0.75], [1.25, 0.3, -2.2], [0.9, -0.6, 0.4]]}, {"name": "dim", "type": "int", "value": 0}, {"name": "index", "type": "tensor", "dtype": "int32", "value": [2, 0, 2]}]
# why: index_select with an int32 index tensor (cast to int64 for index_add_ in backward) and a repeated row.
import torch


class RowSelectFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.save_for_backward(index)
        ctx.dim = dim
        ctx.x_shape = x.shape
        return torch.index_select(x, dim, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        grad = torch.zeros(ctx.x_shape, dtype=grad_output.dtype, device=grad_output.device)
        grad.index_add_(ctx.dim, index.long(), grad_output)
        return grad, None, None
