# corpus: incorrect
# entry_point: RowNormFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.2, 2.0, 0.3], [1.5, 1.1, -0.7, -2.4]]}, {"name": "eps", "type": "float", "value": 1e-05}]
# failing_check: gradcheck
# cause: wrong_value
# why: Row normalization whose backward treats the mean as a constant but forgets that the variance depends on x (the x_hat * mean(g * x_hat) term is missing).
import torch


class RowNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        rstd = 1.0 / torch.sqrt(var + eps)
        x_hat = (x - mu) * rstd
        ctx.save_for_backward(rstd)
        return x_hat

    @staticmethod
    def backward(ctx, grad_output):
        (rstd,) = ctx.saved_tensors
        return rstd * (grad_output - grad_output.mean(-1, keepdim=True)), None
