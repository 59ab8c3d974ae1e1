# corpus: incorrect
# entry_point: StableSoftmaxFn
# inputs: [{"name": "x", "type": "tensor", "value": [[1.0, 2.0, 0.5], [-0.3, 0.1, 3.0]]}]
# failing_check: inputs_unchanged
# cause: input_modified
# why: forward subtracts the row max from x.data in place for numerical stability (and never adds it back), so the caller's input changes on every call.
import torch


class StableSoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.data.sub_(x.data.max(dim=-1, keepdim=True).values)
        e = torch.exp(x)
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(dim=-1, keepdim=True))
