# corpus: incorrect
# entry_point: numpy_sin
# inputs: [{"name": "x", "type": "tensor", "value": [[0.4, -1.3, 2.2, 0.0], [-0.6, 1.7, -2.5, 0.9]]}]
# failing_check: op_schema
# cause: op_undeclared_mutation
# why: numpy.sin writes into the input's own buffer (out=) to save an allocation while mutates_args=() declares no mutation, so the schema lies to torch.compile (the mutable numpy_sin of pytorch/tutorials advanced_source/python_custom_ops.py, whose mutated argument must be in mutates_args).
import numpy as np
import torch


@torch.library.custom_op("corpus::numpy_sin_overwrites", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    x_np = x.detach().numpy()
    np.sin(x_np, out=x_np)
    return x.clone()


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    ctx.save_for_backward(output)


def backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return grad * torch.sqrt(1 - y * y)


numpy_sin.register_autograd(backward, setup_context=setup_context)
