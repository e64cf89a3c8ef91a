// inner_persistent.cuh: skeleton of the inner-persistent family (forward
// norms, softmax).  Groups of @BLOCK_X@ threads own a row each (@BLOCK_Y@
// rows per block, blocks striding over rows).  A thread copies its @BATCH@
// slices of @VECTOR@ elements of the row's inputs once, into shared memory
// (cp.async, the next row's copies in flight while this row is computed;
// rows of an odd length as the aligned 16-byte chunks that hold them: read
// element by element after a block barrier, or computed on those chunks
// where they fill the threads, each thread on the chunks it copied, the
// lanes outside the row masked) or registers, and
// keeps them there: each reduction level reads them, the
// row's threads combine their partial results, and the epilogue computes
// and writes the outputs from the same buffers.  Every input is read from
// device memory once and every output written once.
extern "C" __global__ void __launch_bounds__(@THREADS@, @MIN_BLOCKS@) @KERNEL_NAME@(
@PARAMETERS@)
{
    extern __shared__ __align__(16) unsigned char row_buffers[];
    __shared__ float reduction_scratch[@BLOCK_Y@ * @SCRATCH_PER_ROW@];
    const long long row_stride = (long long)gridDim.x * @BLOCK_Y@;
    int slot = 0;
    @BEFORE_ROWS@
    for (long long row_base = (long long)blockIdx.x * @BLOCK_Y@; row_base < outer;
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
}
