# corpus: correct
# entry_point: FusedMulAddFn
# inputs: [{"name": "a", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "b", "type": "tensor", "value": [0.2, -0.4, 1.1]}, {"name": "c", "type": "tensor", "value": [[0.3], [-0.9]]}]
# why: a * b + c with three tensors of different broadcast shapes, (2, 3), (3,) and (2, 1); each gradient is reduced to its input's shape with sum_to_size.
import torch


class FusedMulAddFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        ctx.c_shape = c.shape
        return torch.addcmul(c, a, b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_a = (grad_output * b).sum_to_size(a.shape)
        grad_b = (grad_output * a).sum_to_size(b.shape)
        grad_c = grad_output.sum_to_size(ctx.c_shape)
        return grad_a, grad_b, grad_c
