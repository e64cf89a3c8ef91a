# A `full` tensor used on both sides of a segment_set (seed 002, nvFuser PR 4269):
# scale is a [N, H] tensor of 1.5 made inside the fusion; the first segment computes
# y = x * scale, the segment_set forces a second segment that computes
# row = sum_H(y + scale).  The full is not a fusion output, so the segmenter forwards
# it: each segment creates its own copy instead of passing 4*N*H bytes through memory.
# Input x [N, H] (half precision).  Outputs y [N, H] (half precision), row [N] f32.
import torch
from nvfuser import FusionDefinition, DataType

def full_two_segments(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    fill = fd.define_scalar(1.5, dtype=DataType.Double)
    scale = fd.ops.full(shape=xf.shape(), fill_value=fill, dtype=DataType.Float)
    y = fd.ops.mul(xf, scale)
    y_next = fd.ops.segment_set(y)
    row = fd.ops.sum(fd.ops.add(y_next, scale), dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    fd.add_output(row)

with FusionDefinition() as fd:
    full_two_segments(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
