# corpus: incorrect
# entry_point: SumSquaresFn
# inputs: [{"name": "x", "type": "tensor", "shape": [1024], "range": [-1, 1]}]
# failing_check: jacobian_projections
# cause: forgot_grad_output
# why: a squared-norm loss whose backward returns 2x without multiplying by grad_output: right for loss.backward(), wrong when the loss is scaled.
import torch


class SumSquaresFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x).sum()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x
