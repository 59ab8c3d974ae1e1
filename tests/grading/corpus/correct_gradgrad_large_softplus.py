# corpus: correct
# entry_point: SoftplusFn
# inputs: [{"name": "x", "type": "tensor", "shape": [1024], "range": [-3, 3]}]
# options: {"gradgradcheck": true}
# why: softplus on 1024 elements with a differentiable backward: both Jacobians are too large to send whole and are checked by random projections.
import torch


class SoftplusFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)
