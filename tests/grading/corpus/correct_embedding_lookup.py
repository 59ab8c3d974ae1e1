# corpus: correct
# entry_point: EmbeddingFn
# inputs: [{"name": "indices", "type": "tensor", "dtype": "int64", "value": [[1, 4], [1, 0]]}, {"name": "weight", "type": "tensor", "value": [[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6], [0.7, 0.8, 0.9], [1.0, -1.1, 1.2], [-1.3, 1.4, 0.15]]}]
# why: An embedding lookup whose first argument is an int64 index tensor (no gradient, None returned first) and whose weight gradient is accumulated with index_add_ for repeated ids.
import torch


class EmbeddingFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, indices, weight):
        ctx.save_for_backward(indices)
        ctx.num_embeddings = weight.shape[0]
        flat = weight.index_select(0, indices.reshape(-1))
        return flat.view(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        dim = grad_output.shape[-1]
        grad_weight = grad_output.new_zeros(ctx.num_embeddings, dim)
        grad_weight.index_add_(0, indices.reshape(-1), grad_output.reshape(-1, dim))
        return None, grad_weight
