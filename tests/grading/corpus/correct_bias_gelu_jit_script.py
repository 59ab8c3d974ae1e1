# corpus: correct
# entry_point: BiasGeLUFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-2.0, -0.3, 0.1], [0.8, 1.6, -1.1]]}, {"name": "bias", "type": "tensor", "value": [0.25, -0.5, 0.05]}]
# why: Fused bias + tanh-approximate GELU whose forward and backward kernels are @torch.jit.script helper functions; the bias gradient is summed over the broadcast rows.
import torch


@torch.jit.script
def bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1.0 + 0.044715 * x * x)))


@torch.jit.script
def bias_gelu_back(g: torch.Tensor, bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    tanh_out = torch.tanh(0.79788456 * x * (1.0 + 0.044715 * x * x))
    ff = 0.5 * x * ((1.0 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1.0 + tanh_out)
    return ff * g


class BiasGeLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        return bias_gelu(bias, x)

    @staticmethod
    def backward(ctx, grad_output):
        x, bias = ctx.saved_tensors
        tmp = bias_gelu_back(grad_output, bias, x)
        return tmp, tmp.sum(dim=0)
