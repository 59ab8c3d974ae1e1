# corpus: incorrect
# entry_point: MulSinFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "y", "type": "tensor", "value": [[0.2, 1.1, -0.6], [2.4, -1.8, 0.9]]}]
# failing_check: gradcheck
# cause: wrong_value
# why: forward computes x * sin(y) and the gradient of x is right, but the gradient of y uses sin(y) instead of cos(y).
import torch


class MulSinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * torch.sin(y)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        grad_x = grad_output * torch.sin(y)
        grad_y = grad_output * x * torch.sin(y)
        return grad_x, grad_y
