# corpus: correct
# entry_point: SortFn
# inputs: [{"name": "x", "type": "tensor", "value": [[0.7, -1.2, 2.3, 0.1], [1.8, 0.4, -0.9, -2.1], [-0.3, 1.1, 0.6, 2.9]]}, {"name": "dim", "type": "int", "value": 1}]
# options: {"forward_ad": true, "vmap": true}
# why: a sort that returns the values, the permutation and its inverse (marked non-differentiable), backward and jvp gathering with the saved permutations, generate_vmap_rule = True (after pytorch/pytorch docs/source/notes/extending.func.rst and autograd_function_db.py, SortGenVmap).
import torch


class SortFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, dim):
        ind = torch.argsort(x, dim=dim)
        ind_inv = torch.argsort(ind, dim=dim)
        return torch.take_along_dim(x, ind, dim=dim), ind, ind_inv

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, dim = inputs
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_values, grad_ind, grad_ind_inv):
        ind, ind_inv = ctx.saved_tensors
        return torch.take_along_dim(grad_values, ind_inv, dim=ctx.dim), None

    @staticmethod
    def jvp(ctx, x_t, dim_t):
        ind, ind_inv = ctx.saved_tensors
        return torch.take_along_dim(x_t, ind, dim=ctx.dim), None, None
