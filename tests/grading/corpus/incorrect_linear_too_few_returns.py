# corpus: incorrect
# entry_point: LinearFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.2, -1.0, 0.5], [1.3, 0.4, -0.6]]}, {"name": "weight", "type": "tensor", "value": [[0.1, 0.2, -0.3], [0.5, -0.4, 0.6]]}, {"name": "bias", "type": "tensor", "value": [0.05, -0.15]}]
# failing_check: backward_arity
# cause: wrong_number_of_returns
# why: forward takes x, weight and bias but backward returns only the gradients of x and weight.
import torch


class LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.T + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        return grad_output @ weight, grad_output.T @ x
