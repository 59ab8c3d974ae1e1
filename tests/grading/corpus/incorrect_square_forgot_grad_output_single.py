# corpus: incorrect
# entry_point: SquareFn
# inputs: [{"name": "x", "type": "tensor", "value": [1.5]}]
# failing_check: gradcheck
# cause: forgot_grad_output
# why: The same chain-rule mistake on a one-element input, where the one-hot Jacobian rows cannot show it and only a non-unit grad_output (torch tries zeros) does.
import torch


class SquareFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2.0 * x
