# corpus: correct
# entry_point: SoftCapFn
# inputs: [{"name": "logits", "type": "tensor", "value": [[-40.0, -3.0, 0.5], [10.0, 25.0, 60.0]]}, {"name": "cap", "type": "float", "value": 30.0}]
# why: Torch-2 style: forward takes no ctx, a separate setup_context(ctx, inputs, output) saves the output, and generate_vmap_rule is set (logit soft-capping, cap * tanh(x / cap)).
import torch


class SoftCapFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(logits, cap):
        return cap * torch.tanh(logits / cap)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, cap = inputs
        ctx.cap = cap
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (capped,) = ctx.saved_tensors
        t = capped / ctx.cap
        return grad_output * (1.0 - t * t), None
