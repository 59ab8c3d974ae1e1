# corpus: correct
# entry_point: SigmoidFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-3.0, -0.4, 0.0], [0.7, 1.9, 4.5]]}]
# why: Saves the forward output instead of the input and builds the derivative y * (1 - y) from it, as most tutorials do.
import torch


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1.0 / (1.0 + torch.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1.0 - y)
