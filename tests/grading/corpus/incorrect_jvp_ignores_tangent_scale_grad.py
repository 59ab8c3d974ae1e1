# corpus: incorrect
# entry_point: ScaleGrad
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.2, 2.0], [0.3, 1.7, -0.8]]}, {"name": "scale", "type": "float", "value": 3.0}]
# options: {"forward_ad": true}
# failing_check: forward_ad
# cause: jvp_ignores_tangent
# why: scale * x with a right backward, but jvp returns the derivative (scale, as a tensor of x's shape) instead of the derivative times the tangent, the slip of a jvp written from backward's formula (after pytorch/pytorch torch/testing/_internal/autograd_function_db.py, ScaleGradGenVmap).
import torch


class ScaleGrad(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, scale):
        return x * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.scale = scale
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None

    @staticmethod
    def jvp(ctx, x_t, scale_t):
        (x,) = ctx.saved_tensors
        return torch.full_like(x, ctx.scale)
