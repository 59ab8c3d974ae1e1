# corpus: correct
# entry_point: OuterFn
# inputs: [{"name": "x", "type": "tensor", "shape": [8], "range": [-1, 1]}, {"name": "y", "type": "tensor", "shape": [64], "range": [-1, 1]}]
# why: the outer product of 8 and 64 elements: few inputs but 512 outputs, too many basis grad_outputs to send, so random projections.
import torch


class OuterFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x[:, None] * y[None, :]

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y[None, :]).sum(dim=1), (grad_output * x[:, None]).sum(dim=0)
