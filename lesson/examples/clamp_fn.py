import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high  # plain floats: attributes of ctx
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        mask = (x >= ctx.low) & (x <= ctx.high)
        # One value per forward input: x, low, high.
        return grad_output * mask, None, None


x = torch.tensor([-2.0, -0.5, 0.3, 2.0], requires_grad=True)
y = ClampFn.apply(x, -1.0, 1.0)
y.sum().backward()
print("y =", y.tolist())
print("x.grad =", x.grad.tolist())
