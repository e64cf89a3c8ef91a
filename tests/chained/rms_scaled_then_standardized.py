# A row scaled by its root mean square, then standardised by the mean and
# variance of the scaled row:
#   z = x * rsqrt(mean_H(x^2) + 1e-6),  y = (z - mean_H(z)) * rsqrt(var_H(z) + 1e-5)
# Input x [N, H] in bf16; outputs y [N, H] in bf16 and mean_H(z) [N] in fp32.
# Its var_mean is a second reduction level that reads a value of the row
# (rsqrt of the first level's sum): the persistent kernels compute such values
# once per row before their passes over the row's chunks, and must not declare
# them twice (tests/test_compile_sm90a.sh and test_compile_sm100a.sh compile it).
import torch
from nvfuser import FusionDefinition, DataType

def rms_scaled_then_standardized(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    sum_sq = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=False, dtype=DataType.Null)
    mean_sq = fd.ops.mul(sum_sq, fd.ops.reciprocal(xf.size(1)))
    invrms = fd.ops.rsqrt(fd.ops.add(mean_sq, fd.define_scalar(1e-06, dtype=DataType.Double)))
    full_shape = xf.shape()
    z = fd.ops.mul(xf, fd.ops.broadcast_in_dim(invrms, shape=full_shape, broadcast_dims=[0]))
    var, mean = fd.ops.var_mean(z, dims=[1], correction=0, keepdim=False)
    invstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-05, dtype=DataType.Double)))
    centred = fd.ops.sub(z, fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0]))
    y = fd.ops.mul(centred, fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0]))
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    fd.add_output(mean)

with FusionDefinition() as fd:
    rms_scaled_then_standardized(fd)

inputs = [
    torch.randn(2049, 1024, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
