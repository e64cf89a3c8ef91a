// inner_outer_persistent.cuh: skeleton of the inner-outer persistent family
// (layer-norm and RMS-norm backward), nvFuser's multi-wave approach.  One
// cooperative kernel: every block walks its rows (@BLOCK_Y@ at a time, groups
// of @BLOCK_X@ threads per row), copies each row's inputs once into its row
// buffers (shared memory through cp.async, the next row's copies in flight
// while this row is computed, or registers), runs the grouped inner reductions, writes the row's outputs (dx)
// and adds the outer reductions' terms (dw, db) to float partials kept in
// registers across all its rows.  The partials then go to the workspace
// ([partial rows, inner] per outer reduction: a row per block, per row group
// or per cluster, inner_outer_stage_two.cuh), the grid synchronizes, and the
// second stage adds the workspace rows up in a fixed order and writes the
// outer reductions' outputs.  Rows too long for one block are split over
// the blocks of a thread-block cluster (a row group per cluster, a slice of
// the columns per block), which add their inner sums across the cluster.
#include <cooperative_groups.h>
@CLUSTER_HELPERS@

extern "C" __global__ void __launch_bounds__(@THREADS@, @MIN_BLOCKS@) @KERNEL_NAME@(
@PARAMETERS@)
{
    // Aligned to 128 bytes whatever the static shared memory before it: at
    // 16, kernels with 304 or 8528 bytes of it had their row slots off a
    // 128-byte line, and LN bwd at H = 20480-32768 took 11-23% longer on an H200.
    extern __shared__ __align__(128) unsigned char row_buffers[];
    __shared__ float reduction_scratch[@BLOCK_Y@ * @SCRATCH_PER_ROW@];
    @CLUSTER_SETUP@
    const long long row_stride = (long long)@ROW_GROUPS@ * @BLOCK_Y@;
    int slot = 0;
    @PARTIALS@
    @BEFORE_ROWS@
    for (long long row_base = (long long)@ROW_GROUP@ * @BLOCK_Y@; row_base < outer;
         row_base += row_stride) {
        const long long row = row_base + threadIdx.y;
        const bool row_active = row < outer;
        const long long safe_row = row_active ? row : 0;
        @ROW_START@
        @ROW_PROLOGUE@
        @LOAD_ROW@
        @STAGES@
        if (row_active) {
            @EPILOGUE@
        }
        @NEXT_SLOT@
    }
    fv_async_wait<0>();
    @AFTER_ROWS@
}
