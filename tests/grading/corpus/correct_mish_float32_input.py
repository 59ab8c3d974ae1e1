# corpus: correct
# entry_point: MishFn
# inputs: [{"name": "x", "type": "tensor", "dtype": "float32", "value": [-1.5, -0.3, 0.4, 2.0]}]
# why: Mish given a float32 tensor: it keeps its input's dtype throughout, so it is exact on the float64 copy gradcheck runs on.
import torch
import torch.nn.functional as F


class MishFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.tanh(F.softplus(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        sp = F.softplus(x)
        tsp = torch.tanh(sp)
        return grad_output * (tsp + x * torch.sigmoid(x) * (1.0 - tsp * tsp))
