# corpus: incorrect
# entry_point: LogSigmoidFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-2.0, -0.4, 0.3], [1.1, 2.5, -3.2]]}]
# failing_check: gradcheck
# cause: wrong_sign
# why: log(sigmoid(x)) has derivative sigmoid(-x) = 1 - sigmoid(x), but backward returns sigmoid(x) - 1, the negative.
import torch
import torch.nn.functional as F


class LogSigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return -F.softplus(-x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (torch.sigmoid(x) - 1.0)
