# corpus: incorrect
# entry_point: ScaleShiftFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], "requires_grad": false}, {"name": "gamma", "type": "tensor", "value": [1.2, -0.4, 0.8]}, {"name": "beta", "type": "tensor", "value": [0.1, 0.0, -0.3]}]
# failing_check: needs_input_grad
# cause: needs_input_grad
# why: The gradient of x (which requires no grad) is gated on ctx.needs_input_grad[1] instead of [0], so backward computes and returns a tensor where None is due; every needed gradient is right.
import torch


class ScaleShiftFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta):
        ctx.save_for_backward(x, gamma)
        return x * gamma + beta

    @staticmethod
    def backward(ctx, grad_output):
        x, gamma = ctx.saved_tensors
        grad_x = grad_gamma = grad_beta = None
        if ctx.needs_input_grad[1]:
            grad_x = grad_output * gamma
        if ctx.needs_input_grad[1]:
            grad_gamma = (grad_output * x).sum(dim=0)
        if ctx.needs_input_grad[2]:
            grad_beta = grad_output.sum(dim=0)
        return grad_x, grad_gamma, grad_beta
