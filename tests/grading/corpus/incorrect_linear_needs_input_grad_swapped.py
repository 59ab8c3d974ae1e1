# corpus: incorrect
# entry_point: LinearFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.2, -1.0, 0.5], [1.3, 0.4, -0.6]]}, {"name": "weight", "type": "tensor", "value": [[0.1, 0.2, -0.3], [0.5, -0.4, 0.6]], "requires_grad": false}]
# failing_check: needs_input_grad
# cause: needs_input_grad
# why: The input gradient is gated on ctx.needs_input_grad[1] (the frozen weight's flag) and the weight gradient on [0], so x gets None and the weight gets a gradient nobody asked for.
import torch


class LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return x.mm(weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        x, weight = ctx.saved_tensors
        grad_x = grad_weight = None
        if ctx.needs_input_grad[1]:
            grad_x = grad_output.mm(weight)
        if ctx.needs_input_grad[0]:
            grad_weight = grad_output.t().mm(x)
        return grad_x, grad_weight
