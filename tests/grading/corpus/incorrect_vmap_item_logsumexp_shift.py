# corpus: incorrect
# entry_point: LogSumExp
# inputs: [{"name": "x", "type": "tensor", "value": [[0.5, -1.0, 2.0, 0.1], [3.0, 1.5, -0.5, 2.5]]}]
# options: {"vmap": true}
# failing_check: vmap
# cause: vmap_data_dependent
# why: a stable logsumexp that shifts by x.max().item(), a Python float: right values and gradients, but under torch.func.vmap one tensor holds the whole batch and .item() raises (the mistake of pytorch/functorch issues 337 and 1130, a custom activation calling .item()).
import torch


class LogSumExp(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        m = x.max().item()
        return torch.log(torch.exp(x - m).sum()) + m

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        return grad_output * torch.exp(x - out)
