# corpus: incorrect
# entry_point: WarmupGeLUFn
# inputs: [{"name": "x", "type": "tensor", "value": [-1.5, -0.2, 0.6, 1.9]}]
# failing_check: gradcheck
# cause: not_reentrant
# why: backward scales the gradient by a warm-up factor read from a class-level call counter that it increments, so every backward call returns something different.
import math

import torch


class WarmupGeLUFn(torch.autograd.Function):
    calls = 0
    warmup_steps = 1000

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        WarmupGeLUFn.calls += 1
        scale = min(1.0, WarmupGeLUFn.calls / WarmupGeLUFn.warmup_steps)
        cdf = 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
        pdf = torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        return grad_output * (cdf + x * pdf) * scale
