# corpus: incorrect
# entry_point: SigmoidFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-2.0, -0.5, 0.0], [0.7, 1.5, 3.0]]}]
# options: {"forward_ad": true}
# failing_check: forward_ad
# cause: jvp_wrong_derivative
# why: sigmoid saving its output, backward grad * y * (1 - y) right, but jvp copied from an exp Function multiplies the tangent by y alone (the jvp pattern of pytorch/pytorch docs/source/notes/extending.rst, "Forward mode AD", with the derivative slipped).
import torch


class SigmoidFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sigmoid(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)

    @staticmethod
    def jvp(ctx, x_t):
        (y,) = ctx.saved_tensors
        return x_t * y
