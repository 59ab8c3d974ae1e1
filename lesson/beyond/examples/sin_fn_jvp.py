import torch
import torch.autograd.forward_ad as fwAD


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)  # for backward
        ctx.save_for_forward(x)   # for jvp

    @staticmethod
    def backward(ctx, grad_output):  # reverse mode: vector-Jacobian product
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)

    @staticmethod
    def jvp(ctx, x_tangent):  # forward mode: Jacobian-vector product
        (x,) = ctx.saved_tensors
        return x_tangent * torch.cos(x)


x = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
v = torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64)  # x's direction
out, tangent = torch.func.jvp(SinFn.apply, (x,), (v,))
print("torch.func.jvp:  ", tangent)
with fwAD.dual_level():
    y = SinFn.apply(fwAD.make_dual(x, v))
    print("forward_ad:      ", fwAD.unpack_dual(y).tangent)
print("v * cos(x):      ", v * torch.cos(x))
xr = x.clone().requires_grad_()
ok = torch.autograd.gradcheck(SinFn.apply, (xr,), check_forward_ad=True, raise_exception=False)
print("gradcheck with check_forward_ad=True:", ok)
