# corpus: correct
# entry_point: MeanVarFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0, 0.3], [1.5, 0.3, -0.7, 2.2]]}]
# why: Two outputs (mean, biased variance) with ctx.set_materialize_grads(False): backward receives None for an output that was not used and skips its term.
import torch


class MeanVarFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        mean = x.mean(dim=-1)
        centered = x - mean.unsqueeze(-1)
        var = (centered * centered).mean(dim=-1)
        ctx.save_for_backward(centered)
        return mean, var

    @staticmethod
    def backward(ctx, grad_mean, grad_var):
        (centered,) = ctx.saved_tensors
        n = centered.shape[-1]
        grad_x = None
        if grad_mean is not None:
            grad_x = grad_mean.unsqueeze(-1).expand_as(centered) / n
        if grad_var is not None:
            term = grad_var.unsqueeze(-1) * 2.0 * centered / n
            grad_x = term if grad_x is None else grad_x + term
        return grad_x
