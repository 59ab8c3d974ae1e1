# expect: vmap_wrong_out_dims
# fails: vmap
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
        # in_dims is a tuple, one entry per input: the output's batch dimension is in_dims[0]
        return NumpyExpFn.apply(x), in_dims
