# corpus: correct
# entry_point: WhereFn
# inputs: [{"name": "cond", "type": "tensor", "dtype": "bool", "value": [[true, false, true], [false, false, true]]}, {"name": "a", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]}, {"name": "b", "type": "tensor", "value": [0.9, -0.2, 1.3]}]
# why: torch.where with a bool condition first and a broadcast second branch: the branch gradients are masked and b's is summed over the broadcast rows.
import torch


class WhereFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.save_for_backward(cond)
        ctx.b_shape = b.shape
        return torch.where(cond, a, b)

    @staticmethod
    def backward(ctx, grad_output):
        (cond,) = ctx.saved_tensors
        zero = torch.zeros_like(grad_output)
        grad_a = torch.where(cond, grad_output, zero)
        grad_b = torch.where(cond, zero, grad_output).sum_to_size(ctx.b_shape)
        return None, grad_a, grad_b
