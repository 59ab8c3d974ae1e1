# expect: entry_point_missing
# fails: entry_point
import torch


class DoubleFn:
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
