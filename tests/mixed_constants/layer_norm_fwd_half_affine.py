# Layer-norm forward of f32 rows with half-precision affine parameters:
# x [N, H] and y in f32, w [H] and b [H] in bf16, mean and invstd [N] in f32.
import torch
from nvfuser import FusionDefinition, DataType

def layer_norm_forward_half_affine(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
    eps = fd.define_scalar(1e-05, dtype=DataType.Double)
    invstd = fd.ops.rsqrt(fd.ops.add(var, eps))
    full_shape = x.shape()
    centered = fd.ops.sub(x, fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0]))
    xhat = fd.ops.mul(centered, fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0]))
    wf = fd.ops.cast(w, dtype=DataType.Float)
    bf = fd.ops.cast(b, dtype=DataType.Float)
    scaled = fd.ops.mul(xhat, fd.ops.broadcast_in_dim(wf, shape=full_shape, broadcast_dims=[1]))
    y = fd.ops.add(scaled, fd.ops.broadcast_in_dim(bf, shape=full_shape, broadcast_dims=[1]))
    fd.add_output(y)
    fd.add_output(mean)
    fd.add_output(invstd)

with FusionDefinition() as fd:
    layer_norm_forward_half_affine(fd)

inputs = [
    torch.randn(2049, 6143, dtype=torch.float32, device='cuda:0'),
    torch.randn(6143, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(6143, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
