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
        grad_x = None
        if grad_sin is not None:
            grad_x = grad_sin * torch.cos(x)
        if grad_cos is not None:
            part = -grad_cos * torch.sin(x)
            grad_x = part if grad_x is None else grad_x + part
        return grad_x
