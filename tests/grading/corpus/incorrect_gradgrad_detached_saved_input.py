# corpus: incorrect
# entry_point: SoftplusFn
# inputs: [{"name": "x", "type": "tensor", "value": [[-1.5, 0.2, 2.3], [0.9, -0.4, -2.2]]}]
# options: {"gradgradcheck": true}
# failing_check: gradgradcheck
# cause: backward_not_differentiable
# why: backward detaches the saved input 'to be safe': first derivatives are right, but double backward sees a constant.
import torch


class SoftplusFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x.detach())
