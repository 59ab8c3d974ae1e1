# corpus: incorrect
# entry_point: ClampFn
# inputs: [{"name": "x", "type": "tensor", "value": [-2.0, -0.5, 0.3, 2.0]}, {"name": "low", "type": "float", "value": -1.0}, {"name": "high", "type": "float", "value": 1.0}]
# failing_check: inputs_unchanged
# cause: input_modified
# why: forward clamps a detached alias of its input in place (x.detach().clamp_), so the caller's tensor is changed and no mark_dirty is declared.
import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.low, ctx.high = low, high
        ctx.mask = (x >= low) & (x <= high)
        out = x.detach().clamp_(low, high)
        return out.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.mask, None, None
