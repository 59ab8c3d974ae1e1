# corpus: correct
# entry_point: CumsumFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0, 0.25], [1.5, 0.3, -0.7, 1.1]]}, {"name": "dim", "type": "int", "value": -1}]
# why: cumsum along a (negative) int dim whose backward is the reversed cumulative sum of grad_output (flip, cumsum, flip).
import torch


class CumsumFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return torch.cumsum(x, dim=dim)

    @staticmethod
    def backward(ctx, grad_output):
        d = ctx.dim
        return grad_output.flip(d).cumsum(d).flip(d), None
