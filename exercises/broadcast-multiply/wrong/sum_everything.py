# expect: wrong_value
# fails: gradcheck, gradient
import torch


class MulFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_b = torch.full_like(b, float((grad_output * a).sum()))
        return grad_output * b, grad_b
