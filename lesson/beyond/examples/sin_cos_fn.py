import torch

received = []  # what backward was given, for the printout below


class SinCosFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)  # unused outputs send None
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        received.append((grad_sin is None, grad_cos is None))
        (x,) = ctx.saved_tensors
        grad_x = None  # None: no gradient for x (yet)
        if grad_sin is not None:
            grad_x = grad_sin * torch.cos(x)
        if grad_cos is not None:
            term = -grad_cos * torch.sin(x)
            grad_x = term if grad_x is None else grad_x + term
        return grad_x


x = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
s, c = SinCosFn.apply(x)
s.sum().backward()  # the loss uses the sine only
print("grad_sin is None, grad_cos is None:", received[-1])
print("x.grad:", x.grad, "= cos(x)")
