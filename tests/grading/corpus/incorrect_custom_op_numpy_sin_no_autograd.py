# corpus: incorrect
# entry_point: numpy_sin
# inputs: [{"name": "x", "type": "tensor", "value": [[0.4, -1.3, 2.2, 0.0], [-0.6, 1.7, -2.5, 0.9]]}]
# failing_check: op_autograd_registration
# cause: op_no_autograd_formula
# why: sin in numpy as a custom op with a fake kernel and no register_autograd: it runs and compiles, but no gradient flows through it (the custom_op docstring's numpy_sin of pytorch/pytorch torch/_library/custom_ops.py, stopped before its register_autograd example).
import numpy as np
import torch


@torch.library.custom_op("corpus::numpy_sin_no_autograd", mutates_args=())
def numpy_sin(x: torch.Tensor) -> torch.Tensor:
    y_np = np.sin(x.cpu().numpy())
    return torch.from_numpy(y_np).to(device=x.device)


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)
