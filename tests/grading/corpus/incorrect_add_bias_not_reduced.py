# corpus: incorrect
# entry_point: AddBiasFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "bias", "type": "tensor", "value": [0.1, -0.2, 0.3]}]
# failing_check: backward_arity
# cause: not_reduced
# why: The bias of shape (3,) is broadcast over the rows, but backward returns its gradient with the output's shape (2, 3) instead of summing over dim 0.
import torch


class AddBiasFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias):
        return x + bias

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, grad_output
