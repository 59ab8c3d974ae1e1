# corpus: incorrect
# entry_point: MulSinFn
# inputs: [{"name": "x", "type": "tensor", "shape": [1000], "range": [-2, 2]}, {"name": "y", "type": "tensor", "shape": [1000], "range": [-2, 2]}]
# failing_check: jacobian_projections
# cause: wrong_value
# why: the gradient of y is built from a slice that stops one short and is padded with a zero, so one element of 2000 has no gradient; random projections of the 1000x2000 Jacobian find it.
import torch
import torch.nn.functional as F


class MulSinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * torch.sin(y)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        grad_y = F.pad(grad_output[:-1] * x[:-1] * torch.cos(y[:-1]), (0, 1))
        return grad_output * torch.sin(y), grad_y
