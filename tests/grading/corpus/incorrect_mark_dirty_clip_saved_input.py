# corpus: incorrect
# entry_point: ClipInPlace
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.7, -0.4, 0.3], [0.8, 1.6, 2.5]]}, {"name": "clip", "type": "float", "value": 1.2}]
# options: {"in_place": true}
# failing_check: in_place
# cause: overwritten_input
# why: an activation clipped to [0, clip] in place and marked dirty, but the input is saved before the clamp_ and backward builds its mask from it after the clamp, so every element passes the gradient (the inplace path of IntelLabs/distiller distiller/quantization/q_utils.py's LearnedClippedLinearQuantizeSTE, which saves its input and then clamps it in place).
import torch


class ClipInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, clip):
        ctx.clip = clip
        ctx.save_for_backward(x)
        x.clamp_(0.0, clip)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ((x >= 0) & (x <= ctx.clip)), None
