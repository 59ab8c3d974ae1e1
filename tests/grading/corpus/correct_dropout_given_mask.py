# corpus: correct
# entry_point: DropoutFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0, 0.3], [1.5, 0.3, -0.7, 2.2]]}, {"name": "keep", "type": "tensor", "dtype": "bool", "value": [[true, false, true, true], [false, true, true, false]]}, {"name": "p", "type": "float", "value": 0.25}]
# why: Inverted dropout with the keep-mask passed in (bool tensor, so the Function is deterministic) and the drop probability as a float; backward reuses the same mask and scale.
import torch


class DropoutFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, keep, p):
        scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return x * keep * scale

    @staticmethod
    def backward(ctx, grad_output):
        (keep,) = ctx.saved_tensors
        return grad_output * keep * ctx.scale, None, None
