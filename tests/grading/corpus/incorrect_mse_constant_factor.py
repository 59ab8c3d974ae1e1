# corpus: incorrect
# entry_point: MSELossFn
# inputs: [{"name": "pred", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "target", "type": "tensor", "value": [[0.0, -0.5, 1.0], [2.0, 0.3, 0.1]], "requires_grad": false}]
# failing_check: gradcheck
# cause: constant_factor
# why: A mean-reduced MSE whose backward forgets to divide by the number of elements, so the gradient is 6 times too large.
import torch


class MSELossFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pred, target):
        diff = pred - target
        ctx.save_for_backward(diff)
        return (diff * diff).mean()

    @staticmethod
    def backward(ctx, grad_output):
        (diff,) = ctx.saved_tensors
        return grad_output * 2.0 * diff, None
