# corpus: incorrect
# entry_point: OuterFn
# inputs: [{"name": "x", "type": "tensor", "shape": [8], "range": [-1, 1]}, {"name": "y", "type": "tensor", "shape": [64], "range": [-1, 1]}]
# failing_check: jacobian_projections
# cause: wrong_value
# why: the gradient of y sums grad_output and x separately, (sum_i g_ij) * mean(x), instead of sum_i g_ij x_i: right only when grad_output is constant along i.
import torch


class OuterFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x[:, None] * y[None, :]

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y[None, :]).sum(dim=1), grad_output.sum(dim=0) * x.mean()
