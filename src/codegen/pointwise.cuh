// pointwise.cuh: skeleton of the pointwise family.  The domain is
// [outer, inner]; each thread handles @VECTOR@ consecutive elements of the
// inner axis (16-byte accesses where the dtypes allow), threads stride over
// both axes, and the emitter writes the fusion's math in the body.
extern "C" __global__ void __launch_bounds__(@THREADS@) @KERNEL_NAME@(
@PARAMETERS@)
{
    const long long inner_vectors = inner / @VECTOR@;
    for (long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y; row < outer;
         row += (long long)gridDim.y * blockDim.y) {
        for (long long vector_index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
             vector_index < inner_vectors; vector_index += (long long)gridDim.x * blockDim.x) {
            const long long column = vector_index * @VECTOR@;
            @BODY@
        }
    }
}
