# corpus: incorrect
# entry_point: NoisyTanhFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.2, -0.3, 0.4], [0.9, 1.7, -2.1]]}]
# failing_check: gradcheck
# cause: not_reentrant
# why: backward adds small random "gradient noise" (torch.randn_like) for regularization, so two backward calls with the same grad_output give different results.
import torch


class NoisyTanhFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        grad = grad_output * (1 - y * y)
        return grad + 1e-6 * torch.randn_like(grad) * grad.abs()
