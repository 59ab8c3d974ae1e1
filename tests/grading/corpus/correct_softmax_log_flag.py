# corpus: correct
# entry_point: SoftmaxFn
# inputs: [{"name": "x", "type": "tensor", "value": [[1.0, 2.0, 0.5], [-0.3, 0.0, 3.0]]}, {"name": "dim", "type": "int", "value": 1}, {"name": "log", "type": "bool", "value": true}]
# why: A softmax with an int dim and a bool flag selecting log-softmax; each branch saves its output and uses its own backward formula.
import torch


class SoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, log=False):
        shifted = x - x.amax(dim=dim, keepdim=True)
        if log:
            y = shifted - torch.log(torch.exp(shifted).sum(dim=dim, keepdim=True))
        else:
            e = torch.exp(shifted)
            y = e / e.sum(dim=dim, keepdim=True)
        ctx.save_for_backward(y)
        ctx.dim, ctx.log = dim, log
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        if ctx.log:
            grad = grad_output - torch.exp(y) * grad_output.sum(dim=ctx.dim, keepdim=True)
        else:
            grad = y * (grad_output - (grad_output * y).sum(dim=ctx.dim, keepdim=True))
        return grad, None, None
