# expect: vmap_data_dependent
# fails: vmap
import math

import torch


class NumpyExpFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        m = x.max().item()  # one number for the whole tensor: under vmap, a batch has none
        return torch.exp(x - m) * math.exp(m)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y
