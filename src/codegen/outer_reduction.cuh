// outer_reduction.cuh: skeleton of the outer-reduction family.  Columns of
// the [outer, inner] domain are reduced over the outer axis: each thread owns
// @VECTOR@ adjacent columns and strides over rows with @BLOCK_Y@ threads per
// column slice, four rows at a time; the block combines its rows in shared
// memory, and when the grid splits the rows (gridDim.y > 1) every block
// writes its partial to the workspace and the last block to arrive adds the
// partials in block order (deterministic) and runs the epilogue.
extern "C" __global__ void __launch_bounds__(@THREADS@) @KERNEL_NAME@(
@PARAMETERS@)
{
    __shared__ float block_partials[@REDUCTIONS@][@BLOCK_Y@][@BLOCK_X@ * @VECTOR@];
    __shared__ bool is_last_block;
    const long long column = ((long long)blockIdx.x * @BLOCK_X@ + threadIdx.x) * @VECTOR@;
    const bool column_active = column < inner;
    const long long safe_column = column_active ? column : 0;
    @COLUMN_PROLOGUE@
    @ACCUMULATORS@
    // The thread's rows in groups of four whose loads are issued together
    // (a row at a time, a column of 64 bytes per warp waits on each load),
    // then the rest; each thread still adds its rows in order.
    const long long row_step = (long long)gridDim.y * @BLOCK_Y@;
    long long first_row = (long long)blockIdx.y * @BLOCK_Y@ + threadIdx.y;
    for (; column_active && first_row + 3 * row_step < outer; first_row += 4 * row_step) {
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const long long row = first_row + k * row_step;
            @BODY@
        }
    }
    for (long long row = first_row; column_active && row < outer; row += row_step) {
        @BODY@
    }
    @BLOCK_REDUCE@
    if (gridDim.y > 1) {
        @GRID_REDUCE@
    }
    if (threadIdx.y == 0 && column_active && (gridDim.y == 1 || is_last_block)) {
        @EPILOGUE@
    }
}
