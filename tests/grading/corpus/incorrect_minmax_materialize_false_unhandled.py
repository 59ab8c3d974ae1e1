# corpus: incorrect
# entry_point: AminmaxFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.3, 1.7, -0.4, 0.9], [2.5, -1.0, 0.1, 1.2]]}]
# failing_check: gradcheck
# cause: backward_error
# why: ctx.set_materialize_grads(False) is set, but backward uses both incoming gradients unconditionally, so it raises when only one output is used (its grad is None).
import torch


class AminmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        lo, lo_idx = x.min(dim=-1)
        hi, hi_idx = x.max(dim=-1)
        ctx.save_for_backward(lo_idx, hi_idx)
        ctx.shape = x.shape
        return lo, hi

    @staticmethod
    def backward(ctx, grad_lo, grad_hi):
        lo_idx, hi_idx = ctx.saved_tensors
        grad = grad_lo.new_zeros(ctx.shape)
        grad.scatter_add_(-1, lo_idx.unsqueeze(-1), grad_lo.unsqueeze(-1))
        grad.scatter_add_(-1, hi_idx.unsqueeze(-1), grad_hi.unsqueeze(-1))
        return grad
