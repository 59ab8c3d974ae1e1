# expect: wrong_value
# fails: gradcheck
import torch


class SinCosFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        if grad_sin is None or grad_cos is None:
            return None  # drops the part of the output that was used
        (x,) = ctx.saved_tensors
        return grad_sin * torch.cos(x) - grad_cos * torch.sin(x)
