# corpus: incorrect
# entry_point: LeakyReLUFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.0, 0.5, -0.2], [2.0, -3.0, 0.7]]}, {"name": "negative_slope", "type": "float", "value": 0.1}]
# failing_check: backward_arity
# cause: gradient_for_non_tensor
# why: backward also returns the derivative with respect to the float negative_slope (a tensor summed over the negative inputs) where None is due.
import torch


class LeakyReLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, negative_slope):
        ctx.save_for_backward(x)
        ctx.negative_slope = negative_slope
        return torch.where(x > 0, x, x * negative_slope)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        neg = x <= 0
        grad_x = torch.where(neg, grad_output * ctx.negative_slope, grad_output)
        grad_slope = (grad_output * x * neg).sum()
        return grad_x, grad_slope
