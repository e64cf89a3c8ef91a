# Layer-norm backward written from the math, with symbolic sizes.
#   xhat = (x - mean) * invstd,  g = dy * w
#   dx = invstd * (g - mean_H(g) - xhat * mean_H(g * xhat))
#   dw = sum_N(dy * xhat),  db = sum_N(dy)
# Inputs: x [N, H], dy [N, H], w [H] (half precision), mean [N, 1] f32, invstd [N, 1] f32.
# Outputs: dx [N, H], dw [H], db [H] in the half-precision dtype.
import torch
from nvfuser import FusionDefinition, DataType

def layer_norm_backward(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    dy = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    mean = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    invstd = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    dyf = fd.ops.cast(dy, dtype=DataType.Float)
    wf = fd.ops.cast(w, dtype=DataType.Float)
    full_shape = xf.shape()
    mean_b = fd.ops.broadcast_in_dim(mean, shape=full_shape, broadcast_dims=[0, 1])
    invstd_b = fd.ops.broadcast_in_dim(invstd, shape=full_shape, broadcast_dims=[0, 1])
    w_b = fd.ops.broadcast_in_dim(wf, shape=full_shape, broadcast_dims=[1])
    centered = fd.ops.sub(xf, mean_b)
    xhat = fd.ops.mul(centered, invstd_b)
    g = fd.ops.mul(dyf, w_b)
    sum_g = fd.ops.sum(g, dims=[1], keepdim=False, dtype=DataType.Null)
    g_xhat = fd.ops.mul(g, xhat)
    sum_g_xhat = fd.ops.sum(g_xhat, dims=[1], keepdim=False, dtype=DataType.Null)
    inv_h = fd.ops.reciprocal(xf.size(1))
    mean_g = fd.ops.mul(fd.ops.broadcast_in_dim(sum_g, shape=full_shape, broadcast_dims=[0]), inv_h)
    mean_g_xhat = fd.ops.mul(fd.ops.broadcast_in_dim(sum_g_xhat, shape=full_shape, broadcast_dims=[0]), inv_h)
    projected = fd.ops.sub(fd.ops.sub(g, mean_g), fd.ops.mul(xhat, mean_g_xhat))
    dx = fd.ops.mul(projected, invstd_b)
    dw = fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0], keepdim=False, dtype=DataType.Null)
    db = fd.ops.sum(dyf, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(fd.ops.cast(dx, dtype=DataType.BFloat16))
    fd.add_output(fd.ops.cast(dw, dtype=DataType.BFloat16))
    fd.add_output(fd.ops.cast(db, dtype=DataType.BFloat16))

with FusionDefinition() as fd:
    layer_norm_backward(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(2048, 1, dtype=torch.float32, device='cuda:0'),
    torch.rand(2048, 1, dtype=torch.float32, device='cuda:0') + 0.5,
]
fd.execute(inputs)
