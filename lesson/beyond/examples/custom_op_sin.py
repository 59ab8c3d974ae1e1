import numpy as np
import torch


@torch.library.custom_op("lesson::numpy_sin", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    # The real computation: code PyTorch cannot see into (here NumPy).
    return torch.from_numpy(np.sin(x.numpy(force=True)))


@numpy_sin.register_fake
def _(x):
    # Only what the output looks like (shape, dtype, device), no values.
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * torch.cos(x)


numpy_sin.register_autograd(backward, setup_context=setup_context)

x = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
print("numpy_sin(x):", numpy_sin(x).detach())
print("gradcheck:", torch.autograd.gradcheck(numpy_sin, (x,)))
# On your machine, torch.library.opcheck(numpy_sin, (x,)) runs four tests of the registration; Run
# here makes the same four (schema, autograd registration, fake tensor, AOT dispatch) and lists them
# among the checks below.
