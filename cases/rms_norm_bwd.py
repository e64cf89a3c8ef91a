# RMS-norm backward written from the math, with symbolic sizes and invrms [N, 1]:
#   xhat = x * invrms,  g = dy * w
#   dx = invrms * (g - xhat * mean_H(g * xhat)),   dw = sum_N(dy * xhat)
# Inputs: x [N, H], dy [N, H], w [H] (half precision), invrms [N, 1] f32.
# Outputs: dx [N, H], dw [H] in the half-precision dtype.
import torch
from nvfuser import FusionDefinition, DataType

def rms_norm_backward(fd : FusionDefinition) -> None :
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    dy = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    invrms = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    xf = fd.ops.cast(x, dtype=DataType.Float)
    dyf = fd.ops.cast(dy, dtype=DataType.Float)
    wf = fd.ops.cast(w, dtype=DataType.Float)
    full_shape = xf.shape()
    invrms_b = fd.ops.broadcast_in_dim(invrms, shape=full_shape, broadcast_dims=[0, 1])
    w_b = fd.ops.broadcast_in_dim(wf, shape=full_shape, broadcast_dims=[1])
    xhat = fd.ops.mul(xf, invrms_b)
    g = fd.ops.mul(dyf, w_b)
    sum_g_xhat = fd.ops.sum(fd.ops.mul(g, xhat), dims=[1], keepdim=False, dtype=DataType.Null)
    inv_h = fd.ops.reciprocal(xf.size(1))
    mean_g_xhat = fd.ops.mul(fd.ops.broadcast_in_dim(sum_g_xhat, shape=full_shape, broadcast_dims=[0]), inv_h)
    dx = fd.ops.mul(fd.ops.sub(g, fd.ops.mul(xhat, mean_g_xhat)), invrms_b)
    dw = fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(fd.ops.cast(dx, dtype=DataType.BFloat16))
    fd.add_output(fd.ops.cast(dw, dtype=DataType.BFloat16))

with FusionDefinition() as fd:
    rms_norm_backward(fd)

inputs = [
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(2048, 1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(1024, dtype=torch.bfloat16, device='cuda:0'),
    torch.rand(2048, 1, dtype=torch.float32, device='cuda:0') + 0.5,
]
fd.execute(inputs)
