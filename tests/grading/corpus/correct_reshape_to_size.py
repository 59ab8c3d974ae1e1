# corpus: correct
# entry_point: ReshapeFn
# inputs: [{"name": "x", "type": "tensor", "value": [[1.0, -2.0, 3.5], [0.25, -0.75, 1.5]]}, {"name": "shape", "type": "ints", "value": [3, 2], "container": "size"}]
# why: Takes a target torch.Size as a non-tensor argument, remembers the input's shape on ctx and reshapes the gradient back to it.
import torch


class ReshapeFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.input_shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.reshape(ctx.input_shape), None
