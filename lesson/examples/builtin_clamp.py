import torch

x = torch.tensor(2.0, requires_grad=True)
y = x.clamp(-1.0, 1.0)
y.backward()

print("y      =", y.item())       # 1.0: 2.0 is above the upper bound
print("x.grad =", x.grad.item())  # 0.0: outside the range, no gradient flows
