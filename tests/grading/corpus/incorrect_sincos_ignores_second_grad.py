# corpus: incorrect
# entry_point: SinCosFn
# inputs: [{"name": "theta", "type": "tensor", "value": [0.1, 0.9, -1.7, 2.6, 3.3]}]
# failing_check: gradcheck
# cause: wrong_value
# why: Two differentiable outputs, but backward only propagates the sin output's gradient and drops grad_cos.
import torch


class SinCosFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, theta):
        ctx.save_for_backward(theta)
        return torch.sin(theta), torch.cos(theta)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (theta,) = ctx.saved_tensors
        return grad_sin * torch.cos(theta)
