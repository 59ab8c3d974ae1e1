# corpus: correct
# entry_point: NumpyMul
# inputs: [{"name": "x", "type": "tensor", "value": [[1.2, -0.7, 0.5], [0.3, 1.9, -1.4]]}, {"name": "y", "type": "tensor", "value": [[-0.8, 1.1, 0.6], [1.5, -0.2, 0.9]]}]
# options: {"forward_ad": true, "vmap": true}
# why: x * y in numpy with a vmap staticmethod that moves each batch dimension to the end (a tensor the batch shares gets a size-1 one), calls the Function once and moves the batch back to dim 0, and a jvp (after pytorch/pytorch torch/testing/_internal/autograd_function_db.py, NumpyMul).
import numpy as np
import torch


class NumpyMul(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return torch.from_numpy(np.multiply(x.detach().cpu().numpy(), y.detach().cpu().numpy()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        gx = (grad_output * y).sum_to_size(x.shape) if ctx.needs_input_grad[0] else None
        gy = (grad_output * x).sum_to_size(y.shape) if ctx.needs_input_grad[1] else None
        return gx, gy

    @staticmethod
    def jvp(ctx, x_t, y_t):
        x, y = ctx.saved_tensors
        return x_t * y + x * y_t

    @staticmethod
    def vmap(info, in_dims, x, y):
        x_bdim, y_bdim = in_dims
        x = x.movedim(x_bdim, -1) if x_bdim is not None else x.unsqueeze(-1)
        y = y.movedim(y_bdim, -1) if y_bdim is not None else y.unsqueeze(-1)
        result = NumpyMul.apply(x, y)
        return result.movedim(-1, 0), 0
