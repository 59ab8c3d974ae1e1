# expect: op_undeclared_mutation
# fails: inputs_unchanged, op_schema
import numpy as np
import torch


@torch.library.custom_op("mylib::numpy_sin", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    a = x.numpy(force=True)  # shares memory with x
    np.sin(a, out=a)  # so this changes x, which mutates_args=() says the op never does
    return torch.from_numpy(a.copy())


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * torch.cos(x)


numpy_sin.register_autograd(backward, setup_context=setup_context)
