import numpy as np
import torch


class NumpyExpFn(torch.autograd.Function):
    @staticmethod
    def forward(x):
        # NumPy sees plain numbers: vmap cannot look inside, so
        # generate_vmap_rule = True would fail here.
        return torch.from_numpy(np.exp(x.detach().numpy()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)  # d exp(x)/dx = exp(x): the output itself

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y

    @staticmethod
    def vmap(info, in_dims, x):
        # x holds the whole batch; in_dims says where its batch dimension
        # is (None: not batched). exp works element by element, so one call
        # on the whole batch is right: return the output, and where its
        # batch dimension is.
        print(f"vmap rule called: batch of {info.batch_size}, "
              f"in_dims={in_dims}, x of shape {tuple(x.shape)}")
        return NumpyExpFn.apply(x), in_dims[0]


x = torch.tensor([[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]], dtype=torch.float64)
d = 1  # batch over the columns; try 0 (the rows)
out = torch.func.vmap(NumpyExpFn.apply, in_dims=d)(x)
same = torch.allclose(out, torch.exp(x).movedim(d, 0))
print("shape:", tuple(out.shape), "equal to exp(x), batch first:", same)
