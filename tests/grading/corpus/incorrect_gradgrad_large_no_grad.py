# corpus: incorrect
# entry_point: SoftplusFn
# inputs: [{"name": "x", "type": "tensor", "shape": [1024], "range": [-3, 3]}]
# options: {"gradgradcheck": true}
# failing_check: gradgradcheck
# cause: backward_not_differentiable
# why: backward runs under torch.no_grad() to save memory: its result is cut off from autograd, found by random projections of double backward.
import torch


class SoftplusFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.no_grad():
            return grad_output * torch.sigmoid(x)
