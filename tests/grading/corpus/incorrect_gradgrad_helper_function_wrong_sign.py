# corpus: incorrect
# entry_point: SinFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.4, -1.3, 2.2], [0.9, -0.1, 1.7]]}]
# options: {"gradgradcheck": true}
# failing_check: gradgradcheck
# cause: wrong_sign
# why: backward calls a custom CosFn whose own backward returns +sin: first derivatives are right, second derivatives have the wrong sign.
import torch


class CosFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.cos(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sin(x)


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * CosFn.apply(x)
