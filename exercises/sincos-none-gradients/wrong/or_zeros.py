# expect: backward_error
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
        (x,) = ctx.saved_tensors
        grad_sin = grad_sin or torch.zeros_like(x)  # bool() of a tensor of several values
        grad_cos = grad_cos or torch.zeros_like(x)
        return grad_sin * torch.cos(x) - grad_cos * torch.sin(x)
