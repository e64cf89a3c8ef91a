# Thunder-style layer-norm backward: concrete shapes, stride_order, literal 1/H,
# and a sum over a size-1 broadcast dimension.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16384, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[16384, 2048], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[16384, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[16384, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[2048], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T4, dtype=DataType.Float)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[16384, 2048], broadcast_dims=[1])
    T9 = fd.ops.mul(T6, T8)
    T10 = fd.ops.broadcast_in_dim(T2, shape=[16384, 2048], broadcast_dims=[0, 1])
    T11 = fd.ops.sub(T5, T10)
    T12 = fd.ops.broadcast_in_dim(T3, shape=[16384, 2048], broadcast_dims=[0, 1])
    T13 = fd.ops.mul(T11, T12)
    T14 = fd.ops.mul(T9, T13)
    T15 = fd.ops.sum(T14, dims=[1], keepdim=True, dtype=DataType.Null)
    T16 = fd.ops.sum(T9, dims=[1], keepdim=True, dtype=DataType.Null)
    S17 = fd.define_scalar(0.000488281, dtype=DataType.Double)
    T18 = fd.ops.mul(T15, S17)
    T19 = fd.ops.mul(T16, S17)
    T20 = fd.ops.sum(T18, dims=[1], keepdim=False, dtype=DataType.Null)
    T21 = fd.ops.broadcast_in_dim(T20, shape=[16384, 2048], broadcast_dims=[0])
    T22 = fd.ops.broadcast_in_dim(T19, shape=[16384, 2048], broadcast_dims=[0, 1])
    T23 = fd.ops.mul(T13, T21)
    T24 = fd.ops.sub(T9, T22)
    T25 = fd.ops.sub(T24, T23)
    T26 = fd.ops.mul(T25, T12)
    T27 = fd.ops.mul(T6, T13)
    T28 = fd.ops.sum(T27, dims=[0], keepdim=False, dtype=DataType.Null)
    T29 = fd.ops.sum(T6, dims=[0], keepdim=False, dtype=DataType.Null)
    T30 = fd.ops.cast(T26, dtype=DataType.BFloat16)
    T31 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    T32 = fd.ops.cast(T29, dtype=DataType.BFloat16)
    fd.add_output(T30, stride_order=[1, 0])
    fd.add_output(T31)
    fd.add_output(T32)

with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn(16384, 2048, dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((16384, 2048), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn(16384, 1, dtype=torch.float32, device='cuda:0'),
    torch.rand(16384, 1, dtype=torch.float32, device='cuda:0') + 0.5,
    torch.testing.make_tensor((2048,), dtype=torch.bfloat16, device='cuda:0', low=-1, high=1),
]
fd.execute(inputs)
