import torch


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(x):  # no ctx: forward only computes
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs  # forward's inputs, as a tuple; output: its result
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)


x = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)
# torch.func.grad: from a function with one number as its result, the
# function that computes its gradient.
slope = torch.func.grad(lambda t: SinFn.apply(t).sum())(x)
print("torch.func.grad:", slope)
print("cos(x):         ", torch.cos(x))
