# corpus: correct
# entry_point: crop
# inputs: [{"name": "pic", "type": "tensor", "value": [[[0.1, 0.5, 0.9, 0.3], [0.7, 0.2, 0.8, 0.4], [0.6, 1.0, 0.0, 0.45]]]}, {"name": "box", "type": "ints", "value": [1, 0, 4, 2], "container": "list"}]
# why: an image crop to a (left, upper, right, lower) box as a custom op whose fake kernel shapes the output from the box, with a backward that pastes grad_output into zeros shaped like the picture (after pytorch/tutorials advanced_source/python_custom_ops.py, crop and paste; slicing instead of PIL).
from collections.abc import Sequence

import torch


@torch.library.custom_op("corpus::crop", mutates_args=())
def crop(pic: torch.Tensor, box: Sequence[int]) -> torch.Tensor:
    x0, y0, x1, y1 = box
    return pic[:, y0:y1, x0:x1].clone()


@crop.register_fake
def _(pic, box):
    x0, y0, x1, y1 = box
    return pic.new_empty(pic.shape[0], y1 - y0, x1 - x0)


def setup_context(ctx, inputs, output):
    pic, box = inputs
    ctx.box = tuple(box)
    ctx.pic_shape = pic.shape


def backward(ctx, grad_output):
    x0, y0, x1, y1 = ctx.box
    grad_pic = grad_output.new_zeros(ctx.pic_shape)
    grad_pic[:, y0:y1, x0:x1] = grad_output
    return grad_pic, None


crop.register_autograd(backward, setup_context=setup_context)
