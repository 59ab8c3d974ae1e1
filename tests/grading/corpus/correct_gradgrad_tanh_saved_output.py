# corpus: correct
# entry_point: TanhFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.3, -1.2, 0.8, 2.1], [-0.4, 1.5, -2.0, 0.05], [1.1, -0.7, 0.2, -1.6]]}]
# options: {"gradgradcheck": true}
# why: tanh saving its output: backward 1 - y^2 is built from torch operations on the saved output, so autograd differentiates it again.
import torch


class TanhFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (1 - y * y)
