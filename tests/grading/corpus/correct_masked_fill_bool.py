# corpus: correct
# entry_point: MaskedFillFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "mask", "type": "tensor", "dtype": "bool", "value": [[true, false, false], [false, true, true]]}, {"name": "value", "type": "float", "value": -10000.0}]
# why: Attention-style masked_fill with a bool mask tensor input (no grad) and a float fill value; filled positions get zero gradient.
import torch


class MaskedFillFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        return x.masked_fill(mask, value)

    @staticmethod
    def backward(ctx, grad_output):
        (mask,) = ctx.saved_tensors
        return grad_output.masked_fill(mask, 0.0), None, None
