# corpus: incorrect
# entry_point: ScaleShiftInPlace
# inputs: [{"name": "x", "type": "tensor", "value": [[0.4, -1.1, 2.3], [1.8, -0.6, 0.05]]}, {"name": "scale", "type": "float", "value": 4.0}, {"name": "zero_point", "type": "float", "value": 1.5}]
# options: {"in_place": true}
# failing_check: in_place
# cause: not_marked_dirty
# why: the affine step of a linear quantizer (scale * x - zero_point) done in place with an inplace flag on, returning the input without ctx.mark_dirty, so a later use of x bypasses backward (the in-place linear_quantize of IntelLabs/distiller distiller/quantization/q_utils.py with its mark_dirty left out).
import torch


class ScaleShiftInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point):
        ctx.scale = scale
        x.mul_(scale).sub_(zero_point)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None, None
