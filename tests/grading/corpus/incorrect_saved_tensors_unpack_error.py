# corpus: incorrect
# entry_point: ScaledExpFn
# inputs: [{"name": "x", "type": "tensor", "value": [-0.5, 0.25, 1.0, 1.75]}, {"name": "scale", "type": "float", "value": 0.5}]
# failing_check: gradcheck
# cause: backward_error
# why: forward saves two tensors but backward unpacks ctx.saved_tensors into one name, so backward raises ValueError.
import torch


class ScaledExpFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        y = torch.exp(scale * x)
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * ctx.scale * y, None
