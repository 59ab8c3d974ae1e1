# expect: vmap_data_dependent
# fails: batched_grad
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
        return torch.from_numpy(grad_output.numpy() * y.numpy())  # a batch of grad_outputs is no array

    @staticmethod
    def vmap(info, in_dims, x):
        return NumpyExpFn.apply(x), in_dims[0]
