# corpus: correct
# entry_point: FrozenLinearFn
# inputs: [{"name": "x", "type": "tensor", "value": [[[0.3, -0.8], [1.1, 0.6]], [[-0.2, 0.9], [0.4, -1.3]]]}, {"name": "weight", "type": "tensor", "value": [[0.5, -0.25], [1.5, 0.75], [-1.0, 0.2]], "requires_grad": false}, {"name": "bias", "type": "tensor", "value": [0.1, -0.2, 0.3]}]
# why: A batched (B, T, in) linear with a frozen weight that requires no grad: ctx.needs_input_grad skips the weight gradient and the bias gradient is reduced over two leading dimensions.
import torch


class FrozenLinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return torch.matmul(x, weight.transpose(0, 1)) + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        needs_x, needs_w, needs_b = ctx.needs_input_grad
        grad_x = grad_w = grad_b = None
        if needs_x:
            grad_x = torch.matmul(grad_output, weight)
        if needs_w:
            grad_w = grad_output.reshape(-1, grad_output.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
        if needs_b:
            grad_b = grad_output.sum(dim=(0, 1))
        return grad_x, grad_w, grad_b
