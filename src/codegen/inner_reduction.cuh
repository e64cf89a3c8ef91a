// inner_reduction.cuh: skeleton of the inner-reduction family.  Rows of the
// [outer, inner] domain are reduced over the inner axis by groups of
// @BLOCK_X@ threads (@BLOCK_Y@ rows per block, blocks striding over rows).
// Each thread accumulates @VECTOR@-wide slices of its row in registers, the
// group combines them, and the row's epilogue runs on the reduced values.
extern "C" __global__ void __launch_bounds__(@THREADS@) @KERNEL_NAME@(
@PARAMETERS@)
{
    __shared__ float reduction_scratch[@BLOCK_Y@ * 96];
    const long long inner_vectors = inner / @VECTOR@;
    for (long long row_base = (long long)blockIdx.x * @BLOCK_Y@; row_base < outer;
         row_base += (long long)gridDim.x * @BLOCK_Y@) {
        const long long row = row_base + threadIdx.y;
        const bool row_active = row < outer;
        const long long safe_row = row_active ? row : 0;
        @ROW_PROLOGUE@
        @ACCUMULATORS@
        for (long long vector_index = threadIdx.x; row_active && vector_index < inner_vectors;
             vector_index += @BLOCK_X@) {
            const long long column = vector_index * @VECTOR@;
            @BODY@
        }
        @REDUCE@
        if (row_active && threadIdx.x == 0) {
            @EPILOGUE@
        }
    }
}
