# expect: forgot_grad_output
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
        return (torch.ones_like(grad_output) * b).sum_to_size(a.shape), (torch.ones_like(grad_output) * a).sum_to_size(b.shape)
