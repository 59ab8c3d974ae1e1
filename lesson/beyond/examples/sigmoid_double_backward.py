import torch
from torch.autograd import gradgradcheck
from torch.autograd.function import once_differentiable


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)  # an output: autograd knows where it came from
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)  # torch operations: recorded


class SigmoidFromExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = torch.exp(-x)
        ctx.save_for_backward(e)  # neither an input nor an output
        return 1 / (1 + e)

    @staticmethod
    def backward(ctx, grad_output):
        (e,) = ctx.saved_tensors
        return grad_output * e / (1 + e) ** 2  # e has no history


class SigmoidOnce(SigmoidFn):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


x = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
for fn in (SigmoidFn, SigmoidFromExp, SigmoidOnce):
    first = torch.autograd.gradcheck(fn.apply, (x,), raise_exception=False)
    second = gradgradcheck(fn.apply, (x,), raise_exception=False)
    print(f"{fn.__name__:15} gradcheck {first!s:5}  gradgradcheck {second}")

y = SigmoidOnce.apply(x)
incoming = torch.ones_like(y, requires_grad=True)  # itself differentiated
(g,) = torch.autograd.grad(y, x, incoming, create_graph=True)
try:
    g.sum().backward()
except RuntimeError as error:
    print("SigmoidOnce, double backward:", error)
