// inner_multipass.cuh: skeleton of the inner-multipass family (forward norms
// and softmax over rows that no persistent budget holds).  A block of
// @BLOCK_X@ threads owns a row (blocks striding over rows) and walks it once
// per reduction level, then once more to compute and store the outputs,
// reading the row's inputs from device memory in each pass; the passes after
// the first find only part of the row in L2 (the outputs, streaming stores,
// are evicted first).  The passes alternate direction: each starts on the
// lines the one before it read last, the likeliest to still be in L2.  Rows whose length is
// not a multiple of the vector are walked on the aligned 16-byte chunks of
// their span: whole chunks are vector loads and stores, the chunks at the
// row's ends are read and written lane by lane, and lanes outside the row are
// left out of the reductions.  Where the rows in flight would outgrow the
// L2, a cluster of blocks shares each row, a slice each, and the blocks add
// their totals through distributed shared memory (cluster_exchange.cuh).
@CLUSTER_HELPERS@
extern "C" __global__ void __launch_bounds__(@BLOCK_X@, 1) @KERNEL_NAME@(
@PARAMETERS@)
{
    __shared__ float reduction_scratch[96];
    @CLUSTER_SETUP@
    for (long long row = @FIRST_ROW@; row < outer; row += @ROW_STEP@) {
        @ROW_START@
        @ROW_PROLOGUE@
        @PASSES@
        @EPILOGUE@
    }
}
