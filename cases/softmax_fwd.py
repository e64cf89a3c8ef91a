# Softmax over the last dimension, stabilised by the row maximum:
#   y = exp(x - max_H(x)) / sum_H(exp(x - max_H(x)))
# Input x [N, H] and output y [N, H] in the half-precision dtype.
import torch
from nvfuser import FusionDefinition, DataType

def softmax_forward(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    full_shape = xf.shape()
    row_max = fd.ops.max(xf, dims=[1], keepdim=False, dtype=DataType.Null)
    shifted = fd.ops.sub(xf, fd.ops.broadcast_in_dim(row_max, shape=full_shape, broadcast_dims=[0]))
    e = fd.ops.exp(shifted)
    row_sum = fd.ops.sum(e, dims=[1], keepdim=False, dtype=DataType.Null)
    y = fd.ops.div(e, fd.ops.broadcast_in_dim(row_sum, shape=full_shape, broadcast_dims=[0]))
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))

with FusionDefinition() as fd:
    softmax_forward(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
