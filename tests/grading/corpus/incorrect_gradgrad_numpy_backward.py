# corpus: incorrect
# entry_point: SinFn
# inputs: [{"name": "x", "type": "tensor", "value": [0.4, -1.3, 2.2, 0.9, -0.1]}]
# options: {"gradgradcheck": true}
# failing_check: gradgradcheck
# cause: backward_not_differentiable
# why: backward computes cos(x) with numpy, which autograd cannot see: gradients are right, double backward is not.
import numpy as np
import torch


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.from_numpy(np.cos(x.detach().numpy()))
