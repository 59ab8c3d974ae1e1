import torch


class MulFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_a = (grad_output * b).sum_to_size(a.shape)
        grad_b = (grad_output * a).sum_to_size(b.shape)
        return grad_a, grad_b
