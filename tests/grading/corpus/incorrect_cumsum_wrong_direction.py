# corpus: incorrect
# entry_point: CumsumFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0, 0.25], [1.5, 0.3, -0.7, 1.1]]}, {"name": "dim", "type": "int", "value": 1}]
# failing_check: gradcheck
# cause: wrong_value
# why: backward of cumsum applies cumsum to grad_output in the forward direction instead of the reversed (suffix) sum.
import torch


class CumsumFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return x.cumsum(dim)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.cumsum(ctx.dim), None
