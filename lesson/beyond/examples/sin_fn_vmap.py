import torch


class SinFn(torch.autograd.Function):
    generate_vmap_rule = True  # forward and backward run on the batch

    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)


batch = torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], dtype=torch.float64)
# vmap maps SinFn over dimension 0: three rows of two values, in one call.
batched = torch.func.vmap(SinFn.apply)(batch)
one_by_one = torch.stack([SinFn.apply(row) for row in batch])
print("vmap:", batched)
print("one by one equal:", torch.equal(batched, one_by_one))
# A gradient per row (per sample), not one summed over the batch:
def loss(row):
    return (SinFn.apply(row) ** 2).sum()


per_row = torch.func.vmap(torch.func.grad(loss))(batch)
print("per-row gradients of sum(sin(row)**2):", per_row)
