# corpus: correct
# entry_point: BroadcastToFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.5, 2.5]]}, {"name": "size", "type": "ints", "value": [2, 4, 3], "container": "list"}]
# why: Broadcasts to a target size given as a list of ints (adding a leading dim and expanding a size-1 dim); backward sums the gradient back with sum_to_size.
import torch


class BroadcastToFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, size):
        ctx.in_shape = x.shape
        return torch.broadcast_to(x, size).contiguous()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.sum_to_size(ctx.in_shape), None
