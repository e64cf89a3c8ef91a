# A row standardised by its mean and variance that also returns the row's sum:
#   y = (x - mean_H(x)) * rsqrt(var_H(x) + 1e-5),  s = sum_H(x)
# Input x [N, H] in bf16; outputs y [N, H] in bf16 and s [N] in fp32.  Its
# reductions over the row differ in count (the sum of x with the mean's sum,
# then the squared deviations alone), so the warp-specialized kernels'
# grouped passes reduce different numbers of values one after the other.
import torch
from nvfuser import FusionDefinition, DataType

def row_sum_and_normalize(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    row_sum = fd.ops.sum(xf, dims=[1], keepdim=False, dtype=DataType.Null)
    eps = fd.define_scalar(1e-05, dtype=DataType.Double)
    invstd = fd.ops.rsqrt(fd.ops.add(var, eps))
    full_shape = xf.shape()
    centred = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0]))
    y = fd.ops.mul(centred, fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0]))
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    fd.add_output(row_sum)

with FusionDefinition() as fd:
    row_sum_and_normalize(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
