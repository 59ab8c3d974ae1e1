# corpus: correct
# entry_point: SinCosFn
# inputs: [{"name": "theta", "type": "tensor", "value": [0.1, 0.9, -1.7, 2.6, 3.3]}]
# why: Two differentiable outputs (sin and cos, as in rotary embeddings); backward combines both incoming gradients.
import torch


class SinCosFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, theta):
        s, c = torch.sin(theta), torch.cos(theta)
        ctx.save_for_backward(s, c)
        return s, c

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        s, c = ctx.saved_tensors
        return grad_sin * c - grad_cos * s
