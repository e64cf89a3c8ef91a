from nvfuser import FusionDefinition, DataType
import torch

# Older repro style: the statements sit directly in the with block.
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.broadcast_in_dim(T1, shape=T0.shape(), broadcast_dims=[1])
    T3 = fd.ops.mul(T0, T2)
    T4 = fd.ops.sum(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.mul(T4, \
                    2)
    fd.add_output(T5)

inputs = [
    (torch.randn(128, 256, device='cuda') - 1) * 2,
    torch.full((256,), 3.0, dtype=torch.float32, device='cuda'),
]
fd.execute(inputs)
