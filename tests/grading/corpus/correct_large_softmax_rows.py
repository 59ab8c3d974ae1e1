# corpus: correct
# entry_point: SoftmaxFn
# inputs: [{"name": "x", "type": "tensor", "shape": [32, 32], "range": [-3, 3]}]
# why: a row-wise softmax of 1024 elements with the saved output in backward; its Jacobian is dense within each row and checked by random projections.
import torch


class SoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, dim=1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(dim=1, keepdim=True))
