# corpus: incorrect
# entry_point: ExpFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.0, 0.25, 0.8], [1.6, -0.4, 2.3]]}]
# failing_check: gradcheck
# cause: float32_imprecise
# why: forward computes in float32 (x.float()) and casts back to float64, so finite differences of forward with eps=1e-6 are dominated by float32 rounding.
import torch


class ExpFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.exp(x.float()).to(x.dtype)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y
