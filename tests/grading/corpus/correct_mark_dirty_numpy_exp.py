# corpus: correct
# entry_point: NumpyExp_
# inputs: [{"name": "x", "type": "tensor", "value": [[0.3, -1.1, 0.8], [1.4, -0.2, -0.7]]}]
# options: {"in_place": true, "forward_ad": true, "vmap": true}
# why: exp in place through a numpy view of the input's memory, marked dirty and returned, backward and jvp from the saved output, jvp updating the dirty input's tangent in place as torch requires, and a vmap staticmethod that runs it on the batch in place (after pytorch/pytorch torch/testing/_internal/autograd_function_db.py, NumpyExp_).
import numpy as np
import torch


class NumpyExp_(torch.autograd.Function):
    @staticmethod
    def forward(x):
        x_np = x.detach().numpy()  # shares memory with x
        np.exp(x_np, out=x_np)
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.mark_dirty(x)
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y

    @staticmethod
    def jvp(ctx, x_t):
        (y,) = ctx.saved_tensors
        x_t.mul_(y)
        return x_t

    @staticmethod
    def vmap(info, in_dims, x):
        NumpyExp_.apply(x)
        return x, in_dims[0]
