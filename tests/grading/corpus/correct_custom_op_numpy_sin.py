# corpus: correct
# entry_point: numpy_sin
# inputs: [{"name": "x", "type": "tensor", "value": [[0.4, -1.3, 2.2, 0.0], [-0.6, 1.7, -2.5, 0.9]]}]
# why: sin computed in numpy as a torch.library custom op, with a fake kernel and an autograd formula whose setup_context saves the input (after pytorch/pytorch torch/_library/custom_ops.py, the custom_op and register_autograd docstrings' numpy_sin).
import numpy as np
import torch


@torch.library.custom_op("corpus::numpy_sin", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    y_np = np.sin(x.cpu().numpy())
    return torch.from_numpy(y_np).to(device=x.device)


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos()


numpy_sin.register_autograd(backward, setup_context=setup_context)
