# corpus: correct
# entry_point: HuberLossFn
# inputs: [{"name": "input", "type": "tensor", "value": [0.5, -1.2, 2.0, 0.1, -0.4]}, {"name": "target", "type": "tensor", "value": [0.2, 0.3, -0.5, 0.3, 0.5]}, {"name": "delta", "type": "float", "value": 1.0}]
# why: A mean-reduced Huber / smooth-L1 loss with a float delta: two tensors that both take a gradient (target's is the negative of input's) and a scalar output.
import torch


class HuberLossFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, target, delta):
        diff = input - target
        abs_diff = diff.abs()
        quadratic = abs_diff <= delta
        loss = torch.where(quadratic, 0.5 * diff ** 2, delta * (abs_diff - 0.5 * delta))
        ctx.save_for_backward(diff, quadratic)
        ctx.delta = delta
        return loss.mean()

    @staticmethod
    def backward(ctx, grad_output):
        diff, quadratic = ctx.saved_tensors
        local = torch.where(quadratic, diff, ctx.delta * torch.sign(diff))
        grad_input = grad_output * local / diff.numel()
        return grad_input, -grad_input, None
