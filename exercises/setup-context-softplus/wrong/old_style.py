# expect: setup_context_missing
# fails: technique
import torch


class SoftplusFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.nn.functional.softplus(x, beta=beta)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(ctx.beta * x), None
