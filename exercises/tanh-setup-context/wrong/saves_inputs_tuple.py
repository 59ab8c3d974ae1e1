# expect: forward_error
# fails: forward
import torch


class TanhFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.tanh(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs)  # the tuple itself, not the tensors in it

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        y = torch.tanh(x)
        return grad_output * (1 - y * y)
