# corpus: incorrect
# entry_point: MatVecFn
# inputs: [{"name": "W", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "v", "type": "tensor", "value": [0.2, -0.4, 1.1]}]
# failing_check: backward_arity
# cause: wrong_shape
# why: v is a 1-D vector of shape (3,) but backward treats it as a column and returns its gradient with shape (3, 1), which cannot be reduced to (3,).
import torch


class MatVecFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, W, v):
        ctx.save_for_backward(W, v)
        return W @ v

    @staticmethod
    def backward(ctx, grad_output):
        W, v = ctx.saved_tensors
        g = grad_output.unsqueeze(1)
        grad_W = g @ v.unsqueeze(0)
        grad_v = W.t() @ g
        return grad_W, grad_v
