# corpus: correct
# entry_point: SegmentSumFn
# inputs: [{"name": "src", "type": "tensor", "value": [0.5, -1.0, 2.0, 0.25, 1.5, -0.75]}, {"name": "segment_ids", "type": "tensor", "dtype": "int64", "value": [0, 2, 0, 1, 2, 2]}, {"name": "num_segments", "type": "int", "value": 4}]
# why: A segment sum (scatter_add_ into a zero buffer sized by an int argument, one segment left empty); backward gathers the segment gradient back to each element.
import torch


class SegmentSumFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, src, segment_ids, num_segments):
        ctx.save_for_backward(segment_ids)
        out = src.new_zeros(num_segments)
        out.scatter_add_(0, segment_ids, src)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (segment_ids,) = ctx.saved_tensors
        return grad_output.gather(0, segment_ids), None, None
