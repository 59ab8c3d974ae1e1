# corpus: correct
# entry_point: PermuteFn
# inputs: [{"name": "x", "type": "tensor", "value": [[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], [[-0.1, -0.2], [-0.3, -0.4], [-0.5, -0.6]]]}, {"name": "dims", "type": "ints", "value": [2, 0, 1], "container": "tuple"}]
# why: Takes a tuple of ints (a permutation) and applies the inverse permutation (argsort of dims) to the gradient.
import torch


class PermuteFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(sorted(range(len(dims)), key=lambda i: dims[i]))
        return x.permute(*dims).contiguous()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.permute(*ctx.inverse), None
