# Layer-norm backward of half-precision rows with an f32 weight:
#   xhat = (x - mean) * invstd,  g = dy * w
#   dx = invstd * (g - mean_H(g) - xhat * mean_H(g * xhat))
#   dw = sum_N(dy * xhat),  db = sum_N(dy)
# Inputs: x [N, H], dy [N, H] (half), w [H] f32, mean [N], invstd [N] f32.
# Outputs: dx [N, H] half, dw [H] and db [H] f32.
import torch
from nvfuser import FusionDefinition, DataType

def layer_norm_backward_fp32_weight(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    dy = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    mean = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    invstd = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    dyf = fd.ops.cast(dy, dtype=DataType.Float)
    full_shape = xf.shape()
    mean_b = fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0])
    invstd_b = fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0])
    xhat = fd.ops.mul(fd.ops.sub(xf, mean_b), invstd_b)
    g = fd.ops.mul(dyf, fd.ops.broadcast_in_dim(w, shape=full_shape, broadcast_dims=[1]))
    sum_g = fd.ops.sum(g, dims=[1], keepdim=False, dtype=DataType.Null)
    sum_g_xhat = fd.ops.sum(fd.ops.mul(g, xhat), dims=[1], keepdim=False, dtype=DataType.Null)
    inv_h = fd.ops.reciprocal(xf.size(1))
    mean_g = fd.ops.mul(fd.ops.broadcast_in_dim(sum_g, shape=full_shape, broadcast_dims=[0]), inv_h)
    mean_g_xhat = fd.ops.mul(fd.ops.broadcast_in_dim(sum_g_xhat, shape=full_shape, broadcast_dims=[0]), inv_h)
    projected = fd.ops.sub(fd.ops.sub(g, mean_g), fd.ops.mul(xhat, mean_g_xhat))
    dx = fd.ops.mul(projected, invstd_b)
    dw = fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0], keepdim=False, dtype=DataType.Null)
    db = fd.ops.sum(dyf, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(fd.ops.cast(dx, dtype=DataType.BFloat16))
    fd.add_output(dw)
    fd.add_output(db)

with FusionDefinition() as fd:
    layer_norm_backward_fp32_weight(fd)

inputs = [
    torch.randn(2048, 1987, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(2048, 1987, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1987, dtype=torch.float32, device='cuda:0'),
    torch.randn(2048, dtype=torch.float32, device='cuda:0'),
    torch.rand(2048, dtype=torch.float32, device='cuda:0') + 0.5,
]
fd.execute(inputs)
