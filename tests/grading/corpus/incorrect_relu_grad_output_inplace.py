# corpus: incorrect
# entry_point: ReLUFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.0, 0.5, -0.2], [2.0, -3.0, 0.7]]}]
# failing_check: grad_output_unchanged
# cause: grad_output_modified
# why: backward zeroes the masked entries of grad_output in place and returns it: the values are right but the caller's gradient buffer is clobbered.
import torch


class ReLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_output[x < 0] = 0
        return grad_output
