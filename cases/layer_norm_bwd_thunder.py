# Layer-norm backward as Lightning Thunder hands it to nvFuser (the op sequence of
# nvFuser's ThunderLayerNormBackward test, seed 000): concrete shapes 16384x2048 bf16,
# the mean passed as [N] and broadcast inside the fusion, invstd as [N, 1], the
# literal 1/H constants, pow(invstd, 3) and a sum over a size-1 broadcast dimension.
# Inputs: w [H] bf16, mean [N] f32, dy [N, H] bf16, x [N, H] bf16, invstd [N, 1] f32.
# Outputs: db [H], dw [H], dx [N, H], all bf16.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2048], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T1 = fd.define_tensor(shape=[16384], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[16384, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[16384, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[16384, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T8 = fd.ops.broadcast_in_dim(T0, shape=[16384, 2048], broadcast_dims=[1])
    T12 = fd.ops.broadcast_in_dim(T1, shape=[16384, 1], broadcast_dims=[0])
    T13 = fd.ops.cast(T2, dtype=DataType.Float)
    T14 = fd.ops.cast(T8, dtype=DataType.Float)
    T18 = fd.ops.broadcast_in_dim(T12, shape=[16384, 2048], broadcast_dims=[0, 1])
    T19 = fd.ops.cast(T3, dtype=DataType.Float)
    T20 = fd.ops.mul(T14, T13)
    T21 = fd.ops.sub(T19, T18)
    T22 = fd.ops.mul(T21, T20)
    T23 = fd.ops.sum(T22, dims=[1], keepdim=False, dtype=DataType.Null)
    T27 = fd.ops.broadcast_in_dim(T23, shape=[16384, 1], broadcast_dims=[0])
    T31 = fd.ops.broadcast_in_dim(T4, shape=[16384, 2048], broadcast_dims=[0, 1])
    S32 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T33 = fd.ops.pow(T4, S32)
    S34 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T35 = fd.ops.mul(S34, T27)
    T36 = fd.ops.mul(T31, T20)
    T37 = fd.ops.mul(T35, T33)
    T38 = fd.ops.neg(T36)
    T39 = fd.ops.sum(T37, dims=[1], keepdim=False, dtype=DataType.Null)
    T40 = fd.ops.sum(T38, dims=[1], keepdim=False, dtype=DataType.Null)
    T44 = fd.ops.broadcast_in_dim(T1, shape=[16384, 1], broadcast_dims=[0])
    T48 = fd.ops.broadcast_in_dim(T39, shape=[16384, 1], broadcast_dims=[0])
    T52 = fd.ops.broadcast_in_dim(T40, shape=[16384, 1], broadcast_dims=[0])
    T56 = fd.ops.broadcast_in_dim(T44, shape=[16384, 2048], broadcast_dims=[0, 1])
    T60 = fd.ops.broadcast_in_dim(T48, shape=[16384, 2048], broadcast_dims=[0, 1])
    T61 = fd.ops.sum(T52, dims=[1], keepdim=False, dtype=DataType.Null)
    T62 = fd.ops.sub(T19, T56)
    S63 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T64 = fd.ops.mul(S63, T60)
    T68 = fd.ops.broadcast_in_dim(T61, shape=[16384, 1], broadcast_dims=[0])
    T69 = fd.ops.mul(T64, T62)
    T73 = fd.ops.broadcast_in_dim(T68, shape=[16384, 2048], broadcast_dims=[0, 1])
    S74 = fd.define_scalar(2048.00, dtype=DataType.Double)
    S75 = fd.ops.reciprocal(S74)
    T76 = fd.ops.mul(T69, S75)
    S77 = fd.define_scalar(0.000488281, dtype=DataType.Double)
    T78 = fd.ops.mul(S77, T73)
    T79 = fd.ops.mul(T21, T31)
    T80 = fd.ops.add(T78, T76)
    T81 = fd.ops.mul(T79, T13)
    T82 = fd.ops.add(T36, T80)
    T83 = fd.ops.sum(T81, dims=[0], keepdim=False, dtype=DataType.Null)
    T84 = fd.ops.sum(T13, dims=[0], keepdim=False, dtype=DataType.Null)
    T85 = fd.ops.cast(T82, dtype=DataType.BFloat16)
    T86 = fd.ops.cast(T83, dtype=DataType.BFloat16)
    T87 = fd.ops.cast(T84, dtype=DataType.BFloat16)
    fd.add_output(T87)
    fd.add_output(T86)
    fd.add_output(T85)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(2048, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(16384, dtype=torch.float32, device='cuda:0'),
    torch.randn(16384, 2048, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(16384, 2048, dtype=torch.bfloat16, device='cuda:0'),
    torch.rand(16384, 1, dtype=torch.float32, device='cuda:0') + 0.5,
]
fd.execute(inputs)
