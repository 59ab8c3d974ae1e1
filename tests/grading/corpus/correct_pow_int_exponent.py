# corpus: correct
# entry_point: PowFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.5, -0.4, 0.3], [0.9, 1.4, 2.1]]}, {"name": "n", "type": "int", "value": 3}]
# why: An integer power with the exponent passed as a Python int (None in its gradient slot).
import torch


class PowFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        return x ** n

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        n = ctx.n
        return grad_output * n * x ** (n - 1), None
