# corpus: correct
# entry_point: MaskedMeanFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0, 0.3], [1.5, 0.3, -0.7, 2.2]]}, {"name": "mask", "type": "tensor", "dtype": "bool", "value": [[true, true, false, true], [false, true, false, false]]}, {"name": "dim", "type": "int", "value": 1}]
# why: Mean over the valid (True) positions of a bool padding mask, as in sequence pooling; masked positions get zero gradient and the count comes from the mask.
import torch


class MaskedMeanFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask, dim):
        m = mask.to(x.dtype)
        count = m.sum(dim=dim, keepdim=True).clamp(min=1.0)
        ctx.save_for_backward(m, count)
        ctx.dim = dim
        return (x * m).sum(dim=dim) / count.squeeze(dim)

    @staticmethod
    def backward(ctx, grad_output):
        m, count = ctx.saved_tensors
        return grad_output.unsqueeze(ctx.dim) * m / count, None, None
