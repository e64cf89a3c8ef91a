# RMS-norm backward in the form Thunder produces: concrete shapes (16384x4096 bf16),
# the saved rms passed as [N, 1] (not its reciprocal), pow(rms, 2) and a sum over a
# size-1 broadcast dimension.  With s = sum_H(-dy * w * x / rms^2):
#   dx = dy * w / rms + s * x / (rms * H),   dw = sum_N(dy * x / rms)
# Inputs: x [N, H] bf16, rms [N, 1] f32, dy [N, H] bf16, w [H] bf16.
# Outputs: dx [N, H] bf16, dw [H] bf16.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16384, 4096], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[16384, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[16384, 4096], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[4096], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    T6 = fd.ops.cast(T3, dtype=DataType.Float)
    T7 = fd.ops.broadcast_in_dim(T1, shape=[16384, 4096], broadcast_dims=[0, 1])
    T8 = fd.ops.reciprocal(T7)
    T9 = fd.ops.broadcast_in_dim(T6, shape=[16384, 4096], broadcast_dims=[1])
    T10 = fd.ops.mul(T5, T9)
    T11 = fd.ops.mul(T10, T8)
    T12 = fd.ops.mul(T4, T8)
    T13 = fd.ops.mul(T5, T12)
    T14 = fd.ops.sum(T13, dims=[0], keepdim=False, dtype=DataType.Null)
    T15 = fd.ops.neg(T10)
    T16 = fd.ops.mul(T15, T4)
    S17 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T18 = fd.ops.pow(T7, S17)
    T19 = fd.ops.reciprocal(T18)
    T20 = fd.ops.mul(T16, T19)
    T21 = fd.ops.sum(T20, dims=[1], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.broadcast_in_dim(T21, shape=[16384, 1], broadcast_dims=[0])
    T23 = fd.ops.reciprocal(T1)
    T24 = fd.ops.mul(T22, T23)
    S25 = fd.define_scalar(0.000244141, dtype=DataType.Double)
    T26 = fd.ops.mul(T24, S25)
    T27 = fd.ops.sum(T26, dims=[1], keepdim=False, dtype=DataType.Null)
    T28 = fd.ops.broadcast_in_dim(T27, shape=[16384, 1], broadcast_dims=[0])
    T29 = fd.ops.broadcast_in_dim(T28, shape=[16384, 4096], broadcast_dims=[0, 1])
    T30 = fd.ops.mul(T29, T4)
    T31 = fd.ops.add(T11, T30)
    T32 = fd.ops.cast(T31, dtype=DataType.BFloat16)
    T33 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T32)
    fd.add_output(T33)

with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn(16384, 4096, dtype=torch.bfloat16, device='cuda:0'),
    torch.rand(16384, 1, dtype=torch.float32, device='cuda:0') + 0.5,
    torch.randn(16384, 4096, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(4096, dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
