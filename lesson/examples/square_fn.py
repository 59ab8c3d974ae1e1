import torch


class SquareFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


x = torch.tensor(4.0, requires_grad=True)
y = SquareFn.apply(x)
y.backward()
print("y =", y.item(), " x.grad =", x.grad.item())
