# corpus: incorrect
# entry_point: ReLUFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.0, 0.5, -0.2], [2.0, -3.0, 0.7]]}]
# failing_check: random_vjp
# cause: wrong_value
# why: backward applies a ReLU to grad_output (grad_output.clamp(min=0)) as well as masking by x > 0, which drops negative incoming gradients; one-hot grad_outputs (0 or 1) cannot show it.
import torch


class ReLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output.clamp(min=0) * (x > 0).to(grad_output.dtype)
