# corpus: incorrect
# entry_point: RoundSTE
# inputs: [{"name": "x", "type": "tensor", "value": [[0.2, 1.3, -0.7], [2.6, -1.9, 0.8]]}]
# failing_check: gradcheck
# cause: wrong_value
# why: A straight-through estimator (quantization-aware training): round in forward, identity gradient in backward, which is deliberately not the derivative (zero almost everywhere).
import torch


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clone()
