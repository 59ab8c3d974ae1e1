# expect: op_fake_wrong_metadata
# fails: op_fake_tensor
import numpy as np
import torch


@torch.library.custom_op("mylib::numpy_sin", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.numpy(force=True)))


@numpy_sin.register_fake
def _(x):
    return torch.empty(x.shape)  # the default dtype, float32: the real output keeps x's


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * torch.cos(x)


numpy_sin.register_autograd(backward, setup_context=setup_context)
