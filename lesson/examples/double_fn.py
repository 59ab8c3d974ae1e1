import torch


class DoubleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        # d(2x)/dx = 2, times the gradient arriving from above (the chain rule).
        return grad_output * 2


x = torch.tensor([3.0], requires_grad=True)
y = DoubleFn.apply(x)
y.backward()
print("y =", y.tolist(), " x.grad =", x.grad.tolist())
