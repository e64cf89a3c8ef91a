# Layer-norm forward whose affine parameters are kept in f32 while the rows are
# half precision (a mixed-precision model's norm): w [H] and b [H] in f32,
# x [N, H] and y in the half dtype, mean and invstd [N] in f32.
import torch
from nvfuser import FusionDefinition, DataType

def layer_norm_forward_fp32_affine(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    eps = fd.define_scalar(1e-05, dtype=DataType.Double)
    invstd = fd.ops.rsqrt(fd.ops.add(var, eps))
    full_shape = xf.shape()
    centered = fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0]))
    xhat = fd.ops.mul(centered, fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0]))
    scaled = fd.ops.mul(xhat, fd.ops.broadcast_in_dim(w, shape=full_shape, broadcast_dims=[1]))
    y = fd.ops.add(scaled, fd.ops.broadcast_in_dim(b, shape=full_shape, broadcast_dims=[1]))
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    fd.add_output(mean)
    fd.add_output(invstd)

with FusionDefinition() as fd:
    layer_norm_forward_fp32_affine(fd)

inputs = [
    torch.randn(2049, 1987, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1987, dtype=torch.float32, device='cuda:0'),
    torch.randn(1987, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
