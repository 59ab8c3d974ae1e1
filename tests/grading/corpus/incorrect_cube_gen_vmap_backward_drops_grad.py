# corpus: incorrect
# entry_point: CubeGenVmap
# inputs: [{"name": "x", "type": "tensor", "value": [[0.9, -1.3, 1.7], [0.4, 1.1, -0.6]]}]
# options: {"forward_ad": true}
# failing_check: forward_ad
# cause: jvp_backward_disagree
# why: x**3 and its slope as outputs with a right jvp, but backward adds 6 * slope where it should add 6 * grad_slope * x, so jvp and backward are not derivatives of one forward (the dot-product test) (as written in pytorch/pytorch torch/testing/_internal/autograd_function_db.py, CubeGenVmap).
import torch


class CubeGenVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(inputs[0], outputs[1])
        ctx.save_for_forward(inputs[0], outputs[1])

    @staticmethod
    def backward(ctx, grad_output, grad_saved):
        x, slope = ctx.saved_tensors
        return grad_output * slope + 6 * slope

    @staticmethod
    def jvp(ctx, x_t):
        x, slope = ctx.saved_tensors
        return x_t * slope, 6 * x_t * x
