# corpus: correct
# entry_point: GraphConvFn
# inputs: [{"name": "adj", "type": "tensor", "value": [[0.5, 0.5, 0.0, 0.0], [0.25, 0.5, 0.25, 0.0], [0.0, 0.0, 1.0, 0.0], [0.3, 0.0, 0.0, 0.7]], "requires_grad": false}, {"name": "h", "type": "tensor", "value": [[1.0, -0.5, 0.2], [0.3, 0.8, -1.1], [-0.7, 0.4, 0.9], [1.5, -1.2, 0.6]]}]
# why: GCN-style message passing: forward converts a dense adjacency (no grad) to a sparse COO tensor with .to_sparse() and uses torch.sparse.mm; backward multiplies by the transposed sparse matrix.
import torch


class GraphConvFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, adj, h):
        adj_sparse = adj.to_sparse()
        ctx.save_for_backward(adj_sparse)
        return torch.sparse.mm(adj_sparse, h)

    @staticmethod
    def backward(ctx, grad_output):
        (adj_sparse,) = ctx.saved_tensors
        grad_h = None
        if ctx.needs_input_grad[1]:
            grad_h = torch.sparse.mm(adj_sparse.t(), grad_output)
        return None, grad_h
