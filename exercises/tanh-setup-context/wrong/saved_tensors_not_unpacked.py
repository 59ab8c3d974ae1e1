# expect: backward_error
# fails: gradcheck
import torch


class TanhFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.tanh(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        y = ctx.saved_tensors  # a tuple of one tensor
        return grad_output * (1 - y * y)
