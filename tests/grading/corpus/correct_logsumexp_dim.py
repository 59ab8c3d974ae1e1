# corpus: correct
# entry_point: LogSumExpFn
# inputs: [{"name": "x", "type": "tensor", "value": [[1.0, 2.0, -0.5, 0.3], [-3.0, 0.0, 4.0, 1.5], [0.2, 0.25, -0.1, 2.2]]}, {"name": "dim", "type": "int", "value": 1}, {"name": "keepdim", "type": "bool", "value": false}]
# why: Max-shifted logsumexp over an int dim with a bool keepdim flag; backward re-inserts the reduced dim before broadcasting, and returns None for both non-tensor arguments.
import torch


class LogSumExpFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim):
        m = x.amax(dim=dim, keepdim=True)
        out = m + torch.log(torch.exp(x - m).sum(dim=dim, keepdim=True))
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        ctx.keepdim = keepdim
        return out if keepdim else out.squeeze(dim)

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        if not ctx.keepdim:
            grad_output = grad_output.unsqueeze(ctx.dim)
        return grad_output * torch.exp(x - out), None, None
