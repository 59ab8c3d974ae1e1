import numpy as np
import torch


class NumpyExpFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.from_numpy(np.exp(x.detach().numpy()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y

    @staticmethod
    def vmap(info, in_dims, x):
        # x holds the whole batch, at dimension in_dims[0]: return (output, out_dims)
        ...
