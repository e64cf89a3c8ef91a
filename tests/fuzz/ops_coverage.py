# Every supported op, keyword and positional forms, literals as operands.
import torch
from nvfuser import FusionDefinition, DataType

def fusion_with_every_op(fd : FusionDefinition) -> None :
    """A layer-norm forward with extra ops around it."""
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    S3 = fd.define_scalar(None, dtype=DataType.Double)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5, T6 = fd.ops.var_mean(T4, dims=[1], correction=0, keepdim=False)
    V7 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)
    T8 = fd.ops.broadcast_in_dim(T5, shape=V7, broadcast_dims=[0])
    T9 = fd.ops.broadcast_in_dim(T6, V7, [0])
    T10 = fd.ops.add(T8, S3)
    T11 = fd.ops.rsqrt(T10)
    T12 = fd.ops.broadcast_in_dim(T9, shape=T0.shape(), broadcast_dims=[0, 1])
    T13 = fd.ops.sub(T4, T12)
    T14 = fd.ops.expand(T11, shape=T0.shape())
    T15 = fd.ops.mul(T13, T14)
    T16 = fd.ops.broadcast(T1, is_broadcast_dim=[True, False])
    T17 = fd.ops.cast(T16, DataType.Float)
    T18 = fd.ops.mul(T15, T17)
    T19 = fd.ops.broadcast_in_dim(T2, T0.shape(), [1])
    T20 = fd.ops.add(T18, fd.ops.cast(T19, dtype=DataType.Float))
    T21 = fd.ops.cast(T20, dtype=DataType.Half)
    T22 = fd.ops.squeeze(T11, dims=[1])
    T23 = fd.ops.permute(T15, dims=[1, 0])
    T24 = fd.ops.reshape(T23, new_shape=[T0.size(1), T0.size(0)])
    S25 = fd.define_scalar(0.0, dtype=DataType.Double)
    T26 = fd.ops.gt(T15, S25)
    T27 = fd.ops.where(T26, T15, 0.0)
    T28 = fd.ops.full(shape=[T0.size(0), T0.size(1)], fill_value=0.5, dtype=DataType.Float)
    T29 = fd.ops.maximum(T27, T28)
    T30 = fd.ops.minimum(fd.ops.abs(T29), 4.0)
    T31 = fd.ops.max(T30, dims=[1], keepdim=True, dtype=DataType.Float)
    T32 = fd.ops.exp(fd.ops.neg(T31))
    T33 = fd.ops.log(fd.ops.sqrt(fd.ops.reciprocal(T32)))
    T34 = fd.ops.div(fd.ops.pow(T33, 2), -1.5e-1)
    T35 = fd.ops.segment_set(T34)
    T36 = fd.ops.set(T24)
    S37 = fd.ops.size(T0, dim=1)
    S38 = fd.ops.mul(S37, 2)
    T39 = fd.ops.mul(T36, fd.ops.reciprocal(S38))
    T40 = fd.ops.sum(T39, dims=[0, 1], keepdim=False, dtype=DataType.Double)
    T41 = fd.ops.sum(T22)
    T42 = fd.ops.lt(T4, 1)
    T43 = fd.ops.eq(fd.ops.ne(T42, True), fd.ops.le(T4, fd.ops.ge(T4, -1)))
    fd.add_output(T21)
    fd.add_output(T6)
    fd.add_output(T35)
    fd.add_output(T40)
    fd.add_output(T41)
    fd.add_output(T43)

with FusionDefinition() as fd:
    fusion_with_every_op(fd)

inputs = [
    torch.randn(256, 512, dtype=torch.float16, device='cuda:0'),
    torch.ones(512, dtype=torch.float16, device='cuda:0'),
    torch.zeros(512, dtype=torch.half).cuda(),
    1e-5,
]
fd.execute(inputs)
