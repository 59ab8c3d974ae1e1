# expect: backward_not_differentiable
# fails: gradgradcheck
import torch


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        g = grad_output.detach().numpy()
        s = y.detach().numpy()
        return torch.from_numpy(g * s * (1 - s))  # right values, no record for a second derivative
