# corpus: correct
# entry_point: MyLinear
# inputs: [{"name": "x", "type": "tensor", "value": [[0.2, -1.0, 0.5], [1.3, 0.4, -0.6]]}, {"name": "weight", "type": "tensor", "value": [[0.1, 0.2, -0.3], [0.5, -0.4, 0.6], [-0.7, 0.8, 0.9], [1.0, -1.1, 0.2]]}, {"name": "bias", "type": "none"}]
# why: The docs-style custom linear layer called with bias=None: saves a None, checks ctx.needs_input_grad for each input and returns None for the absent bias.
import torch
from torch.autograd import Function


class MyLinear(Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight, bias)
        out = torch.matmul(x, weight.t())
        if bias is not None:
            out = out + bias
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, bias = ctx.saved_tensors
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output @ weight
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t() @ x
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_x, grad_weight, grad_bias
