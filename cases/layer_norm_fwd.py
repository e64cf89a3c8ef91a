# Layer-norm forward: mean and variance over H, then y = (x - mean) * invstd * w + b,
# with invstd = rsqrt(var + 1e-5).  Outputs y (half precision) and the mean and
# invstd [N] in f32 that the backward pass consumes.
# Inputs: x [N, H], w [H], b [H] (half precision).
import torch
from nvfuser import FusionDefinition, DataType

def layer_norm_forward(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    eps = fd.define_scalar(1e-05, dtype=DataType.Double)
    invstd = fd.ops.rsqrt(fd.ops.add(var, eps))
    full_shape = xf.shape()
    mean_b = fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0])
    invstd_b = fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0])
    w_b = fd.ops.broadcast_in_dim(fd.ops.cast(w, dtype=DataType.Float), shape=full_shape, broadcast_dims=[1])
    b_b = fd.ops.broadcast_in_dim(fd.ops.cast(b, dtype=DataType.Float), shape=full_shape, broadcast_dims=[1])
    xhat = fd.ops.mul(fd.ops.sub(xf, mean_b), invstd_b)
    y = fd.ops.add(fd.ops.mul(xhat, w_b), b_b)
    fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    fd.add_output(mean)
    fd.add_output(invstd)

with FusionDefinition() as fd:
    layer_norm_forward(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1024, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
