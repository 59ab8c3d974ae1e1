# expect: input_modified
# fails: inputs_unchanged
import torch


class ExpFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.detach().clone().exp_()
        x.data.exp_()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y
