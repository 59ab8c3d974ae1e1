# expect: grad_output_modified
# fails: grad_output_unchanged
import numpy as np
import torch
from torch.autograd.function import once_differentiable


class NumpySinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.sin(x.detach().numpy()))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        g = grad_output.numpy()  # shares memory with grad_output
        g *= np.cos(x.detach().numpy())
        return torch.from_numpy(g)
