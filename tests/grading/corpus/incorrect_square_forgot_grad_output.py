# corpus: incorrect
# entry_point: SquareFn
# inputs: [{"name": "x", "type": "tensor", "value": [-1.5, -0.5, 0.25, 1.0, 2.0]}]
# failing_check: gradcheck
# cause: forgot_grad_output
# why: backward returns the local derivative 2 * x without multiplying by grad_output (no chain rule).
import torch


class SquareFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x
