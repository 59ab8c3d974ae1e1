# corpus: correct
# entry_point: SoftplusFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.5, 0.2], [2.5, 12.0]]}, {"name": "beta", "type": "float", "value": 2.0}, {"name": "threshold", "type": "float", "value": 20.0}]
# why: nn.Softplus-style beta/threshold floats with a numerically stable branch (linear above the threshold) selected by torch.where.
import torch


class SoftplusFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta=1.0, threshold=20.0):
        scaled = x * beta
        linear = scaled > threshold
        # log1p(exp(z)) written the stable way: max(z, 0) + log1p(exp(-|z|))
        soft = (scaled.clamp(min=0) + torch.log1p(torch.exp(-scaled.abs()))) / beta
        ctx.save_for_backward(scaled, linear)
        return torch.where(linear, x, soft)

    @staticmethod
    def backward(ctx, grad_output):
        scaled, linear = ctx.saved_tensors
        slope = torch.where(linear, torch.ones_like(scaled), torch.sigmoid(scaled))
        return grad_output * slope, None, None
