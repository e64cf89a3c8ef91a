// inner_outer_stage_two.cuh: the end of both inner-outer persistent kernels
// (their AFTER_ROWS): the float partials of each row group go to the workspace
// ([grid x partial rows per block, inner] per outer reduction: one per row
// of the block, or one when the block adds its rows' partials together
// first; one per cluster when a cluster's blocks add theirs together
// first), the grid synchronizes, and
// a second stage adds the workspace rows up in a fixed order.
// Stage 1 -> 2: each thread's partials to the workspace, then a grid sync.
const long long partial_rows = (long long)@PARTIAL_GROUPS@ * @PARTIALS_PER_GROUP@;
const long long partial_row = (long long)@PARTIAL_GROUP@ * @PARTIALS_PER_GROUP@ + @PARTIAL_IN_GROUP@;
@WRITE_PARTIALS@
cooperative_groups::this_grid().sync();
// Stage 2: the block's threads as @STAGE_X@ column vectors x @STAGE_Y@
// slices of the partial rows; each thread adds its slice's rows in order,
// then the slices are added in a fixed order (within a warp by shuffles
// where a warp holds several slices of a column, then warp by warp).
@STAGE_SCRATCH@
const int thread_index = threadIdx.y * @LAUNCH_BLOCK_X@ + threadIdx.x;
const int slice = thread_index / @STAGE_X@;
for (long long column_base = (long long)blockIdx.x * @STAGE_X@ * @STAGE_VECTOR@;
     column_base < inner; column_base += (long long)gridDim.x * @STAGE_X@ * @STAGE_VECTOR@) {
    const long long column = column_base + (long long)(thread_index % @STAGE_X@) * @STAGE_VECTOR@;
    const bool column_active = column < inner;
    @STAGE_TWO@
}
