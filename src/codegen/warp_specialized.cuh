// warp_specialized.cuh: skeleton of the warp-specialized (TMA) kernels: the
// inner-outer family (layer-norm and RMS-norm backward, nvFuser's second
// approach) and the TMA inner persistent family (forward norms, seed 003).
// One block per SM: @GROUPS@ compute groups of @BLOCK_X@ threads (threadIdx.y
// the group) and a producer warp group of 128 threads, one more row of
// threads under groups of 128, else 128 more threads on x beside the one
// group.  One producer thread copies whole rows of the buffered inputs
// into a circular buffer of @STAGES@ stages (1-D bulk copies completing on a
// full barrier per stage).  Each compute group takes @UNROLL@ rows per step
// from the stages of its own (stage % @GROUPS@), computes them as the
// multi-wave kernel does, releases the stage on its empty barrier (at once
// when the step's rows are first read into registers: LOAD_STEP; with several
// rows per step, each reduction pass runs over all of the step's rows and
// ends in one group reduction per kind for all of them: GROUPED_ROWS) and, for
// the inner-outer family, adds the outer reductions' terms to float partials
// in registers (layer norm's backward over 16-bit rows loads its row
// statistics a step ahead, before the wait: STEP_VALUES_AHEAD, STEP_VALUES);
// AFTER_ROWS is then that family's second stage
// (inner_outer_stage_two.cuh, shared with the multi-wave kernel), empty for
// the inner family.
// When each group is whole warp groups, the producer group gives registers
// to the compute groups (setmaxnreg: @PRODUCER_REGISTERS@ and
// @COMPUTE_REGISTERS@ per thread; 0 means every thread keeps its share) and
// both return to @START_REGISTERS@ before the partials and stage 2.
#include <cooperative_groups.h>

extern "C" __global__ void __launch_bounds__(@THREADS@, 1) @KERNEL_NAME@(
@PARAMETERS@)
{
    extern __shared__ __align__(128) unsigned char row_buffers[];
    __shared__ __align__(8) unsigned long long full_barriers[@STAGES@];
    __shared__ __align__(8) unsigned long long empty_barriers[@STAGES@];
    __shared__ float reduction_scratch[@GROUPS@ * @SCRATCH_PER_ROW@];
    const int group = @GROUP_OF_THREAD@
    // each compute group's own slice: the groups reduce at different times,
    // some reductions over more values than others
    float *const group_scratch = reduction_scratch + group * @SCRATCH_PER_ROW@;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        for (int stage = 0; stage < @STAGES@; ++stage) {
            fv_barrier_init(&full_barriers[stage], 1);
            fv_barrier_init(&empty_barriers[stage], @BLOCK_X@);
        }
        fv_barrier_fence_init();
    }
    @PARTIALS@
    @BEFORE_ROWS@
    __syncthreads();
    if (group == @GROUPS@) {
        fv_release_registers<@PRODUCER_REGISTERS@>();
        // Producer: stage (step % slots) * groups + g holds group g's rows of
        // `step`; it is refilled once the group has released it.
        if (@PRODUCER_LEADER@) {
            for (long long step = 0;; ++step) {
                bool finished = false;
                for (int g = 0; g < @GROUPS@ && !finished; ++g) {
                    const long long first_row =
                        ((step * gridDim.x + blockIdx.x) * @GROUPS@ + g) * @UNROLL@;
                    if (first_row >= outer) {
                        finished = true;
                        break;
                    }
                    const int stage = (int)(step % @SLOTS@) * @GROUPS@ + g;
                    fv_barrier_wait(&empty_barriers[stage], ((unsigned)(step / @SLOTS@) & 1u) ^ 1u);
                    const long long rows = outer - first_row < @UNROLL@ ? outer - first_row : @UNROLL@;
                    fv_barrier_expect_bytes(&full_barriers[stage], (unsigned)(rows * inner * @ROW_ELEMENT_BYTES@));
                    for (int u = 0; u < rows; ++u) {
                        const long long fetch_row = first_row + u;
                        const int slot_row = stage * @UNROLL@ + u;
                        @FETCH_ROW@
                    }
                }
                if (finished)
                    break;
            }
        }
        // setmaxnreg and the barriers after the rows are .aligned: every
        // thread of a warp must execute them together (PTX ISA), so the
        // leader's warp reconverges here first.
        __syncwarp();
        fv_claim_registers<@START_REGISTERS@>();  // back to the launch share for stage 2
    } else {
        fv_claim_registers<@COMPUTE_REGISTERS@>();
        @STEP_VALUES_AHEAD@
        for (long long step = 0;; ++step) {
            const long long first_row = ((step * gridDim.x + blockIdx.x) * @GROUPS@ + group) * @UNROLL@;
            if (first_row >= outer)
                break;
            const int stage = (int)(step % @SLOTS@) * @GROUPS@ + group;
            @STEP_VALUES@
            fv_barrier_wait(&full_barriers[stage], (unsigned)(step / @SLOTS@) & 1u);
            @LOAD_STEP@
            @GROUPED_ROWS@
            @ROWS_PRAGMA@
            for (int u = 0; u < @UNROLL@; ++u) {
                @ROW_START@
                @ROW_PROLOGUE@
                @STAGES_CODE@
                if (row_active) {
                    @EPILOGUE@
                }
            }
            @STAGE_RELEASE@
        }
        fv_release_registers<@START_REGISTERS@>();  // back to the launch share for stage 2
    }
    @AFTER_ROWS@
}
