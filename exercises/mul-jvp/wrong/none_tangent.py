# expect: jvp_missing_tangent
# fails: forward_ad
import torch


class MulFn(torch.autograd.Function):
    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.set_materialize_grads(False)  # an input without a tangent now sends None
        ctx.save_for_backward(a, b)
        ctx.save_for_forward(a, b)

    @staticmethod
    def backward(ctx, grad_output):
        if grad_output is None:  # backward checks for None
            return None, None
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * a

    @staticmethod
    def jvp(ctx, a_t, b_t):
        a, b = ctx.saved_tensors
        return a_t * b + a * b_t  # fails when a_t or b_t is None
