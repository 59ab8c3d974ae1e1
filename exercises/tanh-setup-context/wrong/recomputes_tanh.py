# expect: output_not_saved
# fails: technique
import torch


class TanhFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.tanh(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        y = torch.tanh(x)  # forward computed this already
        return grad_output * (1 - y * y)
