# expect: vmap_data_dependent
# fails: vmap
import numpy as np
import torch


class NumpyExpFn(torch.autograd.Function):
    generate_vmap_rule = True  # runs forward on the batched tensor, which NumPy cannot read

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
