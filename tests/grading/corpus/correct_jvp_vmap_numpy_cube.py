# corpus: correct
# entry_point: NumpyCube
# inputs: [{"name": "x", "type": "tensor", "value": [[0.9, -1.3, 1.7], [0.4, 1.1, -0.6]]}]
# options: {"forward_ad": true, "vmap": true}
# why: x**3 and its slope 3 x**2 computed in numpy, the slope a differentiable output too, with a jvp (save_for_forward) and a vmap staticmethod that batches by calling the Function on the whole batch (after pytorch/pytorch torch/testing/_internal/autograd_function_db.py, NumpyCube).
import numpy as np
import torch


class NumpyCube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        x_np = x.detach().cpu().numpy()
        return torch.from_numpy(x_np ** 3), torch.from_numpy(3.0 * x_np ** 2)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        slope = output[1]
        ctx.save_for_backward(x, slope)
        ctx.save_for_forward(x, slope)

    @staticmethod
    def backward(ctx, grad_cube, grad_slope):
        x, slope = ctx.saved_tensors
        return grad_cube * slope + 6.0 * grad_slope * x

    @staticmethod
    def jvp(ctx, x_t):
        x, slope = ctx.saved_tensors
        return x_t * slope, 6.0 * x_t * x

    @staticmethod
    def vmap(info, in_dims, x):
        # elementwise: the batch stays where it came in, in both outputs
        return NumpyCube.apply(x), (in_dims[0], in_dims[0])
