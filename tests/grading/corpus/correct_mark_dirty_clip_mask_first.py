# corpus: correct
# entry_point: ClipInPlace
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.7, -0.4, 0.3], [0.8, 1.6, 2.5]]}, {"name": "clip", "type": "float", "value": 1.2}]
# options: {"in_place": true}
# why: an activation clipped to [0, clip] in place to save memory, the pass-through mask taken before the input is overwritten, the input marked dirty and returned (the in-place path of the clipped-ReLU quantizers of IntelLabs/distiller distiller/quantization/q_utils.py, done right).
import torch


class ClipInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, clip):
        mask = (x >= 0) & (x <= clip)
        ctx.save_for_backward(mask)
        x.clamp_(0.0, clip)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (mask,) = ctx.saved_tensors
        return grad_output * mask, None
