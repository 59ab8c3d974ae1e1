# corpus: correct
# entry_point: MulSinFn
# inputs: [{"name": "x", "type": "tensor", "shape": [1000], "range": [-2, 2]}, {"name": "y", "type": "tensor", "shape": [1000], "range": [-2, 2]}]
# why: x * sin(y) on two 1000-element inputs: a 1000x2000 Jacobian, too large to send whole, checked by random projections.
import torch


class MulSinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * torch.sin(y)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * torch.sin(y), grad_output * x * torch.cos(y)
