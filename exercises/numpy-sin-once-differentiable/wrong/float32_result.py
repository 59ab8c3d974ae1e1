# expect: float32_imprecise
# fails: output_shape_dtype
import numpy as np
import torch
from torch.autograd.function import once_differentiable


class NumpySinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.sin(x.detach().numpy())).float()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(grad_output.numpy() * np.cos(x.detach().numpy())).float()
