# corpus: correct
# entry_point: NumpyCumprodFn
# inputs: [{"name": "x", "type": "tensor", "value": [1.2, -0.8, 0.5, 1.5, -1.1]}]
# why: Forward and backward run in numpy (x.detach().numpy() in, torch.from_numpy out) as in the "extending with numpy" pattern; a cumulative product whose gradient is a reversed cumulative sum.
import numpy as np
import torch


class NumpyCumprodFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x_np = x.detach().cpu().numpy()
        y_np = np.cumprod(x_np)
        y = torch.from_numpy(y_np).to(x.device)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        g = grad_output.detach().cpu().numpy()
        gy = g * y.detach().cpu().numpy()
        # d y_j / d x_i = y_j / x_i for j >= i (x has no zeros)
        suffix = np.cumsum(gy[::-1])[::-1]
        grad = suffix / x.detach().cpu().numpy()
        return torch.from_numpy(np.ascontiguousarray(grad)).to(grad_output.device)
