# expect: once_differentiable_missing
# fails: technique
import numpy as np
import torch


class NumpySinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.sin(x.detach().numpy()))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(grad_output.numpy() * np.cos(x.detach().numpy()))
