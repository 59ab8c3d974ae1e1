# corpus: incorrect
# entry_point: Parabola
# inputs: [{"name": "x", "type": "tensor", "value": [-1.5, -0.2, 0.6, 1.9]}, {"name": "a", "type": "float", "value": 0.5}, {"name": "b", "type": "float", "value": -1.0}, {"name": "c", "type": "float", "value": 2.0}]
# options: {"forward_ad": true}
# failing_check: forward_ad
# cause: jvp_not_saved_for_forward
# why: a x^2 + b x + c and its slope as outputs, setup_context saving the slope with save_for_backward only, so ctx.saved_tensors is empty in jvp and forward mode (torch.func.hessian, jacfwd) fails while grad works (after pytorch/pytorch issue 121084, "forward differentiation cannot access ctx.saved_tensors").
import torch


class Parabola(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, a, b, c):
        y = a * x.square() + b * x + c
        dydx = 2 * a * x + b
        return y, dydx

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        _, a, _, _ = inputs
        _, dydx = outputs
        ctx.a = a
        ctx.save_for_backward(dydx)

    @staticmethod
    def backward(ctx, grad_y, grad_dydx):
        (dydx,) = ctx.saved_tensors
        return grad_y * dydx + grad_dydx * 2 * ctx.a, None, None, None

    @staticmethod
    def jvp(ctx, x_t, a_t, b_t, c_t):
        (dydx,) = ctx.saved_tensors
        return x_t * dydx, x_t * 2 * ctx.a
