# RMS-norm forward: invrms = rsqrt(mean_H(x^2) + 1e-6), y = x * invrms * w.
# Outputs y (half precision) and invrms [N, 1] in f32 for the backward pass.
# Inputs: x [N, H], w [H] (half precision).
import torch
from nvfuser import FusionDefinition, DataType

def rms_norm_forward(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    sum_sq = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=True, dtype=DataType.Null)
    mean_sq = fd.ops.mul(sum_sq, fd.ops.reciprocal(xf.size(1)))
    eps = fd.define_scalar(1e-06, dtype=DataType.Double)
    invrms = fd.ops.rsqrt(fd.ops.add(mean_sq, eps))
    full_shape = xf.shape()
    invrms_b = fd.ops.broadcast_in_dim(invrms, shape=full_shape, broadcast_dims=[0, 1])
    w_b = fd.ops.broadcast_in_dim(fd.ops.cast(w, dtype=DataType.Float), shape=full_shape, broadcast_dims=[1])
    y = fd.ops.mul(fd.ops.mul(xf, invrms_b), w_b)
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    fd.add_output(invrms)

with FusionDefinition() as fd:
    rms_norm_forward(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1024, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
