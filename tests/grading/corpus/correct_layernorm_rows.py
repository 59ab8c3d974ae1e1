# corpus: correct
# entry_point: LayerNormFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.2, 2.0, 0.3], [1.5, 1.1, -0.7, -2.4]]}, {"name": "weight", "type": "tensor", "value": [1.0, 0.5, -1.5, 2.0]}, {"name": "bias", "type": "tensor", "value": [0.1, 0.0, -0.2, 0.3]}, {"name": "eps", "type": "float", "value": 1e-05}]
# why: LayerNorm over the last dimension with an affine weight and bias: three tensor inputs, the two affine gradients reduced over the rows, and the full normalization backward.
import torch


class LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        rstd = torch.rsqrt(var + eps)
        x_hat = (x - mean) * rstd
        ctx.save_for_backward(x_hat, weight, rstd)
        return x_hat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        x_hat, weight, rstd = ctx.saved_tensors
        g_hat = grad_out * weight
        mean_g = g_hat.mean(dim=-1, keepdim=True)
        mean_gx = (g_hat * x_hat).mean(dim=-1, keepdim=True)
        grad_x = rstd * (g_hat - mean_g - x_hat * mean_gx)
        grad_weight = (grad_out * x_hat).sum(dim=0)
        grad_bias = grad_out.sum(dim=0)
        return grad_x, grad_weight, grad_bias, None
