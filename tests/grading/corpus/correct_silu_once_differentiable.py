# corpus: correct
# entry_point: SiLUFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-4.0, -1.2, -0.1], [0.4, 1.8, 3.5]]}]
# why: A SiLU/swish whose backward is decorated with @once_differentiable (it runs under no_grad and cannot be differentiated again), as in many fused-kernel libraries.
import torch
from torch.autograd.function import once_differentiable


class SiLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        sig = torch.sigmoid(x)
        ctx.save_for_backward(x, sig)
        return x * sig

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, sig = ctx.saved_tensors
        return grad_output * sig * (1.0 + x * (1.0 - sig))
