import torch


class MulTwoInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)         # changes x itself
        ctx.mark_dirty(x)  # tell autograd, and return that same tensor
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


class MulTwoUnmarked(MulTwoInPlace):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)  # the same change, not reported
        return x


for fn in (MulTwoInPlace, MulTwoUnmarked):
    a = torch.tensor([1.0, -2.0], requires_grad=True)
    b = a * 3  # an intermediate: a leaf that requires grad may not change
    before = b._version
    y = fn.apply(b)
    loss = (b + y).sum()  # b and y both hold 6 * a: loss = 12 * sum(a)
    loss.backward()
    print(f"{fn.__name__:15} y is b: {y is b!s:5}  "
          f"version of b: {before} -> {b._version}  a.grad: {a.grad.tolist()}")
print("the true gradient is [12.0, 12.0]")
# The marked Function's b goes from version 0 to 2: mul_ counts once, and mark_dirty once more
# (autograd moves b's history onto the Function); the unmarked one's only once, by mul_.
