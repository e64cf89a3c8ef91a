/* persistent.c: the persistent normalization families.
 *
 *   inner_persistent:        rows reduced over the inner axis and normalized
 *                            (forward norms, softmax): each row read once.
 *   inner_outer_persistent:  the same plus reductions over the rows (dw, db):
 *                            nvFuser's multi-wave approach, one cooperative
 *                            kernel with partials in registers, a workspace,
 *                            a grid sync and a second stage.
 *
 * Both keep each row's inputs that span both axes ("buffered" inputs; the
 * persistent buffers projected to inputs) in registers or shared memory:
 * every reduction level and the epilogue recompute what they need from those
 * buffers.  Budgets follow nvFuser (../shared/research/nvfuser.md 1.1-1.2):
 * buffers start in shared memory and move to registers one at a time when
 * shared memory overflows; the outer partials always live in registers.  When
 * a row fits neither, `choose` fails with FV_ERR_UNSUPPORTED and the plan
 * falls back to the general families. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/family.h"
#include "schedule/ws_heuristic.h"

enum {
    MAX_REDUCTIONS = 16,
    MAX_HELD_VALUES = 2,      /* recomputed_values: most values the epilogue reads back */
    MAX_CANDIDATES = 8,
    MIN_BLOCK_THREADS = 128,  /* the smallest block the search starts from (nvFuser's) */
    MAX_BLOCK_THREADS = 512,  /* the largest block the searches take */
    REGISTER_OVERHEAD = 64,   /* registers besides the buffers (measured on our kernels:
                                 nvFuser's 40 is for its own) */
    FLOAT_BUFFER_OVERHEAD = 16, /* more per fp32 row buffer (ptxas keeps more values live) */
    MAX_REGISTERS = 255,
    REGISTER_MARGIN = 31,     /* estimates of a row per block go up to 255 - this: at the
                                 limit, LN bwd bf16/fp16 16384x20480 and fp32 16384x16384
                                 (~224) compile to 224/226/196 registers, no spills */
    CLUSTER_REGISTER_MARGIN = 8, /* more for kernels in clusters, whose estimates run further
                                    under ptxas: LN bwd fp32 16384x32768 in clusters of 2
                                    (~224) took all 255 and ran 10% slower than in clusters
                                    of 4 (H200) */
    MAX_CLUSTER = 8,          /* the portable limit of blocks per thread-block cluster */
    MIN_SLICE_BYTES = 65536,  /* a block's slice of a row in clusters must carry at least
                                 this much of the buffered inputs to pay for the exchange of
                                 inner sums per row (measured on an H100, bench/results/h100-2026-11-21.md:
                                 slices of 40-48 KiB ran slower than the general path) */
    SCRATCH_BYTES = 4096,     /* shared memory the kernel uses besides buffers */
    STATIC_SHARED_BYTES = 1024, /* l1_left: a multi-wave kernel's static shared memory (block
                                   reduction and cluster exchange scratch: ~0.3 KiB in LN bwd
                                   16384 x 32768 in clusters of 2) */
    UNIFIED_L1_EXTRA = 28 << 10, /* L1 data cache an SM keeps at the largest shared-memory
                                    carveout (256 KiB unified on compute capability 9.0 and
                                    10.0, 228 KiB of it shared at most) */
    FLOATS_REGISTER_MARGIN = 32, /* hold_floats stays this far under 255 (kernels it would take
                                    closer were not measured) ... */
    HALF_ROW_FLOATS_REGISTER_MARGIN = 31, /* ... but a 16-bit row buffer may take the estimate
                                             to 224 on full 16-byte vectors (its conversion
                                             leaves every pass; odd-length rows compile to far
                                             more registers than estimated): LN bwd
                                             16-bit 16384 x 4096 / 8192 then hold both rows,
                                             +1.1..+2.4% on an H200; fp32 rows held so ran
                                             -0.3..+0.3%, and weights held at 224 instead of
                                             cached (RMS bwd fp32 16384) 0.7% slower
                                             (h200-2026-11-27.md, session 24) */
    FLOATS_MARGIN = 16,       /* spare registers hold_floats leaves, against the error of
                                 our register estimate */
    MULTIWAVE_MIN_ROW_GROUPS = 8, /* row groups a block of the 8-row multi-wave grid walks at
                                     least (compare_multiwave_grids; but see
                                     MULTIWAVE_MIN_WARP_ROWS) */
    MULTIWAVE_MIN_WARP_ROWS = 8,  /* ... rows, where a row is a warp's */
    SHORT_BLOCK_ROUNDS = 2,   /* two_round_blocks: row groups each forward block walks */
    SHORT_BLOCK_MIN_PER_SM = 3, /* two_round_blocks: fewest blocks per SM it applies at
                                   (any, for rows of one input and one reduction) */
    SHORT_BLOCK_HELD_MIN_ROW_BYTES = 8192, /* ... and, with rows held as float on a device of
                                              fast memory per SM, fewest bytes of a row's
                                              buffered inputs (H200: 4-6 KiB rows lost
                                              4.5-6.6%, 8-12 KiB gained 3.9-7.0%) */
    SHORT_SLICE_TWO_BLOCKS_MIN_ROW_BYTES = 16384, /* cap_multiwave_blocks: fewest bytes of a
                                                     row's buffered inputs from which short
                                                     slices keep 2 blocks per SM on fast
                                                     memory too (H200: 16 KiB rows +1.6..
                                                     +3.5%, 8 KiB -5.6..+0.3%) */
    SHORT_BLOCK_MIN_WAVES = 4, /* ... and fewest waves its blocks must fill (at 1-2 waves,
                                  N = 2049, they ran -4.5..+4.9% on an H200) */
    FORWARD_FLOAT_ELEMENTS = 32, /* hold_forward_row_floats: most elements of a row per thread */
    FORWARD_FLOATS_TWO_ROUND_MIN_ROW_BYTES = 6144, /* ... and, on fast memory per SM, fewest
                                                      bytes of a row from which floats that
                                                      cost the blocks their two rows are left
                                                      out (H200, LN fwd 16-bit 16384: rows
                                                      of 6 and 16 KiB +2.7..+4.5%; rows of
                                                      4 KiB without the floats -3.8..+0.9%,
                                                      not shown to gain, so kept) */
    HELD_VALUE_MIN_WARPS = 12, /* hold_recomputed_values: fewest warps per SM it leaves */
    HELD_CHUNK_STEPS = 9,      /* ... and most chunks per thread on span chunks */
    MULTIWAVE_SPARSE_MIN_STEPS = 3, /* sparse_chunks_taken: fewest steps per thread of a
                                       multi-wave row on chunks filling under 3/4 of them */
    HELD_SCALAR_ELEMENTS = 16, /* ... and most elements per thread on 1-element vectors (32, at
                                  H = 4095, ran 3% slower in fp32 and 23% in 16 bits on an H200) */
    GUARDED_FETCH_UNROLLED_COPIES = 16, /* fetch_unrolled_wholly: most 1-element fp32 copies per
                                           thread in a wholly unrolled loop of a forward kernel */
    FP32_SPAN_MIN_ROW_BYTES = 12288, /* copy_row_spans: fewest bytes of an fp32 forward row with
                                        row constants copied as spans (7.9 KiB rows lost, 16 KiB
                                        ones gained on an H200) */
    PARTIAL_CLUSTER = 2,      /* partial_cluster_blocks: blocks per cluster that add their
                                 outer partials together */
    PARTIAL_CLUSTER_MIN_BYTES = 8192, /* ... and the fewest bytes of partials per block it takes
                                         (RMS bwd fp32 at H = 1024, 4 KiB, ran 0.8-0.9%
                                         slower in clusters; 8 KiB ones 0.2-0.9% faster) */
    ROW_PAIR_THREADS = 128,   /* pair_rows: two rows of this many threads per block */
    ROW_PAIR_MAX_ELEMENTS = 48, /* pair_rows: at most this many elements per thread in
                                   the pair (two outer reductions) */
    ROW_PAIR_MAX_SINGLE = 32, /* ... with one outer reduction */
    ROW_PAIR_MAX_ON_FAST_MEMORY = 64, /* ... with two, in 16-bit rows on a device of fast
                                         memory per SM */
    ROW_PAIR_MAX_EXTRA_ROWS_EIGHTHS = 1, /* pair_keeps_the_grid: eighths of the single rows'
                                            rows per SM a pair may add */
    STAGE_TWO_LOAD_FLOATS = 32, /* stage_two_rows_per_load: most floats of workspace rows a
                                   stage-2 thread loads before adding them */
    FAST_MEMORY_MIN_GBS_PER_SM = 30, /* fast_memory_per_sm: DRAM GB/s per SM from which
                                        multi-wave kernels ask ptxas for their blocks,
                                        keep 3 blocks of short slices of rows under 16 KiB
                                        (2 below it), pair layer norm's 16-bit rows up to
                                        64 elements per thread and split one-slot
                                        clusters for two slots, and forward rows held as
                                        float, if short, keep one wave */
    MAX_ROW_SLOTS = 3,        /* deepen_prefetch's most row slots (4 measured no faster) */
    PREFETCH_BYTES_PER_SM = 32768, /* multi-wave rows in flight per SM under which a third
                                      row slot pays (H200, bench/results/h200-2026-11-22.md:
                                      at 24 KiB, LN/RMS bwd bf16 2048/3072/6144 +1.6..+8.6%;
                                      at 32 KiB, RMS bwd bf16 4096/8192 -2..-4%) */
    WARP_THREADS = 32,        /* threads of a warp */
    WARP_SPAN_MAX_STEPS = 5,  /* warps_per_span_row: most 16-byte chunks per lane of a row
                                 on span chunks that one warp takes (H200, N = 16384, 16-bit:
                                 up to 5 chunks (H = 151-1151) +4.9..+61.2%; 7 (1535) -7.6..
                                 +12.3%, 8 (1987) -13.1..-19.5% in the norms) */
    TWO_WARP_SPAN_MAX_STEPS = 3, /* ... and in a block of two warps, 16-bit rows only
                                    (1279: +8.6..+33.9%; 4 chunks, 1535 / 1987: -3.9..+7.4%) */
    WARP_ROW_VECTORS = 128    /* rows of at most this many vectors (4 per lane) get a warp
                                 each, several rows per block (measured on an H200,
                                 bench/results/h200-multiwave-2026-11-21.md and
                                 h200-2026-11-22.md: LN bwd bf16 16384x1024 47.6 -> 65.3% of
                                 copy, LN fwd bf16 16384x1024 53.7 -> 64.0%; up to 256
                                 vectors, bf16 at 2048, ran 2-5% slower so, forward and
                                 backward) */
};

/* The kernel descriptions' words for span chunks (take_span_chunks), left
 * open for what the family adds. */
#define SPAN_CHUNKS_TEXT "chunks of the row's aligned span (lanes outside the row left out of reductions and stores"

/* ------------------------------------------------------------- analysis */

typedef struct persistent_analysis {
    const fv_op *inner[MAX_REDUCTIONS];
    int inner_level[MAX_REDUCTIONS];  /* 1 + the levels its input depends on */
    int inner_count, levels;
    const fv_op *outer[MAX_REDUCTIONS];
    int outer_count;
    int *level;                       /* per value: highest inner level it depends on */
    bool *after_outer;                /* per value: depends on an outer reduction */
} persistent_analysis;

static void analysis_free(persistent_analysis *a)
{
    free(a->level);
    free(a->after_outer);
}

/* True if the segment reduces with a var_mean (not a trivial one over a
 * size-1 axis): its level reads each row twice (the mean, then the squared
 * deviations from it: emit_reduction_level). */
static bool has_var_mean(const fv_segment_view *view)
{
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &view->fusion->ops[view->order[i]];
        if (op->kind == FV_OP_VAR_MEAN && !fv_ir_is_trivial_reduction(view->fusion, op))
            return true;
    }
    return false;
}

/* One inner reduction and no var_mean (RMS norm): a row's passes over its
 * buffers are the reduction's and the epilogue's. */
static bool single_inner_reduction(const persistent_analysis *a, bool var_mean)
{
    return a->inner_count == 1 && !var_mean;
}

static bool reduces_axis(const fv_segment_view *view, const fv_op *op, int axis)
{
    for (int a = 0; a < op->axis_count; a++) {
        int32_t cls = view->axes.dim_class[op->inputs[0]][op->axes[a]];
        for (int k = 0; k < view->axis_class_count[axis]; k++)
            if (cls >= 0 && cls == view->axis_classes[axis][k])
                return true;
    }
    return false;
}

static fv_status analyze(const fv_segment_view *view, persistent_analysis *a)
{
    memset(a, 0, sizeof *a);
    const fv_fusion *fusion = view->fusion;
    a->level = calloc((size_t)fusion->value_count + 1, sizeof(int));
    a->after_outer = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (a->level == NULL || a->after_outer == NULL) {
        analysis_free(a);
        FV_FAIL(FV_ERR_NOMEM, "out of memory analysing a segment");
    }
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        int level = 0;
        bool after_outer = false;
        for (int k = 0; k < op->input_count; k++) {
            level = a->level[op->inputs[k]] > level ? a->level[op->inputs[k]] : level;
            after_outer = after_outer || a->after_outer[op->inputs[k]];
        }
        bool reduction = fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
                         !fv_ir_is_trivial_reduction(fusion, op);
        if (reduction && view->axis_count == 2 && reduces_axis(view, op, 1) &&
            !reduces_axis(view, op, 0) && a->inner_count < MAX_REDUCTIONS) {
            level++;
            a->inner_level[a->inner_count] = level;
            a->inner[a->inner_count++] = op;
            a->levels = level > a->levels ? level : a->levels;
        } else if (reduction && a->outer_count < MAX_REDUCTIONS) {
            a->outer[a->outer_count++] = op;
            after_outer = true;
        }
        for (int k = 0; k < op->output_count; k++) {
            a->level[op->outputs[k]] = level;
            a->after_outer[op->outputs[k]] = after_outer;
        }
    }
    return FV_OK;
}

/* Ops that call a math function per element (exp, log, pow): several
 * instructions each, a transcendental among them. */
static bool calls_math_function(fv_op_kind kind)
{
    return kind == FV_OP_EXP || kind == FV_OP_LOG || kind == FV_OP_POW;
}

/* The values a forward kernel's epilogue would compute a second time from
 * the row buffers: inputs of the last reduction level's reductions that the
 * outputs along the row use, and whose computation from the buffers calls a
 * math function (softmax's exp(x - max): the sum pass computes it, the
 * epilogue divides it); fp32 values only, as they are held in float arrays.
 * Stores at most MAX_HELD_VALUES of them in `values`
 * (NULL: only counts) and returns how many; 0 for kernels with outer
 * reductions and on allocation failure. */
static int recomputed_values(const fv_segment_view *view, const persistent_analysis *a,
                             int32_t *values)
{
    const fv_fusion *fusion = view->fusion;
    if (a->outer_count > 0 || a->levels == 0)
        return 0;
    bool *costly = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    bool *used = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    int32_t found[MAX_HELD_VALUES];
    int count = 0;
    if (costly == NULL || used == NULL)
        goto done;
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        bool along_row = fv_codegen_spans_inner(view, op->outputs[0]);
        bool calls = calls_math_function(op->kind);
        for (int k = 0; k < op->input_count; k++)
            calls = calls || costly[op->inputs[k]];
        costly[op->outputs[0]] = along_row && calls;
    }
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        used[id] = fv_codegen_spans_inner(view, id) && fv_codegen_spans_outer(view, id);
    }
    for (int32_t i = view->op_count - 1; i >= 0; i--) {
        const fv_op *op = &fusion->ops[view->order[i]];
        bool reduction = fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
                         !fv_ir_is_trivial_reduction(fusion, op);
        if (!used[op->outputs[0]] || reduction)
            continue;
        for (int k = 0; k < op->input_count; k++)
            used[op->inputs[k]] = true;
    }
    for (int r = 0; r < a->inner_count && count < MAX_HELD_VALUES; r++) {
        int32_t v = a->inner[r]->inputs[0];
        bool listed = false;
        for (int k = 0; k < count; k++)
            listed = listed || found[k] == v;
        if (a->inner_level[r] == a->levels && costly[v] && used[v] && !listed &&
            fv_codegen_spans_outer(view, v) && fusion->values[v].dtype == FV_F32)
            found[count++] = v;
    }
    if (values != NULL)
        memcpy(values, found, (size_t)count * sizeof *found);
done:
    free(costly);
    free(used);
    return count;
}

/* Inputs spanning both axes: kept per row in the row buffers. */
static bool is_buffered(const fv_segment_view *view, int32_t value)
{
    const fv_value *v = &view->fusion->values[value];
    return v->producer < 0 && v->input_index >= 0 && v->kind == FV_VALUE_TENSOR &&
           fv_codegen_spans_inner(view, value) && fv_codegen_spans_outer(view, value);
}

/* ----------------------------------------------------------- acceptance */

static bool check_common(const fv_segment_view *view, const persistent_analysis *a, char *why,
                         size_t size)
{
    if (!fv_family_common_checks(view, why, size))
        return false;
    if (view->axis_count != 2)
        return fv_family_reject(why, size, "persistent: needs an [outer, inner] segment");
    if (a->inner_count == 0)
        return fv_family_reject(why, size, "persistent: no reduction over the inner axis");
    bool normalizes = false;
    for (int32_t v = 0; v < view->fusion->value_count; v++)
        normalizes = normalizes || (a->level[v] > 0 && fv_codegen_spans_inner(view, v));
    if (!normalizes)
        return fv_family_reject(why, size,
                                "persistent: no reduced value is used along the reduced axis");
    for (int r = 0; r < a->inner_count; r++)
        if (a->after_outer[a->inner[r]->inputs[0]])
            return fv_family_reject(why, size, "persistent: an inner reduction follows an outer one");
    for (int32_t v = 0; v < view->fusion->value_count; v++)
        if (is_buffered(view, v) && !(fv_dtype_is_float(view->fusion->values[v].dtype) &&
                                      view->fusion->values[v].dtype != FV_F64))
            return fv_family_reject(why, size, "persistent: buffered inputs must be bf16, fp16 or fp32");
    return true;
}

static bool inner_persistent_accepts(const fv_segment_view *view, char *why, size_t size)
{
    persistent_analysis a;
    if (analyze(view, &a) != FV_OK)
        return fv_family_reject(why, size, "out of memory");
    bool ok = check_common(view, &a, why, size);
    if (ok && a.outer_count > 0)
        ok = fv_family_reject(why, size, "inner_persistent: the segment reduces over rows too");
    analysis_free(&a);
    return ok;
}

static bool inner_outer_accepts(const fv_segment_view *view, char *why, size_t size)
{
    persistent_analysis a;
    if (analyze(view, &a) != FV_OK)
        return fv_family_reject(why, size, "out of memory");
    bool ok = check_common(view, &a, why, size);
    if (ok && a.outer_count == 0)
        ok = fv_family_reject(why, size, "inner_outer_persistent: no reduction over rows");
    for (int r = 0; ok && r < a.outer_count; r++) {
        const fv_op *op = a.outer[r];
        if (op->kind != FV_OP_SUM && op->kind != FV_OP_MAX)
            ok = fv_family_reject(why, size, "inner_outer_persistent: %s over rows",
                                  fv_ir_op_name(op->kind));
        else if (!reduces_axis(view, op, 0) || reduces_axis(view, op, 1))
            ok = fv_family_reject(why, size, "inner_outer_persistent: a reduction over both axes");
        else if (a.after_outer[op->inputs[0]])
            ok = fv_family_reject(why, size, "inner_outer_persistent: chained reductions over rows");
    }
    const fv_fusion *fusion = view->fusion;
    for (int32_t v = 0; ok && v < fusion->value_count; v++)
        if (a.after_outer[v] && fv_codegen_spans_outer(view, v))
            ok = fv_family_reject(why, size, "inner_outer_persistent: a row reduction is used along the rows");
    for (int32_t o = 0; ok && o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (!fv_codegen_spans_outer(view, id) && !a.after_outer[id])
            ok = fv_family_reject(why, size,
                                  "inner_outer_persistent: output of the inner axis alone that is "
                                  "not a reduction over rows");
    }
    analysis_free(&a);
    return ok;
}

/* ----------------------------------------------------------- parameters */

/* Parameter layout in fv_schedule_params.extra. */
enum {
    /* The warp-specialized kinds read neither of the first two nor
     * EXTRA_CACHED: their rows are always in shared memory (bulk copies) and
     * the row-constant inputs follow EXTRA_WEIGHT_FLOATS. */
    EXTRA_IN_SHARED,      /* bit i: buffered input i (in input order) lives in shared memory */
    EXTRA_MIN_BLOCKS,     /* __launch_bounds__ minimum blocks per SM: 1 (ptxas uses what it
                             needs), or for multi-wave kernels on fast memory the blocks per
                             SM the grid is sized for (bounded_blocks_per_sm) */
    EXTRA_SHARED_BYTES,   /* dynamic shared memory per block */
    EXTRA_GRID,           /* blocks (one wave) */
    EXTRA_STAGE_X,        /* stage 2: column vectors per block */
    EXTRA_STAGE_Y,        /* stage 2: slices of the partial rows */
    EXTRA_STAGE_VECTOR,   /* stage 2: columns per thread */
    EXTRA_SLOTS,          /* row slots per shared buffer: 2 or more (the next slots - 1
                             rows are copied while this one is computed) or 1 */
    EXTRA_CACHED,         /* bit i: input i along the row only (a weight) is copied to
                             shared memory once per block */
    EXTRA_WS_STAGES,      /* warp-specialized: stages of the circular buffer */
    EXTRA_WS_UNROLL,      /* warp-specialized: rows per compute step */
    EXTRA_WS_PRODUCER_REGISTERS, /* warp-specialized: setmaxnreg of the producer group, or 0 */
    EXTRA_WS_COMPUTE_REGISTERS,  /* warp-specialized: setmaxnreg of the compute groups, or 0 */
    EXTRA_WS_START_REGISTERS,    /* warp-specialized: registers per thread at launch */
    EXTRA_CLUSTER,        /* multi-wave: blocks per thread-block cluster sharing each row
                             (each a slice of serial x block_x x vector columns); 0 or 1:
                             a row per block */
    EXTRA_ROW_FLOATS,     /* bit i: buffered input i, in shared memory, is also held as float
                             in registers for its row (read from its slot once, after the
                             copies land, instead of once per pass); warp-specialized: every
                             buffered input when the heuristic caches the stage's rows in
                             registers (regs_cached: the stage is released once they are read) */
    EXTRA_WEIGHT_FLOATS,  /* bit i: row-constant input i is held as float in registers for the
                             whole kernel (loaded once per thread, warp-specialized: per compute
                             thread; no shared cache) */
    EXTRA_SHARED_PARTIALS, /* multi-wave, a row (or a cluster's slice of it) per block: bit r:
                              outer reduction r's partials live in shared memory ([row capacity]
                              floats after the row slots, caches and statistics) instead of
                              registers; where a row fits a block no other way, and in clusters
                              (place_partials_in_shared, shared_partials_pay) */
    EXTRA_ROW_SPANS,      /* forward and multi-wave: 1 if rows are copied as the aligned 16-byte chunks that
                             hold them and read at their first element's offset
                             (copy_row_spans) */
    EXTRA_HELD_VALUES,    /* forward: 1 if the last reduction pass keeps the values the
                             epilogue would compute again (recomputed_values) as float in
                             registers for it (hold_recomputed_values) */
    EXTRA_WS_ROWS_OWN_TYPE, /* warp-specialized with EXTRA_ROW_FLOATS: 1 if the step's rows
                               are held in registers in their own 16-bit type
                               (row_copies<v>[unroll][batch], converted to float where
                               read), where they fit only so (ws_rows_in_registers) */
    EXTRA_PARTIAL_CLUSTER, /* multi-wave, a row per block: blocks per thread-block cluster
                              that add their outer partials together through distributed
                              shared memory before the workspace (each block a share of the
                              columns; partial_cluster_blocks); 0: none */
    EXTRA_SPAN_LANES,     /* forward and multi-wave with row spans: 1 if the batch loop runs
                             over the 16-byte chunks of the row's aligned span (vector: a
                             chunk's elements, serial: chunks per thread) and leaves the lanes
                             outside the row out of its reductions and stores (outer partials
                             in registers fold them, never stored; compute_on_span_chunks) */
    EXTRA_FETCH_UNROLLED_PARTLY, /* multi-wave and forward: 1 if the row copy loop is unrolled
                                    4 at a time however it is emitted (set by
                                    persistent_relieve_registers on a kernel that spilled) */
    EXTRA_PLANNED_BLOCKS, /* the blocks per SM the plan sized the grid for: a grid of one
                             wave of them (every grid but two_round_blocks' waves) is clamped
                             at launch to what the compiled kernel keeps resident
                             (persistent_launch); persistent_hold_occupancy */
    EXTRA_WHOLE_STEPS,    /* with EXTRA_SPAN_LANES: the batch steps b < this whose chunks all
                             end within the row whatever its shift, H / (block_x x chunk
                             elements); of them, steps 1 and on lie wholly in it
                             (write_whole_chunk_test) */
    EXTRA_WS_STATS_AHEAD, /* warp-specialized: 1 if the row statistics are loaded a step
                             ahead (ws_stats_ahead, emit_ws_step_values) */
    EXTRA_COUNT
};
_Static_assert(EXTRA_COUNT <= (int)(sizeof ((fv_schedule_params *)0)->extra / sizeof(int)),
               "fv_schedule_params.extra has no room for the persistent families' fields");

typedef struct buffered_inputs {
    /* Inputs spanning both axes: one row of each kept per row in flight. */
    int count;
    int32_t values[FV_CASE_MAX_INPUTS];
    size_t element_bytes[FV_CASE_MAX_INPUTS];
    /* Inputs along the row only (weights, biases): the same for every row. */
    int cached_count;
    int32_t cached_values[FV_CASE_MAX_INPUTS];
    size_t cached_element_bytes[FV_CASE_MAX_INPUTS];
    /* Row statistics (mean, invstd: one value per row) of 4 or 8 bytes: when
     * they travel with their rows (stats_with_rows), each thread copies them
     * with the row's other copies into its own entry of a shared slot. */
    int stat_count;
    int32_t stat_values[FV_CASE_MAX_INPUTS];
    size_t stat_bytes;          /* of one row of all of them together */
} buffered_inputs;

/* Inputs along the rows only (row statistics such as mean and invstd). */
static bool is_row_input(const fv_segment_view *view, int32_t value)
{
    const fv_value *v = &view->fusion->values[value];
    return v->producer < 0 && v->input_index >= 0 && v->kind == FV_VALUE_TENSOR &&
           fv_codegen_spans_outer(view, value) && !fv_codegen_spans_inner(view, value);
}

/* Inputs along the inner axis only, in a float type: worth caching. */
static bool is_row_constant(const fv_segment_view *view, int32_t value)
{
    const fv_value *v = &view->fusion->values[value];
    return v->producer < 0 && v->input_index >= 0 && v->kind == FV_VALUE_TENSOR &&
           fv_codegen_spans_inner(view, value) && !fv_codegen_spans_outer(view, value) &&
           fv_dtype_is_float(v->dtype) && v->dtype != FV_F64;
}

static void find_buffered(const fv_segment_view *view, buffered_inputs *b)
{
    memset(b, 0, sizeof *b);
    const fv_fusion *fusion = view->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        size_t bytes = fv_dtype_size(fusion->values[v].dtype);
        if (is_buffered(view, v) && b->count < FV_CASE_MAX_INPUTS) {
            b->values[b->count] = v;
            b->element_bytes[b->count++] = bytes;
        } else if (is_row_constant(view, v) && b->cached_count < FV_CASE_MAX_INPUTS) {
            b->cached_values[b->cached_count] = v;
            b->cached_element_bytes[b->cached_count++] = bytes;
        } else if (is_row_input(view, v) && (bytes == 4 || bytes == 8) &&
                   b->stat_count < FV_CASE_MAX_INPUTS) {
            b->stat_values[b->stat_count++] = v;
            b->stat_bytes += bytes;
        }
    }
}

/* Bytes of one row of every buffered input together, per element. */
static size_t row_element_bytes(const buffered_inputs *buffers)
{
    size_t bytes = 0;
    for (int i = 0; i < buffers->count; i++)
        bytes += buffers->element_bytes[i];
    return bytes;
}

/* Bit masks of every buffered input and of every row-constant input. */
static unsigned all_buffers(const buffered_inputs *buffers) { return (1u << buffers->count) - 1; }
static unsigned all_row_constants(const buffered_inputs *buffers)
{
    return (1u << buffers->cached_count) - 1;
}

/* Dynamic shared memory a block may use for its row slots and caches. */
static int64_t shared_budget(const fv_device *device)
{
    return device->shared_per_block_optin - SCRATCH_BYTES;
}

/* Blocks per SM that `dynamic_bytes` of dynamic shared memory per block
 * allow (with the kernel's static scratch and the per-block reserve). */
static int blocks_by_shared(const fv_device *device, int64_t dynamic_bytes)
{
    return (int)(device->shared_per_sm / (dynamic_bytes + SCRATCH_BYTES + 1024));
}

/* True if the row statistics (`stat_count` of them) travel with their row
 * (copied into shared memory in the row's commit group): there are some,
 * some row buffer is in shared memory
 * (`in_shared`, a bit per buffer), rows are not split over clusters of
 * `cluster` blocks and no outer partials are in shared memory
 * (`partials_in_shared`); else they are loaded one row ahead into
 * registers.  The clustered kernels were measured so; with partials in
 * shared memory, the 4 KiB of statistics slots (with the stage-2 scratch
 * moved into the row buffers, shared_stage_scratch) bring LN bwd 16-bit
 * 16384 x 24576 down to the 196 KiB shared-memory carveout, whose larger
 * L1 keeps more of the weight, read from device memory in every pass:
 * +4.7% (bf16) and +5.2% (fp16) on an H200 (L1 hit rate 0.9% -> 19.8%).
 * Not with one slot (`slots`) of row spans (`spans`): the row's copies are
 * issued after the row start, where the statistics are read
 * (emit_one_span_slot). */
static bool stats_with_rows(int stat_count, unsigned in_shared, int cluster,
                            unsigned partials_in_shared, bool spans, int slots)
{
    return stat_count > 0 && in_shared != 0 && cluster <= 1 && partials_in_shared == 0 &&
           !(spans && slots == 1);
}

/* True if a kernel's one row slot is refilled with the next row's copies as
 * soon as it is read: every shared buffer is held as float for its row, no
 * clusters, and no row statistics in the slot (the copies would overwrite
 * them before the row reads them). */
static bool slot_refilled(int slots, unsigned in_shared, unsigned row_floats, int cluster,
                          bool stats_in_slot)
{
    return slots == 1 && in_shared != 0 && (row_floats & in_shared) == in_shared &&
           cluster <= 1 && !stats_in_slot;
}

/* True if every row buffer moves in full 16-byte vectors of `vector`
 * elements (not so for rows of an odd length, on 1-element vectors). */
static bool full_vectors(const buffered_inputs *buffers, int vector)
{
    for (int i = 0; i < buffers->count; i++)
        if ((size_t)vector * buffers->element_bytes[i] != 16)
            return false;
    return true;
}

/* True if every row buffer is 16-bit on full 16-byte vectors (8 elements). */
static bool sixteen_bit_rows(const buffered_inputs *buffers, int vector)
{
    return vector == 8 && full_vectors(buffers, vector);
}

/* The two grids a multi-wave candidate chooses between
 * (compare_multiwave_grids), kept for `show`. */
typedef struct multiwave_grids {
    int64_t wave;                /* walkers one wave holds */
    int64_t least_rows_walkers;  /* the 8-row grid's walkers (nvFuser's) */
    int64_t least_rows_busiest;  /* ... and the rows its busiest SM walks */
    int64_t balanced_walkers;    /* the balanced grid's walkers */
    int64_t balanced_busiest;
    int64_t balanced_rounds;     /* row groups its busiest walker walks */
    bool balanced_taken;
} multiwave_grids;

typedef struct candidate {
    int threads, block_x, block_y, batch;
    int cluster;               /* blocks sharing each row (a slice each), 1: none */
    bool split_for_constants;  /* split although a row fits a block, which would read the
                                  row-constant inputs from device memory in every pass */
    bool paired;               /* two rows per block instead of one (pair_rows) */
    int registers, blocks_per_sm, grid, spare;
    int shared_bytes;          /* dynamic: row slots and cached inputs */
    unsigned in_shared;        /* bit per buffered input */
    int slots;                 /* row slots per shared buffer */
    bool cached;               /* row-constant inputs cached in shared memory */
    unsigned row_floats;       /* bit per buffered input: also held as float in registers */
    bool row_floats_left_out;  /* forward rows not held as float: the floats would cost
                                  the blocks their two rows (floats_cost_two_rounds) */
    bool weight_floats;        /* row-constant inputs held as float in registers */
    unsigned partials_in_shared; /* bit per outer reduction: its partials in shared memory */
    int held_values;           /* recomputed values kept in registers for the epilogue */
    bool spans;                /* rows copied in 16-byte chunks from an aligned start
                                  (copy_row_spans) */
    int span_batch;            /* chunks of the row's span per thread when computed on them
                                  (compute_on_span_chunks), 0: on `batch` vectors */
    int row_capacity;          /* elements of a row the block's row group covers */
    const char *limit;         /* what limits blocks per SM */
    multiwave_grids grids;     /* set_grid's choice of grid (multi-wave) */
} candidate;

static int round_up_16(int64_t bytes) { return (int)((bytes + 15) / 16 * 16); }

/* Bytes of one row of the row-constant inputs over a candidate's row
 * capacity (what their cache in shared memory takes). */
static int64_t row_constant_bytes(const buffered_inputs *buffers, const candidate *c)
{
    int64_t bytes = 0;
    for (int i = 0; i < buffers->cached_count; i++)
        bytes += round_up_16((int64_t)c->row_capacity * (int64_t)buffers->cached_element_bytes[i]);
    return bytes;
}

/* Registers a thread of a `threads`-thread block may use under its launch
 * bounds: 64K / threads. */
static int launch_bounds_share(const fv_device *device, int threads)
{
    return device->registers_per_block / threads;
}

/* The launch bounds' share less a margin of 8, against the error of the
 * register estimate. */
static int launch_bounds_registers(const fv_device *device, int threads)
{
    return launch_bounds_share(device, threads) - 8;
}

/* Elements a row slot of a buffer of `element_bytes` elements holds besides
 * the row capacity when rows are copied as aligned spans (copy_row_spans):
 * up to 15 bytes before the row's first element and up to 15 after its
 * last, rounded to two 16-byte chunks. */
static int span_padding(bool spans, size_t element_bytes)
{
    return spans ? (int)(32 / element_bytes) : 0;
}

/* Shared memory of a candidate's placement: the slots of the buffers in
 * shared memory ([block_y][row_capacity] elements each, and the span
 * padding) and, if cached, one row of each row-constant input, and the row
 * statistics' slots ([threads] entries each) when they travel with their
 * rows. */

static int64_t placement_bytes(const buffered_inputs *buffers, const candidate *c)
{
    int64_t bytes = 0;
    for (int i = 0; i < buffers->count; i++)
        if ((c->in_shared >> i) & 1)
            bytes += round_up_16(((int64_t)c->row_capacity * c->block_y +
                                  span_padding(c->spans, buffers->element_bytes[i])) *
                                 (int64_t)buffers->element_bytes[i]) * c->slots;
    if (c->cached)
        bytes += row_constant_bytes(buffers, c);
    if (stats_with_rows(buffers->stat_count, c->in_shared, c->cluster, c->partials_in_shared,
                        c->spans, c->slots))
        bytes += round_up_16((int64_t)c->threads * (int64_t)buffers->stat_bytes) * c->slots;
    bytes += __builtin_popcount(c->partials_in_shared) * (int64_t)round_up_16((int64_t)c->row_capacity * 4);
    return bytes;
}

/* Registers per thread and shared memory per block of a candidate (nvFuser's
 * placement, 1.1): buffers start in shared memory, with two row slots each
 * when they fit (the next row's copy overlaps this row's work), else one;
 * while shared memory still overflows, the cache of row-constant inputs
 * goes, then buffers move to registers one at a time. */
static bool place_buffers(const buffered_inputs *buffers, const fv_device *device,
                          int partial_floats, int vector, candidate *c)
{
    int per_thread = c->batch * vector;            /* elements of a buffer per thread */
    c->row_capacity = per_thread * c->block_x;
    c->registers = REGISTER_OVERHEAD + partial_floats;
    for (int i = 0; i < buffers->count; i++)
        if (buffers->element_bytes[i] == 4)
            c->registers += FLOAT_BUFFER_OVERHEAD;
    int64_t budget = shared_budget(device);
    c->in_shared = all_buffers(buffers);
    c->slots = 2;
    c->cached = buffers->cached_count > 0;
    /* Forward kernels (no outer partials) give up the cache before the
     * second slot (the cache comes back below if it fits after all): LN fwd
     * bf16 16384x32768 ran 6.6% faster so, backward kernels 14-38% slower
     * (H200, bench/results/h200-multiwave-2026-11-21.md).  So do kernels
     * with outer partials in shared memory: LN bwd bf16 16384x32768 in
     * clusters of 2 ran at 74% of copy with two slots, 35% with one slot
     * and the cache (H200, h200-2026-11-22.md). */
    if (placement_bytes(buffers, c) > budget && (partial_floats == 0 || c->partials_in_shared))
        c->cached = false;
    if (placement_bytes(buffers, c) > budget)
        c->slots = 1;
    if (placement_bytes(buffers, c) > budget)
        c->cached = false;
    for (int i = 0; i < buffers->count && placement_bytes(buffers, c) > budget; i++) {
        c->in_shared &= ~(1u << i);
        c->registers += per_thread; /* kept as float */
    }
    if (!c->cached && buffers->cached_count > 0) {
        c->cached = true;
        if (placement_bytes(buffers, c) > budget)
            c->cached = false;
    }
    int64_t bytes = placement_bytes(buffers, c);
    c->shared_bytes = (int)bytes;
    /* Margins: ptxas must stay under 255 registers (REGISTER_MARGIN), and
     * under the launch bounds' cap. */
    int margin = REGISTER_MARGIN + (c->cluster > 1 ? CLUSTER_REGISTER_MARGIN : 0);
    return bytes <= budget && c->registers <= MAX_REGISTERS - margin &&
           c->registers <= launch_bounds_registers(device, c->threads);
}

/* Registers per thread a candidate could still use at its blocks per SM. */
static void set_spare(const fv_device *device, candidate *c)
{
    int available = c->blocks_per_sm > 0
                        ? (device->registers_per_sm / (c->blocks_per_sm * c->threads)) / 8 * 8
                        : 0;
    if (available > MAX_REGISTERS)
        available = MAX_REGISTERS;
    c->spare = available - c->registers;
}

/* Blocks of `threads` threads (a multiple of 32) that `registers` per
 * thread let an SM hold: a warp's registers are allocated 256 at a time. */
static int blocks_by_registers(const fv_device *device, int registers, int threads)
{
    int registers_per_warp = ((registers * 32 + 255) / 256) * 256;
    return device->registers_per_sm / (registers_per_warp * (threads / 32));
}

/* Blocks per SM a candidate allows: registers (allocated per warp in units
 * of 256), shared memory and threads. */
static void occupancy(const fv_device *device, candidate *c)
{
    int by_registers = blocks_by_registers(device, c->registers, c->threads);
    int by_shared = blocks_by_shared(device, c->shared_bytes);
    int by_threads = device->max_threads_per_sm / c->threads;
    c->blocks_per_sm = by_registers;
    c->limit = "registers";
    if (by_shared < c->blocks_per_sm) {
        c->blocks_per_sm = by_shared;
        c->limit = "shared memory";
    }
    if (by_threads < c->blocks_per_sm) {
        c->blocks_per_sm = by_threads;
        c->limit = "threads";
    }
    if (c->blocks_per_sm > 32)
        c->blocks_per_sm = 32;
    set_spare(device, c);
}

/* True if the device has FAST_MEMORY_MIN_GBS_PER_SM or more of DRAM
 * bandwidth per SM (H200 36, B200 54 GB/s; the H100's 25 is under it). */
static bool fast_memory_per_sm(const fv_device *device)
{
    return device->sm_count > 0 &&
           device->peak_bandwidth_gbs / device->sm_count >= FAST_MEMORY_MIN_GBS_PER_SM;
}

/* What the steps after the block-size search need to know of a kernel's
 * rows beyond its candidate (computed once, in set_up_problem). */
typedef struct row_traits {
    int64_t bytes;         /* a row's buffered inputs: H x their element bytes */
    bool single_reduction; /* one inner reduction, not a var_mean (whose squared
                              deviations take a second pass): RMS norm */
} row_traits;

/* The fixed inputs of one search (set_up_problem fills it): the fusion's rows
 * and the device they run on.  Every step of the search reads it; only
 * candidates change. */
typedef struct search_problem {
    const buffered_inputs *buffers;
    const fv_device *device;
    int outer_reductions; /* outer reductions (dw, db); 0 in forward kernels */
    int vector;           /* elements per vector of the rows */
    int64_t inner, outer; /* a row's elements (H) and the rows (N) */
    int max_cluster;      /* most blocks a row may be split over (1 in forward
                             kernels and before compute capability 9.0) */
    row_traits rows;
    bool var_mean;        /* the fusion has a var_mean (forward layer norm) */
    int recomputed;       /* values the epilogue would compute again
                             (recomputed_values) */
} search_problem;

/* Resident blocks per SM of a multi-wave inner-outer kernel: when each
 * thread holds 24 or more elements of a row, about 8 warps per SM (2 blocks
 * of 128 threads, 1 of 256 or more); shorter slices at most 3, or 2 where
 * the rows move in full 16-byte vectors and either the device has no fast
 * memory per SM (the H100) or a row's buffered inputs (rows.bytes) come to
 * SHORT_SLICE_TWO_BLOCKS_MIN_ROW_BYTES or more.
 * Measured on an H100 (bench/results/h100-2026-11-21.md): bf16 and fp16
 * layer-norm and RMS-norm backward at N = 16384 and H = 1024 to 8192 ran
 * 4-14% faster at 8 warps than at the 2 to 6 blocks their registers allow;
 * fp32 within -0.6..+4.6%.  Fewer blocks per SM also mean fewer partial
 * rows in the workspace for stage 2.  Re-measured on an H200 with the
 * floats and row slots (h200-2026-11-22.md): 4 blocks / 12 warps and 6 / 16
 * ran up to 12% and 15% slower.  Short slices, 2 against 3 blocks, three
 * rounds at N = 16384 (h100-2026-11-28.md, h200-2026-11-28.md):
 *   H100: RMS bwd 16-bit 2048 +1.1%, fp32 768 / 1024 / 2048 +0.9..+4.3%;
 *         LN bwd 16-bit 2048, which ptxas already held to 2 blocks with its
 *         registers (no launch bounds there), -0.1..+0.3%; 4 blocks
 *         -0.7..-9.3%; rows of an odd length (1-element vectors) lost: RMS
 *         bwd 16-bit x 1023 15%, LN bwd fp32 x 1023 10%, so they keep 3;
 *   H200 (bounded to the blocks planned): LN / RMS bwd fp32 2048 (16 KiB
 *         rows) +3.5 / +1.6%; LN bwd 16-bit 2048 -5.5%, fp32 1024 -1.5%,
 *         RMS bwd 16-bit 2048 and fp32 1024 (8 KiB rows) -0.7..+0.3%. */
static void cap_multiwave_blocks(const search_problem *p, candidate *c)
{
    bool long_slices = c->batch * p->vector >= 24;
    bool long_rows = p->rows.bytes >= SHORT_SLICE_TWO_BLOCKS_MIN_ROW_BYTES;
    bool two = full_vectors(p->buffers, p->vector) && (!fast_memory_per_sm(p->device) || long_rows);
    int most = long_slices ? (c->threads >= 256 ? 1 : 256 / c->threads) : two ? 2 : 3;
    if (c->blocks_per_sm <= most)
        return;
    c->blocks_per_sm = most;
    if (long_slices)
        c->limit = "the multi-wave rule: ~8 warps/SM with 24+ elements per thread";
    else if (!two)
        c->limit = "the multi-wave rule: at most 3";
    else if (long_rows)
        c->limit = "the multi-wave rule: at most 2 with rows of 16 KiB or more";
    else
        c->limit = "the multi-wave rule: at most 2 without fast memory per SM";
    set_spare(p->device, c);
}

/* Spends a candidate's spare registers, keeping FLOATS_MARGIN of them, on
 * float copies that take conversions and shared-memory loads out of each
 * pass over a row: first every row-constant input (a weight: loaded and
 * converted once per kernel instead of once per pass of every row; its
 * shared cache goes), then the buffered inputs in shared memory one at a
 * time (converted once per row instead of once per pass).  Blocks per SM do
 * not change: only registers the chosen occupancy leaves unused are taken. */
static bool floats_fit(const candidate *c, int registers, int register_margin)
{
    return registers <= c->spare - FLOATS_MARGIN &&
           c->registers + registers <= MAX_REGISTERS - register_margin;
}

static void hold_floats(const buffered_inputs *buffers, const fv_device *device, int vector,
                        candidate *c)
{
    int per_thread = c->batch * vector;
    int weights = buffers->cached_count * per_thread;
    if (weights > 0 && floats_fit(c, weights, FLOATS_REGISTER_MARGIN)) {
        c->weight_floats = true;
        c->cached = false;
        c->registers += weights;
        set_spare(device, c);
    }
    int row_margin = sixteen_bit_rows(buffers, vector) ? HALF_ROW_FLOATS_REGISTER_MARGIN
                                                       : FLOATS_REGISTER_MARGIN;
    for (int i = 0; i < buffers->count; i++) {
        /* one slot of row spans is not refilled (slot_refilled): its copies
         * come with the row (emit_one_span_slot) */
        if (!((c->in_shared >> i) & 1) || (c->spans && c->slots == 1) ||
            !floats_fit(c, per_thread, row_margin))
            continue;
        c->row_floats |= 1u << i;
        c->registers += per_thread;
        set_spare(device, c);
    }
    c->shared_bytes = (int)placement_bytes(buffers, c);
}

/* Deeper prefetch for multi-wave kernels, whose blocks per SM are capped:
 * with every row buffer in two shared slots and no clusters, adds slots
 * (MAX_ROW_SLOTS at most) while the bytes of rows in flight per SM
 * ((slots - 1) rows ahead of each row group) are under
 * PREFETCH_BYTES_PER_SM and the shared memory of the chosen blocks per SM
 * still fits: blocks per SM do not change.  (Forward kernels ran up to 5%
 * slower with a third slot.) */
static void deepen_prefetch(const buffered_inputs *buffers, const fv_device *device,
                            candidate *c)
{
    if (c->slots != 2 || c->cluster > 1 || c->in_shared != all_buffers(buffers))
        return;
    int64_t group_row_bytes = (int64_t)c->block_y * c->row_capacity * row_element_bytes(buffers);
    while (c->slots < MAX_ROW_SLOTS &&
           (int64_t)(c->slots - 1) * c->blocks_per_sm * group_row_bytes < PREFETCH_BYTES_PER_SM) {
        candidate deeper = *c;
        deeper.slots++;
        int64_t bytes = placement_bytes(buffers, &deeper);
        if (bytes > shared_budget(device) || blocks_by_shared(device, bytes) < c->blocks_per_sm)
            break;
        deeper.shared_bytes = (int)bytes;
        *c = deeper;
    }
}

/* nvFuser's ranking: spare registers first; then more warps per SM when
 * either has fewer than 16; then fewer threads per block. */
static bool better(const candidate *a, const candidate *b)
{
    if ((a->spare >= 0) != (b->spare >= 0))
        return a->spare >= 0;
    int warps_a = a->blocks_per_sm * a->threads / 32, warps_b = b->blocks_per_sm * b->threads / 32;
    if ((warps_a < 16 || warps_b < 16) && warps_a != warps_b)
        return warps_a > warps_b;
    return a->threads < b->threads;
}

static int minimum_batch(int64_t inner, int64_t rows)
{
    if (inner >= 3072)
        return (inner == 3072 && rows <= 2048) ? 3 : 4;
    return inner >= 2048 ? 2 : 1;
}

/* Vectors of a row in each block's slice when `cluster` blocks share it
 * (equal slices; the last one may be shorter). */
static int64_t slice_vectors(int64_t inner, int vector, int cluster)
{
    return (inner / vector + cluster - 1) / cluster;
}

/* A row (or a cluster's slice of it) per block whose outer partials do not
 * all fit in registers: moves the partials of the last 1, 2, ... outer
 * reductions into shared memory ([row capacity] floats each; a thread adds
 * to its own columns) until the placement fits.  Shared memory then
 * usually has no room left for the row-constant cache, or, with a row per
 * block, for a second row slot.  Tried where no block size fits a row
 * otherwise, and in clusters (search): layer-norm backward in 16 bits at
 * H = 24576 went to the general path before, at 32768 ran in clusters of 2
 * on 256 threads at 44-59% of copy.  False if nothing fits. */
static bool place_partials_in_shared(const buffered_inputs *buffers, const fv_device *device,
                                     int outer_reductions, int vector, candidate *c)
{
    if (c->block_y != 1)
        return false;
    int per_reduction = c->batch * vector;
    for (int moved = 1; moved <= outer_reductions; moved++) {
        c->partials_in_shared = ((1u << moved) - 1) << (outer_reductions - moved);
        if (place_buffers(buffers, device, (outer_reductions - moved) * per_reduction, vector, c))
            return true;
    }
    c->partials_in_shared = 0;
    return false;
}

/* True if a kernel with row-constant inputs (the weight) reads them from
 * device memory in every pass over every row: neither `cached` in shared
 * memory nor `held_as_float` in registers (RMS bwd fp32 at H = 20480 and
 * 24576 on one block per row ran at 62-67% of copy so). */
static bool reads_row_constants_every_pass(const buffered_inputs *buffers, bool cached,
                                           bool held_as_float)
{
    return buffers->cached_count > 0 && !cached && !held_as_float;
}

/* reads_row_constants_every_pass for a candidate. */
static bool rereads_row_constants(const buffered_inputs *buffers, const candidate *c)
{
    return reads_row_constants_every_pass(buffers, c->cached, c->weight_floats);
}

/* Bytes of L1 data cache left on an SM beside `blocks` blocks of
 * `dynamic_bytes` of dynamic shared memory each: the unified L1 less the
 * smallest shared-memory carveout that holds them (compute capability 9.0
 * and 10.0: 0, 8, 16, 32, 64, 100, 132, 164, 196 or 228 KiB), with the
 * kernel's static shared memory and the 1 KiB the driver reserves per
 * block. */
static int64_t l1_left(const fv_device *device, int blocks, int64_t dynamic_bytes)
{
    static const int carveouts_kib[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    int64_t unified = device->shared_per_sm + UNIFIED_L1_EXTRA;
    int64_t needed = (int64_t)blocks * (dynamic_bytes + STATIC_SHARED_BYTES + 1024);
    for (size_t i = 0; i < sizeof carveouts_kib / sizeof carveouts_kib[0]; i++)
        if (((int64_t)carveouts_kib[i] << 10) >= needed)
            return unified - ((int64_t)carveouts_kib[i] << 10);
    return UNIFIED_L1_EXTRA;
}

/* True if a candidate with outer partials in shared memory is worth
 * taking: in clusters only with two row slots (LN bwd fp32 16384x32768 in
 * clusters of 2 with one slot ran at 51% of copy against 81% with two in
 * clusters of 4, RMS bwd fp32 at 75% against 95% on the registers' 256
 * threads); and if it reads the row-constant inputs from device memory in
 * every pass, only if the block's slice of them fits the L1 left beside
 * its shared memory (LN bwd fp32 16384x20480: 40 KiB of weight beside a
 * 228 KiB carveout ran at 54% of copy against 84%; LN bwd bf16 32768: 32
 * KiB beside 196 KiB at 74% against 59%; H200, h200-2026-11-22.md). */
static bool shared_partials_pay(const buffered_inputs *buffers, const fv_device *device,
                                const candidate *c)
{
    if (c->cluster > 1 && c->slots < 2)
        return false;
    if (!rereads_row_constants(buffers, c))
        return true;
    return row_constant_bytes(buffers, c) <= l1_left(device, c->blocks_per_sm, c->shared_bytes);
}

/* Fills a candidate for `threads` threads per block, each row split over
 * `cluster` blocks and given at most `row_threads` of them (0: the block),
 * with outer partials in shared memory where registers cannot hold them if
 * `shared_partials`; false if it does not fit. */
static bool make_candidate(const search_problem *p, int threads, int cluster, int row_threads,
                           bool shared_partials, candidate *c)
{
    const buffered_inputs *buffers = p->buffers;
    const fv_device *device = p->device;
    int outer_reductions = p->outer_reductions, vector = p->vector;
    memset(c, 0, sizeof *c);
    int64_t vectors = slice_vectors(p->inner, vector, cluster);
    c->threads = threads;
    c->cluster = cluster;
    /* A row gets a power-of-two group of threads, at most the block; short
     * rows share the block (block_y rows). */
    c->block_x = fv_family_pow2_ceil(vectors) < threads ? fv_family_pow2_ceil(vectors) : threads;
    /* Rows of at most WARP_ROW_VECTORS vectors get a warp each: their inner
     * reductions need no block barrier. */
    if (cluster == 1 && vectors <= WARP_ROW_VECTORS && c->block_x > 32)
        c->block_x = 32;
    if (row_threads > 0 && c->block_x > row_threads)
        c->block_x = row_threads;
    c->block_y = threads / c->block_x;
    c->batch = (int)((vectors + c->block_x - 1) / c->block_x);
    if (!place_buffers(buffers, device, outer_reductions * c->batch * vector, vector, c) &&
        !(shared_partials && place_partials_in_shared(buffers, device, outer_reductions, vector, c)))
        return false;
    occupancy(device, c);
    return c->blocks_per_sm > 0 &&
           (c->partials_in_shared == 0 || shared_partials_pay(buffers, device, c));
}

static void placement_text(const buffered_inputs *buffers, const candidate *c, char *text,
                           size_t size)
{
    char slots_text[144], ahead[16] = "row";
    if (c->slots > 2)
        snprintf(ahead, sizeof ahead, "%d rows", c->slots - 1);
    snprintf(slots_text, sizeof slots_text,
             "row buffers in shared memory, %d row slots (next %s copied during this one%s)",
             c->slots, ahead, c->spans ? ", as the aligned 16-byte chunks that hold it" : "");
    bool stats_in_slot = stats_with_rows(buffers->stat_count, c->in_shared, c->cluster,
                                         c->partials_in_shared, c->spans, c->slots);
    const char *one_slot =
        slot_refilled(c->slots, c->in_shared, c->row_floats, c->cluster, stats_in_slot)
            ? "row buffers in shared memory, 1 row slot (refilled with the next row once read)"
        : c->spans ? "row buffers in shared memory, 1 row slot (copied as the aligned 16-byte chunks that hold it)"
                   : "row buffers in shared memory, 1 row slot";
    const char *where = buffers->count == 0 ? "no row buffers"
                        : c->in_shared == all_buffers(buffers) ? (c->slots > 1 ? slots_text : one_slot)
                        : c->in_shared == 0 ? "row buffers in registers"
                                            : "row buffers split between shared memory and registers";
    char floats[96] = "", rows[40] = "";
    int held = __builtin_popcount(c->row_floats), shared = __builtin_popcount(c->in_shared);
    if (held > 0)
        snprintf(rows, sizeof rows, held == shared ? "the row buffers" : "%d of %d row buffers",
                 held, shared);
    if (c->row_floats != 0 || c->weight_floats != 0)
        snprintf(floats, sizeof floats, ", held as float in registers: %s%s%s",
                 c->weight_floats ? "row-constant inputs" : "",
                 c->weight_floats && c->row_floats ? " and " : "", rows);
    char partials[96] = "";
    int shared_partials = __builtin_popcount(c->partials_in_shared);
    if (shared_partials > 0)
        snprintf(partials, sizeof partials,
                 ", the partials of %d outer reduction%s in shared memory (no room in registers)",
                 shared_partials, shared_partials > 1 ? "s" : "");
    snprintf(text, size, "%s%s%s%s", where,
             c->cached ? ", row-constant inputs cached in shared memory" : "", floats, partials);
}

/* True if `registers` per thread (an estimate with row floats or chunk
 * arrays held in registers) leave ptxas FLOATS_REGISTER_MARGIN under its
 * 255 and stay within the launch bounds of `threads` per block. */
static bool held_registers_fit(const fv_device *device, int registers, int threads)
{
    return registers <= MAX_REGISTERS - FLOATS_REGISTER_MARGIN &&
           registers <= launch_bounds_registers(device, threads);
}

/* `c` with every row buffer held as float in registers for its row (each
 * buffer's elements per thread added to the estimate). */
static candidate with_row_floats(const buffered_inputs *buffers, int vector, const candidate *c)
{
    candidate held = *c;
    held.row_floats = all_buffers(buffers);
    held.registers += buffers->count * c->batch * vector;
    return held;
}

static bool walks_two_rounds(const search_problem *p, const candidate *c);
static int64_t two_round_grid(const search_problem *p);

/* Whether holding a forward kernel's rows as float (`held`, against `plain`
 * without) costs its blocks their two rows each (walks_two_rounds: the
 * floats take blocks per SM under SHORT_BLOCK_MIN_PER_SM, or keep rows
 * under SHORT_BLOCK_HELD_MIN_ROW_BYTES in one wave), on a device of fast
 * memory per SM, for rows of FORWARD_FLOATS_TWO_ROUND_MIN_ROW_BYTES or
 * more: the rows then stay in shared memory alone.  Measured on an H200,
 * LN fwd 16-bit at N = 16384 (bench/results/h200-2026-12-01.md, session
 * 50, "Rows not held as float where the floats cost the two-row blocks"):
 * the rule against the tree before it, three alternating rounds, x 3072 (5
 * blocks per SM in one wave -> 7 walking two rows) +2.7 / +4.0% and x 8192
 * (2 -> 3) +3.4 / +4.5% (bf16 / fp16); in two earlier calls no floats at
 * all gave +1.9..+6.0% there, +0.5..+1.8% at x 4096 (two rows either way,
 * so not taken) and -3.8..+0.9% at x 2048 (4 KiB rows), which keeps them.
 * Other lengths it reaches (3072-4032, 6208-8192 at N >= 4096 or 8192)
 * were not timed. */
static bool floats_cost_two_rounds(const search_problem *p, const candidate *plain,
                                   const candidate *held)
{
    return fast_memory_per_sm(p->device) &&
           p->rows.bytes >= FORWARD_FLOATS_TWO_ROUND_MIN_ROW_BYTES &&
           walks_two_rounds(p, plain) && !walks_two_rounds(p, held);
}

/* Forward kernels (no outer reductions) with a var_mean (layer norm's
 * statistics: each row read three times, twice for the var_mean and once
 * for the epilogue) hold their 16-bit row buffers as float in registers at
 * up to FORWARD_FLOAT_ELEMENTS elements per thread, even where the
 * registers cost blocks per SM: the second and third passes then skip the
 * shared-memory load and the conversion.  Full 16-byte vectors only (rows
 * of an odd length ran from 14% slower to 41% faster so).  Measured on an
 * H200 (bench/results/h200-2026-11-22.md, "Forward kernels: 16-bit rows
 * held as float, one wave of row groups"): LN fwd bf16 / fp16 at N =
 * 16384, H = 768-8192, 1.3-4.4% faster (H100: -1.4..+2.7%); softmax's
 * three passes (maximum, sum, epilogue) ran up to 3.7% slower with the
 * floats at H = 2048-4096, and RMS norm's two passes within 1%. */
static void hold_forward_row_floats(const search_problem *p, candidate *c)
{
    const buffered_inputs *buffers = p->buffers;
    const fv_device *device = p->device;
    int vector = p->vector;
    if (!p->var_mean || c->cluster != 1 || buffers->count == 0 ||
        c->in_shared != all_buffers(buffers) || c->batch * vector > FORWARD_FLOAT_ELEMENTS ||
        !full_vectors(buffers, vector))
        return;
    for (int i = 0; i < buffers->count; i++)
        if (buffers->element_bytes[i] != 2)
            return;
    candidate held = with_row_floats(buffers, vector, c);
    if (!held_registers_fit(device, held.registers, held.threads))
        return;
    occupancy(device, &held);
    if (held.blocks_per_sm <= 0)
        return;
    if (floats_cost_two_rounds(p, c, &held))
        c->row_floats_left_out = true;
    else
        *c = held;
}

/* Forward kernels whose row-constant inputs (weight, bias) found no room in
 * shared memory next to two row slots hold every row buffer as float and
 * keep one slot, refilled with the next row's copies as soon as it is read
 * (refilled_slot): the cache then fits, where the registers do at the same
 * blocks per SM.  LN fwd bf16 / fp16 16384x32768 (64 KiB of row slot and
 * 128 KiB of cached weight and bias instead of two 64 KiB slots and the
 * weight and bias read from device memory in every row) ran 16.3 / 11.6%
 * faster so on an H200 (78.4 -> 91.2% of copy); LN fwd fp32 16384 and RMS
 * fwd fp32 20480 / 24576 within -0.3..+0.0% (bench/results/
 * h200-2026-11-22.md, "A refilled row slot").  The register estimate may
 * reach the launch bounds' whole share here: the row floats replace the
 * pass temporaries the estimate counts (ptxas: 123 registers for LN fwd
 * bf16 32768 estimated at 128, 128 for RMS fwd fp32 24576, no spills).
 * Full 16-byte vectors only: LN bwd 16-bit 2049 x 20481's first kernel
 * (1-element vectors) spilled 88 bytes so. */
static void refill_for_cache(const buffered_inputs *buffers, const fv_device *device, int vector,
                             candidate *c)
{
    if (c->cached || buffers->cached_count == 0 || c->cluster != 1 || c->slots != 2 ||
        c->in_shared != all_buffers(buffers) || c->row_floats != 0 ||
        !full_vectors(buffers, vector))
        return;
    candidate held = with_row_floats(buffers, vector, c);
    held.slots = 1;
    held.cached = true;
    held.shared_bytes = (int)placement_bytes(buffers, &held);
    if (held.shared_bytes > shared_budget(device) ||
        held.registers > MAX_REGISTERS - FLOATS_REGISTER_MARGIN ||
        held.registers > launch_bounds_share(device, held.threads))
        return;
    occupancy(device, &held);
    if (held.blocks_per_sm >= c->blocks_per_sm)
        *c = held;
}

/* True if a forward kernel over `buffers` issues more instructions per
 * byte it moves than rows of fp32 on 16-byte vectors do (2-byte elements,
 * or vectors under 16 bytes), while every copy stays asynchronous (4 bytes
 * or more, or rows copied as spans of 16-byte chunks: a 2-byte copy passes
 * through registers, and its latency needs the blocks per SM that held
 * values would take). */
static bool issue_bound_rows(const buffered_inputs *buffers, int vector, bool spans)
{
    for (int i = 0; i < buffers->count; i++) {
        int vector_bytes = vector * (int)buffers->element_bytes[i];
        if ((vector_bytes < 4 && !spans) ||
            (buffers->element_bytes[i] > 2 && vector_bytes >= 16))
            return false;
    }
    return buffers->count > 0;
}

/* Makes *c hold `recomputed` values of `elements` floats each per thread,
 * where the registers allow and leave HELD_VALUE_MIN_WARPS warps per SM;
 * else leaves it as it is.  The estimate may reach the launch bounds' whole
 * share (no margin of 8): the held values replace the epilogue's
 * temporaries, which the estimate counts too.  Softmax fwd 16-bit at 512
 * threads and a batch of 8 vectors (N = 4096, H = 30000-32768), estimated
 * at 128 registers, compiled to 118 with no spills and ran +17.6..+24.8%
 * faster on an H200 (bf16 x 32000: 66.1 -> 81.5% of copy; bench/results/
 * h200-2026-11-29.md, session 36). */
static void hold_where_registers_allow(const fv_device *device, int recomputed, int elements,
                                       candidate *c)
{
    candidate held = *c;
    held.held_values = recomputed;
    held.registers += recomputed * elements;
    if (held.registers > MAX_REGISTERS - FLOATS_REGISTER_MARGIN ||
        held.registers > launch_bounds_share(device, held.threads))
        return;
    occupancy(device, &held);
    if (held.blocks_per_sm * held.threads / 32 >= HELD_VALUE_MIN_WARPS)
        *c = held;
}

/* Forward kernels whose epilogue would compute again `recomputed` values
 * that call a math function (recomputed_values: softmax's exp(x - max))
 * keep them as float in registers from the last reduction pass, so that
 * the epilogue neither reads the row from shared memory again nor calls
 * the function: on issue-bound rows (issue_bound_rows), where the registers
 * leave at least HELD_VALUE_MIN_WARPS warps per SM.  Measured on an H200
 * (bench/results/h200-2026-11-23.md, "Softmax: exp kept for the
 * epilogue"), softmax fwd at N = 16384: 16-bit H = 768-16384 +12..+27%,
 * fp32 rows of an odd length (1-element vectors) 1023 / 1987 +14 / +27%
 * (4095, 32 elements per thread: -3%), 16-bit ones copied as spans
 * (copy_row_spans) 1023 / 1987 +42 / +6% over the spans alone (4095: -23%);
 * at 8 warps per SM (16-bit 20480 / 24576, 256 threads) -4..-12%; fp32
 * on 16-byte vectors, memory-bound, -6.5..+3.0%; 16-bit rows of an odd
 * length (2-byte synchronous copies) -0.5..-29%. */
static void hold_recomputed_values(const buffered_inputs *buffers, const fv_device *device,
                                   int vector, int recomputed, candidate *c)
{
    if (recomputed == 0 || c->cluster != 1 || !issue_bound_rows(buffers, vector, c->spans) ||
        (vector == 1 && c->batch > HELD_SCALAR_ELEMENTS))
        return;
    hold_where_registers_allow(device, recomputed, c->batch * vector, c);
}

/* True if a forward kernel's fp32 rows of an odd length (asynchronous
 * 4-byte copies) are copied as spans: softmax-like kernels without row
 * constants, and rows of FP32_SPAN_MIN_ROW_BYTES or more.  Measured on an
 * H200 with compute_on_span_chunks (bench/results/h200-2026-11-28.md,
 * session 31), N = 16384: softmax H = 1023-20481 +9.6..+62.6% (1023 element
 * by element: its chunks fill 2/3 of the thread steps); layer and
 * RMS norm at 1987 -14.9 / -7.0% (a block barrier per row, for 16 elements
 * per thread), 1023 +3.3 / -1.8%, 4095-8191 +3.5..+18.5%, 20481 +213 /
 * +129% (the 4-byte copies of 41 elements per thread ran at 21-27% of
 * copy). */
static bool spans_fp32_rows(const buffered_inputs *buffers, int64_t inner)
{
    return buffers->cached_count == 0 || inner * 4 >= FP32_SPAN_MIN_ROW_BYTES;
}

/* True if a row slot taken alone (copy_row_spans) is copied as spans:
 * forward fp32 rows without row constants (spans_fp32_rows, `fp32_forward`)
 * and multi-wave rows of `copy_bytes` 2, unless the slot is refilled
 * (slot_refilled: held as float, it takes the next row's copies once a
 * thread has read its own elements, while others may still read its
 * chunks). */
static bool one_slot_takes_spans(const buffered_inputs *buffers, size_t copy_bytes,
                                 bool fp32_forward, int outer_reductions, const candidate *c)
{
    bool spanned = fp32_forward ? buffers->cached_count == 0
                                : outer_reductions > 0 && copy_bytes == 2;
    return spanned && c->row_floats == 0;
}

/* Kernels whose rows would take copies of 2 bytes (16-bit rows of an odd
 * length: rows start at any element), which pass through registers
 * synchronously, copy each row as the 16-byte chunks that hold it instead,
 * from the aligned one holding its first element, and read it at that
 * element's offset in the slot; read element by element, a block barrier
 * after each row's copies land lets every thread read the chunks others
 * copied (on chunks each thread reads its own: load_row_issues_copies).  One row per block
 * in two or more row slots, every buffer in shared memory and of one
 * element size, no partials in shared memory.  Forward fp32 rows without
 * row constants (softmax) take spans in one row slot too, where they
 * compute on the chunks (compute_on_span_chunks: each thread reads only
 * the chunks it copied, so no barrier is needed): softmax fwd fp32 4096 x
 * 32767 / 50257, rows two slots do not hold, ran 77.6 / 85.4% faster so on
 * an H200 (41.9 / 43.8 -> 74.3 / 81.2% of copy) than with 4-byte copies and
 * one element at a time (bench/results/h200-2026-11-29.md, session 36).
 * Layer and RMS norm, whose row constants would then be read lane by lane,
 * went -24..+16% so, and 16-bit softmax x 65535 in one slot -5.3% against
 * the multipass kernel it takes otherwise: both keep their forms.  Multi-wave kernels keep
 * their blocks per SM (or keep their copies).  The chunks assume input
 * base pointers aligned to 16 bytes, as 16-byte vectors do (allocations).  Measured on an H200
 * (bench/results/h200-2026-11-23.md, "Rows of an odd length"), forward at
 * N = 16384, H = 1023 / 1987 / 4095: 16-bit +28..+158%; fp32, whose 4-byte
 * copies were asynchronous already, -21..+19% (layer and RMS norm lost to
 * the barrier), so fp32 keeps them, except forward rows that spans_fp32_rows
 * takes (which then compute on the chunks: compute_on_span_chunks) and
 * multi-wave rows in two slots or more: LN bwd fp32 16384 x 1023-8191
 * +8.1..+40.4%, RMS bwd x 1023-2047 / 6143 / 8191 +6.2..+27.5 / +19.4 /
 * +17.4% on an H200, on the chunks where the weight is held in registers
 * and element by element where it is cached (h200-2026-11-30.md, session
 * 43).
 * Multi-wave 16-bit rows that one slot holds at most take spans in it too,
 * read element by element between the slot's two block barriers
 * (emit_one_span_slot; their row statistics then come a row ahead in
 * registers: stats_in_shared): RMS bwd bf16 / fp16 16384 x 22527 / 24575
 * +71..+73% on an H200 (29 -> 50-51% of copy; bench/results/
 * h200-2026-11-30.md).  Layer norm's rows of that length spill in every
 * form and take the general path. */
static void copy_row_spans(const buffered_inputs *buffers, const fv_device *device, int vector,
                           int64_t inner, int outer_reductions, candidate *c)
{
    if (buffers->count == 0 || c->cluster != 1 || c->block_y != 1 ||
        c->in_shared != all_buffers(buffers) || c->partials_in_shared != 0)
        return;
    for (int i = 0; i < buffers->count; i++)
        if (buffers->element_bytes[i] != buffers->element_bytes[0])
            return;
    size_t copy_bytes = (size_t)vector * buffers->element_bytes[0];
    bool fp32_odd = copy_bytes == 4 && vector == 1;
    bool fp32_forward = fp32_odd && outer_reductions == 0 && spans_fp32_rows(buffers, inner);
    bool fp32_multiwave = fp32_odd && outer_reductions > 0;
    if (c->slots < 2 && !one_slot_takes_spans(buffers, copy_bytes, fp32_forward,
                                              outer_reductions, c))
        return;
    if (copy_bytes >= 4 && !fp32_forward && !fp32_multiwave)
        return;
    candidate spanned = *c;
    spanned.spans = true;
    spanned.shared_bytes = (int)placement_bytes(buffers, &spanned);
    if (spanned.shared_bytes > shared_budget(device))
        return;
    if (outer_reductions > 0) {
        if (blocks_by_shared(device, spanned.shared_bytes) >= c->blocks_per_sm)
            *c = spanned;
        return;
    }
    occupancy(device, &spanned);
    if (spanned.blocks_per_sm > 0)
        *c = spanned;
}

/* What follows the block-size search, in this order (each takes only what
 * the one before leaves): the multi-wave cap on blocks per SM, or, in
 * forward kernels, the row floats of those with a `var_mean`, the row
 * spans, the values the epilogue would compute again (`p->recomputed` of
 * them) and the refilled slot that makes room for the cache; the floats
 * held in spare registers; the deeper prefetch and the row spans of
 * multi-wave kernels. */
static void finish_candidate(const search_problem *p, candidate *c)
{
    const buffered_inputs *buffers = p->buffers;
    const fv_device *device = p->device;
    int vector = p->vector;
    if (p->outer_reductions > 0) {
        cap_multiwave_blocks(p, c);
    } else {
        hold_forward_row_floats(p, c);
        copy_row_spans(buffers, device, vector, p->inner, p->outer_reductions, c);
        hold_recomputed_values(buffers, device, vector, p->recomputed, c);
        refill_for_cache(buffers, device, vector, c);
    }
    hold_floats(buffers, device, vector, c);
    if (p->outer_reductions > 0) {
        deepen_prefetch(buffers, device, c);
        copy_row_spans(buffers, device, vector, p->inner, p->outer_reductions, c);
    }
}

/* Forward kernels on full 16-byte vectors that would keep recomputed
 * values (hold_recomputed_values) but find no registers for them in the
 * chosen block take blocks of twice the threads, half the elements each
 * (still a row per block, and no fewer than the search's least batch),
 * where the values then fit.  Softmax fwd 16-bit at N = 16384, H = 20480 /
 * 24576 (512 threads at one block per SM instead of 256 at two): +8.4..
 * +20.7% on an H200, +4.2..+8.5% on an H100 (bench/results/
 * h200-2026-11-23.md, "Softmax at 20480 and 24576"). */
static void widen_for_held_values(const search_problem *p, candidate *c)
{
    if (p->outer_reductions > 0 || p->recomputed == 0 || c->held_values > 0 ||
        c->cluster != 1 || c->block_y != 1 || c->threads * 2 > MAX_BLOCK_THREADS ||
        !full_vectors(p->buffers, p->vector))
        return;
    candidate wide;
    if (!make_candidate(p, c->threads * 2, 1, 0, false, &wide) || wide.block_y != 1 ||
        wide.batch < minimum_batch(p->inner, p->outer))
        return;
    finish_candidate(p, &wide);
    if (wide.held_values > 0)
        *c = wide;
}

/* nvFuser's block-size search (nvfuser.md 1.2) for rows split over
 * `cluster` blocks (with outer partials in shared memory where registers
 * cannot hold them if `shared_partials`): the best candidate into *best;
 * false if none fits. */
static bool search_blocks(const search_problem *p, int cluster, bool shared_partials,
                          candidate *best, fv_text *considered)
{
    int64_t vectors = slice_vectors(p->inner, p->vector, cluster);
    int batch_min = minimum_batch(p->inner / cluster, p->outer);
    int most = fv_family_pow2_ceil((vectors + batch_min - 1) / batch_min);
    if (most > MAX_BLOCK_THREADS)
        most = MAX_BLOCK_THREADS;
    int least = MIN_BLOCK_THREADS; /* short rows share it */
    if (most < least)
        most = least;
    bool found = false;
    char variant[64];  /* how the candidates of this search differ, for `considered` */
    char in_clusters[24] = "";
    if (cluster > 1)
        snprintf(in_clusters, sizeof in_clusters, " in clusters of %d", cluster);
    snprintf(variant, sizeof variant, "%s%s", in_clusters,
             shared_partials ? " (partials may use shared memory)" : "");
    for (int threads = most; threads >= least; threads /= 2) {
        candidate cand;
        if (!make_candidate(p, threads, cluster, 0, shared_partials, &cand)) {
            fv_text_printf(considered, "%s%d threads%s: does not fit",
                           considered->length ? "; " : "", threads, variant);
            continue;
        }
        fv_text_printf(considered, "%s%d threads%s: batch %d, ~%d registers, %d blocks/SM (%s)",
                       considered->length ? "; " : "", threads, variant, cand.batch,
                       cand.registers, cand.blocks_per_sm, cand.limit);
        if (!found || better(&cand, best)) {
            *best = cand;
            found = true;
        }
    }
    return found;
}

/* Whether a forward block whose rows are held as float in registers (layer
 * norm's 16-bit rows; other rows where registers are spare) may walk two
 * rows (two_round_blocks): where a row's buffered inputs come to
 * SHORT_BLOCK_HELD_MIN_ROW_BYTES or more, and at any length on a device
 * without fast memory per SM (measured on an H100 at 25 GB/s per SM; taken
 * to hold for slower ones, as an A100's or an H100 PCIe's, too).  Against
 * one wave, three interleaved rounds at N = 16384 (bench/results/
 * h100-2026-11-27.md and h200-2026-11-27.md, session 25):
 *   H100: LN fwd bf16 / fp16 x 2048 +5.6 / +4.9%, x 3072 +3.8 / +3.8%,
 *         x 4096 +3.6 / +3.4%, x 6144 +4.7 / +4.7%, fp32 x 3072 +2.7%;
 *   H200: x 2048 -6.0 / -4.9%, x 3072 -6.6 / -4.5% (rows of 4-6 KiB; in
 *         blocks of 3 or 4 rows -3.2..+0.5%), x 4096 +5.4 / +7.0%, x 6144
 *         +3.9 / +4.9%, fp32 x 3072 +4.8%. */
static bool held_rows_take_two_rounds(const fv_device *device, const row_traits *rows)
{
    return !fast_memory_per_sm(device) || rows->bytes >= SHORT_BLOCK_HELD_MIN_ROW_BYTES;
}

/* Whether a forward kernel's blocks may each walk SHORT_BLOCK_ROUNDS row
 * groups and end, instead of one wave of blocks that walk the rows until
 * they run out: a row per block, left in shared memory on full 16-byte
 * vectors (held as float in registers too only where
 * held_rows_take_two_rounds), with at least SHORT_BLOCK_MIN_PER_SM blocks
 * per SM, or any number where each row is one buffered input with a
 * single reduction (row_traits; RMS norm).  grid_blocks takes them where
 * they fill at least SHORT_BLOCK_MIN_WAVES waves.
 * Measured on an H200 and an H100 (bench/results/h200-2026-11-22.md,
 * "Forward blocks of two rows"): RMS norm, softmax and fp32 layer norm at
 * N = 16384 ran 0.5-27% faster so at every such shape; elsewhere blocks of
 * 256-512 threads at 1-2 per SM ran up to 30% slower (layer norm, softmax),
 * a warp per row 3-5% slower (RMS norm bf16 768-1024), and layer norm's
 * rows of an odd length (1-element vectors) -3..-22%.  At 1-2 blocks per SM
 * layer norm and softmax lost up to 30% there, while RMS norm gained; again
 * with three interleaved rounds at N = 16384 (h200-2026-11-27.md and
 * h100-2026-11-27.md, session 25), RMS fwd bf16 / fp16 / fp32 at 1-2 blocks
 * per SM (H = 12288-32768; fp32 also 6144 / 8192) ran +0.8..+6.5% faster on
 * an H200 (bf16 16384: 90.2 -> 95.6% of copy), and at H = 12288-32768
 * +3.2..+4.3% on an H100.  (Not timed: the same kernels at N = 2048, and
 * kernels of two inputs with one reduction, which keep the wave.) */
static bool two_round_blocks(const search_problem *p, const candidate *c)
{
    const buffered_inputs *buffers = p->buffers;
    if (p->outer_reductions != 0 || c->cluster != 1 || c->block_y != 1 || c->paired ||
        buffers->count == 0 || c->in_shared != all_buffers(buffers) ||
        !full_vectors(buffers, p->vector))
        return false;
    if (c->row_floats != 0 && !held_rows_take_two_rounds(p->device, &p->rows))
        return false;
    return c->blocks_per_sm >= SHORT_BLOCK_MIN_PER_SM ||
           (buffers->count == 1 && p->rows.single_reduction);
}

/* Columns of each block's share when `cluster` blocks split a row of
 * `capacity` columns in whole vectors of `vector`. */
static int partial_share(int capacity, int vector, int cluster)
{
    int vectors = (capacity / vector + cluster - 1) / cluster;
    return vectors * vector;
}

/* Bytes of a block's partial exchange: [cluster senders][outer reductions]
 * [share] floats. */
static int64_t partial_exchange_bytes(int outer_reductions, int capacity, int vector, int cluster)
{
    return (int64_t)cluster * outer_reductions * partial_share(capacity, vector, cluster) * 4;
}

/* Offset of the partial exchange in the dynamic shared memory: after the
 * row buffers, aligned for the widest vector store. */
static int64_t partial_exchange_offset(int64_t placement)
{
    return (placement + 127) / 128 * 128;
}

/* A candidate's dynamic shared memory with a partial exchange of `cluster`
 * senders after its row buffers. */
static int64_t shared_with_partial_exchange(const candidate *c, int outer_reductions,
                                            int vector, int cluster)
{
    return partial_exchange_offset(c->shared_bytes) +
           partial_exchange_bytes(outer_reductions, c->row_capacity, vector, cluster);
}

/* Blocks per thread-block cluster whose outer partials are added together
 * through distributed shared memory before they go to the workspace, or 1:
 * PARTIAL_CLUSTER where a multi-wave block takes a row at a time (no row
 * clusters, one row group), its partials are in registers and take at least
 * PARTIAL_CLUSTER_MIN_BYTES, clusters are available (`p->max_cluster`), two or
 * more blocks fit an SM, the grid has at least two clusters, and the
 * exchange (partial_exchange_bytes, after the row buffers) fits without
 * fewer blocks per SM.  The workspace then has a partial row per cluster:
 * its stores and stage 2's reads of it halve.
 * Measured at N = 16384 (bench/results/h100-2026-11-23.md and
 * h200-2026-11-23.md, "Partials added over clusters of 2"): 16-bit
 * layer-norm backward at H = 2048 / 3072 ran 0.6-1.4% faster on an H100,
 * 0.4-1.0% on an H200, and the other changed shapes -0.4..+0.9%.  Clusters
 * of 4 lost blocks (a cluster's blocks share a GPC: 120 of 132 resident on
 * the H100, 248 of 264) and ran up to 9.4% slower.  At one block per SM a
 * cluster spans two SMs, and a GPC of an odd number of SMs would leave one
 * idle; those kernels (H >= 8192) moved -0.5..+1.5% and do not take it. */
static int partial_cluster_blocks(const search_problem *p, const candidate *c)
{
    if (p->outer_reductions == 0 || p->max_cluster < PARTIAL_CLUSTER || c->cluster != 1 ||
        c->block_y != 1 || c->partials_in_shared != 0 || c->span_batch > 0 ||
        c->blocks_per_sm < 2 ||
        c->grid < 2 * PARTIAL_CLUSTER ||
        (int64_t)p->outer_reductions * c->row_capacity * 4 < PARTIAL_CLUSTER_MIN_BYTES)
        return 1;
    int64_t bytes =
        shared_with_partial_exchange(c, p->outer_reductions, p->vector, PARTIAL_CLUSTER);
    if (bytes > shared_budget(p->device) || blocks_by_shared(p->device, bytes) < c->blocks_per_sm)
        return 1;
    return PARTIAL_CLUSTER;
}

/* The fewest rows a block of the 8-row multi-wave grid walks (each block's
 * partials are a workspace row for stage 2; compare_multiwave_grids takes the
 * balanced grid instead where that walks fewer rows on the busiest SM):
 * MULTIWAVE_MIN_ROW_GROUPS row groups, but only MULTIWAVE_MIN_WARP_ROWS rows (nvFuser's 8 rows a block, nvfuser.md 1.2)
 * where each row is one warp's (blocks of 4 such rows).  H200, a warp per
 * row at 8 rows against 8 groups of 4 (bench/results/h200-2026-12-01.md,
 * session 48): LN / RMS bwd 16-bit x 1024 at N = 216 +55..+61% (6 blocks ->
 * 27), at N = 2048 / 2049 +15..+22% (64 -> 256), x 768 at N = 2048
 * +10..+13%.  The probe that gave every block shape 8 rows lost at N = 2048
 * in blocks of two 128-thread rows (LN bwd 16-bit x 6144 / 8192
 * -1.6..-2.5%, fp32 x 3072 / 4096 -0.4..-2.4%), so they keep 8 groups; its
 * gains at N = 216 (x 4096 / 8192) came from pair_keeps_the_grid then
 * taking pairs over single rows on the same grid, not from this minimum.
 * Rows shorter than a warp (several rows to a warp) keep 8 groups,
 * unmeasured. */
static int64_t multiwave_least_rows(const candidate *c)
{
    if (c->block_x == WARP_THREADS)
        return MULTIWAVE_MIN_WARP_ROWS;
    return (int64_t)MULTIWAVE_MIN_ROW_GROUPS * c->block_y;
}

/* A candidate's row groups: block_y rows each, the last maybe fewer. */
static int64_t row_groups_of(const search_problem *p, const candidate *c)
{
    return (p->outer + c->block_y - 1) / c->block_y;
}

/* The walkers (blocks, or clusters where rows are split over clusters) one
 * wave of a candidate's blocks holds. */
static int64_t wave_walkers(const search_problem *p, const candidate *c)
{
    return (int64_t)c->blocks_per_sm * p->device->sm_count / c->cluster;
}

/* The rows the busiest SM walks when `walkers` blocks (clusters of
 * c->cluster blocks, where rows are split over clusters) walk a candidate's
 * row groups of block_y rows: each walker takes every walkers-th group, and
 * the blocks are spread over the SMs evenly, so the busiest SM runs
 * ceil(blocks / SMs) of them. */
static int64_t busiest_sm_rows(const search_problem *p, const candidate *c, int64_t walkers)
{
    int64_t row_groups = row_groups_of(p, c);
    int64_t rounds = (row_groups + walkers - 1) / walkers;
    int64_t blocks = walkers * c->cluster;
    int64_t blocks_per_busiest_sm = (blocks + p->device->sm_count - 1) / p->device->sm_count;
    return blocks_per_busiest_sm * rounds * c->block_y;
}

/* Into *grids, the two grids a multi-wave candidate chooses between, in
 * walkers (blocks, or clusters of rows split over clusters), at most
 * `wave`, one wave of them, and which it takes.  Each block's partials
 * are a workspace row for stage 2, and nvFuser's grid gives every block at
 * least multiwave_least_rows rows (the 8-row grid).  The other grid is the
 * balanced one: the fewest rounds the wave allows, over as few walkers as
 * take them (each walks that many rounds or one fewer).  It is taken where
 * its busiest SM walks fewer rows (busiest_sm_rows); where they walk the
 * same rows, only if the 8-row grid leaves SMs without a block and the rows
 * are wider than a warp.  At small N the 8-row grid used a fraction of the
 * SMs (LN bwd bf16 216 x 4096: 26 blocks on 132 SMs, 8-9 rows each, where
 * the balanced grid has 216 of a row each).  H200, against the 8-row grid
 * (bench/results/h200-2026-12-01.md, session 49), kernel time, geomean
 * (range): N = 33 / 64 +61.5 / +27.9% (+4.6..+145%), 216 +29.1%
 * (+5.9..+54.6%), 432 +17.2% (+4.7..+32.2%), 864 +1.3% (-0.8..+5.8%), 1296
 * +2.4% (-1.1..+9.6%), 2049 +0.1% (-1.6..+1.6%).  Where the rows tie the
 * balanced grid is not taken if every SM has a block: it ran more blocks at
 * once per SM there and lost (LN bwd 16-bit 2049 x 1987 -10..-11%, fp32
 * 2049 x 1024 -3%, fp32 2048 x 1023 -2..-4%, LN bwd bf16 2048 x 2048 -2%).
 * Where the 8-row grid leaves SMs idle it is: LN / RMS bwd fp32 864 x 2048
 * (216 blocks of 4 rows against 108 of 8) +12.5 / +11.2%, bf16 864 x 4096
 * +7.3 / +10.1%, 990 x 2048 -1.4 / +5.2%, fp32 990 x 1024 +3.2 / +0.9%
 * (probe T); blocks of warp rows gave LN and RMS norm opposite signs there
 * (16-bit 792 / 864 x 1024: LN -2.9%, RMS +2.2%) and keep the 8-row grid,
 * as do rows shorter than a warp (unmeasured). */
static void compare_multiwave_grids(const search_problem *p, const candidate *c, int64_t wave,
                                    multiwave_grids *grids)
{
    if (wave < 1)
        wave = 1;
    int64_t walkers = p->outer / multiwave_least_rows(c);
    if (walkers > wave)
        walkers = wave;
    if (walkers < 1)
        walkers = 1;
    int64_t row_groups = row_groups_of(p, c);
    int64_t rounds = (row_groups + wave - 1) / wave;
    grids->wave = wave;
    grids->least_rows_walkers = walkers;
    grids->least_rows_busiest = busiest_sm_rows(p, c, walkers);
    grids->balanced_walkers = (row_groups + rounds - 1) / rounds;
    grids->balanced_busiest = busiest_sm_rows(p, c, grids->balanced_walkers);
    grids->balanced_rounds = rounds;
    bool sms_left_idle = walkers * c->cluster < p->device->sm_count;
    grids->balanced_taken =
        grids->balanced_busiest < grids->least_rows_busiest ||
        (grids->balanced_busiest == grids->least_rows_busiest && sms_left_idle &&
         c->block_x > WARP_THREADS);
}

/* For `show`: which of compare_multiwave_grids' grids a multi-wave
 * candidate took and why, as " (balanced: ...)" or " (nvFuser's 8 rows a
 * block: ...)"; empty where the 8-row grid is the whole wave. */
static void multiwave_grid_text(const candidate *c, char *text, size_t size)
{
    const multiwave_grids g = c->grids;
    const char *unit = c->cluster > 1 ? "clusters" : "blocks";
    text[0] = '\0';
    if (g.wave == 0)
        return;
    bool tie = g.balanced_busiest == g.least_rows_busiest;
    char compared[64] = "as many as";  /* the other grid's rows on its busiest SM */
    if (!tie)
        snprintf(compared, sizeof compared, "against %lld",
                 (long long)(g.balanced_taken ? g.least_rows_busiest : g.balanced_busiest));
    if (g.balanced_taken) {
        snprintf(text, size,
                 " (balanced: %lld round%s of row groups, %lld rows on the busiest SM, %s on "
                 "the %lld %s of nvFuser's 8 rows a block%s)",
                 (long long)g.balanced_rounds, g.balanced_rounds == 1 ? "" : "s",
                 (long long)g.balanced_busiest, compared, (long long)g.least_rows_walkers,
                 unit, tie ? ", which leave SMs idle" : "");
        return;
    }
    if (g.least_rows_walkers >= g.wave)
        return;
    const char *why = !tie                        ? ""
                      : c->block_x <= WARP_THREADS ? ", kept for rows of a warp or less"
                                                   : ", kept where every SM has a block";
    snprintf(text, size,
             " (nvFuser's 8 rows a block: %lld rows on the busiest SM, %s on the balanced "
             "grid of %lld %s%s)",
             (long long)g.least_rows_busiest, compared, (long long)g.balanced_walkers, unit,
             why);
}

/* Blocks of a persistent grid: one wave of whole clusters (the launch
 * takes no more blocks than there are row groups).  Multi-wave grids are
 * compare_multiwave_grids' choice, which goes into *grids (untouched for
 * forward kernels); forward blocks walk at least one row (they
 * walked 8 before: on an H200 the 135 forward kernels at N = 2048 ran a
 * median 12.7% faster so, -2.7..+180%, and RMS norm and softmax at N =
 * 16384, H = 768-1024 (a warp per row) 3.9-9.9% faster; bench/results/
 * h200-2026-11-22.md, "Forward kernels: 16-bit rows held as float, one
 * wave of row groups").  Fewer blocks for the same number of rounds over
 * the rows ran 1-3% slower there, so the wave is not trimmed.  Forward
 * blocks that walks_two_rounds takes are the exception. */
static int grid_blocks_comparing(const search_problem *p, const candidate *c,
                                 multiwave_grids *grids)
{
    int64_t groups = wave_walkers(p, c);
    if (p->outer_reductions > 0) {
        compare_multiwave_grids(p, c, groups, grids);
        groups = grids->balanced_taken ? grids->balanced_walkers : grids->least_rows_walkers;
    }
    if (groups < 1)
        groups = 1;
    if (walks_two_rounds(p, c)) {
        int64_t short_blocks = two_round_grid(p);
        return (int)(short_blocks < INT_MAX ? short_blocks : INT_MAX); /* gridDim.x's limit */
    }
    return (int)(groups * c->cluster);
}

/* The blocks of a forward grid whose blocks each walk SHORT_BLOCK_ROUNDS
 * rows and end. */
static int64_t two_round_grid(const search_problem *p)
{
    return (p->outer + SHORT_BLOCK_ROUNDS - 1) / SHORT_BLOCK_ROUNDS;
}

/* Whether a forward kernel's blocks each walk SHORT_BLOCK_ROUNDS row groups
 * and end (two_round_blocks), which grid_blocks takes where they fill
 * SHORT_BLOCK_MIN_WAVES waves of the candidate's blocks. */
static bool walks_two_rounds(const search_problem *p, const candidate *c)
{
    int64_t walkers = wave_walkers(p, c);
    return two_round_blocks(p, c) &&
           two_round_grid(p) >= SHORT_BLOCK_MIN_WAVES * (walkers > 1 ? walkers : 1);
}

/* grid_blocks_comparing without keeping the comparison. */
static int grid_blocks(const search_problem *p, const candidate *c)
{
    multiwave_grids grids;
    return grid_blocks_comparing(p, c, &grids);
}

/* The rows the busiest SM walks under a candidate's grid (grid_blocks,
 * busiest_sm_rows), before set_grid rounds the grid to whole clusters of
 * partials or to span chunks' multiples (round_grid_to_multiple). */
static int64_t rows_on_busiest_sm(const search_problem *p, const candidate *c)
{
    return busiest_sm_rows(p, c, grid_blocks(p, c) / c->cluster);
}

/* Whether a row pair (pair_rows) leaves its busiest SM at most
 * ROW_PAIR_MAX_EXTRA_ROWS_EIGHTHS / 8 more rows than the single rows leave
 * theirs (rows_on_busiest_sm).  Where the single rows' grid has one block
 * per SM and a row or so each, a block of pairs takes two rows per group,
 * so pairing halves the SMs at work and each walks twice the rows (LN bwd
 * bf16 64 x 8192: 32 pair blocks of 2 rows against 64 of 1); where the
 * single rows run 2 blocks on an SM, the pairs' one block walks the rows of
 * both.  Since the balanced grids of compare_multiwave_grids, pairs also tie at
 * N = 216: LN bwd bf16 x 8192 on 108 blocks of pairs or 108 of 2 single
 * rows (the 8-row grids left pairs 18 rows against 8, the first line
 * below).  Pairs against single rows on an H200
 * (h200-2026-11-28.md, sessions 28 and 29), kernel time:
 *   rows per busiest SM twice the single rows': LN bwd x 8192 at N = 216
 *   1.5-2.1 times as long; LN / RMS bwd fp32 x 4096 at N = 216 1.36 / 1.21
 *   times, at N = 432 1.25 / 1.19 times;
 *   the same rows, the pairs faster: LN / RMS bwd fp32 x 4096 at N = 1664
 *   (104 SMs busy against 132) +5.0 / +3.1%, N = 1856 +7.5 / +4.2%, N =
 *   2048 +13.5 / +8.6%, x 3072 at N = 2048 +9.3 / +6.0%; LN bwd bf16 / fp16
 *   x 8192 at N = 2048 +2.9 / +1.5%;
 *   one eighth more (18 rows against 16, on the 8-row grids; the balanced
 *   grids now give 16 either way): LN bwd bf16 / fp16 x 8192 at N = 2049
 *   +2.0 / 0.0%. */
static bool pair_keeps_the_grid(const search_problem *p, const candidate *single,
                                const candidate *pair)
{
    return 8 * rows_on_busiest_sm(p, pair) <=
           (8 + ROW_PAIR_MAX_EXTRA_ROWS_EIGHTHS) * rows_on_busiest_sm(p, single);
}

/* Two rows of ROW_PAIR_THREADS threads per block instead of one row of
 * twice that (multi-wave, a row per block): the same 8 warps on each SM,
 * each row's block reductions over half of them and twice the elements per
 * thread, at most ROW_PAIR_MAX_ELEMENTS (ROW_PAIR_MAX_SINGLE with one outer
 * reduction, RMS norm; ROW_PAIR_MAX_ON_FAST_MEMORY with two in 16-bit rows
 * on a device of fast memory per SM).  Into *pair, true if it fits at one
 * block per SM without reading the row-constant inputs from device memory
 * in every pass (which is what stops pairs longer than these limits: they
 * do not fit), and if its busiest SM walks at most an eighth more rows
 * than the single rows' busiest SM (pair_keeps_the_grid).  Measured on an
 * H200 and an H100
 * (bench/results/h200-2026-11-22.md, "Two rows per block"), time against
 * one 256-thread row:
 *   LN bwd bf16 / fp16 6144 (48 elements): H200 +9.2 / +5.3%, H100 0.0 / +0.3%;
 *   LN bwd fp32 3072 / 4096 (24 / 32): H200 +2.5 / +3.5%, H100 +2.2 / +2.7%;
 *   RMS bwd fp32 3072 / 4096 (24 / 32): H200 +1.8 / +2.6%, H100 +1.1 / +1.8%;
 *   64 elements: LN bwd bf16 / fp16 8192 H200 +3.3 / +1.8%, H100 -3.1 /
 *   -2.3%; LN bwd fp32 8192 H200 +1.1%, H100 -1.0%; RMS bwd bf16 / fp16
 *   8192 H200 -1.6 / -1.3%;
 *   RMS bwd 16-bit 6144 (48 elements) within 0.1% on the H200.
 * Layer norm's 64 elements again on an H200 with the later kernels (rows and
 * weight held as float; h200-2026-11-28.md, session 28), three rounds: LN
 * bwd bf16 8192 at N = 16384 +3.0% (89.4 -> 92.1-92.7% of copy), at N =
 * 2048 / 2049 +2.9 / +2.0%; fp16 0.0% (16384), +1.5 / 0.0% (2048 / 2049);
 * fp32 +0.4% at 16384 but -8.7 / -8.6% at 2048 / 2049, so fp32 keeps 48.
 * Not a pair where the search gives a row 128 threads: bf16 / fp16 4096 as
 * 128 x 2 threads ran 0.6-1.0% slower.  Nor layer norm's rows of an odd
 * length (1-element vectors): the pair (block_y 2) keeps them off row
 * spans, so 16-bit rows were copied and computed element by element; in
 * one 256-thread block they compute on span chunks.  H200, N = 16384
 * (bench/results/h200-2026-11-30.md): LN bwd bf16 / fp16 x 6143 4.9 times
 * as fast (8.9 -> 43.7% of copy), fp32 x 3071 / 4095 +9.6 / +18.4%; RMS
 * norm's fp32 rows, element by element either way, lost 0.8 / 12.2% at
 * x 3071 / 4095 unpaired and keep the pairs. */
static bool pair_rows(const search_problem *p, const candidate *best, candidate *pair)
{
    int most = ROW_PAIR_MAX_SINGLE;
    if (p->outer_reductions >= 2)
        most = fast_memory_per_sm(p->device) && sixteen_bit_rows(p->buffers, p->vector)
                   ? ROW_PAIR_MAX_ON_FAST_MEMORY
                   : ROW_PAIR_MAX_ELEMENTS;
    int elements = 2 * best->batch * p->vector;
    if (p->outer_reductions == 0 || best->cluster != 1 || best->block_y != 1 ||
        best->block_x != 2 * ROW_PAIR_THREADS || elements > most ||
        (p->vector == 1 && !p->rows.single_reduction))
        return false;
    if (!make_candidate(p, 2 * ROW_PAIR_THREADS, 1, ROW_PAIR_THREADS, false, pair))
        return false;
    finish_candidate(p, pair);
    pair->paired = true;  /* block_y is 2: the row needs 256 threads or more */
    return pair->blocks_per_sm == 1 && !rereads_row_constants(p->buffers, pair) &&
           pair_keeps_the_grid(p, best, pair);
}

/* The __launch_bounds__ minimum blocks per SM (EXTRA_MIN_BLOCKS).  A
 * cooperative grid is clamped to the compiled kernel's occupancy, and
 * ptxas, unbounded, may take more registers than the blocks the grid is
 * sized for allow: LN bwd bf16 / fp16 16384 x 2048 planned 3 blocks per SM
 * and got 185 registers, 2 blocks.  Bounded at the planned blocks (128
 * registers, 3 blocks) it ran 5.0 / 6.5% faster on an H200 (LN bwd fp32 x
 * 1024 +1.8%, x 2048 -3.6%) but 2.9 / 2.4% slower on an H100 (fp32 -1.1 /
 * -1.9%; bench/results/h200-2026-11-27.md).  More blocks keep more bytes in
 * flight, which a faster memory per SM needs (Little's law), so multi-wave
 * kernels are bounded where the device's DRAM bandwidth per SM is at least
 * FAST_MEMORY_MIN_GBS_PER_SM (H200 36, B200 54; H100 25 GB/s per SM).
 * Only on full 16-byte vectors: rows of an odd length (shorter vectors)
 * take far more registers than the estimate (LN bwd 16384 x 1023 ~104-136
 * estimated, 233 compiled), and bounded they spilled on sm_100a and fell
 * back to the general path. */
static int bounded_blocks_per_sm(const search_problem *p, const candidate *best)
{
    return p->outer_reductions > 0 && fast_memory_per_sm(p->device) &&
                   full_vectors(p->buffers, p->vector)
               ? best->blocks_per_sm
               : 1;
}

/* Where the device has fast memory per SM, a row of a fusion with several
 * inner reductions (layer norm's two) and outer reductions, whose block (a
 * row per block, not a pair) or cluster keeps one row slot, is split over
 * twice the blocks instead, if that stays within `p->max_cluster` and each
 * block then keeps two slots, the next row's copies in flight during this
 * one, and reads the row-constant inputs from shared memory or registers,
 * not device memory, in every pass (its slices may carry less than
 * MIN_SLICE_BYTES).  A row in one block is split only where it is 16-bit on
 * full vectors: on an H200 / B200 LN bwd 16-bit rows of 20544-24576 elements
 * at any N (only 16384 x 24576 timed).  Measured on an H200, in
 * bench/results/h200-2026-11-28.md:
 *   - "Two row slots in larger clusters": LN bwd fp32 16384 x 24576 in
 *     clusters of 4 with two slots against 2 with one, 6.1-11.2% faster in
 *     three calls (70-75 -> 78-79% of copy), 6.0% slower on an H100 (86 ->
 *     81%); the same change to RMS norm's single reduction lost 15-17% at
 *     24576 and 32768.  fp32 rows in one block with one slot lost 3.6-20.7%
 *     in clusters of 2 there (before clustered kernels stored around L1; not
 *     timed since).
 *   - "A row per block with one slot, split in two" (session 30): LN bwd bf16
 *     / fp16 16384 x 24576 in clusters of 2 with two slots, +5.0 / +4.4%
 *     (75.1 -> 78.9%, 78.1 -> 81.4% of copy); RMS norm's one-slot rows moved
 *     -1.7..+4.5% (fp16 24576 / 32768 -1.7 / -1.0%, bf16 32768 +4.5%), so
 *     they keep a block. */
static void widen_cluster_for_two_slots(const search_problem *p, candidate *best,
                                        fv_text *considered)
{
    if (!fast_memory_per_sm(p->device) || p->rows.single_reduction || p->outer_reductions == 0 ||
        best->slots >= 2 || best->cluster * 2 > p->max_cluster)
        return;
    int one_slot_cluster = best->cluster;
    if (one_slot_cluster == 1 &&
        (best->block_y != 1 || !sixteen_bit_rows(p->buffers, p->vector)))
        return;
    char shape[32] = "a block";  /* what holds the row now */
    if (one_slot_cluster > 1)
        snprintf(shape, sizeof shape, "clusters of %d", one_slot_cluster);
    fv_text_printf(considered, "; one row slot in %s, so clusters of %d tried", shape,
                   2 * one_slot_cluster);
    candidate wider;
    bool taken = search_blocks(p, 2 * one_slot_cluster, true, &wider, considered);
    if (taken) {
        finish_candidate(p, &wider);
        wider.split_for_constants = best->split_for_constants;
        taken = wider.slots >= 2 && !rereads_row_constants(p->buffers, &wider);
    }
    if (taken) {
        fv_text_printf(considered, "; clusters of %d taken: two row slots", 2 * one_slot_cluster);
        *best = wider;
    } else {
        fv_text_printf(considered, "; %s kept", shape);
    }
}

/* Fills *p for `view` at the case's sizes on `device`, with its
 * `outer_reductions` and the most blocks per cluster `max_cluster`, over the
 * buffered inputs `buffers` (which *p points to: they must outlive it).
 * Fails only where the fusion's analysis does (out of memory), with *p
 * partly filled. */
static fv_status set_up_problem(const fv_segment_view *view, const fv_case *c,
                                const fv_device *device, int outer_reductions, int max_cluster,
                                const buffered_inputs *buffers, search_problem *p)
{
    memset(p, 0, sizeof *p);
    p->buffers = buffers;
    p->device = device;
    p->outer_reductions = outer_reductions;
    p->max_cluster = max_cluster;
    fv_sched_canonical_extents(view, c, &p->outer, &p->inner);
    p->vector = fv_family_vector_width(view, p->inner);
    p->var_mean = has_var_mean(view);
    persistent_analysis analysis;
    FV_TRY(analyze(view, &analysis));
    p->recomputed = recomputed_values(view, &analysis, NULL);
    p->rows.bytes = p->inner * (int64_t)row_element_bytes(buffers);
    p->rows.single_reduction = single_inner_reduction(&analysis, p->var_mean);
    analysis_free(&analysis);
    return FV_OK;
}

/* nvFuser's block-size search for a row per block, then, where a row fits
 * no block and `p->max_cluster` > 1 (inner-outer kernels on compute
 * capability 9.0 and newer), for rows split over clusters of 2, 4, then 8
 * blocks, the smallest that fits: each block then holds a slice of the row
 * and of the outer partials, as Quack's cluster ladder does; in clusters, the
 * partials may go to shared memory where registers cannot hold them
 * (place_partials_in_shared), which lets a slice take more threads.  The
 * best candidate into *best; FV_ERR_UNSUPPORTED naming what was considered
 * if none fits. */
static fv_status search_block_sizes(const search_problem *p, candidate *best,
                                    fv_text *considered)
{
    bool found = false;
    for (int cluster = 1; !found && cluster <= p->max_cluster; cluster *= 2) {
        if (cluster > 1 && p->rows.bytes / cluster < MIN_SLICE_BYTES) {
            fv_text_printf(considered, "; clusters of %d: slices of %lld bytes, under the %d "
                           "that pay for the exchange", cluster,
                           (long long)(p->rows.bytes / cluster), MIN_SLICE_BYTES);
            break;
        }
        found = search_blocks(p, cluster, cluster > 1, best, considered);
        /* A row per block before clusters: partials in shared memory. */
        if (!found && cluster == 1 && p->outer_reductions > 0)
            found = search_blocks(p, 1, true, best, considered);
    }
    if (!found)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "a row of %lld elements does not fit the persistent budgets (%s)",
                (long long)p->inner, fv_text_str(considered));
    return FV_OK;
}

/* A row per block that reads the row-constant inputs from device memory in
 * every pass is split over clusters of 2 instead where the halves no
 * longer do (and each carries at least MIN_SLICE_BYTES). */
static void split_for_row_constants(const search_problem *p, candidate *best,
                                    fv_text *considered)
{
    if (best->cluster != 1 || p->max_cluster < 2 || !rereads_row_constants(p->buffers, best) ||
        p->rows.bytes / 2 < MIN_SLICE_BYTES)
        return;
    fv_text_printf(considered, "; a row per block reads the row-constant inputs from device "
                               "memory in every pass, so clusters of 2");
    candidate split;
    if (!search_blocks(p, 2, false, &split, considered))
        return;
    finish_candidate(p, &split);
    split.split_for_constants = true;
    if (!rereads_row_constants(p->buffers, &split))
        *best = split;
}

/* Elements of a 16-byte chunk of the row buffers (all of one size where
 * rows are copied as spans). */
static int span_chunk_elements(const buffered_inputs *buffers)
{
    return (int)(16 / buffers->element_bytes[0]);
}

/* True if a kernel computing on span chunks puts its row-constant inputs
 * at its rows' shift (cached in shared memory or held in registers), which
 * must then be the same for all the rows of a block. */
static bool constants_at_row_shift(bool cached, bool weight_floats, int cached_count)
{
    return cached_count > 0 && (cached || weight_floats);
}

/* True if a row's `chunks` fill `eighths` / 8 or more of `steps` thread
 * steps (a chunk each). */
static bool chunks_fill_eighths(int64_t chunks, int64_t steps, int eighths)
{
    return chunks * 8 >= steps * eighths;
}

/* True if a row's `chunks` fill 3/4 or more of `steps` thread steps. */
static bool chunks_fill_steps(int64_t chunks, int64_t steps)
{
    return chunks_fill_eighths(chunks, steps, 6);
}

/* True if a multi-wave row whose `chunks` fill under 3/4 of its
 * `span_batch` steps of `block_x` threads takes span chunks all the same:
 * in MULTIWAVE_SPARSE_MIN_STEPS steps or more, where only the last is
 * mostly empty and every step before it ends inside the row whatever the
 * shift (EXTRA_WHOLE_STEPS >= 1: no row-end test in them), and 16-bit rows
 * in 2 steps whose chunks fill 5/8 of them or more (not in 1 step: never
 * measured).  Measured on an H200
 * (bench/results/h200-2026-11-30.md, session 43), N = 16384, against
 * element by element: RMS bwd bf16 x 2047 (257 chunks in 3 x 128 steps)
 * +26.4%, LN bwd fp32 x 1023 (257 chunks of 4 in 3 x 128) +5.5% (against
 * its span read element by element); in 2 steps, 16-bit x 1279 (161 chunks,
 * 63% of 2 x 128) LN +20.2%, RMS +3.5%, but x 1023 (129 chunks, 50%) RMS
 * -14.0%, LN +3.2%, and fp32 x 639 (161 chunks of 4) LN -1.1%, RMS
 * -0.9%. */
static bool sparse_chunks_taken(int64_t chunks, int span_batch, int block_x, size_t element_bytes)
{
    if (span_batch >= MULTIWAVE_SPARSE_MIN_STEPS)
        return true;
    return span_batch == 2 && element_bytes == 2 &&
           chunks_fill_eighths(chunks, (int64_t)span_batch * block_x, 5);
}

/* A kernel computing on span chunks holds the values its epilogue would
 * compute again (hold_recomputed_values) as chunk arrays, where the
 * registers leave HELD_VALUE_MIN_WARPS warps per SM: the limit of
 * HELD_SCALAR_ELEMENTS is for elements walked one at a time.  Up to
 * HELD_CHUNK_STEPS chunks per thread, the most measured: beyond, the
 * estimate falls short (softmax bf16 x 12287, 13 chunks: ~168 registers
 * estimated for 3 blocks per SM, 181 compiled, which leaves 2).  H200, softmax
 * fwd at N = 16384, H = 4095 / 8191 (40 / 72 elements per thread): 16-bit
 * +38.3..+39.6% / +17.2..+20.9%, fp32 +9.9 / +12.6% (bench/results/
 * h200-2026-11-29.md, session 35). */
static void hold_on_span_chunks(const search_problem *p, candidate *c)
{
    if (c->held_values > 0 || p->recomputed == 0 || c->span_batch > HELD_CHUNK_STEPS)
        return;
    hold_where_registers_allow(p->device, p->recomputed,
                               c->span_batch * span_chunk_elements(p->buffers), c);
}

/* Where a row's chunks would fill under 3/4 of the block's thread steps, a
 * kernel with row constants (put at the rows' shift) takes the block of a
 * multiple of 32 threads, at most as many steps per thread, that its chunks
 * fill so: H = 2049 in 16 bits, 257 chunks, takes 160 threads of two steps
 * instead of 128 of three.  Measured at H = 1023 (129 chunks, 160 threads
 * of one step; H200, N = 16384): layer norm 16-bit +7.9 / +11.5%, RMS norm
 * +23.7 / +26.3% against element by element, softmax, a shift per row,
 * -25.5 / -26.7% (in 16 bits; fp32 +3.8%), which keeps its elements
 * (bench/results/h200-2026-11-29.md, session 35); such short rows now take
 * warps first (warps_per_span_row).  No fewer threads than the block-size
 * search starts from (MIN_BLOCK_THREADS); false if no such block has
 * MAX_BLOCK_THREADS or fewer. */
static bool fit_block_to_chunks(int64_t chunks, candidate *c)
{
    for (int batch = c->span_batch; batch >= 1; batch--) {
        int64_t threads = (chunks + batch - 1) / batch;
        threads = (threads + 31) / 32 * 32;
        if (threads > MAX_BLOCK_THREADS)
            return false;
        if (threads >= MIN_BLOCK_THREADS && chunks_fill_steps(chunks, batch * threads)) {
            c->block_x = (int)threads;
            c->threads = (int)threads;
            c->span_batch = batch;
            return true;
        }
    }
    return false;
}

/* The warps of the block a short row on span chunks takes (`chunks` of
 * them, of `element_bytes` elements): 1 where a lane takes at most
 * WARP_SPAN_MAX_STEPS chunks, 2 (16-bit rows only) where a lane of two
 * warps takes at most TWO_WARP_SPAN_MAX_STEPS, else 0 (the row keeps the
 * block the search chose).  However few of the steps the chunks fill: as
 * short rows on full vectors get a warp each (WARP_ROW_VECTORS), since a
 * block of many threads with a chunk or two each spends most of its
 * instructions on per-row work (the fetch's addresses, two block
 * reductions, the stores' masks).  H = 1023 (129 chunks) took 160 threads
 * of one chunk: per row 5 warps and block barriers, 2.8 times the
 * instructions of H = 1024 (ncu, LN fwd bf16 16384 rows: 28.4M against
 * 10.0M; 44 against 18 us).  H200, N = 16384, against 48874c8's blocks of
 * 128 threads or more (bench/results/h200-2026-11-29.md, session 38):
 *   - one warp, 16-bit, H = 151 / 201 / 301 / 511 / 767 / 1023 / 1151 (1-5
 *     chunks per lane; at 151, 301 and 511 the chunks fill 61-68% of its
 *     steps): +4.9..+61.2% in layer norm, RMS norm and softmax, where the
 *     blocks had run element by element (151-511, softmax 1023-1151) or
 *     on one or two chunks per thread (the shortest measured is 151: H =
 *     129-149 take a warp unmeasured);
 *   - two warps of 3 chunks per lane, 16-bit, H = 1279: +8.6..+33.9%;
 *   - longer rows keep their blocks: one warp of 7 or 8 chunks per lane
 *     (1535, 1987) lost up to 19.5% in the norms, two warps of 4 went
 *     -3.9..+7.4% (probes);
 *   - fp32 rows (4-element chunks; of the kernels on chunks only softmax
 *     has rows this short), one warp: softmax H = 151 / 301 / 511 +62.6 /
 *     +41.3 / +23.2%.  fp32 rows of 161-192 chunks (H = 639-763) were not
 *     measured in two warps and keep their blocks. */
static int warps_per_span_row(int64_t chunks, size_t element_bytes)
{
    if (chunks <= WARP_THREADS * WARP_SPAN_MAX_STEPS)
        return 1;
    if (element_bytes == 2 && chunks <= 2 * WARP_THREADS * TWO_WARP_SPAN_MAX_STEPS)
        return 2;
    return 0;
}

/* A layer norm's 16-bit row in a block of one warp (`warps`, from
 * warps_per_span_row) is held as float in registers, read from its slot
 * once for the var_mean's two passes and the epilogue, as
 * hold_forward_row_floats does for full vectors (here up to 40 elements
 * per thread, beyond its FORWARD_FLOAT_ELEMENTS: measured so at H =
 * 1023), where the registers of its `span_batch` chunks still fit;
 * otherwise `lanes` is left as it was.  H200, N = 16384, bf16 / fp16,
 * against a4af444 (bench/results/h200-2026-11-29.md, session 38): H = 151
 * +1.8 / +1.1%, 301 +8.6 / +6.7%, 511 -1.2 / -1.5%, 767 +10.9 / +8.8%,
 * 1023 +3.7 / +3.2%; in two warps (1279, a probe) +0.7 / -0.5%, which keep
 * their rows in the slot. */
static void hold_warp_row_floats(const search_problem *p, int warps, candidate *lanes)
{
    if (warps != 1 || !p->var_mean || lanes->row_floats != 0 || p->buffers->element_bytes[0] != 2)
        return;
    int registers = lanes->registers + p->buffers->count * lanes->span_batch *
                                       span_chunk_elements(p->buffers);
    if (!held_registers_fit(p->device, registers, lanes->threads))
        return;
    lanes->row_floats = all_buffers(p->buffers);
    lanes->registers = registers;
}

/* True if the rows and every row-constant input are 16-bit: the only
 * rows whose constants, cached in shared memory at the rows' shift, have
 * run on span chunks (multiwave_takes_span_chunks). */
static bool sixteen_bit_cache(const buffered_inputs *buffers)
{
    if (buffers->element_bytes[0] != 2)
        return false;
    for (int i = 0; i < buffers->cached_count; i++)
        if (buffers->cached_element_bytes[i] != 2)
            return false;
    return true;
}

/* Whether a multi-wave (backward) kernel whose rows of an odd length are
 * copied as spans may compute on the span's chunks too: its outer
 * partials then sit at the block's shift, lane `lane` of chunk step `b`
 * always the same column, so every row of a block must start at the same
 * element of its first chunk (the row constants at the rows' shift and a
 * grid of a multiple of the chunk, set_grid), and the partials must be
 * registers of the block's one row (no partials in shared memory, no
 * pairs, no clusters: their exchanges index whole vectors of columns).
 * Only the forms run on a GPU: row constants held as float in registers
 * (bench/results/h200-2026-11-29.md, session 40) or, with 16-bit rows and
 * constants (sixteen_bit_cache), cached in shared memory at the shift
 * (h200-2026-11-30.md, session 43: LN bwd bf16 16384 x 9215 +39.5%, 46.7
 * -> 65.2% of copy; fp32 rows so lost, LN bwd x 3071 / 4089 -2.3 / -2.2%,
 * RMS bwd x 8191 -0.5%, and keep their elements; 16-bit rows with an fp32
 * weight never ran so), and a grid of a chunk's blocks or more before the
 * rounding (8 blocks in 16 bits, 4 in fp32: span_chunk_grid would round a
 * smaller grid under N up to a chunk, to blocks that walk no row; LN bwd
 * bf16 7 x 1987 keeps its elements, 20 x 1987 takes chunks on 20 blocks, a
 * row each), in two row slots or more (one slot of spans, copy_row_spans,
 * never ran on chunks). */
static bool multiwave_takes_span_chunks(const search_problem *p, const candidate *c)
{
    bool constants_form_ran = c->weight_floats || (c->cached && sixteen_bit_cache(p->buffers));
    return constants_form_ran && c->partials_in_shared == 0 && !c->paired && c->slots > 1 &&
           grid_blocks(p, c) >= span_chunk_elements(p->buffers);
}

/* True if a multi-wave candidate on span chunks fits the registers its
 * estimate `registers` asks: held_registers_fit, but up to the whole share
 * of the launch bounds rather than a margin under it.  RMS and LN bwd bf16
 * 16384 x 12287 (512 threads, 4 steps of 8-element chunks, no row floats,
 * ~128 registers estimated) so compiled to 128 registers on sm_90a (127 on
 * sm_100a) without spills; on an H200 RMS ran 11.8% faster than element by
 * element (72.0 -> 80.5% of copy), and LN, whose weight is cached at the
 * rows' shift (sixteen_bit_cache), 41.4% (49.1 -> 69.3%) with that form
 * (h200-2026-11-30.md, session 43).  A kernel that spills all the same is
 * set aside by the compile feedback. */
static bool multiwave_chunk_registers_fit(const fv_device *device, int registers, int threads)
{
    return registers <= MAX_REGISTERS - FLOATS_REGISTER_MARGIN &&
           registers <= launch_bounds_share(device, threads);
}

/* A multi-wave candidate on span chunks whose register estimate no longer
 * fits with its row buffers held as float, or no longer leaves its planned
 * blocks per SM (take_span_chunks keeps no fewer), reads them from their
 * slots instead.  LN bwd bf16 16384 x 2047 (3 steps of 8-element chunks,
 * ~184 registers with x and dy as float, 2 blocks per SM) so kept its 3
 * blocks and computed on the chunks: 25.1% faster on an H200 than element
 * by element (43.0 -> 53.8% of copy; bench/results/h200-2026-11-30.md,
 * session 43).  Floats keep held_registers_fit's margin: the whole share
 * of multiwave_chunk_registers_fit ran only without them. */
static void drop_row_floats_to_fit(const search_problem *p, candidate *lanes)
{
    if (lanes->row_floats == 0 ||
        (held_registers_fit(p->device, lanes->registers, lanes->threads) &&
         blocks_by_registers(p->device, lanes->registers, lanes->threads) >= lanes->blocks_per_sm))
        return;
    lanes->registers -= __builtin_popcount(lanes->row_floats) * lanes->span_batch *
                        span_chunk_elements(p->buffers);
    lanes->row_floats = 0;
}

/* Forward kernels whose rows are copied as spans (copy_row_spans) compute
 * on the span's 16-byte chunks rather than element by element: a thread
 * takes whole chunks (span_batch of them), reads its row buffers from
 * their slots and writes its row outputs as 16-byte vectors (the chunks at
 * the row's two ends lane by lane), and leaves the lanes outside the row
 * out of its reductions.  Where the row-constant inputs are cached in
 * shared memory or held in registers, a grid of a multiple of the chunk's
 * elements (set_grid) makes every row of a block start at the same element
 * of its first chunk, so they are put there once at that shift and read as
 * vectors too.  A row's span covers up to ceil((H + chunk - 1) / chunk)
 * chunks, so a thread may hold more elements than its batch; the arrays of
 * row floats, held values and weights in registers grow with them and
 * must still fit.  Short rows take blocks of one or two warps
 * (warps_per_span_row); other rows are not taken where the chunks would
 * fill under 3/4 of the thread steps (H = 2049: 257 chunks in 3 x 128
 * steps) and no fitted block (fit_block_to_chunks) does, nor where the row
 * constants would be read from device memory lane by lane (loads 16 bytes
 * apart).  Measured on an H200 (bench/results/h200-2026-11-28.md, session
 * 31), N = 16384, 16-bit: layer norm +9.4..+46.6% at H = 1987-20481, RMS
 * norm +5.9..+214% and softmax +23.4..+64.6% at H = 1987-32767; H = 1023
 * -21.2..+2.0% (softmax -20 / -21%), LN 32767 (constants lane by lane)
 * -1.7 / +0.3%.  fp32 rows (4-element chunks) where spans_fp32_rows copies
 * them as spans. */
static bool take_span_chunks(const search_problem *p, candidate *c)
{
    bool multiwave = p->outer_reductions > 0;
    if (!c->spans || c->block_y != 1 || c->cluster != 1)
        return false;
    if (multiwave && !multiwave_takes_span_chunks(p, c))
        return false;
    if (p->buffers->cached_count > 0 &&
        !constants_at_row_shift(c->cached, c->weight_floats, p->buffers->cached_count))
        return false;  /* they would be read from device memory lane by lane */
    int chunk = span_chunk_elements(p->buffers);
    int64_t chunks = (p->inner + 2 * chunk - 2) / chunk;
    candidate lanes = *c;
    int warps = multiwave ? 0 : warps_per_span_row(chunks, p->buffers->element_bytes[0]);
    if (warps > 0)
        lanes.block_x = lanes.threads = warps * WARP_THREADS;
    lanes.span_batch = (int)((chunks + lanes.block_x - 1) / lanes.block_x);
    bool may_fit_block = !multiwave && p->buffers->cached_count > 0;  /* multi-wave keeps its threads */
    if (warps == 0 && !chunks_fill_steps(chunks, (int64_t)lanes.span_batch * lanes.block_x) &&
        !(may_fit_block && fit_block_to_chunks(chunks, &lanes)) &&
        !(multiwave && sparse_chunks_taken(chunks, lanes.span_batch, lanes.block_x,
                                           p->buffers->element_bytes[0])))
        return false;  /* under 3/4 of the thread steps would hold a chunk */
    lanes.row_capacity = lanes.span_batch * lanes.block_x * chunk;
    int grown = lanes.span_batch * chunk - c->batch * p->vector;
    int arrays = __builtin_popcount(c->row_floats) + c->held_values +
                 (c->weight_floats ? p->buffers->cached_count : 0) + p->outer_reductions;
    lanes.registers += grown * arrays;
    if (multiwave)
        drop_row_floats_to_fit(p, &lanes);
    hold_warp_row_floats(p, warps, &lanes);
    lanes.shared_bytes = (int)placement_bytes(p->buffers, &lanes);
    bool registers_fit = multiwave
                             ? multiwave_chunk_registers_fit(p->device, lanes.registers, lanes.threads)
                             : held_registers_fit(p->device, lanes.registers, lanes.threads);
    if (lanes.shared_bytes > shared_budget(p->device) || !registers_fit)
        return false;
    occupancy(p->device, &lanes);
    if (lanes.blocks_per_sm == 0)
        return false;
    if (multiwave) {  /* the multi-wave rule's blocks per SM, no fewer */
        if (lanes.blocks_per_sm < c->blocks_per_sm)
            return false;
        lanes.blocks_per_sm = c->blocks_per_sm;
        lanes.limit = c->limit;
    }
    hold_on_span_chunks(p, &lanes);
    *c = lanes;
    return true;
}

/* take_span_chunks where it applies.  One row slot of spans is taken for
 * the chunks only (copy_row_spans): where they do not follow (softmax fp32
 * 4096 x 55297-56321 on an H200, whose chunks no longer fit shared memory),
 * the rows go back to their 4-byte copies, since the form that reads spans
 * element by element in one slot (two block barriers a row) was never
 * measured for them and spilled 8-16 bytes on sm_90a there.  Multi-wave
 * rows keep their spans in that form (copy_row_spans). */
static void compute_on_span_chunks(const search_problem *p, candidate *c)
{
    if (take_span_chunks(p, c) || !c->spans || c->slots != 1 || p->outer_reductions > 0)
        return;
    c->spans = false;
    c->shared_bytes = (int)placement_bytes(p->buffers, c);
    occupancy(p->device, c);
}

/* `grid` as a multiple of `multiple` blocks: rounded down, except for a
 * multi-wave candidate of a block per walker (cluster 1) where rounding
 * down gives some block one round more than `grid` does and the multiple
 * above stays within the wave and the row groups (the balanced grids of
 * compare_multiwave_grids: on a B200, 2048 rows in 293 blocks of 7 rounds would
 * be 292 blocks in clusters of 2, some of 8 rounds, where 294 walk 7). */
static int round_grid_to_multiple(const search_problem *p, const candidate *c, int grid,
                                  int multiple)
{
    int64_t row_groups = row_groups_of(p, c);
    int64_t down = grid / multiple * multiple;
    int64_t up = down == grid ? down : down + multiple;
    int64_t wave = wave_walkers(p, c);  /* in blocks: cluster 1 where it is used */
    bool round_added = down > 0 && (row_groups + down - 1) / down > (row_groups + grid - 1) / grid;
    if (p->outer_reductions > 0 && c->cluster == 1 && round_added && up <= wave &&
        up <= row_groups)
        return (int)up;
    return (int)down;
}

/* The grid of a kernel computing on span chunks (compute_on_span_chunks)
 * whose row constants are put at the rows' shift: a multiple of the
 * chunk's `chunk` elements (round_grid_to_multiple) unless every row has a
 * block of its own, so that a block's rows all start at the same element
 * of their first chunk. */
static int span_chunk_grid(const search_problem *p, const candidate *c, int chunk)
{
    if (c->grid >= p->outer)
        return c->grid;
    return c->grid >= chunk ? round_grid_to_multiple(p, c, c->grid, chunk) : chunk;
}

/* Sets the chosen candidate's grid (grid_blocks; on span chunks with the
 * row constants at the rows' shift, span_chunk_grid's multiple of the
 * chunk) and, where its blocks add their partials together in clusters
 * (partial_cluster_blocks), rounds the grid to whole clusters
 * (round_grid_to_multiple) and adds the exchange to its shared memory.
 * Returns the blocks per such cluster, 1 where there are none. */
static int set_grid(const search_problem *p, candidate *best)
{
    best->grid = grid_blocks_comparing(p, best, &best->grids);
    if (best->span_batch > 0 &&
        constants_at_row_shift(best->cached, best->weight_floats, p->buffers->cached_count))
        best->grid = span_chunk_grid(p, best, span_chunk_elements(p->buffers));
    int partial_cluster = partial_cluster_blocks(p, best);
    if (partial_cluster > 1) {
        best->grid = round_grid_to_multiple(p, best, best->grid, partial_cluster);
        best->shared_bytes = (int)shared_with_partial_exchange(best, p->outer_reductions,
                                                               p->vector, partial_cluster);
    }
    return partial_cluster;
}

/* The kernel parameters of the chosen candidate, in blocks of
 * `partial_cluster` that add their partials together (1: none). */
static void set_params(const search_problem *p, const candidate *best, int partial_cluster,
                       fv_schedule_params *params)
{
    memset(params, 0, sizeof *params);
    params->vector = p->vector;
    params->block_x = best->block_x;
    params->block_y = best->block_y;
    params->serial = best->batch;
    params->extra[EXTRA_IN_SHARED] = (int)best->in_shared;
    params->extra[EXTRA_MIN_BLOCKS] = bounded_blocks_per_sm(p, best);
    params->extra[EXTRA_SHARED_BYTES] = best->shared_bytes;
    params->extra[EXTRA_GRID] = best->grid;
    params->extra[EXTRA_SLOTS] = best->slots;
    int all_cached = (int)all_row_constants(p->buffers);
    params->extra[EXTRA_CACHED] = best->cached ? all_cached : 0;
    params->extra[EXTRA_CLUSTER] = best->cluster > 1 ? best->cluster : 0;
    params->extra[EXTRA_ROW_FLOATS] = (int)best->row_floats;
    params->extra[EXTRA_WEIGHT_FLOATS] = best->weight_floats ? all_cached : 0;
    params->extra[EXTRA_SHARED_PARTIALS] = (int)best->partials_in_shared;
    params->extra[EXTRA_HELD_VALUES] = best->held_values > 0;
    params->extra[EXTRA_ROW_SPANS] = best->spans;
    params->extra[EXTRA_PARTIAL_CLUSTER] = partial_cluster > 1 ? partial_cluster : 0;
    params->extra[EXTRA_PLANNED_BLOCKS] = best->blocks_per_sm;
    if (best->span_batch > 0) {
        params->vector = span_chunk_elements(p->buffers);
        params->serial = best->span_batch;
        params->extra[EXTRA_SPAN_LANES] = 1;
        params->extra[EXTRA_WHOLE_STEPS] =
            (int)(p->inner / ((int64_t)best->block_x * params->vector));
    }
}

/* The search of nvFuser's multi-wave heuristic (nvfuser.md 1.2) and the
 * steps after it: the block size (search_block_sizes), what the chosen block
 * does with its registers and shared memory (finish_candidate), the block
 * shapes that may replace it (wider forward blocks, row pairs, clusters for
 * the row constants or for two row slots), forward rows of an odd length
 * computed on their span's chunks (compute_on_span_chunks), the grid and
 * the clusters that add partials together (set_grid).  Into *params and *best, with what was
 * considered appended to `considered`; FV_ERR_UNSUPPORTED if a row fits
 * nowhere. */
static fv_status search(const fv_segment_view *view, const fv_case *c, const fv_device *device,
                        int outer_reductions, int max_cluster, fv_schedule_params *params,
                        candidate *best, fv_text *considered)
{
    buffered_inputs buffers;
    find_buffered(view, &buffers);
    search_problem problem;
    FV_TRY(set_up_problem(view, c, device, outer_reductions, max_cluster, &buffers, &problem));
    const search_problem *p = &problem;
    FV_TRY(search_block_sizes(p, best, considered));
    finish_candidate(p, best);
    widen_for_held_values(p, best);
    candidate pair;
    if (pair_rows(p, best, &pair))
        *best = pair;
    split_for_row_constants(p, best, considered);
    widen_cluster_for_two_slots(p, best, considered);
    compute_on_span_chunks(p, best);
    int partial_cluster = set_grid(p, best);
    set_params(p, best, partial_cluster, params);
    return FV_OK;
}

/* ", the last reduction pass keeps e as float in registers for the
 * epilogue" naming the recomputed values (empty if there are none). */
static void held_values_text(const fv_segment_view *view, char *text, size_t size)
{
    persistent_analysis a;
    int32_t values[MAX_HELD_VALUES];
    text[0] = '\0';
    if (analyze(view, &a) != FV_OK)
        return;
    int count = recomputed_values(view, &a, values);
    analysis_free(&a);
    char labels[96] = "", label[40];
    for (int k = 0; k < count; k++) {
        size_t used = strlen(labels);
        snprintf(labels + used, sizeof labels - used, "%s%s", k > 0 ? " and " : "",
                 fv_ir_value_label(view->fusion, values[k], label));
    }
    if (count > 0)
        snprintf(text, size, ", the last reduction pass keeps %s as float in registers for "
                             "the epilogue", labels);
}

static fv_status inner_persistent_choose(const fv_segment_view *view, const fv_case *c,
                                         const fv_device *device, fv_schedule_params *params)
{
    candidate best;
    fv_text considered = {0};
    fv_status status = search(view, c, device, 0, 1, params, &best, &considered);
    if (status == FV_OK) {
        buffered_inputs buffers;
        find_buffered(view, &buffers);
        char placement[256], short_blocks[160], held[192] = "";
        placement_text(&buffers, &best, placement, sizeof placement);
        snprintf(short_blocks, sizeof short_blocks, ", %d rows per block (not one wave)%s",
                 SHORT_BLOCK_ROUNDS,
                 best.row_floats_left_out && best.row_floats == 0
                     ? ", rows not held as float (the floats would cost the two rows)"
                     : "");
        if (best.held_values > 0)
            held_values_text(view, held, sizeof held);
        snprintf(params->description, sizeof params->description,
                 "inner persistent: %d x %d threads, batch %d of %d-element %s, %s%s, ~%d "
                 "registers, %d blocks/SM (limited by %s)%s",
                 best.block_x, best.block_y, params->serial, params->vector,
                 best.span_batch > 0 ? SPAN_CHUNKS_TEXT ")" : "vectors",
                 placement, held,
                 best.registers, best.blocks_per_sm, best.limit,
                 best.grid > best.blocks_per_sm * device->sm_count ? short_blocks : "");
    }
    fv_text_free(&considered);
    return status;
}

/* roundUpPow2Or8: a power of two up to 8, then multiples of 8. */
static int round_up_pow2_or_8(int64_t value)
{
    if (value <= 8)
        return fv_family_pow2_ceil(value);
    return (int)((value + 7) / 8 * 8);
}

/* Stage 2 (nvfuser.md 1.2) over `threads` threads of each of `grid`
 * blocks: vec_outer = min(H >= 4096 ? 4 : 2, vec); bdimx =
 * roundUpPow2Or8(ceil(H / vec_outer / grid)), raised by 8 until it divides
 * the block; bdimy = block / bdimx. */
static void set_stage_two(fv_schedule_params *params, int64_t inner, int grid, int threads)
{
    int stage_vector = inner >= 4096 ? 4 : 2;
    if (stage_vector > params->vector)
        stage_vector = params->vector;
    while (stage_vector > 1 && inner % stage_vector != 0)
        stage_vector /= 2;  /* span chunks: the workspace rows are not whole vectors */
    int stage_x = round_up_pow2_or_8((inner / stage_vector + grid - 1) / grid);
    while (stage_x < threads && threads % stage_x != 0)
        stage_x += 8;
    if (stage_x > threads)
        stage_x = threads;
    params->extra[EXTRA_STAGE_X] = stage_x;
    params->extra[EXTRA_STAGE_Y] = threads / stage_x;
    params->extra[EXTRA_STAGE_VECTOR] = stage_vector;
}

static bool stage_two_in_warps(const fv_schedule_params *params, int outer_count);

static fv_status inner_outer_choose(const fv_segment_view *view, const fv_case *c,
                                    const fv_device *device, fv_schedule_params *params)
{
    persistent_analysis a;
    FV_TRY(analyze(view, &a));
    int outer_reductions = a.outer_count;
    analysis_free(&a);
    candidate best;
    fv_text considered = {0};
    int max_cluster = device->major >= 9 ? MAX_CLUSTER : 1;
    fv_status status = search(view, c, device, outer_reductions, max_cluster, params, &best,
                              &considered);
    if (status != FV_OK) {
        fv_text_free(&considered);
        return status;
    }
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    set_stage_two(params, inner, best.grid, best.threads);
    int stage_x = params->extra[EXTRA_STAGE_X], stage_vector = params->extra[EXTRA_STAGE_VECTOR];
    buffered_inputs buffers;
    find_buffered(view, &buffers);
    char placement[256], rows_per_block[192] = "";
    placement_text(&buffers, &best, placement, sizeof placement);
    if (best.paired)
        snprintf(rows_per_block, sizeof rows_per_block,
                 "two rows per block (instead of one of %d threads), ", 2 * ROW_PAIR_THREADS);
    if (best.cluster > 1)
        snprintf(rows_per_block, sizeof rows_per_block,
                 "rows split over clusters of %d blocks (%lld columns each%s), ",
                 best.cluster,
                 (long long)(slice_vectors(inner, params->vector, best.cluster) * params->vector),
                 best.split_for_constants ? "; a block per row would read the row-constant "
                                            "inputs from device memory in every pass"
                                          : "");
    char grid_text[224];
    multiwave_grid_text(&best, grid_text, sizeof grid_text);
    char partial_clusters[96] = "";
    if (params->extra[EXTRA_PARTIAL_CLUSTER] > 1)
        snprintf(partial_clusters, sizeof partial_clusters,
                 ", partials added over clusters of %d blocks before the workspace",
                 params->extra[EXTRA_PARTIAL_CLUSTER]);
    snprintf(params->description, sizeof params->description,
             "multi-wave inner-outer persistent: %s%d x %d threads, batch %d of %d-element "
             "%s, %s, ~%d registers (%d spare), %d blocks/SM (limited by %s), one wave of %d "
             "blocks%s%s, stage 2 %d x %d threads of %d-element vectors%s; candidates: %s",
             rows_per_block, best.block_x, best.block_y, params->serial, params->vector,
             best.span_batch > 0 ? SPAN_CHUNKS_TEXT "; the partials at the block's shift)"
                                 : "vectors",
             placement,
             best.registers, best.spare,
             best.blocks_per_sm, best.limit, best.grid, grid_text, partial_clusters, stage_x,
             best.threads / stage_x, stage_vector,
             stage_two_in_warps(params, outer_reductions) ? " (slices added within warps)" : "",
             fv_text_str(&considered));
    fv_text_free(&considered);
    return FV_OK;
}

/* ------------------------------------------------- warp-specialized */

enum {
    WS_SMALL_STATIC_SHARED = 4096,  /* barriers and the groups' reduction scratch */
    WS_PRODUCER_REGISTERS = 56,  /* the producer only issues copies; at 40 (nvFuser's
                                    figure) our producer loop spills 8 bytes */
    WS_MAX_COMPUTE_REGISTERS = 240,
    WS_PRODUCER_THREADS = 128,  /* one warp group */
    WS_ROW_FLOATS_MARGIN = 48,  /* registers a compute thread keeps beside the floats it holds
                                   (row temporaries, addresses, loop state) */
};

/* The producer is one warp group, as nvFuser's (nvfuser.md 1.3): with
 * compute groups of 128 threads it is one more row of threads (block
 * bdimx x (groups + 1)); with wider compute groups (bdimx 256 or 384, then
 * always one group) it is 128 more threads on x (block (bdimx + 128) x 1),
 * so the compute threads get the registers the heuristic's budget counts
 * (384 + 128 threads: 128 each at launch, 152 after setmaxnreg; a producer
 * row of 384 threads left them 80 and 104). */
static bool ws_producer_on_x(int bdimx)
{
    return bdimx > WS_PRODUCER_THREADS;
}

/* Threads of a warp-specialized block: the compute groups and the producer. */
static int ws_block_threads(int bdimx, int groups)
{
    return bdimx * groups + WS_PRODUCER_THREADS;
}

/* Register sharing in the emitted kernel (ws_block_threads threads).
 * Every thread starts with what __launch_bounds__(threads, 1) gives (ptxas
 * then allocates exactly that).  When every group is whole warp groups
 * (bdimx a multiple of 128, as setmaxnreg acts per warp group), the producer
 * group drops to WS_PRODUCER_REGISTERS and the compute groups take what it
 * frees, if the heuristic's estimate of what they need (`needed`) is more
 * than *start; *producer and *compute are then the setmaxnreg counts
 * (multiples of 8), else both are 0 and every thread keeps *start. */
static void ws_register_split(const fv_device *device, int bdimx, int groups, int needed,
                              int *start, int *producer, int *compute)
{
    *start = fv_sched_ws_registers_per_thread(device, ws_block_threads(bdimx, groups));
    *producer = *compute = 0;
    if (bdimx % 128 != 0 || *start <= WS_PRODUCER_REGISTERS || needed <= *start)
        return;
    int freed = (*start - WS_PRODUCER_REGISTERS) * WS_PRODUCER_THREADS;
    int raised = (*start + freed / (bdimx * groups)) / 8 * 8;
    if (raised > WS_MAX_COMPUTE_REGISTERS)
        raised = WS_MAX_COMPUTE_REGISTERS;
    if (raised <= *start || *start % 8 != 0)
        return;  /* setmaxnreg takes multiples of 8, and would not raise them */
    *producer = WS_PRODUCER_REGISTERS;
    *compute = raised;
}

/* Bytes of a warp-specialized shared region: `rows` rows of `capacity`
 * elements, 128-byte aligned (bulk copies need 16).  Sizing here and the
 * emitted offsets (emit_ws_before_rows) both use it. */
static int64_t ws_region_bytes(int64_t capacity, size_t element_bytes, int64_t rows)
{
    return (capacity * (int64_t)element_bytes * rows + 127) / 128 * 128;
}

/* Dynamic shared memory of the kernel: per buffered input, stages x unroll
 * row slots of the row capacity; then the row-constant inputs kept in
 * shared memory. */
static int64_t ws_shared_bytes(const buffered_inputs *buffers, int64_t capacity, int stages,
                               int unroll, bool weight_in_registers)
{
    int64_t bytes = 0;
    for (int i = 0; i < buffers->count; i++)
        bytes += ws_region_bytes(capacity, buffers->element_bytes[i], (int64_t)stages * unroll);
    for (int i = 0; !weight_in_registers && i < buffers->cached_count; i++)
        bytes += ws_region_bytes(capacity, buffers->cached_element_bytes[i], 1);
    return bytes;
}

/* Vectors of a row per compute thread (the batch). */
static int ws_batch(const fv_sched_ws_problem *problem, int bdimx)
{
    int64_t vectors = problem->inner / problem->vector;
    return (int)((vectors + bdimx - 1) / bdimx);
}

/* Static shared memory of a block of `threads`: the stage-2 scratch (a
 * float per column of each thread, at most 4 columns) and the small arrays. */
static int64_t ws_static_shared(int threads)
{
    return (int64_t)threads * 4 * 4 + WS_SMALL_STATIC_SHARED;
}

/* What the kernel makes of the heuristic's parameters (ws_heuristic). */
typedef struct ws_layout {
    int groups;              /* compute groups: bdimy, or 1 with fewer stages */
    int batch;               /* vectors of a row per compute thread */
    int64_t shared;          /* bytes of the row slots (dynamic shared memory) */
    int start_registers;     /* per thread at launch */
    int producer_registers;  /* setmaxnreg counts, or both 0 (ws_register_split) */
    int compute_registers;
} ws_layout;

/* The registers a compute thread of the layout has. */
static int ws_compute_registers(const ws_layout *layout)
{
    return layout->compute_registers > 0 ? layout->compute_registers : layout->start_registers;
}

/* nvFuser's heuristic (nvfuser.md 1.3) for this kernel, and *layout.  Its
 * stages are cut (by whole groups) to what fits beside our static shared
 * memory; FV_ERR_UNSUPPORTED if one stage per group does not fit.  The result is good only if nvFuser's rule says so
 * for the cut stages and it is so with the registers this kernel's compute
 * threads get as well (ws_register_split, fv_sched_ws_judge): our producer
 * keeps WS_PRODUCER_REGISTERS, not nvFuser's 32 or so, so a group of 384
 * threads gets 152 registers, not 160, and reaches nvFuser's floor of 64
 * registers beside the weight and the partials sooner (RMS bwd 16-bit
 * 16384 x 24576 leaves 56, and its kernel spilled 352 bytes on sm_90a). */
static fv_status ws_heuristic(const fv_sched_ws_problem *problem, const buffered_inputs *buffers,
                              const fv_device *device, fv_sched_ws_params *ws, ws_layout *layout)
{
    FV_TRY(fv_sched_ws_heuristic(problem, device, ws));
    int groups = ws->stages >= ws->bdimy ? ws->bdimy : 1;
    if (ws_producer_on_x(ws->bdimx) && groups != 1)
        FV_FAIL(FV_ERR_INTERNAL, "warp-specialized: %d compute groups of %d threads", groups,
                ws->bdimx);
    layout->groups = groups;
    layout->batch = ws_batch(problem, ws->bdimx);
    int64_t capacity = (int64_t)layout->batch * ws->bdimx * problem->vector;
    int64_t budget =
        device->shared_per_block_optin - ws_static_shared(ws_block_threads(ws->bdimx, groups));
    int stages = ws->stages;  /* a multiple of the groups (the heuristic rounds it) */
    while (stages > groups &&
           ws_shared_bytes(buffers, capacity, stages, ws->unroll, ws->gmem_to_regs) > budget)
        stages -= groups;
    layout->shared = ws_shared_bytes(buffers, capacity, stages, ws->unroll, ws->gmem_to_regs);
    if (layout->shared > budget)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "warp-specialized: %lld bytes of row slots do not fit in shared memory",
                (long long)layout->shared);
    ws->stages = stages;
    ws_register_split(device, ws->bdimx, groups, ws->registers_needed, &layout->start_registers,
                      &layout->producer_registers, &layout->compute_registers);
    if (ws->good)
        fv_sched_ws_judge(problem, ws_compute_registers(layout), ws);
    return FV_OK;
}

/* True if a compute thread can hold its columns of the step's rows as float
 * (regs_cached) beside the partials, the weight floats and, with several
 * rows per step, the step's arrays (grouped_step: step_entries a row), within `registers` less
 * WS_ROW_FLOATS_MARGIN.  The heuristic counts the rows in their own type
 * (nvFuser's registers hold them so); ours hold floats, twice as many
 * registers for 16-bit rows: RMS bwd 16-bit 16384 x 4096 (2 rows per step,
 * 192 floats against 224 registers) spilled 24 bytes on sm_90a with them;
 * LN bwd 16-bit 16384 x 2048 (4 rows per step, 176 floats) did not, but
 * spilled 32 bytes once its 8 step sums were live across the step's two
 * passes.  With `row_element_bytes` 2 it counts the rows in their own
 * 16-bit type (ws_rows_in_registers). */
static bool ws_row_floats_fit(const fv_sched_ws_problem *problem, const buffered_inputs *buffers,
                              int bdimx, int unroll, bool weight_floats, int registers,
                              int row_element_bytes)
{
    int64_t float_row = problem->inner * 4;
    int floats =
        fv_sched_ws_registers_for(problem, buffers->count * problem->inner * row_element_bytes,
                                  bdimx) * unroll +
        fv_sched_ws_registers_for(problem, problem->partial_bytes, bdimx) +
        (weight_floats ? fv_sched_ws_registers_for(problem, buffers->cached_count * float_row, bdimx)
                       : 0);
    int step_entries = unroll > 1 ? unroll * problem->step_entries : 0;
    return floats + step_entries + WS_ROW_FLOATS_MARGIN <= registers;
}

/* True if row statistic `value` (an input along the rows only, such as
 * mean or invstd) can be loaded a step ahead in a warp-specialized kernel
 * (emit_ws_step_values): a float type of 4 bytes or less. */
static bool is_ws_step_value(const fv_segment_view *view, int32_t value)
{
    fv_dtype dtype = view->fusion->values[value].dtype;
    return is_row_input(view, value) && fv_dtype_is_float(dtype) && dtype != FV_F64;
}

enum { WARP_LANES = 32 };  /* a step's rows per warp shuffle of emit_ws_step_values */

/* True if a warp-specialized kernel with `unroll` rows per step loads its
 * row statistics a step ahead (emit_ws_step_values): it has some
 * (is_ws_step_value), two or more inner reductions (layer norm's backward)
 * and 16-bit rows, and a warp's lanes cover a step's rows.  Measured on an
 * H200 at N = 16384 (bench/results/h200-2026-11-30.md, session 46): LN bwd
 * bf16 at H = 2048-12288 ran 2.2-17.9% faster with it, and 0.9% slower at
 * 16384.  RMS norm and the fp32 kernels, whose groups work about half as
 * long per byte and so cover the load after the full barrier without it,
 * ran -3.7..+0.4% against the load in the prologue, mostly slower, so they
 * keep that.  fp16 takes it as bf16 does; its A/B was not measured. */
static bool ws_stats_ahead(const fv_segment_view *view, const buffered_inputs *buffers,
                           int inner_reductions, int unroll)
{
    if (inner_reductions < 2 || buffers->count == 0 || unroll > WARP_LANES)
        return false;
    for (int i = 0; i < buffers->count; i++)
        if (buffers->element_bytes[i] != 2)
            return false;
    const fv_fusion *fusion = view->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++)
        if (is_ws_step_value(view, fusion->inputs[i]))
            return true;
    return false;
}

/* True if every buffered input of the segment is fp16. */
static bool all_buffers_fp16(const fv_segment_view *view, const buffered_inputs *buffers)
{
    for (int i = 0; i < buffers->count; i++)
        if (view->fusion->values[buffers->values[i]].dtype != FV_F16)
            return false;
    return buffers->count > 0;
}

/* How a warp-specialized step's rows are held in registers (regs_cached):
 * 4 (as float) where they fit so beside the rest (ws_row_floats_fit), else
 * 2 (in their own type, converted where read) where every buffered input is
 * fp16 and they fit so, else 0 (read from the stage, which is released after
 * the step).  nvFuser's registers hold the rows in their own type; float
 * saves the conversion in every pass.  bf16 rows are not held in their own
 * type: with __bfloat162float (cvt.f32.bf16) those kernels spilled 28-160
 * bytes on sm_90a at 4 of the 5 bench shapes that took the form (LN bwd
 * 2048, RMS bwd 4096 / 6144, RMS fwd 8192) and ran multi-wave; widened by a
 * shift they did not spill, but LN fwd bf16 8192 ran at 61.2% of copy
 * against 78.2% on an H200. Read from the stage, they run within -0.3..+1.6%
 * of the own-type kernels (H200, bench/results/h200-2026-11-27.md). */
static int ws_rows_in_registers(const fv_segment_view *view, const fv_sched_ws_problem *problem,
                                const buffered_inputs *buffers, int bdimx, int unroll,
                                bool weight_floats, int registers)
{
    if (ws_row_floats_fit(problem, buffers, bdimx, unroll, weight_floats, registers, 4))
        return 4;
    if (!all_buffers_fp16(view, buffers))
        return 0;
    return ws_row_floats_fit(problem, buffers, bdimx, unroll, weight_floats, registers, 2) ? 2
                                                                                          : 0;
}

/* The heuristic's view of a segment and case (bytes per row of each kind of
 * buffer), and whether 1-D bulk copies can move its rows: every buffered
 * row a multiple of 16 bytes. */
static fv_status ws_problem(const fv_segment_view *view, const fv_case *c,
                            fv_sched_ws_problem *problem, buffered_inputs *buffers, char *why,
                            size_t why_size, bool *possible)
{
    persistent_analysis a;
    FV_TRY(analyze(view, &a));
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    find_buffered(view, buffers);
    memset(problem, 0, sizeof *problem);
    problem->rows = outer;
    problem->inner = inner;
    problem->vector = fv_family_vector_width(view, inner);
    problem->partial_bytes = (int64_t)a.outer_count * inner * 4;
    problem->inner_reductions = a.inner_count;
    problem->step_entries = a.inner_count;
    for (int r = 0; r < a.inner_count; r++)
        problem->step_entries += a.inner[r]->kind == FV_OP_VAR_MEAN;
    problem->static_shapes = fv_case_static_shapes(c);
    analysis_free(&a);
    *possible = true;
    for (int i = 0; i < buffers->count; i++) {
        int64_t row_bytes = inner * (int64_t)buffers->element_bytes[i];
        problem->circular_bytes += row_bytes;
        if (row_bytes % 16 != 0 && *possible) {
            *possible = false;
            snprintf(why, why_size, "rows of %lld bytes: 1-D bulk copies move multiples of 16 bytes",
                     (long long)row_bytes);
        }
    }
    for (int i = 0; i < buffers->cached_count; i++)
        problem->noncircular_bytes += inner * (int64_t)buffers->cached_element_bytes[i];
    if (*possible && buffers->count == 0) {
        *possible = false;
        snprintf(why, why_size, "no row buffers to copy");
    }
    return FV_OK;
}

/* nvFuser's automatic rule (nvfuser.md 1.4). */
static bool ws_selected(const fv_segment_view *view, const fv_case *c, const fv_device *device,
                        char *why, size_t why_size)
{
    fv_sched_ws_problem problem;
    buffered_inputs buffers;
    bool possible;
    if (ws_problem(view, c, &problem, &buffers, why, why_size, &possible) != FV_OK) {
        fv_error_clear();
        snprintf(why, why_size, "out of memory");
        return false;
    }
    if (!possible || !fv_sched_ws_preferred(&problem, device, why, why_size))
        return false;
    fv_sched_ws_params ws;
    ws_layout layout;
    if (ws_heuristic(&problem, &buffers, device, &ws, &layout) != FV_OK) {
        snprintf(why, why_size, "%s", fv_error_message());
        fv_error_clear();
        return false;
    }
    if (!ws.good)
        snprintf(why, why_size, "the warp-specialized heuristic is not good: %s", ws.why_not_good);
    return ws.good;
}

static fv_status ws_choose(const fv_segment_view *view, const fv_case *c, const fv_device *device,
                           fv_schedule_params *params)
{
    fv_sched_ws_problem problem;
    buffered_inputs buffers;
    char why[256] = "";
    bool possible;
    FV_TRY(ws_problem(view, c, &problem, &buffers, why, sizeof why, &possible));
    if (!possible)
        FV_FAIL(FV_ERR_UNSUPPORTED, "warp-specialized: %s", why);
    fv_sched_ws_params ws;
    ws_layout layout;
    FV_TRY(ws_heuristic(&problem, &buffers, device, &ws, &layout));
    int groups = layout.groups, stages = ws.stages;
    int threads = ws_block_threads(ws.bdimx, groups);
    int64_t tiles = (problem.rows + (int64_t)ws.unroll * groups - 1) / ((int64_t)ws.unroll * groups);
    int grid = tiles < device->sm_count ? (int)tiles : device->sm_count;
    memset(params, 0, sizeof *params);
    params->vector = problem.vector;
    params->block_x = ws.bdimx;
    params->block_y = groups;
    params->serial = layout.batch;
    params->extra[EXTRA_SHARED_BYTES] = (int)layout.shared;
    params->extra[EXTRA_GRID] = grid;
    params->extra[EXTRA_WS_STAGES] = stages;
    params->extra[EXTRA_WS_UNROLL] = ws.unroll;
    params->forced_not_good = !ws.good;
    params->extra[EXTRA_WEIGHT_FLOATS] = ws.gmem_to_regs ? (int)all_row_constants(&buffers) : 0;
    int row_bytes_held =
        ws.regs_cached ? ws_rows_in_registers(view, &problem, &buffers, ws.bdimx, ws.unroll,
                                              ws.gmem_to_regs, ws_compute_registers(&layout))
                       : 0;
    bool rows_in_registers = row_bytes_held > 0;
    params->extra[EXTRA_ROW_FLOATS] = rows_in_registers ? (int)all_buffers(&buffers) : 0;
    params->extra[EXTRA_WS_ROWS_OWN_TYPE] = row_bytes_held == 2;
    params->extra[EXTRA_WS_PRODUCER_REGISTERS] = layout.producer_registers;
    params->extra[EXTRA_WS_COMPUTE_REGISTERS] = layout.compute_registers;
    params->extra[EXTRA_WS_START_REGISTERS] =
        layout.compute_registers > 0 ? layout.start_registers : 0;
    params->extra[EXTRA_WS_STATS_AHEAD] =
        ws_stats_ahead(view, &buffers, problem.inner_reductions, ws.unroll);
    char registers[96];
    if (layout.compute_registers > 0)
        snprintf(registers, sizeof registers, "registers %d -> producer %d, compute %d (setmaxnreg)",
                 layout.start_registers, layout.producer_registers, layout.compute_registers);
    else
        snprintf(registers, sizeof registers, "%d registers per thread (no setmaxnreg)",
                 layout.start_registers);
    set_stage_two(params, problem.inner, grid, threads);
    snprintf(params->description, sizeof params->description,
             "warp-specialized inner-outer persistent (TMA): %d compute group%s of %d threads "
             "and a producer warp group of %d threads (%s), %d rows per step, %d stages of 1-D bulk copies%s, batch %d "
             "of %d-element vectors, weight in %s%s, one block per SM (%d blocks), %s; heuristic "
             "pass %c, %d registers needed of nvFuser's %d per compute thread%s%s%s",
             groups, groups > 1 ? "s" : "", ws.bdimx, WS_PRODUCER_THREADS,
             ws_producer_on_x(ws.bdimx) ? "beside them on x" : "a row of its own",
             ws.unroll, stages,
             row_bytes_held == 4 ? " (a step's rows read into registers as float, then the stage released)"
             : row_bytes_held == 2 ? " (a step's rows read into registers in their own 16-bit type, as float they do not fit, then the stage released)"
             : ws.regs_cached ? " (no room to hold a step's rows in registers as float, and only fp16 rows are held in their own type: the stage is released after them)"
                              : "",
             layout.batch, problem.vector,
             ws.gmem_to_regs ? "registers" : "shared memory",
             params->extra[EXTRA_WS_STATS_AHEAD] ? ", row statistics loaded a step ahead" : "",
             grid, registers, ws.pass,
             ws.registers_needed, ws.compute_registers,
             ws.register_sharing ? " with register sharing" : "",
             ws.good ? "" : "; forced although not good: ", ws.good ? "" : ws.why_not_good);
    return FV_OK;
}

/* ------------------------------------------ TMA inner persistent (seed 003) */

enum {
    TMA_INNER_BLOCK_X = 128,       /* the warp-specialized form needs bdimx 128 */
    TMA_INNER_MAX_BATCH = 12,      /* nvFuser widens the block past this many vectors */
    TMA_INNER_MAX_ROW_BYTES = 128 << 10,  /* larger rows need a cluster reduction */
    TMA_INNER_GROUPS = 2,          /* compute groups (ping-pong) */
};

/* nvFuser takes the TMA inner persistent kernel only on request
 * (NVFUSER_ENABLE=tma_inner_persistent; nvfuser.md 2): here, only when the
 * case forces the warp-specialized approach, so never automatically. */
static bool inner_tma_selected(const fv_segment_view *view, const fv_case *c,
                               const fv_device *device, char *why, size_t why_size)
{
    (void)view;
    (void)c;
    (void)device;
    snprintf(why, why_size, "nvFuser takes the TMA inner persistent kernel only on request "
                            "(tma_inner_persistent); --approach ws forces it");
    return false;
}

/* nvFuser's gate (mayUseTma) and the conditions of its warp-specialized
 * form, on the row buffers of the segment; FV_ERR_UNSUPPORTED naming the
 * first that fails. */
static fv_status inner_tma_check(const buffered_inputs *buffers, const fv_device *device,
                                 int64_t inner, int vector)
{
    if (device->major < 9)
        FV_FAIL(FV_ERR_UNSUPPORTED, "TMA inner persistent: needs compute capability 9.0, not %d.%d",
                device->major, device->minor);
    if (buffers->count == 0)
        FV_FAIL(FV_ERR_UNSUPPORTED, "TMA inner persistent: no row buffers to copy");
    int64_t row_bytes = 0;
    for (int i = 0; i < buffers->count; i++) {
        int64_t bytes = inner * (int64_t)buffers->element_bytes[i];
        if (bytes % 16 != 0)
            FV_FAIL(FV_ERR_UNSUPPORTED,
                    "TMA inner persistent: rows of %lld bytes (bulk copies move multiples of 16)",
                    (long long)bytes);
        if ((size_t)vector * buffers->element_bytes[i] != 16)
            FV_FAIL(FV_ERR_UNSUPPORTED,
                    "TMA inner persistent: %d-element vectors of %zu-byte elements are not 128 bits",
                    vector, buffers->element_bytes[i]);
        row_bytes += bytes;
    }
    if (row_bytes > TMA_INNER_MAX_ROW_BYTES)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "TMA inner persistent: %lld bytes of row buffers need a cluster reduction",
                (long long)row_bytes);
    if (inner / vector < TMA_INNER_BLOCK_X)
        FV_FAIL(FV_ERR_UNSUPPORTED, "TMA inner persistent: %lld vectors per row, fewer than %d",
                (long long)(inner / vector), TMA_INNER_BLOCK_X);
    return FV_OK;
}

/* nvFuser's parameters (nvfuser.md 2): 128 threads per compute group and
 * `batch` vectors each (at most 12, else the form does not apply), two
 * compute groups, two grouped rows when the row count is even, and
 * nvFuser's stages = min(rows / (2 x grouped x SMs), what shared memory
 * holds), at least 2.  A stage of nvFuser's holds the grouped rows of both
 * compute groups; one of ours holds those of one group, so ours are twice
 * as many. */
static fv_status inner_tma_choose(const fv_segment_view *view, const fv_case *c,
                                  const fv_device *device, fv_schedule_params *params)
{
    fv_sched_ws_problem problem;
    buffered_inputs buffers;
    char why[160];
    bool possible; /* inner_tma_check below names what fails */
    FV_TRY(ws_problem(view, c, &problem, &buffers, why, sizeof why, &possible));
    int64_t outer = problem.rows, inner = problem.inner;
    int vector = problem.vector;
    FV_TRY(inner_tma_check(&buffers, device, inner, vector));
    int batch = ws_batch(&problem, TMA_INNER_BLOCK_X);
    if (batch > TMA_INNER_MAX_BATCH)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "TMA inner persistent: %lld vectors per thread at %d threads; nvFuser widens the "
                "block and drops warp specialization",
                (long long)batch, TMA_INNER_BLOCK_X);
    int groups = TMA_INNER_GROUPS;
    int unroll = outer % 2 == 0 ? 2 : 1;
    int64_t capacity = (int64_t)batch * TMA_INNER_BLOCK_X * vector;
    int64_t budget = device->shared_per_block_optin - WS_SMALL_STATIC_SHARED;
    int64_t by_rows = outer / ((int64_t)unroll * device->sm_count) / groups * groups;
    int stages = 0;
    while (stages + groups <= by_rows &&
           ws_shared_bytes(&buffers, capacity, stages + groups, unroll, false) <= budget)
        stages += groups;
    if (stages < 2 * groups)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "TMA inner persistent: %d stages per compute group (rows per SM or shared "
                "memory too few; warp specialization needs 2)", stages / groups);
    int64_t tiles = (outer + (int64_t)unroll * groups - 1) / ((int64_t)unroll * groups);
    int grid = tiles < device->sm_count ? (int)tiles : device->sm_count;
    /* The step's rows held in registers (regs_cached), as in the inner-outer
     * ws kernel, as float or in their own 16-bit type, where they fit the
     * launch's registers (no register sharing). */
    int registers = fv_sched_ws_registers_per_thread(device, ws_block_threads(TMA_INNER_BLOCK_X, groups));
    int row_bytes_held =
        ws_rows_in_registers(view, &problem, &buffers, TMA_INNER_BLOCK_X, unroll, false, registers);
    memset(params, 0, sizeof *params);
    params->extra[EXTRA_ROW_FLOATS] = row_bytes_held > 0 ? (int)all_buffers(&buffers) : 0;
    params->extra[EXTRA_WS_ROWS_OWN_TYPE] = row_bytes_held == 2;
    params->vector = vector;
    params->block_x = TMA_INNER_BLOCK_X;
    params->block_y = groups;
    params->serial = (int)batch;
    params->extra[EXTRA_SHARED_BYTES] = (int)ws_shared_bytes(&buffers, capacity, stages, unroll, false);
    params->extra[EXTRA_GRID] = grid;
    params->extra[EXTRA_WS_STAGES] = stages;
    params->extra[EXTRA_WS_UNROLL] = unroll;
    snprintf(params->description, sizeof params->description,
             "TMA inner persistent, warp-specialized: %d compute groups of %d threads and a "
             "producer group, %d rows per step, %d stages of 1-D bulk copies (%d per group%s), "
             "batch %lld of %d-element vectors, row-constant inputs in shared memory, one "
             "block per SM (%d blocks)",
             groups, TMA_INNER_BLOCK_X, unroll, stages, stages / groups,
             row_bytes_held == 4 ? ", a step's rows read into registers as float, then the stage released"
             : row_bytes_held == 2 ? ", a step's rows read into registers in their own 16-bit type, then the stage released"
                                   : "",
             (long long)batch, vector, grid);
    return FV_OK;
}

/* ------------------------------------------------------------- emitting */

/* Which kernel the emitter writes. */
typedef enum persistent_kind {
    KIND_INNER,        /* inner persistent */
    KIND_MULTIWAVE,    /* inner-outer, multi-wave */
    KIND_WS,           /* inner-outer, warp-specialized */
    KIND_INNER_TMA     /* inner persistent, warp-specialized (TMA circular buffer) */
} persistent_kind;

/* What each kind of kernel is. */
typedef struct persistent_form {
    const char *family;     /* its scheduler family (the kernel's head comment) */
    const char *skeleton;
    bool warp_specialized;  /* a producer warp group fills a circular buffer (producer_on_x) */
    bool inner_outer;       /* outer reductions: workspace, cooperative grid sync, stage 2 */
} persistent_form;

static const persistent_form forms[] = {
    [KIND_INNER] = {"inner_persistent", fv_skeleton_inner_persistent, false, false},
    [KIND_MULTIWAVE] = {"inner_outer_persistent", fv_skeleton_inner_outer_persistent, false,
                        true},
    [KIND_WS] = {"inner_outer_ws", fv_skeleton_warp_specialized, true, true},
    [KIND_INNER_TMA] = {"inner_tma", fv_skeleton_warp_specialized, true, false},
};

static bool warp_specialized(persistent_kind kind)
{
    return forms[kind].warp_specialized;
}

/* True if the kind's producer warp group is 128 more threads on x. */
static bool producer_on_x(const fv_schedule_params *params, persistent_kind kind)
{
    return warp_specialized(kind) && ws_producer_on_x(params->block_x);
}

/* Threads on x of the launched block: the columns of a row group, and the
 * producer's threads where they are on x. */
static int launch_block_x(const fv_schedule_params *params, persistent_kind kind)
{
    return params->block_x + (producer_on_x(params, kind) ? WS_PRODUCER_THREADS : 0);
}

/* Threads of the launched block: the row (or compute) groups, and the
 * producer warp group of a warp-specialized kind. */
static int launch_threads(const fv_schedule_params *params, persistent_kind kind)
{
    return warp_specialized(kind) ? ws_block_threads(params->block_x, params->block_y)
                                  : params->block_x * params->block_y;
}

typedef struct persistent_emit {
    persistent_kind kind;
    const fv_segment_view *view;
    const fv_schedule_params *params;
    persistent_analysis analysis;
    buffered_inputs buffers;
    fv_emitter e;
    bool *targets;
    char **buffered_lines;      /* per value id: the line reading its buffer */
    fv_text before_rows, row_start, fetch, prologue, load, stages, epilogue, partials,
        write_partials, stage_two, parameters;
    int32_t held[MAX_HELD_VALUES]; /* EXTRA_HELD_VALUES: values the last reduction pass keeps */
    int held_count;                /* as float in registers (held<value>[batch][vector]) */
    bool grouped;               /* grouped_step: a step's rows share each pass's group reductions */
    fv_text grouped_rows;       /* grouped: the reduction passes over the step's rows */
    fv_text step_values_ahead;  /* warp-specialized: the first step's row statistics, and */
    fv_text step_values;        /* at each step, this step's and the next step's */
    fv_text accumulate, group_sum; /* grouped: a pass's row accumulation, its group reductions */
    int scratch_per_row;        /* floats of reduction scratch per row of the block */
    fv_text cluster_setup;      /* multi-wave in clusters: the block's place in its cluster */
    char next_slot[80];         /* the statement that moves `slot` on after each row */
    char stage_scratch[160];    /* the declaration of stage 2's shared scratch */
    char partial_group[40];     /* which workspace row group is this block's, and how many */
    char partial_groups[40];    /* there are (set_partial_groups) */
    bool split_end_chunks;      /* on span chunks: lane loops of reductions unmasked on whole */
                                /* chunks (splits_end_chunks) */
    char whole_chunk_test[48];  /* on span chunks: write_whole_chunk_test's condition, or "" */
    char lane_window_test[128]; /* on span chunks with a lane window: a lane's test, or "" */
    char group_of_thread[96];   /* warp-specialized: a thread's group (the producer's is */
    char producer_leader[48];   /* the last) and the producer thread that copies the rows */
} persistent_emit;

/* Blocks per thread-block cluster sharing each row; 1 without clusters. */
static int cluster_blocks(const fv_schedule_params *params)
{
    return params->extra[EXTRA_CLUSTER] > 1 ? params->extra[EXTRA_CLUSTER] : 1;
}

/* True if blocks share rows in thread-block clusters. */
static bool clustered(const fv_schedule_params *params)
{
    return cluster_blocks(params) > 1;
}

/* Blocks per cluster that add their outer partials together before the
 * workspace (partial_cluster_blocks); 1 without. */
static int partial_cluster_blocks_of(const fv_schedule_params *params)
{
    return params->extra[EXTRA_PARTIAL_CLUSTER] > 1 ? params->extra[EXTRA_PARTIAL_CLUSTER] : 1;
}

/* Blocks per cluster of the launch: rows or partials shared; 1 without. */
static int launch_cluster_blocks(const fv_schedule_params *params)
{
    int partial = partial_cluster_blocks_of(params);
    return partial > 1 ? partial : cluster_blocks(params);
}

/* True if the batch loop runs over the 16-byte chunks of the row's aligned
 * span (compute_on_span_chunks). */
static bool span_lanes(const fv_schedule_params *params)
{
    return params->extra[EXTRA_SPAN_LANES] != 0;
}

/* On span chunks, the batch steps b < whole_steps whose chunks all end
 * within the row whatever the block's shift (EXTRA_WHOLE_STEPS); 0 off span
 * chunks.  Chunk b x block_x + x holds span elements from (b x block_x + x)
 * x vector, so a step's chunks end by (b + 1) x block_x x vector <= H. */
static int whole_steps(const fv_schedule_params *params)
{
    return span_lanes(params) ? params->extra[EXTRA_WHOLE_STEPS] : 0;
}

/* Writes into `test` the condition that step b's chunks lie wholly in the
 * row: steps 1 to whole_steps - 1 (step 0 holds the row's first chunk,
 * which starts before the row at a nonzero shift).  With the batch loop
 * unrolled it is a constant, so those steps are emitted without lane tests
 * or branches.  "" if no step is known so. */
static void write_whole_chunk_test(const fv_schedule_params *params, char *test, size_t size)
{
    int steps = whole_steps(params);
    if (steps >= 2)
        snprintf(test, size, "(b >= 1 && b < %d)", steps);
    else
        test[0] = '\0';
}

/* True if a kernel on span chunks puts its row constants at the rows' shift,
 * the same for every row of the block (constants_at_row_shift); else each
 * row has its own. */
static bool shift_per_block_of(const fv_schedule_params *params, const buffered_inputs *buffers)
{
    return span_lanes(params) &&
           constants_at_row_shift(params->extra[EXTRA_CACHED] != 0,
                                  params->extra[EXTRA_WEIGHT_FLOATS] != 0, buffers->cached_count);
}

static bool shift_per_block(const persistent_emit *p)
{
    return shift_per_block_of(p->params, &p->buffers);
}

/* True if the lane loops of a kernel on span chunks test each lane against
 * the thread's lane window (emit_lane_window) instead of splitting the row's
 * end chunks (splits_end_chunks) or testing fv_in_row: the multi-wave
 * inner-outer kernels, whose block's rows share their shift (every such
 * kernel on span chunks puts its row constants there), so the window is
 * computed once, after row_shift.  A lane's test is then one comparison on
 * the steps that hold the row's ends (two where one step holds both: no
 * whole steps), none on the others, and no branch splits a chunk's lane
 * loops.  H200, N = 16384 (bench/results/h200-2026-11-30.md, session 45):
 * against the split, layer norm bwd bf16 x 1987-12287 +2.8..+19.1% and RMS
 * norm bwd bf16 -0.3..+5.9%; against fv_in_row, fp32 -1.0..+2.9%.  The
 * forward kernels moved -5.6..+4.3% with it (layer norm bf16 x 2047 -5.6%)
 * and keep their forms. */
static bool uses_lane_window(const persistent_emit *p)
{
    return span_lanes(p->params) && p->kind == KIND_MULTIWAVE && shift_per_block(p);
}

/* Writes into p->lane_window_test a lane's test against its lane window (a
 * condition on `lane` and the batch step `b`): once the batch loop is
 * unrolled, step 0 compares the lane with lane_begin, the steps from
 * whole_steps on with lane_end[b], and the steps between have no test.  ""
 * without a window. */
static void write_lane_window_test(persistent_emit *p)
{
    if (!uses_lane_window(p)) {
        p->lane_window_test[0] = '\0';
        return;
    }
    snprintf(p->lane_window_test, sizeof p->lane_window_test,
             "(b > 0 || lane >= lane_begin) && (b < %d || lane < lane_end[b])",
             whole_steps(p->params));
}

/* Declares the thread's lane window after row_shift, where the kernel tests
 * one (p->lane_window_test): the lanes of its chunk in step 0 from
 * lane_begin on (the row starts at lane row_shift of thread 0's chunk), and
 * those of its chunk in step b before lane_end[b] (the chunk's elements or
 * more where the chunk ends within the row).  Steps after the first start
 * within the row, so they need no lane_begin. */
static void emit_lane_window(persistent_emit *p)
{
    fv_emitter *e = &p->e;
    const fv_schedule_params *params = p->params;
    if (p->lane_window_test[0] == '\0')
        return;
    fv_codegen_line(e, "// The lanes of this thread's chunks that lie in the row: from lane_begin");
    fv_codegen_line(e, "// on in step 0, before lane_end[b] in step b.");
    fv_codegen_line(e, "const int lane_begin = threadIdx.x == 0 ? row_shift : 0;");
    fv_codegen_line(e, "int lane_end[%d];", params->serial);
    fv_codegen_line(e, "#pragma unroll");
    fv_codegen_line(e, "for (int b = 0; b < %d; ++b)", params->serial);
    fv_codegen_line(e, "    lane_end[b] = row_length + row_shift - (b * %d + (int)threadIdx.x) * %d;",
                    params->block_x, params->vector);
}

/* How the kernel indexes its shared row buffers and cache: by the column,
 * in clusters by the offset within the block's slice of the row, and on
 * span chunks by the position in the row's aligned span. */
static const char *buffer_index(const fv_schedule_params *params)
{
    if (span_lanes(params))
        return "at";
    return clustered(params) ? "offset" : "column";
}

/* The index of this block's row group among `row_groups(params)` (the
 * grid-strided unit of rows): its block, or its cluster. */
static const char *row_group(const fv_schedule_params *params)
{
    return clustered(params) ? "cluster_id" : "blockIdx.x";
}

static const char *row_groups(const fv_schedule_params *params)
{
    return clustered(params) ? "cluster_count" : "gridDim.x";
}

/* The loop over a thread's batch of slices of the row (in clusters, of the
 * block's slice of the row), after `pragma` (its unrolling): slices
 * `first`, first + step, ... (an expression and a constant). */
static void open_batch_loop_from(fv_emitter *e, const fv_schedule_params *params,
                                 const char *guard, const char *pragma, const char *first,
                                 int step)
{
    fv_codegen_line(e, "%s", pragma);
    if (step == 1)
        fv_codegen_line(e, "for (int b = %s; b < %d; ++b) {", first, params->serial);
    else
        fv_codegen_line(e, "for (int b = %s; b < %d; b += %d) {", first, params->serial, step);
    e->indent += 4;
    if (clustered(params)) {
        fv_codegen_line(e, "const int offset = (b * %d + threadIdx.x) * %d;  // in the slice",
                        params->block_x, params->vector);
        fv_codegen_line(e, "const long long column = slice_start + offset;");
        fv_codegen_line(e, "if (%soffset < slice_length && column < inner) {", guard);
    } else if (span_lanes(params)) {
        fv_codegen_line(e, "const int at = (b * %d + threadIdx.x) * %d;  // the chunk's first element in the span",
                        params->block_x, params->vector);
        fv_codegen_line(e, "const int column = at - row_shift;  // its column, negative before the row");
        int steps = whole_steps(params);  /* b < steps: a constant once unrolled */
        if (steps == 0)
            fv_codegen_line(e, "if (%scolumn < %s) {", guard, e->row_length);
        else if (guard[0] == '\0')
            fv_codegen_line(e, "if (b < %d || column < %s) {", steps, e->row_length);
        else
            fv_codegen_line(e, "if (%s(b < %d || column < %s)) {", guard, steps, e->row_length);
    } else {
        fv_codegen_line(e, "const long long column = ((long long)b * %d + threadIdx.x) * %d;",
                        params->block_x, params->vector);
        fv_codegen_line(e, "if (%scolumn < inner) {", guard);
    }
    e->indent += 4;
}

/* open_batch_loop_from over every slice, from 0. */
static void open_batch_loop_after(fv_emitter *e, const fv_schedule_params *params,
                                  const char *guard, const char *pragma)
{
    open_batch_loop_from(e, params, guard, pragma, "0", 1);
}

/* open_batch_loop_after, wholly unrolled (the batch's arrays live in
 * registers). */
static void open_batch_loop(fv_emitter *e, const fv_schedule_params *params, const char *guard)
{
    open_batch_loop_after(e, params, guard, "#pragma unroll");
}

static void close_batch_loop(fv_emitter *e)
{
    e->indent -= 4;
    fv_codegen_line(e, "}");
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

static bool buffer_in_shared(const fv_schedule_params *params, int buffer)
{
    return (params->extra[EXTRA_IN_SHARED] >> buffer) & 1;
}

/* True if row-constant input `constant` (an index of buffers.cached_values)
 * is held as float in registers (weight<value>[batch][vector]). */
static bool constant_floats(const fv_schedule_params *params, int constant)
{
    return (params->extra[EXTRA_WEIGHT_FLOATS] >> constant) & 1;
}

/* True if row-constant input `constant` is cached in shared memory. */
static bool constant_cached(const fv_schedule_params *params, int constant)
{
    return (params->extra[EXTRA_CACHED] >> constant) & 1;
}

/* True if shared buffer `buffer` is also held as float in registers for
 * its row (row_floats<value>[batch][vector]). */
static bool row_floats(const fv_schedule_params *params, int buffer)
{
    return (params->extra[EXTRA_ROW_FLOATS] >> buffer) & 1;
}

static int row_capacity(const fv_schedule_params *params)
{
    return params->serial * params->block_x * params->vector;
}

/* True if rows are copied as the aligned 16-byte chunks that hold them
 * (copy_row_spans). */
static bool row_spans(const fv_schedule_params *params)
{
    return params->extra[EXTRA_ROW_SPANS] != 0;
}

/* Elements of one row slot of buffered input `buffer`: the block's row
 * capacity, and with row spans the chunks around the row. */
static int slot_length(const persistent_emit *p, int buffer)
{
    return row_capacity(p->params) * p->params->block_y +
           span_padding(row_spans(p->params), p->buffers.element_bytes[buffer]);
}

/* True if outer reduction `r`'s partials live in shared memory. */
static bool partial_in_shared(const fv_schedule_params *params, int r)
{
    return (params->extra[EXTRA_SHARED_PARTIALS] >> r) & 1;
}

/* Declares partial<r>_columns[vector] and loads into it this thread's
 * columns of outer reduction `r`'s partials in shared memory (at the batch
 * loop's column, or its offset in the slice in clusters: buffer_index). */
static void emit_shared_partial_columns(fv_emitter *e, const fv_schedule_params *params, int r)
{
    fv_codegen_line(e, "float partial%d_columns[%d];", r, params->vector);
    fv_codegen_line(e, "fv_load<%d>(partial%d + %s, partial%d_columns);", params->vector, r,
                    buffer_index(params), r);
}

/* Byte offset in the dynamic shared memory of outer reduction `r`'s
 * partials in shared memory: they come last (placement_bytes), one
 * [row capacity] float array per reduction in reduction order. */
static size_t shared_partial_offset(const fv_schedule_params *params, int r)
{
    size_t array_bytes = (size_t)round_up_16((int64_t)row_capacity(params) * 4);
    unsigned mask = (unsigned)params->extra[EXTRA_SHARED_PARTIALS];
    size_t first = (size_t)params->extra[EXTRA_SHARED_BYTES] -
                   (size_t)__builtin_popcount(mask) * array_bytes;
    return first + (size_t)__builtin_popcount(mask & ((1u << r) - 1)) * array_bytes;
}

/* True if the row buffers' shared memory holds `reductions` floats per
 * column of every row group ([reductions][row groups][row capacity]). */
static bool combine_fits(const fv_schedule_params *params, int reductions)
{
    return (int64_t)params->extra[EXTRA_SHARED_BYTES] >=
           (int64_t)reductions * params->block_y * row_capacity(params) * 4;
}

/* True if the block's row groups add their outer partials together in
 * shared memory before they go to the workspace (multi-wave with several
 * rows per block, when the row buffers' shared memory holds a float per
 * column of every row group): the workspace then has one partial row per
 * block instead of one per row group. */
static bool combine_partials(const fv_schedule_params *params, persistent_kind kind)
{
    return kind == KIND_MULTIWAVE && params->block_y > 1 && !clustered(params) &&
           combine_fits(params, 1);
}

/* Workspace partial rows each row group (block, or cluster) writes: one
 * when its rows' partials are added together first, else one per row
 * group of the block (or compute group). */
static int partials_per_group(const fv_schedule_params *params, persistent_kind kind)
{
    return combine_partials(params, kind) ? 1 : params->block_y;
}

/* Row slots per shared buffer (1 when the rows are not prefetched, or are
 * through a refilled slot). */
static int row_slots(const fv_schedule_params *params)
{
    return params->extra[EXTRA_SLOTS] > 1 ? params->extra[EXTRA_SLOTS] : 1;
}

/* True if the kernel's row statistics are copied into shared memory with
 * their row (stats_with_rows). */
static bool stats_in_shared(const persistent_emit *p)
{
    return stats_with_rows(p->buffers.stat_count, (unsigned)p->params->extra[EXTRA_IN_SHARED],
                           cluster_blocks(p->params),
                           (unsigned)p->params->extra[EXTRA_SHARED_PARTIALS],
                           row_spans(p->params), row_slots(p->params));
}

/* True if row statistic `value` is copied into shared memory with its row. */
static bool stat_in_shared(const persistent_emit *p, int32_t value)
{
    if (!stats_in_shared(p))
        return false;
    for (int i = 0; i < p->buffers.stat_count; i++)
        if (p->buffers.stat_values[i] == value)
            return true;
    return false;
}

/* True if the kernel's one row slot is refilled as soon as it is read
 * (slot_refilled): after the row's floats are loaded the slot takes the next
 * row's copies, in flight while this row is computed. */
static bool refilled_slot(const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    return slot_refilled(row_slots(params), (unsigned)params->extra[EXTRA_IN_SHARED],
                         (unsigned)params->extra[EXTRA_ROW_FLOATS], cluster_blocks(params),
                         stats_in_shared(p));
}

/* True if the row copies take emit_guarded_fetch's form: in clusters; in
 * kernels whose outer partials live in shared memory for want of registers,
 * where emit_row_fetch's form spilled (LN bwd 16-bit 16384 x 24576: 32
 * bytes under NVRTC for sm_90a, so the case fell back to two kernels at 51%
 * of copy instead of 77%); and with one row slot that is not refilled,
 * where the row's copies are waited for at once (RMS fwd fp32 16384 x
 * 32768 ran 6.4% slower with emit_row_fetch's form on an H200); and with
 * copies of less than 16 bytes (rows of an odd length: LN bwd 16-bit 2049 x
 * 20481 spilled in both of its persistent forms with emit_row_fetch's). */
static bool guarded_fetch(const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    return !full_vectors(&p->buffers, params->vector) || clustered(params) ||
           params->extra[EXTRA_SHARED_PARTIALS] != 0 ||
           (row_slots(params) == 1 && !refilled_slot(p));
}

/* True if emit_guarded_fetch's loop is wholly unrolled: except in forward
 * kernels with more than GUARDED_FETCH_UNROLLED_COPIES 1-element fp32
 * copies (4 bytes, asynchronous) per thread, where ptxas kept every copy's
 * 64-bit address live across the row's passes and spilled, so that the plan fell back to the general
 * path's 2-3 kernels (LN and softmax fwd fp32 x 32767 on sm_90a, RMS fwd
 * too on sm_100a).  Unrolled 4 at a time, on an H200 (bench/results/
 * h200-2026-11-28.md, session 31): LN fwd fp32 16384 x 32767 +163% (21.6
 * -> 56.9% of copy), softmax fwd fp32 x 32767 +85.5%, 4096 x 32001 / 50257
 * +82.9 / +92.5%; RMS fwd fp32 16384 x 32767, which the H200 ran wholly
 * unrolled without spilling, 10.9% slower.  Copies of other sizes keep the
 * whole unrolling (untimed: 16-bit 1-element copies pass through registers,
 * and fewer in flight may cost more).  A kernel that spilled has every row
 * copy loop unrolled 4 at a time as well (EXTRA_FETCH_UNROLLED_PARTLY,
 * fetch_unroll_pragma). */
static bool fetch_unrolled_wholly(const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    if (p->kind != KIND_INNER || params->vector != 1 ||
        params->serial <= GUARDED_FETCH_UNROLLED_COPIES)
        return true;
    for (int i = 0; i < p->buffers.count; i++)
        if (p->buffers.element_bytes[i] != 4)
            return true;
    return false;
}

/* The pragma above a row copy loop: wholly unrolled unless the rule of its
 * form (`by_rule`: fetch_unrolled_wholly's for emit_guarded_fetch's loop,
 * false for the others) or EXTRA_FETCH_UNROLLED_PARTLY (a kernel that
 * spilled wholly unrolled) makes it 4 at a time.  A loop the rule already
 * unrolls 4 at a time is emitted the same with the flag, so that the flag
 * changes no such kernel (persistent_relieve_registers). */
static const char *fetch_unroll_pragma(const persistent_emit *p, bool by_rule)
{
    if (by_rule)
        return "#pragma unroll 4  // not wholly: ptxas would keep every copy's address";
    if (p->params->extra[EXTRA_FETCH_UNROLLED_PARTLY])
        return "#pragma unroll 4  // not wholly: wholly unrolled, this kernel spilled";
    return "#pragma unroll";
}

/* The copies of row `row` into `slot` with 64-bit addresses, each guarded
 * by a branch (guarded_fetch); in clusters, the block's slice of each
 * shared buffer's row. */
static void emit_guarded_fetch(persistent_emit *p, const char *slot)
{
    const fv_schedule_params *params = p->params;
    fv_emitter *e = &p->e;
    int slot_elements = row_capacity(params) * params->block_y;
    open_batch_loop_after(e, params, "fetch_row < outer && ",
                          fetch_unroll_pragma(p, !fetch_unrolled_wholly(p)));
    for (int i = 0; i < p->buffers.count; i++) {
        if (!buffer_in_shared(params, i))
            continue;
        int32_t v = p->buffers.values[i];
        fv_codegen_line(e, "fv_copy_async<%d>(buffer%d_slots + (%s) * %d + %s, in%d + fetch_row * inner + column);",
                        params->vector, (int)v, slot, slot_elements, buffer_index(params),
                        fv_codegen_input_position(p->view->fusion, v));
    }
    close_batch_loop(e);
    for (int i = 0; stats_in_shared(p) && i < p->buffers.stat_count; i++) {
        int32_t v = p->buffers.stat_values[i];
        fv_codegen_line(e, "if (fetch_row < outer)");
        fv_codegen_line(e, "    fv_copy_async<1>(stat%d_slots + (%s) * %d, in%d + fetch_row);", (int)v,
                        slot, params->block_x * params->block_y,
                        fv_codegen_input_position(p->view->fusion, v));
    }
}

/* The copies of row `row` into `slot` without clusters: a pointer to the row
 * of each shared buffer's input, 32-bit columns and predicated copies (no
 * branch around them).  Fewer instructions per row than 64-bit addresses and
 * guarded copies: LN bwd bf16 16384x3072 ran 3.6% faster on an H200
 * (bench/results/h200-2026-11-22.md). */
static void emit_row_fetch(persistent_emit *p, const char *slot)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    int slot_elements = row_capacity(params) * params->block_y;
    fv_codegen_line(e, "const bool fetch_active = fetch_row < outer;");
    for (int i = 0; i < p->buffers.count; i++) {
        if (!buffer_in_shared(params, i))
            continue;
        int32_t v = p->buffers.values[i];
        fv_codegen_line(e, "const auto *const fetch%d = in%d + fetch_row * inner;", (int)v,
                        fv_codegen_input_position(fusion, v));
    }
    fv_codegen_line(e, "%s", fetch_unroll_pragma(p, false));
    fv_codegen_line(e, "for (int b = 0; b < %d; ++b) {", params->serial);
    e->indent += 4;
    fv_codegen_line(e, "const int column = (b * %d + (int)threadIdx.x) * %d;", params->block_x,
                    params->vector);
    fv_codegen_line(e, "const bool copy_active = fetch_active && column < inner;");
    for (int i = 0; i < p->buffers.count; i++) {
        if (!buffer_in_shared(params, i))
            continue;
        int32_t v = p->buffers.values[i];
        fv_codegen_line(e, "fv_copy_async_if<%d>(buffer%d_slots + (%s) * %d + column, fetch%d + column, copy_active);",
                        params->vector, (int)v, slot, slot_elements, (int)v);
    }
    e->indent -= 4;
    fv_codegen_line(e, "}");
    for (int i = 0; stats_in_shared(p) && i < p->buffers.stat_count; i++) {
        int32_t v = p->buffers.stat_values[i];
        fv_codegen_line(e, "fv_copy_async_if<1>(stat%d_slots + (%s) * %d, in%d + fetch_row, fetch_active);",
                        (int)v, slot, params->block_x * params->block_y,
                        fv_codegen_input_position(fusion, v));
    }
}

/* The copies of row `fetch_row` into `slot` as row spans (copy_row_spans):
 * the row's threads take the 16-byte chunks from the aligned one holding
 * the row's first element to the one holding its last, in turn, as
 * predicated copies at 32-bit offsets from the span's start (64-bit
 * addresses and a branch per copy took 13-14 instructions a copy, the
 * fetch as many as a reduction pass: LN fwd bf16 16384 x 4095).  The
 * tensor's last chunk, where it runs past the tensor's end, is left out of
 * the (unrolled) loop and copied element by element after it by the thread
 * whose turn it is: one rolled copy per fetch rather than one per step
 * keeps the kernel's code small (softmax bf16 4096 x 50257 compiled to 180
 * KB of code with one per step, and stalled on instruction fetch). */
static void emit_span_fetch(persistent_emit *p, const char *slot)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    fv_codegen_line(e, "if (fetch_row < outer) {");
    e->indent += 4;
    fv_codegen_line(e, "const long long row_begin = fetch_row * inner;  // of the row's first element");
    fv_codegen_line(e, "const long long whole_end = outer * inner & ~%dLL;  // the tensor's whole chunks end here",
                    span_chunk_elements(&p->buffers) - 1);
    for (int i = 0; i < p->buffers.count; i++) {
        if (!buffer_in_shared(params, i))
            continue;  /* copy_row_spans puts them all there */
        int32_t v = p->buffers.values[i];
        int chunk = (int)(16 / p->buffers.element_bytes[i]);
        int steps = (slot_length(p, i) / chunk + params->block_x - 1) / params->block_x;
        fv_codegen_line(e, "{");
        e->indent += 4;
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        fv_codegen_line(e, "const long long span_begin = row_begin & ~%dLL;", chunk - 1);
        fv_codegen_line(e, "const int whole_length = (int)((row_begin + inner < whole_end ? row_begin + inner : whole_end) - span_begin);  // of its whole chunks");
        fv_codegen_line(e, "const %s *const span = in%d + span_begin;", type,
                        fv_codegen_input_position(fusion, v));
        fv_codegen_line(e, "%s *const to = buffer%d_slots + (%s) * %d;", type, (int)v, slot,
                        slot_length(p, i));
        fv_codegen_line(e, "%s", fetch_unroll_pragma(p, false));
        fv_codegen_line(e, "for (int step = 0; step < %d; ++step) {", steps);
        fv_codegen_line(e, "    const int at = (step * %d + (int)threadIdx.x) * %d;", params->block_x,
                        chunk);
        fv_codegen_line(e, "    fv_copy_async_if<%d>(to + at, span + at, at < whole_length);", chunk);
        fv_codegen_line(e, "}");
        fv_codegen_line(e, "if (row_begin + inner > whole_end && whole_length / %d %% %d == (int)threadIdx.x)",
                        chunk, params->block_x);
        fv_codegen_line(e, "    fv_copy_elements(to + whole_length, span + whole_length, (int)(row_begin + inner - whole_end));");
        e->indent -= 4;
        fv_codegen_line(e, "}");
    }
    for (int i = 0; stats_in_shared(p) && i < p->buffers.stat_count; i++) {
        int32_t v = p->buffers.stat_values[i];
        fv_codegen_line(e, "fv_copy_async<1>(stat%d_slots + (%s) * %d, in%d + fetch_row);", (int)v,
                        slot, params->block_x * params->block_y,
                        fv_codegen_input_position(fusion, v));
    }
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

/* Issues this thread's copies of row `row` (an expression) into row slot
 * `slot` of every shared buffer and of the row statistics, and commits them
 * as one group. */
static void emit_fetch(persistent_emit *p, const char *row, const char *slot)
{
    fv_emitter *e = &p->e;
    fv_codegen_line(e, "{");
    e->indent += 4;
    fv_codegen_line(e, "const long long fetch_row = %s;", row);
    if (row_spans(p->params))
        emit_span_fetch(p, slot);
    else if (guarded_fetch(p))
        emit_guarded_fetch(p, slot);
    else
        emit_row_fetch(p, slot);
    e->indent -= 4;
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "fv_async_commit();");
}

static fv_status set_buffered_line(persistent_emit *p, int32_t value, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static fv_status set_buffered_line(persistent_emit *p, int32_t value, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    fv_text line = {0};
    fv_text_vprintf(&line, format, arguments);
    va_end(arguments);
    p->buffered_lines[value] = fv_text_take(&line);
    FV_CHECK_ALLOC(p->buffered_lines[value]);
    return FV_OK;
}

/* The line reading buffered input `v` (number `buffer`) from its row slot in
 * the batch loop: its float copy (row_floats<v><step_row>[b], step_row "" or
 * the warp-specialized step's "[u]") where it has one, or its copy in its
 * own type converted (row_copies<v>[u][b], EXTRA_WS_ROWS_OWN_TYPE), else a
 * load. */
static fv_status set_slot_buffer_line(persistent_emit *p, int buffer, int32_t v,
                                      const char *step_row)
{
    int vector = p->params->vector;
    if (row_floats(p->params, buffer) && p->params->extra[EXTRA_WS_ROWS_OWN_TYPE] != 0)
        return set_buffered_line(p, v, "float v%d[%d];\nfv_vector_to_floats(row_copies%d%s[b], v%d);",
                                 (int)v, vector, (int)v, step_row, (int)v);
    if (row_floats(p->params, buffer))
        return set_buffered_line(p, v, "const float (&v%d)[%d] = row_floats%d%s[b];", (int)v,
                                 vector, (int)v, step_row);
    return set_buffered_line(p, v, "float v%d[%d];\nfv_load<%d>(buffer%d + %s, v%d);", (int)v,
                             vector, vector, (int)v, buffer_index(p->params), (int)v);
}

/* The line reading row statistic `value` from `source` (this row's shared
 * entry "stat<value>[0]", or the prefetched register "row_value<value>";
 * emit_ws_step_values sets its own). */
static fv_status set_stat_line(persistent_emit *p, int32_t value, const char *source)
{
    fv_dtype dtype = p->view->fusion->values[value].dtype;
    if (fv_dtype_is_float(dtype) && dtype != FV_F64)
        return set_buffered_line(p, value, "const float v%d = fv_to_float(%s);", (int)value, source);
    return set_buffered_line(p, value, "const auto v%d = %s;", (int)value, source);
}

/* Loads row-constant input `value` once per thread into float registers
 * (weight<value>[batch][vector]) and reads it from there in every pass.  In
 * warp-specialized kernels only the compute groups load it. */
static fv_status emit_weight_floats(persistent_emit *p, int32_t value)
{
    const fv_schedule_params *params = p->params;
    fv_emitter *e = &p->e;
    bool compute_groups_only = warp_specialized(p->kind);
    char label[40];
    fv_ir_value_label(p->view->fusion, value, label);
    fv_codegen_line(e, compute_groups_only
                           ? "// %s: the same for every row, in each compute thread's registers"
                           : "// %s: the same for every row, held as float in registers",
                    label);
    fv_codegen_line(e, "float weight%d[%d][%d];", (int)value, params->serial, params->vector);
    if (compute_groups_only) {
        fv_codegen_line(e, "if (group < %d) {", params->block_y);
        e->indent += 4;
    }
    open_batch_loop(e, params, "");
    if (span_lanes(params))
        fv_codegen_line(e, "fv_load_lanes<%d>(in%d + column, column, %s, weight%d[b]);",
                        params->vector, fv_codegen_input_position(p->view->fusion, value),
                        e->row_length, (int)value);
    else
        fv_codegen_line(e, "fv_load<%d>(in%d + column, weight%d[b]);", params->vector,
                        fv_codegen_input_position(p->view->fusion, value), (int)value);
    close_batch_loop(e);
    if (compute_groups_only) {
        e->indent -= 4;
        fv_codegen_line(e, "}");
    }
    return set_buffered_line(p, value, "const float (&v%d)[%d] = weight%d[b];", (int)value,
                             params->vector, (int)value);
}

/* Waits for the row-constant copies to shared memory, the oldest group,
 * while the `newer_groups` groups of the first rows' copies (issued after
 * them, so that both wait on device memory at once) stay in flight; then a
 * block barrier, as every thread reads entries that others copied.  On span
 * chunks the constants were stored directly, after the first rows' copies
 * (emit_constants_at_shift): only the barrier.  Issued
 * before the wait, the first rows' copies no longer queue behind the
 * constants' round trip: on an H200 the forward norms in bf16 at 16384 x
 * 1024-8192 ran 0.3-3.1% faster (bench/results/h200-2026-11-27.md). */
static void emit_cached_wait(persistent_emit *p, int newer_groups)
{
    /* on span chunks the constants were stored directly (emit_constants_at_shift) */
    bool copied = !span_lanes(p->params);
    if (copied && newer_groups > 0)
        fv_codegen_line(&p->e, "fv_async_wait<%d>();  // the row constants have landed; the first rows' copies may not have",
                        newer_groups);
    else if (copied)
        fv_codegen_line(&p->e, "fv_async_wait<0>();");
    fv_codegen_line(&p->e, "__syncthreads();  // every thread reads what the others copied");
}

/* On span chunks (span_lanes), the row-constant inputs cached in shared
 * memory are put at the rows' shift: element `column` at `row_shift +
 * column`, so that a chunk of a row and of the constants share their index
 * in the span.  The shifted entries are not 16-byte aligned, so they cannot
 * be copied asynchronously: each thread reads whole 16-byte chunks of the
 * tensor (fv_copy_chunk_to_shift) and stores their elements.  Emitted after
 * the first rows' copies are issued, so that both wait on device memory at
 * once; the chunks of a thread are independent loads.  They were read element
 * by element before the first rows' copies (LN fwd bf16 16384 x 4095: 10
 * dependent round trips per constant, 6% of the kernel's stall samples on
 * their stores in ncu's source counters). */
static void emit_constants_at_shift(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    int capacity = row_capacity(params);
    fv_codegen_line(e, "// The row constants at the rows' shift, read as the 16-byte chunks of the tensors");
    fv_codegen_line(e, "// while the first rows' copies are in flight.");
    for (int i = 0; i < p->buffers.cached_count; i++) {
        if (constant_floats(params, i) || !constant_cached(params, i))
            continue;
        int32_t v = p->buffers.cached_values[i];
        /* the constant's own chunk: a weight may be wider or narrower than the row */
        int chunk = (int)(16 / p->buffers.cached_element_bytes[i]);
        int steps = (capacity / chunk + params->block_x - 1) / params->block_x;
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int step = 0; step < %d; ++step) {", steps);
        fv_codegen_line(e, "    const int column = (step * %d + (int)threadIdx.x) * %d;", params->block_x,
                        chunk);
        fv_codegen_line(e, "    if (column < %s)", e->row_length);
        fv_codegen_line(e, "        fv_copy_chunk_to_shift<%d>(cached%d + row_shift + column, in%d + column, column, %s);",
                        chunk, (int)v, fv_codegen_input_position(fusion, v), e->row_length);
        fv_codegen_line(e, "}");
    }
}

/* Before the row loop: the shared buffers' slots, the row-constant inputs
 * copied once per block (or held in registers), and the first row's copies
 * and row statistics. */
static fv_status emit_before_rows(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    e->out = &p->before_rows;
    int capacity = row_capacity(params);
    int slots = row_slots(params);
    size_t offset = 0;
    bool any_shared = false;
    if (span_lanes(params))  /* its columns are ints (emit_sections sets e->row_length) */
        fv_codegen_line(e, "const int row_length = (int)inner;  // a row fits a block: its columns are ints");
    if (shift_per_block(p)) {
        fv_codegen_line(e, "// Rows computed on the %d-element chunks of their aligned span: every row of this",
                        params->vector);
        fv_codegen_line(e, "// block starts at element row_shift of its first chunk (the grid is a multiple");
        fv_codegen_line(e, "// of %d blocks, or each row has a block).", params->vector);
        fv_codegen_line(e, "const int row_shift = (int)(((long long)blockIdx.x * inner) & %d);",
                        params->vector - 1);
        emit_lane_window(p);
    }
    for (int i = 0; i < p->buffers.count; i++) {
        if (!buffer_in_shared(params, i))
            continue;
        int32_t v = p->buffers.values[i];
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        char label[40];
        fv_ir_value_label(fusion, v, label);
        fv_codegen_line(e, "// %s: %d row slot%s of [%d rows][%d elements] in shared memory", label,
                        slots, slots > 1 ? "s" : "", params->block_y, capacity);
        if (row_spans(params))
            fv_codegen_line(e, "// (each slot %d elements more: the 16-byte chunks around the row)",
                            slot_length(p, i) - capacity);
        fv_codegen_line(e, "%s *const buffer%d_slots = reinterpret_cast<%s *>(row_buffers + %zu) + threadIdx.y * %d;",
                        type, (int)v, type, offset, capacity);
        offset += (size_t)round_up_16((int64_t)slot_length(p, i) *
                                      (int64_t)p->buffers.element_bytes[i]) * (size_t)slots;
        FV_TRY(set_slot_buffer_line(p, i, v, ""));
        any_shared = true;
    }
    bool any_cached = false;
    for (int i = 0; i < p->buffers.cached_count; i++) {
        if (constant_floats(params, i)) {
            FV_TRY(emit_weight_floats(p, p->buffers.cached_values[i]));
            continue;
        }
        if (!constant_cached(params, i))
            continue;
        int32_t v = p->buffers.cached_values[i];
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        char label[40];
        fv_ir_value_label(fusion, v, label);
        if (span_lanes(params))
            fv_codegen_line(e, "// %s: the same for every row, stored in shared memory once per block at the rows' shift (below)",
                            label);
        else
            fv_codegen_line(e, "// %s: the same for every row, copied to shared memory once per block", label);
        fv_codegen_line(e, "%s *const cached%d = reinterpret_cast<%s *>(row_buffers + %zu);", type,
                        (int)v, type, offset);
        /* on span chunks (never in clusters) emit_constants_at_shift stores
         * them, after the first rows' copies */
        if (clustered(params)) {
            fv_codegen_line(e, "for (int offset = (threadIdx.y * %d + threadIdx.x) * %d;",
                            params->block_x, params->vector);
            fv_codegen_line(e, "     offset < slice_length && slice_start + offset < inner; offset += %d)",
                            params->block_x * params->block_y * params->vector);
            fv_codegen_line(e, "    fv_copy_async<%d>(cached%d + offset, in%d + slice_start + offset);",
                            params->vector, (int)v, fv_codegen_input_position(fusion, v));
        } else if (!span_lanes(params)) {
            fv_codegen_line(e, "for (long long column = (long long)(threadIdx.y * %d + threadIdx.x) * %d; column < inner;",
                            params->block_x, params->vector);
            fv_codegen_line(e, "     column += %d)", params->block_x * params->block_y * params->vector);
            fv_codegen_line(e, "    fv_copy_async<%d>(cached%d + column, in%d + column);", params->vector,
                            (int)v, fv_codegen_input_position(fusion, v));
        }
        offset += (size_t)round_up_16((int64_t)capacity * (int64_t)p->buffers.cached_element_bytes[i]);
        FV_TRY(set_buffered_line(p, v, "float v%d[%d];\nfv_load<%d>(cached%d + %s, v%d);",
                                 (int)v, params->vector, params->vector, (int)v,
                                 buffer_index(params), (int)v));
        any_cached = true;
    }
    if (any_cached && !span_lanes(params))
        fv_codegen_line(e, "fv_async_commit();  // waited for after the first rows' copies are issued");
    for (int i = 0; stats_in_shared(p) && i < p->buffers.stat_count; i++) {
        int32_t v = p->buffers.stat_values[i];
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        char label[40];
        fv_ir_value_label(fusion, v, label);
        fv_codegen_line(e, "// %s: copied with each row's inputs, an entry per thread in each row slot",
                        label);
        fv_codegen_line(e, "%s *const stat%d_slots = reinterpret_cast<%s *>(row_buffers + %zu) + threadIdx.y * %d + threadIdx.x;",
                        type, (int)v, type, offset, params->block_x);
        size_t bytes = fv_dtype_size(fusion->values[v].dtype);
        offset += bytes * (size_t)(params->block_x * params->block_y) * (size_t)slots;
        char source[40];
        snprintf(source, sizeof source, "stat%d[0]", (int)v);
        FV_TRY(set_stat_line(p, v, source));
    }
    /* The rows copied before the loop: one with a refilled slot, else
     * (slots - 1). */
    int first_rows = refilled_slot(p) ? 1 : slots - 1;
    if (any_shared && first_rows >= 1) {
        if (refilled_slot(p))
            fv_codegen_line(e, "// The first row's copies; each row, once read from the slot, "
                               "issues the next one's.");
        else if (first_rows == 1)
            fv_codegen_line(e, "// The first row's copies; each row then issues the next one's.");
        else
            fv_codegen_line(e, "// The first %d rows' copies; each row then issues those of the "
                            "row %d ahead.", first_rows, first_rows);
        for (int ahead = 0; ahead < first_rows; ahead++) {
            char first_row[128], slot[16], later[32] = "";
            if (ahead > 0)
                snprintf(later, sizeof later, " + %d * row_stride", ahead);
            snprintf(first_row, sizeof first_row, "(long long)%s * %d + threadIdx.y%s",
                     row_group(params), params->block_y, later);
            snprintf(slot, sizeof slot, "%d", ahead);
            emit_fetch(p, first_row, slot);
        }
    }
    if (any_cached && span_lanes(params))
        emit_constants_at_shift(p);
    if (any_cached)
        emit_cached_wait(p, any_shared ? first_rows : 0);
    /* Other row statistics: loaded one row ahead into registers. */
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        if (!is_row_input(p->view, v) || stat_in_shared(p, v))
            continue;
        int position = fv_codegen_input_position(fusion, v);
        char label[40];
        fv_ir_value_label(fusion, v, label);
        fv_codegen_line(e, "// %s: loaded one row ahead", label);
        fv_codegen_line(e, "const long long first_row%d = (long long)%s * %d + threadIdx.y;",
                        (int)v, row_group(params), params->block_y);
        fv_codegen_line(e, "auto row_next%d = in%d[first_row%d < outer ? first_row%d : 0];", (int)v,
                        position, (int)v, (int)v);
        char source[40];
        snprintf(source, sizeof source, "row_value%d", (int)v);
        FV_TRY(set_stat_line(p, v, source));
    }
    return FV_OK;
}

/* Points `name`<value> at this row's slot of `name`<value>_slots (slots of
 * `slot_elements` elements; one slot: the slots' start); `in_chunk`: at the
 * row's first element within its 16-byte chunk (row spans). */
static void emit_slot_pointer(persistent_emit *p, const char *name, int32_t value, int slots,
                              int slot_elements, bool in_chunk)
{
    const char *type = fv_codegen_storage_type(p->view->fusion->values[value].dtype);
    int chunk = (int)(16 / fv_dtype_size(p->view->fusion->values[value].dtype));
    if (slots >= 2 && in_chunk)
        fv_codegen_line(&p->e, "const %s *const %s%d = %s%d_slots + slot * %d + (int)((safe_row * inner) & %d);  // the row's first element in its chunk",
                        type, name, (int)value, name, (int)value, slot_elements, chunk - 1);
    else if (in_chunk)
        fv_codegen_line(&p->e, "const %s *const %s%d = %s%d_slots + (int)((safe_row * inner) & %d);  // the row's first element in its chunk",
                        type, name, (int)value, name, (int)value, chunk - 1);
    else if (slots >= 2)
        fv_codegen_line(&p->e, "const %s *const %s%d = %s%d_slots + slot * %d;", type, name,
                        (int)value, name, (int)value, slot_elements);
    else
        fv_codegen_line(&p->e, "const %s *const %s%d = %s%d_slots;", type, name, (int)value, name,
                        (int)value);
}

/* Issues the copies of the row `slots - 1` ahead (2 or more slots): the
 * next row into the other slot with two, else into the last row's slot. */
static void emit_fetch_ahead(persistent_emit *p, int slots)
{
    if (slots == 2) {
        fv_codegen_line(&p->e, "// The next row's copies, in flight while this row is computed.");
        emit_fetch(p, "row + row_stride", "slot ^ 1");
        return;
    }
    char ahead_row[64], free_slot[64];
    snprintf(ahead_row, sizeof ahead_row, "row + %d * row_stride", slots - 1);
    snprintf(free_slot, sizeof free_slot, "slot == 0 ? %d : slot - 1", slots - 1);
    fv_codegen_line(&p->e, "// The copies of the row %d ahead, into the last row's slot.",
                    slots - 1);
    emit_fetch(p, ahead_row, free_slot);
}

/* True where emit_load_row issues the row copies of row spans: with one
 * slot, this row's; with more, those of the rows ahead once this row's have
 * landed, after a block barrier (threads read chunks others copied, element
 * by element).  On span chunks (span_lanes) each thread reads only the
 * chunks it copied itself, so a row of several reductions (layer norm's
 * var_mean, softmax's max and sum) issues the copies ahead at the row's
 * start, as rows on vectors do, and waits for its own without a barrier:
 * they stay in flight from row to row.  H200, N = 16384 (bench/results/
 * h200-2026-11-29.md, session 37): layer norm fwd bf16 / fp32 at H = 1023-
 * 20481 +0.2..+5.6% (bf16 x 20481 62.0 -> 65.2% of copy), softmax 16-bit
 * +0.2..+1.9% and bf16 4096 x 50257 +3.6%, softmax fp32 -2.2..+2.8%; RMS
 * norm, one reduction and a short pass over the row, lost 5.8-7.5% in bf16
 * (x 1987, 4095, 20481) and keeps the copies after the wait. */
static bool load_row_issues_copies(const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    return row_spans(params) &&
           (row_slots(params) == 1 || !span_lanes(params) ||
            single_inner_reduction(&p->analysis, has_var_mean(p->view)));
}

/* At the start of each row: take the prefetched row statistics, point the
 * buffers and statistics at this row's slot, issue the copies of the next
 * row (or, with one slot, of this row; where load_row_issues_copies,
 * emit_load_row issues them) and, if the statistics came with them, wait for
 * this row's. */
static void emit_row_start(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    e->out = &p->row_start;
    int slots = row_slots(params);
    bool any_shared = false;
    if (span_lanes(params) && !shift_per_block(p))
        fv_codegen_line(e, "const int row_shift = (int)((safe_row * inner) & %d);  // the row's first element in its chunk",
                        params->vector - 1);
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        if (!is_row_input(p->view, v) || stat_in_shared(p, v))
            continue;
        fv_codegen_line(e, "const auto row_value%d = row_next%d;", (int)v, (int)v);
        fv_codegen_line(e, "row_next%d = in%d[row + row_stride < outer ? row + row_stride : 0];",
                        (int)v, fv_codegen_input_position(fusion, v));
    }
    for (int i = 0; i < p->buffers.count; i++) {
        if (!buffer_in_shared(params, i))
            continue;
        int32_t v = p->buffers.values[i];
        emit_slot_pointer(p, "buffer", v, slots, slot_length(p, i),
                          row_spans(params) && !span_lanes(params));
        any_shared = true;
    }
    if (!any_shared)
        return;
    for (int i = 0; stats_in_shared(p) && i < p->buffers.stat_count; i++) {
        emit_slot_pointer(p, "stat", p->buffers.stat_values[i], slots,
                          params->block_x * params->block_y, false);
    }
    if (load_row_issues_copies(p)) {
        /* after this row's copies have landed (emit_load_row) */
    } else if (slots >= 2) {
        if (row_spans(params))  /* on chunks: into the entries this thread read last row */
            fv_codegen_line(e, "fv_compiler_fence();  // the last row's reads stay before the next row's copies");
        emit_fetch_ahead(p, slots);
    } else if (!refilled_slot(p)) {
        emit_fetch(p, "row", "0");
    }
    if (stats_in_shared(p))  /* before the row prologue reads them */
        fv_codegen_line(e, "fv_async_wait<%d>();  // this row's copies have landed",
                        load_row_issues_copies(p) ? slots - 2 : slots - 1);
}


/* One row slot of row spans: this row's copies into it once the last row
 * is read, then the wait for them.  On span chunks each thread reads only
 * the chunks it copied itself (the copy and compute loops index chunks
 * alike), so only the compiler's order matters; element by element, block
 * barriers before the copies (every thread past the last row) and after
 * them (threads read chunks others copied). */
static void emit_one_span_slot(persistent_emit *p)
{
    fv_emitter *e = &p->e;
    bool own_chunks = span_lanes(p->params);
    if (own_chunks)
        fv_codegen_line(e, "fv_compiler_fence();  // the last row's reads stay before this row's copies");
    else
        fv_codegen_line(e, "__syncthreads();  // every thread is past the last row, whose slot this row takes");
    emit_fetch(p, "row", "0");
    fv_codegen_line(e, "fv_async_wait<0>();  // this row's copies have landed");
    if (!own_chunks)
        fv_codegen_line(e, "__syncthreads();  // ... all of them: threads read chunks others copied");
}

/* Waits for this row's copies (unless the row start did, for the row
 * statistics; where load_row_issues_copies, it issues them too: with one
 * slot of spans this row's, with more the wait, a block barrier and the
 * copies of the row slots - 1 ahead), then loads the buffers kept in
 * registers (float[batch][vector]). */
static void emit_load_row(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    fv_emitter *e = &p->e;
    e->out = &p->load;
    unsigned in_shared = (unsigned)params->extra[EXTRA_IN_SHARED];
    unsigned in_registers = all_buffers(&p->buffers) & ~in_shared;
    unsigned floats = (unsigned)params->extra[EXTRA_ROW_FLOATS];
    if (row_spans(params) && row_slots(params) == 1) {
        emit_one_span_slot(p);
    } else if (load_row_issues_copies(p)) {
        /* The block barrier also means that every thread is past the last
         * row, whose slot the copies of the row slots - 1 ahead take. */
        int slots = row_slots(params);
        fv_codegen_line(e, "fv_async_wait<%d>();  // this row's copies have landed", slots - 2);
        fv_codegen_line(e, "__syncthreads();  // ... all of them: threads read chunks others copied");
        emit_fetch_ahead(p, slots);
    } else if (in_shared != 0 && !stats_in_shared(p)) {
        fv_codegen_line(e, "fv_async_wait<%d>();  // this row's copies have landed",
                        row_slots(params) - 1);
    }
    if (in_registers == 0 && floats == 0)
        return;
    for (int i = 0; i < p->buffers.count; i++) {
        if (buffer_in_shared(params, i) && !row_floats(params, i))
            continue;
        int32_t v = p->buffers.values[i];
        char label[40];
        fv_ir_value_label(p->view->fusion, v, label);
        if (buffer_in_shared(params, i))
            fv_codegen_line(e, "float row_floats%d[%d][%d];  // %s, read once from its slot", (int)v,
                            params->serial, params->vector, label);
        else
            fv_codegen_line(e, "float buffer%d[%d][%d];  // %s", (int)v, params->serial,
                            params->vector, label);
    }
    open_batch_loop(e, params, "row_active && ");
    for (int i = 0; i < p->buffers.count; i++) {
        int32_t v = p->buffers.values[i];
        if (!buffer_in_shared(params, i))
            fv_codegen_line(e, "fv_load<%d>(in%d + safe_row * inner + column, buffer%d[b]);",
                            params->vector, fv_codegen_input_position(p->view->fusion, v), (int)v);
        else if (row_floats(params, i))
            fv_codegen_line(e, "fv_load<%d>(buffer%d + %s, row_floats%d[b]);", params->vector,
                            (int)v, buffer_index(params), (int)v);
    }
    close_batch_loop(e);
    if (refilled_slot(p)) {
        /* Each thread copies into the entries it has just read, so only the
         * compiler's order matters: the reads stay before the copies. */
        fv_codegen_line(e, "// The slot is read: the next row's copies, in flight while this row is computed.");
        fv_codegen_line(e, "fv_compiler_fence();");
        emit_fetch(p, "row + row_stride", "0");
    }
}

/* Lines reading register buffers (set before any section uses them). */
static fv_status set_register_buffer_lines(persistent_emit *p)
{
    for (int i = 0; i < p->buffers.count; i++) {
        if (buffer_in_shared(p->params, i))
            continue;
        int32_t v = p->buffers.values[i];
        FV_TRY(set_buffered_line(p, v, "const float (&v%d)[%d] = buffer%d[b];", (int)v,
                                 p->params->vector, (int)v));
    }
    return FV_OK;
}

/* Warp-specialized: the stage regions of the buffered inputs ([stages x
 * unroll] row slots of the row capacity each) and the row-constant inputs,
 * in compute threads' registers or copied once to shared memory. */
static fv_status emit_ws_before_rows(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    e->out = &p->before_rows;
    int capacity = row_capacity(params);
    int slot_rows = params->extra[EXTRA_WS_STAGES] * params->extra[EXTRA_WS_UNROLL];
    size_t offset = 0;
    for (int i = 0; i < p->buffers.count; i++) {
        int32_t v = p->buffers.values[i];
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        char label[40];
        fv_ir_value_label(fusion, v, label);
        fv_codegen_line(e, "// %s: %d row slots (stages x rows per step) of %d elements", label,
                        slot_rows, capacity);
        fv_codegen_line(e, "%s *const buffer%d_slots = reinterpret_cast<%s *>(row_buffers + %zu);",
                        type, (int)v, type, offset);
        offset += (size_t)ws_region_bytes(capacity, p->buffers.element_bytes[i], slot_rows);
        FV_TRY(set_slot_buffer_line(p, i, v, "[u]"));
    }
    for (int i = 0; i < p->buffers.cached_count; i++) {
        int32_t v = p->buffers.cached_values[i];
        if (constant_floats(params, i)) {
            FV_TRY(emit_weight_floats(p, v));
            continue;
        }
        int position = fv_codegen_input_position(fusion, v);
        char label[40];
        fv_ir_value_label(fusion, v, label);
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        fv_codegen_line(e, "// %s: the same for every row, copied to shared memory once", label);
        fv_codegen_line(e, "%s *const cached%d = reinterpret_cast<%s *>(row_buffers + %zu);", type,
                        (int)v, type, offset);
        fv_codegen_line(e, "for (long long column = (long long)(threadIdx.y * %d + threadIdx.x) * %d; column < inner;",
                        launch_block_x(params, p->kind), params->vector);
        fv_codegen_line(e, "     column += %d)", launch_threads(params, p->kind) * params->vector);
        fv_codegen_line(e, "    fv_copy_async<%d>(cached%d + column, in%d + column);", params->vector,
                        (int)v, position);
        fv_codegen_line(e, "fv_async_commit();");
        fv_codegen_line(e, "fv_async_wait<0>();");
        offset += (size_t)ws_region_bytes(capacity, p->buffers.cached_element_bytes[i], 1);
        FV_TRY(set_buffered_line(p, v, "float v%d[%d];\nfv_load<%d>(cached%d + column, v%d);",
                                 (int)v, params->vector, params->vector, (int)v, (int)v));
    }
    return FV_OK;
}

/* Warp-specialized where the plan says so (EXTRA_WS_STATS_AHEAD, set from
 * ws_stats_ahead by ws_choose): each row statistic is
 * loaded into registers a step ahead, before the compute group waits for
 * the step's rows, so that its load overlaps the step before instead of
 * following the full barrier (where the group has nothing else in flight;
 * elsewhere each row's prologue reads it from device memory).  Lane k of
 * each warp holds row k % unroll of the step, and each row reads its value
 * from that lane with a warp shuffle; with one row per step every lane
 * holds it.  The shuffle is warp-uniform because the row prologue declares
 * every row input (emit_row_prologue: they are level 0), before any pass's
 * `if (row_active ...)`, and the passes after it reuse the declaration; the
 * rows' loops run in step across the group.  Fills p->step_values_ahead
 * (the first step's loads, in the compute branch before its loop) and
 * p->step_values (at each step), and points the row prologue's reads at
 * them.  Fails only with FV_ERR_NOMEM. */
static fv_status emit_ws_step_values(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    int unroll = params->extra[EXTRA_WS_UNROLL];
    if (!params->extra[EXTRA_WS_STATS_AHEAD])
        return FV_OK;
    const char *lane = unroll > 1 ? " + step_lane" : "";
    e->out = &p->step_values_ahead;
    if (unroll > 1) {
        fv_codegen_line(e, "// row statistics: each step's, loaded one step ahead (lane k of each warp holds the step's row k %% %d)",
                        unroll);
        fv_codegen_line(e, "const int step_lane = (int)(threadIdx.x %% %d) %% %d;", WARP_LANES, unroll);
    } else {
        fv_codegen_line(e, "// row statistics: each step's, loaded one step ahead");
    }
    fv_codegen_line(e, "const long long step_rows = (long long)gridDim.x * %d * %d;  // rows a step of the grid takes",
                    params->block_y, unroll);
    fv_codegen_line(e, "const long long first_step_row = ((long long)blockIdx.x * %d + group) * %d%s;",
                    params->block_y, unroll, lane);
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        if (!is_ws_step_value(p->view, v))
            continue;
        fv_codegen_line(e, "float step_next%d = fv_to_float(in%d[first_step_row < outer ? first_step_row : 0]);",
                        (int)v, fv_codegen_input_position(fusion, v));
    }
    e->out = &p->step_values;
    fv_codegen_line(e, "// this step's row statistics, and the next step's, in flight while this one is computed");
    fv_codegen_line(e, "const long long next_row = first_row + step_rows%s;", lane);
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        if (!is_ws_step_value(p->view, v))
            continue;
        char label[40];
        fv_ir_value_label(fusion, v, label);
        fv_codegen_line(e, "const float step_value%d = step_next%d;  // %s", (int)v, (int)v, label);
        fv_codegen_line(e, "step_next%d = fv_to_float(in%d[next_row < outer ? next_row : 0]);",
                        (int)v, fv_codegen_input_position(fusion, v));
        if (unroll > 1)
            FV_TRY(set_buffered_line(p, v, "const float v%d = __shfl_sync(0xffffffffu, step_value%d, u);",
                                     (int)v, (int)v));
        else
            FV_TRY(set_buffered_line(p, v, "const float v%d = step_value%d;", (int)v, (int)v));
    }
    FV_TRY(fv_text_status(&p->step_values_ahead));
    return fv_text_status(&p->step_values);
}

/* Warp-specialized, the producer: the bulk copies of row `fetch_row` into
 * slot row `slot_row` of each buffered input. */
static void emit_ws_fetch(persistent_emit *p)
{
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    e->out = &p->fetch;
    int capacity = row_capacity(p->params);
    for (int i = 0; i < p->buffers.count; i++) {
        int32_t v = p->buffers.values[i];
        fv_codegen_line(e, "fv_bulk_copy(buffer%d_slots + (long long)slot_row * %d, in%d + fetch_row * inner,",
                        (int)v, capacity, fv_codegen_input_position(fusion, v));
        fv_codegen_line(e, "             (unsigned)(inner * %zu), &full_barriers[stage]);",
                        p->buffers.element_bytes[i]);
    }
}

/* True if a warp-specialized kernel's row prologue reads a row input from
 * device memory (at safe_row): one that emit_ws_step_values does not load a
 * step ahead. */
static bool ws_prologue_reads_row_inputs(const persistent_emit *p)
{
    const fv_segment_view *view = p->view;
    bool ahead = p->params->extra[EXTRA_WS_STATS_AHEAD] != 0;
    for (int32_t i = 0; i < view->fusion->input_count; i++) {
        int32_t v = view->fusion->inputs[i];
        if (is_row_input(view, v) && !(ahead && is_ws_step_value(view, v)))
            return true;
    }
    return false;
}

/* Warp-specialized, a compute row (row u of the step, in every pass of a
 * grouped step): its row, and its slot in each buffer that the passes read
 * from the stage (not those whose rows emit_ws_load_step read into
 * registers: EXTRA_ROW_FLOATS). */
static void emit_ws_row_start(persistent_emit *p)
{
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    e->out = &p->row_start;
    int capacity = row_capacity(p->params);
    unsigned in_registers = (unsigned)p->params->extra[EXTRA_ROW_FLOATS];
    fv_codegen_line(e, "const long long row = first_row + u;");
    fv_codegen_line(e, "const bool row_active = row < outer;");
    if (ws_prologue_reads_row_inputs(p))
        fv_codegen_line(e, "const long long safe_row = row_active ? row : 0;");
    if (in_registers != all_buffers(&p->buffers))
        fv_codegen_line(e, "const int slot_row = stage * %d + u;",
                        p->params->extra[EXTRA_WS_UNROLL]);
    for (int i = 0; i < p->buffers.count; i++) {
        if (in_registers & (1u << i))
            continue;
        int32_t v = p->buffers.values[i];
        const char *type = fv_codegen_storage_type(fusion->values[v].dtype);
        fv_codegen_line(e, "const %s *const buffer%d = buffer%d_slots + (long long)slot_row * %d;",
                        type, (int)v, (int)v, capacity);
    }
}

/* True if a warp-specialized step's rows share their group reductions
 * (nvFuser's grouped reductions across iter_unroll): with several rows per
 * step, each reduction pass (a level's sums and maxima, var_mean's squared
 * deviations) runs over all the step's rows first and ends in one group
 * reduction per kind for all of them (grouped_pass); the step's last loop
 * then computes each row's outputs and partials from their totals. */
static bool grouped_step(const persistent_emit *p)
{
    /* the passes' group reductions have no cluster step, and the step's
     * loops no held values: warp-specialized kernels take neither */
    return warp_specialized(p->kind) && p->params->extra[EXTRA_WS_UNROLL] >= 2 &&
           !clustered(p->params);
}

/* The statement after a warp-specialized step's rows: the stage's release,
 * unless emit_ws_load_step released it when the rows were read. */
static const char *stage_release(const fv_schedule_params *params)
{
    return params->extra[EXTRA_ROW_FLOATS] != 0
               ? "// the stage was released once its rows were read"
               : "fv_barrier_arrive(&empty_barriers[stage]);  // this group is done with the stage";
}

/* Warp-specialized with the stage's rows cached in registers (regs_cached):
 * once the full barrier has completed, each compute thread reads its
 * columns of the step's rows into row_floats<value>[unroll][batch][vector]
 * (or, in their own 16-bit type, row_copies<value>[unroll][batch]:
 * EXTRA_WS_ROWS_OWN_TYPE) and releases the stage on its empty barrier, so
 * that the producer refills
 * it while the rows are computed; otherwise the stage is released after the
 * step's last row (stage_release). */
static void emit_ws_load_step(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const fv_fusion *fusion = p->view->fusion;
    fv_emitter *e = &p->e;
    int unroll = params->extra[EXTRA_WS_UNROLL], capacity = row_capacity(params);
    bool own_type = params->extra[EXTRA_WS_ROWS_OWN_TYPE] != 0;
    e->out = &p->load;
    if (params->extra[EXTRA_ROW_FLOATS] == 0)
        return;
    for (int i = 0; i < p->buffers.count; i++) {
        int32_t v = p->buffers.values[i];
        char label[40];
        fv_ir_value_label(fusion, v, label);
        if (own_type)
            fv_codegen_line(e, "fv_vector<%s, %d> row_copies%d[%d][%d];  // %s: the step's rows, read once from the stage",
                            fv_codegen_storage_type(fusion->values[v].dtype), params->vector,
                            (int)v, unroll, params->serial, label);
        else
            fv_codegen_line(e, "float row_floats%d[%d][%d][%d];  // %s: the step's rows, read once from the stage",
                            (int)v, unroll, params->serial, params->vector, label);
    }
    fv_codegen_line(e, "#pragma unroll");
    fv_codegen_line(e, "for (int u = 0; u < %d; ++u) {", unroll);
    e->indent += 4;
    fv_codegen_line(e, "const bool row_active = first_row + u < outer;");
    fv_codegen_line(e, "const int slot_row = stage * %d + u;", unroll);
    open_batch_loop(e, params, "row_active && ");
    for (int i = 0; i < p->buffers.count; i++) {
        int32_t v = p->buffers.values[i];
        if (own_type)
            fv_codegen_line(e, "fv_load_vector(buffer%d_slots + (long long)slot_row * %d + column, row_copies%d[u][b]);",
                            (int)v, capacity, (int)v);
        else
            fv_codegen_line(e, "fv_load<%d>(buffer%d_slots + (long long)slot_row * %d + column, row_floats%d[u][b]);",
                            params->vector, (int)v, capacity, (int)v);
    }
    close_batch_loop(e);
    e->indent -= 4;
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "fv_barrier_arrive(&empty_barriers[stage]);  // the rows are in registers: refill the stage");
}

/* The pragma before a warp-specialized kernel's loops over the step's
 * rows: unrolled where the rows are read into registers (row_floats or
 * row_copies, indexed by u); otherwise the compiler chooses, and a long row body stays
 * one loop (forced to unroll, 16-bit softmax at H = 8192 and 12288 doubled
 * its code, 5951 to 11263 PTX lines at 12288, and ran 20-28% slower on an
 * H100; the step's arrays then live in 16 bytes of local memory). */
static const char *rows_pragma(const fv_schedule_params *params)
{
    return params->extra[EXTRA_ROW_FLOATS] != 0
               ? "#pragma unroll  // the rows below index their registers by u"
               : "";
}

/* One reduction pass over a grouped step's rows (grouped_step): the
 * step's arrays, a loop over its rows that computes each row's values up
 * to the pass (its start, prologue and the totals of the passes before),
 * accumulates them in registers and stores the row's entries, then the
 * group reductions of the arrays. */
static const char grouped_pass_skeleton[] =
    "@DECLARE@\n"
    "@ROWS_PRAGMA@\n"
    "for (int u = 0; u < @UNROLL@; ++u) {\n"
    "    @ROW_START@\n"
    "    @ROW_PROLOGUE@\n"
    "    @TOTALS_BEFORE@\n"
    "    @ACCUMULATE@\n"
    "}\n"
    "@GROUP_REDUCE@\n";

/* Appends a grouped pass to p->grouped_rows: `declare` declares the step's
 * arrays, p->accumulate holds a row's accumulation and p->group_sum the
 * group reductions; the row's totals before the pass are the first
 * `totals_length` bytes of p->stages (the step's last loop repeats them).
 * Fails with FV_ERR_NOMEM or FV_ERR_INTERNAL (a skeleton section missing). */
static fv_status append_grouped_pass(persistent_emit *p, const char *declare,
                                     size_t totals_length)
{
    char unroll[16];
    snprintf(unroll, sizeof unroll, "%d", p->params->extra[EXTRA_WS_UNROLL]);
    fv_text totals = {0};
    fv_text_append(&totals, fv_text_str(&p->stages), totals_length);
    const char *names[] = {"DECLARE", "ROWS_PRAGMA", "UNROLL", "ROW_START", "ROW_PROLOGUE",
                           "TOTALS_BEFORE", "ACCUMULATE", "GROUP_REDUCE"};
    const char *sections[] = {declare, rows_pragma(p->params), unroll, fv_text_str(&p->row_start),
                              fv_text_str(&p->prologue), fv_text_str(&totals),
                              fv_text_str(&p->accumulate), fv_text_str(&p->group_sum)};
    fv_status status = fv_text_status(&totals);
    if (status == FV_OK)
        status = fv_text_status(&p->accumulate);
    if (status == FV_OK)
        status = fv_text_status(&p->group_sum);
    if (status == FV_OK)
        status = fv_codegen_fill(grouped_pass_skeleton, names, sections, 8, &p->grouped_rows);
    fv_text_free(&totals);
    return status;
}

/* Values computed once per row before the reductions (row statistics). */
static void emit_row_prologue(persistent_emit *p)
{
    const fv_fusion *fusion = p->view->fusion;
    memset(p->targets, 0, (size_t)fusion->value_count + 1);
    for (int32_t o = 0; o < fusion->output_count; o++)
        p->targets[fusion->outputs[o]] = true;
    for (int r = 0; r < p->analysis.inner_count; r++)
        p->targets[p->analysis.inner[r]->inputs[0]] = true;
    for (int r = 0; r < p->analysis.outer_count; r++)
        p->targets[p->analysis.outer[r]->inputs[0]] = true;
    fv_family_needed_closure(p->view, p->targets);
    for (int32_t v = 0; v < fusion->value_count; v++)
        p->targets[v] = p->targets[v] && fusion->values[v].kind == FV_VALUE_TENSOR &&
                        !fv_codegen_spans_inner(p->view, v) && p->analysis.level[v] == 0 &&
                        !p->analysis.after_outer[v];
    p->e.out = &p->prologue;
    fv_codegen_compute(&p->e, p->targets, (fv_emit_index){"safe_row", "0"});
}

/* True if the kernel's lane loops that fold lanes into a reduction are
 * emitted twice on span chunks (span_lanes) of a kind that tests no lane
 * window (uses_lane_window: multi-wave kernels do): with no mask for a chunk wholly
 * in the row (every chunk but the row's first and last), then for those two
 * with each lane tested (fv_in_row).  Taken for 8-lane (16-bit) chunks and
 * kernels that call a math function along the row: there a test on every
 * lane took issue slots (H200, N = 16384, H = 1987-20481: softmax bf16
 * +5.6..+13.3% and fp32 +0.8..+6.8%, layer and RMS norm bf16 -1.9..+20.4%),
 * while layer and RMS norm on 4-lane fp32 chunks moved -6.1..+0.2%. */
static bool splits_end_chunks(const persistent_emit *p)
{
    const fv_segment_view *view = p->view;
    const fv_schedule_params *params = p->params;
    if (!span_lanes(params) || uses_lane_window(p))
        return false;
    if (params->vector >= 8)
        return true;
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &view->fusion->ops[view->order[i]];
        if (calls_math_function(op->kind) && fv_codegen_spans_inner(view, op->outputs[0]))
            return true;
    }
    return false;
}

/* The two branches of a split lane loop (splits_end_chunks): these open and
 * close them. */
static void open_whole_chunk_branch(fv_emitter *e, const fv_schedule_params *params,
                                    const char *test)
{
    char in_row[64];
    snprintf(in_row, sizeof in_row, "column >= 0 && column + %d <= %s", params->vector,
             e->row_length);
    if (test[0] != '\0')
        fv_codegen_line(e, "if (%s || (%s)) {  // a chunk wholly in the row", test, in_row);
    else
        fv_codegen_line(e, "if (%s) {  // a chunk wholly in the row", in_row);
    e->indent += 4;
}

static void open_end_chunk_branch(fv_emitter *e)
{
    e->indent -= 4;
    fv_codegen_line(e, "} else {  // the row's first or last chunk: its lanes in the row");
    e->indent += 4;
}

static void close_chunk_branches(fv_emitter *e)
{
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

/* Opens the test of a masked lane loop's body: with a lane window
 * (e->lane_window_test), the lane lies in the thread's window, which covers
 * the whole steps itself (`whole` is not read); otherwise the lane lies in
 * the row (fv_in_row) or `whole` (a write_whole_chunk_test condition, or "")
 * holds. */
static void open_lane_test(fv_emitter *e, const char *whole)
{
    if (e->lane_window_test != NULL && e->lane_window_test[0] != '\0')
        fv_codegen_line(e, "if (%s)", e->lane_window_test);
    else
        fv_codegen_line(e, "if (%s%sfv_in_row(column + lane, %s))", whole,
                        whole[0] != '\0' ? " || " : "", e->row_length);
    e->indent += 4;
}

/* Folds each lane of `input` (a value of the batch loop) into `target`;
 * if `masked`, only the lanes in the row, or every lane where `whole` (a
 * write_whole_chunk_test condition, or "") holds. */
static void fold_lanes(fv_emitter *e, const fv_schedule_params *params, bool masked,
                       const char *whole, const char *target, const char *input,
                       const fv_op *reduction)
{
    fv_codegen_line(e, "#pragma unroll");
    fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", params->vector);
    e->indent += 4;
    if (masked)
        open_lane_test(e, whole);
    fv_family_combine(e, reduction, target, input);
    e->indent -= masked ? 8 : 4;
}

/* Accumulates each lane of `input` (a value of the batch loop) into
 * `target`: on span chunks only the lanes in the row, split where
 * splits_end_chunks says. */
static void accumulate_lanes(persistent_emit *p, const char *target, const char *input,
                             const fv_op *reduction)
{
    fv_emitter *e = &p->e;
    const fv_schedule_params *params = p->params;
    if (!p->split_end_chunks) {
        fold_lanes(e, params, span_lanes(params), p->whole_chunk_test, target, input, reduction);
        return;
    }
    open_whole_chunk_branch(e, params, p->whole_chunk_test);
    fold_lanes(e, params, false, "", target, input, reduction);
    open_end_chunk_branch(e);
    fold_lanes(e, params, true, "", target, input, reduction);
    close_chunk_branches(e);
}

/* The block reduction of `count` sums in array `name`<level>: over the
 * row's threads (the whole block synchronizes), or, warp-specialized, over
 * the compute group on its named barrier. */
static void emit_group_sum(persistent_emit *p, const char *name, int level, int count)
{
    if (warp_specialized(p->kind))
        fv_codegen_line(&p->e, "fv_group_sum<%d, %d>(%s%d, group_scratch, 1 + group);",
                        p->params->block_x, count, name, level);
    else
        fv_codegen_line(&p->e, "fv_row_sum_group<%d, %d>(%s%d, reduction_scratch);",
                        p->params->block_x, count, name, level);
    if (clustered(p->params))
        fv_codegen_line(&p->e, "fv_cluster_sum<%d, %d>(%s%d, cluster_exchange, cluster_arrived, exchange_phase);",
                        cluster_blocks(p->params), count, name, level);
}

/* The block reduction of max reduction r's maximum<r>: over the row's
 * threads, or, warp-specialized, over the compute group; then over the
 * cluster's blocks where the rows are split across a cluster. */
static void emit_group_max(persistent_emit *p, int r)
{
    const fv_schedule_params *params = p->params;
    if (warp_specialized(p->kind))
        fv_codegen_line(&p->e, "maximum%d = fv_group_max<%d>(maximum%d, group_scratch, 1 + group);",
                        r, params->block_x, r);
    else
        fv_codegen_line(&p->e, "maximum%d = fv_row_max<%d>(maximum%d, reduction_scratch);", r,
                        params->block_x, r);
    if (clustered(params))
        fv_codegen_line(&p->e, "maximum%d = fv_cluster_max<%d>(maximum%d, cluster_exchange, cluster_arrived, exchange_phase);",
                        r, cluster_blocks(params), r);
}

/* Declares the arrays of the values the last reduction pass keeps for
 * the epilogue: held<value>[batch][vector] floats. */
static void declare_held_values(persistent_emit *p)
{
    for (int k = 0; k < p->held_count; k++) {
        char label[40];
        fv_codegen_line(&p->e, "float held%d[%d][%d];  // %s, kept for the epilogue",
                        (int)p->held[k], p->params->serial, p->params->vector,
                        fv_ir_value_label(p->view->fusion, p->held[k], label));
    }
}

/* In the last reduction pass's batch loop: copies the held values' lanes
 * of this batch step into their arrays. */
static void keep_held_values(persistent_emit *p)
{
    for (int k = 0; k < p->held_count; k++) {
        char value[64];
        fv_codegen_value(&p->e, p->held[k], "lane", value, sizeof value);
        fv_codegen_line(&p->e, "#pragma unroll");
        fv_codegen_line(&p->e, "for (int lane = 0; lane < %d; ++lane)", p->params->vector);
        fv_codegen_line(&p->e, "    held%d[b][lane] = %s;", (int)p->held[k], value);
    }
}

/* In the epilogue's batch loop: the held values as this batch step's
 * lanes, declared so that the epilogue does not compute them again. */
static void read_held_values(persistent_emit *p)
{
    for (int k = 0; k < p->held_count; k++) {
        char label[40];
        int32_t v = p->held[k];
        fv_codegen_line(&p->e, "const float (&v%d)[%d] = held%d[b];  // %s, from the last reduction pass",
                        (int)v, p->params->vector, (int)v,
                        fv_ir_value_label(p->view->fusion, v, label));
        p->e.declared[v] = true;
    }
}

/* A level's inner reductions: each one's entry (`entry[r]`: in sums<level>
 * for a sum or var_mean, among the level's maxima for a max) and how many
 * of each kind. */
typedef struct level_reductions {
    int entry[MAX_REDUCTIONS];
    int sums;       /* sums and var_means: sums<level>[sums] */
    int maxima;
    int var_means;  /* of the sums: squares<level>[var_means] in the second pass */
} level_reductions;

/* A grouped pass (grouped_step) begins: p->accumulate takes the row's
 * accumulation. */
static void begin_grouped_pass(persistent_emit *p)
{
    fv_text_reset(&p->accumulate);
    fv_text_reset(&p->group_sum);
    p->e.out = &p->accumulate;
}

/* A grouped pass ends: the row's `sums` entries of <name><level> (`what`
 * they are, for the comments) and, given the level's `maxima_of`, each max
 * reduction's maximum<r> stored into the step's arrays
 * step_<name><level>[unroll x sums] and step_maxima<level>[unroll x
 * maxima]; their group reductions after the loop; the pass appended to
 * p->grouped_rows with the totals of the passes before it (the first
 * `totals_length` bytes of p->stages); and pointers to the row's totals
 * added to p->stages. */
static fv_status end_grouped_pass(persistent_emit *p, const char *name, const char *what,
                                  int level, int sums, const level_reductions *maxima_of,
                                  size_t totals_length)
{
    fv_emitter *e = &p->e;
    const persistent_analysis *a = &p->analysis;
    int unroll = p->params->extra[EXTRA_WS_UNROLL], block_x = p->params->block_x;
    int maxima = maxima_of != NULL ? maxima_of->maxima : 0;
    for (int k = 0; k < sums; k++)
        fv_codegen_line(e, "step_%s%d[u * %d + %d] = %s%d[%d];", name, level, sums, k, name, level, k);
    for (int r = 0; r < a->inner_count && maxima > 0; r++)
        if (a->inner_level[r] == level && a->inner[r]->kind == FV_OP_MAX)
            fv_codegen_line(e, "step_maxima%d[u * %d + %d] = maximum%d;", level, maxima,
                            maxima_of->entry[r], r);
    char declare[320] = "";
    size_t used = 0;
    e->out = &p->group_sum;
    if (sums > 0) {
        used += (size_t)snprintf(declare + used, sizeof declare - used,
                                 "float step_%s%d[%d];  // the step's rows' %s: one group reduction for all\n",
                                 name, level, unroll * sums, what);
        fv_codegen_line(e, "fv_group_sum<%d, %d>(step_%s%d, group_scratch, 1 + group);", block_x,
                        unroll * sums, name, level);
    }
    if (maxima > 0) {
        snprintf(declare + used, sizeof declare - used,
                 "float step_maxima%d[%d];  // the step's rows' maxima: one group reduction for all\n",
                 level, unroll * maxima);
        fv_codegen_line(e, "fv_group_maxima<%d, %d>(step_maxima%d, group_scratch, 1 + group);",
                        block_x, unroll * maxima, level);
    }
    FV_TRY(append_grouped_pass(p, declare, totals_length));
    e->out = &p->stages;
    if (sums > 0)
        fv_codegen_line(e, "const float *const %s%d = step_%s%d + u * %d;  // this row's totals", name,
                        level, name, level, sums);
    if (maxima > 0)
        fv_codegen_line(e, "const float *const maxima%d = step_maxima%d + u * %d;  // this row's maxima",
                        level, level, maxima);
    return FV_OK;
}

/* Computes, before a pass's loop over the row's chunks, the values of the
 * row (not along it) that the pass reads, given its targets in p->targets:
 * once per row instead of once per chunk (the compiler did not merge the
 * chunks' copies: layer norm's rsqrt ran once per chunk).  Of what the pass
 * needs (fv_codegen_needed: nothing declared, no reduction followed), the
 * values not along the row.  Fails only with FV_ERR_NOMEM. */
static fv_status emit_row_values_before_chunks(persistent_emit *p, const char *row)
{
    const fv_segment_view *view = p->view;
    bool *needed = calloc((size_t)view->fusion->value_count + 1, sizeof(bool));
    FV_CHECK_ALLOC(needed);
    fv_codegen_needed(&p->e, p->targets, needed);
    for (int32_t v = 0; v < view->fusion->value_count; v++)
        needed[v] = needed[v] && !fv_codegen_spans_inner(view, v);
    fv_codegen_compute(&p->e, needed, (fv_emit_index){row, "0"});
    free(needed);
    return FV_OK;
}

/* Opens a pass over the row's chunks: saves the declared values into
 * *saved (the pass restores them after its loop) and computes the row
 * values the pass reads (emit_row_values_before_chunks).  In a grouped step
 * each pass is the body of its own loop over the step's rows, so they are
 * computed after the save and forgotten with the pass; otherwise every pass
 * is at the row's scope, so they are computed before it and stay declared
 * for the passes after it and the epilogue (declaring them again there
 * would not compile).  Fails only with FV_ERR_NOMEM. */
static fv_status begin_chunk_pass(persistent_emit *p, const char *row, bool **saved)
{
    if (!p->grouped)
        FV_TRY(emit_row_values_before_chunks(p, row));
    *saved = fv_codegen_save(&p->e);
    if (p->grouped) {
        fv_status status = emit_row_values_before_chunks(p, row);
        if (status != FV_OK) {
            free(*saved);
            *saved = NULL;
            return status;
        }
    }
    return FV_OK;
}

/* The first pass of a level: one pass over the row buffers for all its
 * reductions (sums, maxima, and the sum of each var_mean), then their
 * block reductions, declaring each reduction's result (and var_mean's
 * mean<r>). */
static fv_status emit_level_first_pass(persistent_emit *p, int level,
                                       const level_reductions *reductions, bool keeps)
{
    fv_emitter *e = &p->e;
    const persistent_analysis *a = &p->analysis;
    const fv_fusion *fusion = p->view->fusion;
    const fv_schedule_params *params = p->params;
    size_t totals_length = p->stages.length;
    fv_codegen_line(e, "// reduction level %d", level);
    if (p->grouped)
        begin_grouped_pass(p);
    for (int r = 0; r < a->inner_count; r++)
        if (a->inner_level[r] == level && a->inner[r]->kind == FV_OP_MAX)
            fv_codegen_line(e, "float maximum%d = -INFINITY;  // max", r);
    if (reductions->sums > 0)
        fv_codegen_line(e, "float sums%d[%d] = {};  // %s", level, reductions->sums,
                        p->grouped ? "this row's sums" : "grouped: one block reduction for all");
    if (keeps)
        declare_held_values(p);
    memset(p->targets, 0, (size_t)fusion->value_count + 1);
    for (int r = 0; r < a->inner_count; r++)
        if (a->inner_level[r] == level)
            p->targets[a->inner[r]->inputs[0]] = true;
    bool *saved = NULL;
    FV_TRY(begin_chunk_pass(p, "safe_row", &saved));
    open_batch_loop(e, params, "row_active && ");
    fv_codegen_compute(e, p->targets, (fv_emit_index){"safe_row", "column"});
    if (keeps && reductions->var_means == 0)
        keep_held_values(p);
    for (int r = 0; r < a->inner_count; r++) {
        if (a->inner_level[r] != level)
            continue;
        const fv_op *op = a->inner[r];
        char input[64], target[48];
        fv_codegen_value(e, op->inputs[0], "lane", input, sizeof input);
        if (op->kind == FV_OP_MAX)
            snprintf(target, sizeof target, "maximum%d", r);
        else
            snprintf(target, sizeof target, "sums%d[%d]", level, reductions->entry[r]);
        accumulate_lanes(p, target, input, op);
    }
    close_batch_loop(e);
    fv_codegen_restore(e, saved);
    if (p->grouped)
        FV_TRY(end_grouped_pass(p, "sums", "sums", level, reductions->sums, reductions,
                                totals_length));
    else if (reductions->sums > 0)
        emit_group_sum(p, "sums", level, reductions->sums);
    char expression[160];
    for (int r = 0; r < a->inner_count; r++) {
        if (a->inner_level[r] != level)
            continue;
        const fv_op *op = a->inner[r];
        fv_dtype dtype = fusion->values[op->outputs[0]].dtype;
        if (op->kind == FV_OP_MAX) {
            char maximum[32];
            if (p->grouped) {
                snprintf(maximum, sizeof maximum, "maxima%d[%d]", level, reductions->entry[r]);
            } else {
                emit_group_max(p, r);
                snprintf(maximum, sizeof maximum, "maximum%d", r);
            }
            fv_codegen_rounded(dtype, maximum, expression, sizeof expression);
            fv_codegen_declare(e, op->outputs[0], expression);
        } else if (op->kind == FV_OP_SUM) {
            char sum[48];
            snprintf(sum, sizeof sum, "sums%d[%d]", level, reductions->entry[r]);
            fv_codegen_rounded(dtype, sum, expression, sizeof expression);
            fv_codegen_declare(e, op->outputs[0], expression);
        } else {
            fv_codegen_line(e, "const float mean%d = sums%d[%d] / (float)inner;  // var_mean, pass 1",
                            r, level, reductions->entry[r]);
        }
    }
    return FV_OK;
}

/* Adds each lane's squared deviation of `input` from mean<r> to
 * squares<level>[square]; if `masked`, only the lanes in the row. */
static void square_lanes(fv_emitter *e, const fv_schedule_params *params, bool masked,
                         const char *whole, const char *input, int r, int level, int square)
{
    fv_codegen_line(e, "#pragma unroll");
    fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane) {", params->vector);
    e->indent += 4;
    fv_codegen_line(e, "const float deviation = %s - mean%d;", input, r);
    if (masked)
        open_lane_test(e, whole);
    fv_codegen_line(e, "squares%d[%d] += deviation * deviation;", level, square);
    e->indent -= masked ? 8 : 4;
    fv_codegen_line(e, "}");
}

/* var_mean's second pass over the buffered row: the squared deviations
 * from mean<r> (two-pass: more accurate than Welford's update and free of
 * its divisions), their block reduction, and each var_mean's variance and
 * mean declared. */
static fv_status emit_level_squares_pass(persistent_emit *p, int level, int var_means, bool keeps)
{
    fv_emitter *e = &p->e;
    const persistent_analysis *a = &p->analysis;
    const fv_schedule_params *params = p->params;
    size_t totals_length = p->stages.length;
    if (p->grouped)
        begin_grouped_pass(p);
    fv_codegen_line(e, "float squares%d[%d] = {};  // var_mean, pass 2", level, var_means);
    bool *saved = NULL;
    FV_TRY(begin_chunk_pass(p, "safe_row", &saved));
    open_batch_loop(e, params, "row_active && ");
    fv_codegen_compute(e, p->targets, (fv_emit_index){"safe_row", "column"});
    if (keeps)
        keep_held_values(p);
    int square = 0;
    for (int r = 0; r < a->inner_count; r++) {
        const fv_op *op = a->inner[r];
        if (a->inner_level[r] != level || op->kind != FV_OP_VAR_MEAN)
            continue;
        char input[64];
        fv_codegen_value(e, op->inputs[0], "lane", input, sizeof input);
        if (!p->split_end_chunks) {
            square_lanes(e, params, span_lanes(params), p->whole_chunk_test, input, r, level,
                         square++);
            continue;
        }
        open_whole_chunk_branch(e, params, p->whole_chunk_test);
        square_lanes(e, params, false, "", input, r, level, square);
        open_end_chunk_branch(e);
        square_lanes(e, params, true, "", input, r, level, square++);
        close_chunk_branches(e);
    }
    close_batch_loop(e);
    fv_codegen_restore(e, saved);
    if (p->grouped)
        FV_TRY(end_grouped_pass(p, "squares", "squared deviations", level, var_means, NULL,
                                totals_length));
    else
        emit_group_sum(p, "squares", level, var_means);
    square = 0;
    char expression[160];
    for (int r = 0; r < a->inner_count; r++) {
        const fv_op *op = a->inner[r];
        if (a->inner_level[r] != level || op->kind != FV_OP_VAR_MEAN)
            continue;
        snprintf(expression, sizeof expression, "squares%d[%d] / ((float)inner - %lld.0f)", level,
                 square++, (long long)op->correction);
        fv_codegen_declare(e, op->outputs[0], expression);
        snprintf(expression, sizeof expression, "mean%d", r);
        fv_codegen_declare(e, op->outputs[1], expression);
    }
    return FV_OK;
}

/* The inner reductions of one level: one pass over the row buffers for all
 * of them, then one grouped block reduction for the sums (and the first
 * pass of var_mean, the sum) and one per max (grouped steps: one for all
 * the maxima of the step's rows).  var_mean takes a second pass over the
 * buffered row for the squared deviations from the mean.  The last level's
 * last pass keeps the held values for the epilogue.  Fails only as
 * append_grouped_pass does. */
static fv_status emit_reduction_level(persistent_emit *p, int level)
{
    const persistent_analysis *a = &p->analysis;
    level_reductions reductions = {.sums = 0};
    for (int r = 0; r < a->inner_count; r++) {
        if (a->inner_level[r] != level)
            continue;
        const fv_op *op = a->inner[r];
        if (op->kind == FV_OP_MAX) {
            reductions.entry[r] = reductions.maxima++;
            continue;
        }
        reductions.entry[r] = reductions.sums++;
        reductions.var_means += op->kind == FV_OP_VAR_MEAN;
    }
    bool keeps = level == a->levels && p->held_count > 0;  /* held values: the last pass */
    FV_TRY(emit_level_first_pass(p, level, &reductions, keeps));
    if (reductions.var_means > 0)
        FV_TRY(emit_level_squares_pass(p, level, reductions.var_means, keeps));
    return FV_OK;
}

/* Floats of reduction scratch per row of the block: 32 per grouped value
 * (and 32 for a max, reduced one at a time; in grouped steps, where a
 * level's maxima are reduced together, 32 per maximum). */
static int scratch_per_row(const persistent_analysis *a, bool grouped)
{
    int most = 1;
    for (int level = 1; level <= a->levels; level++) {
        int sums = 0, maxima = 0;
        for (int r = 0; r < a->inner_count; r++) {
            if (a->inner_level[r] != level)
                continue;
            if (a->inner[r]->kind == FV_OP_MAX)
                maxima++;
            else
                sums++;
        }
        most = sums > most ? sums : most;
        most = grouped && maxima > most ? maxima : most;
    }
    return 32 * most;
}

/* Outputs along the row, outer partials, and row-level outputs.  The row
 * values the loop over the chunks reads are computed before it and stay
 * declared for the row-level outputs after it.  Fails only with
 * FV_ERR_NOMEM. */
static fv_status emit_epilogue(persistent_emit *p)
{
    fv_emitter *e = &p->e;
    const fv_fusion *fusion = p->view->fusion;
    const persistent_analysis *a = &p->analysis;
    e->out = &p->epilogue;
    memset(p->targets, 0, (size_t)fusion->value_count + 1);
    for (int32_t o = 0; o < fusion->output_count; o++)
        p->targets[fusion->outputs[o]] = fv_codegen_spans_inner(p->view, fusion->outputs[o]) &&
                                         fv_codegen_spans_outer(p->view, fusion->outputs[o]);
    for (int r = 0; r < a->outer_count; r++)
        p->targets[a->outer[r]->inputs[0]] = true;
    FV_TRY(emit_row_values_before_chunks(p, "row"));
    bool *saved = fv_codegen_save(e);
    open_batch_loop(e, p->params, "");
    read_held_values(p);
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (!fv_codegen_spans_inner(p->view, id) || !fv_codegen_spans_outer(p->view, id))
            continue;
        fv_codegen_compute_output(e, p->targets, (int)o, id, (fv_emit_index){"row", "column"},
                                   (fv_emit_index){"row", "column"});
    }
    for (int r = 0; r < a->outer_count; r++) {
        memset(p->targets, 0, (size_t)fusion->value_count + 1);
        p->targets[a->outer[r]->inputs[0]] = true;
        fv_codegen_compute(e, p->targets, (fv_emit_index){"row", "column"});
        char input[64], partial[32];
        fv_codegen_value(e, a->outer[r]->inputs[0], "lane", input, sizeof input);
        /* shared partials: this thread's own columns, so no barrier */
        bool in_shared = partial_in_shared(p->params, r);
        if (in_shared)
            emit_shared_partial_columns(e, p->params, r);
        snprintf(partial, sizeof partial, in_shared ? "partial%d_columns[lane]" : "partial%d[b][lane]",
                 r);
        /* on span chunks the partials are registers (multiwave_takes_span_chunks):
         * their lanes outside the row are never stored, so every lane folds; the
         * masked form stays for partials in shared memory, should span chunks
         * ever take them */
        if (span_lanes(p->params) && !in_shared)
            fold_lanes(e, p->params, false, "", partial, input, a->outer[r]);
        else
            accumulate_lanes(p, partial, input, a->outer[r]);
        if (in_shared)
            fv_codegen_line(e, "fv_store<%d>(partial%d + %s, partial%d_columns);", p->params->vector,
                            r, buffer_index(p->params), r);
    }
    close_batch_loop(e);
    fv_codegen_restore(e, saved);
    bool any_row_output = false;
    for (int32_t o = 0; o < fusion->output_count; o++)
        any_row_output = any_row_output || (fv_codegen_spans_outer(p->view, fusion->outputs[o]) &&
                                            !fv_codegen_spans_inner(p->view, fusion->outputs[o]));
    if (!any_row_output)
        return FV_OK;
    fv_codegen_line(e, clustered(p->params) ? "if (threadIdx.x == 0 && cluster_rank == 0) {"
                                                     : "if (threadIdx.x == 0) {");
    e->indent += 4;
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (!fv_codegen_spans_outer(p->view, id) || fv_codegen_spans_inner(p->view, id))
            continue;
        fv_codegen_compute_output(e, p->targets, (int)o, id, (fv_emit_index){"row", "0"},
                                   (fv_emit_index){"row", "0"});
    }
    e->indent -= 4;
    fv_codegen_line(e, "}");
    return FV_OK;
}

/* The sum (or other outer reduction `reduction`) of `count` vectors of
 * `width` floats into `sum`, in order: the first at address `first`, then
 * those at `others` (an address in `index`, from 1); stored into outer
 * reduction r's workspace row at `column`.  Both ways of adding partials
 * together before the workspace end so. */
static void emit_sum_in_order(fv_emitter *e, const fv_op *reduction, int r, int width,
                              const char *sum, const char *first, const char *index, int count,
                              const char *others)
{
    char total[32];
    snprintf(total, sizeof total, "%s[lane]", sum);
    fv_codegen_line(e, "float %s[%d];", sum, width);
    fv_codegen_line(e, "fv_load<%d>(%s, %s);", width, first, sum);
    fv_codegen_line(e, "for (int %s = 1; %s < %d; ++%s) {", index, index, count, index);
    fv_codegen_line(e, "    float other[%d];", width);
    fv_codegen_line(e, "    fv_load<%d>(%s, other);", width, others);
    fv_codegen_line(e, "    #pragma unroll");
    fv_codegen_line(e, "    for (int lane = 0; lane < %d; ++lane)", width);
    e->indent += 8;
    fv_family_combine(e, reduction, total, "other[lane]");
    e->indent -= 8;
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "fv_store<%d>(workspace + ((long long)%d * partial_rows + partial_row) * inner + column, %s);",
                    width, r, sum);
}

/* True if the block's row groups combine their partials in one pass
 * (emit_combined_partials): where each row group is one warp and the row
 * buffers' shared memory holds every outer reduction's partials of every
 * row group at once ([reduction][row group][row capacity] floats).  Blocks
 * whose rows take several warps, or several rows a warp, add one reduction
 * at a time.  (combine_partials has already ruled out span chunks and
 * partials in shared memory: both come with one row per block.) */
static bool combine_in_one_pass(const fv_schedule_params *params, int outer_count)
{
    return params->block_x == WARP_THREADS && combine_fits(params, outer_count);
}

/* The address, in the combine's shared memory ([reductions][row groups]
 * [capacity] floats), of the partials at `column` of outer reduction `r`
 * (counted from the first reduction of the pass) of row group `group` (an
 * expression; NULL for row group 0). */
static void combined_address(char *out, size_t size, int r, const char *group, int block_y,
                             int capacity)
{
    if (group == NULL && r == 0)
        snprintf(out, size, "combined + column");
    else if (group == NULL)
        snprintf(out, size, "combined + %d + column", r * block_y * capacity);
    else if (r == 0)
        snprintf(out, size, "combined + %s * %d + column", group, capacity);
    else
        snprintf(out, size, "combined + (%d + %s) * %d + column", r * block_y, group, capacity);
}

/* Every row group stores its partials of outer reductions first .. end - 1
 * into the combine's shared memory, between two barriers: the first waits
 * until the row buffers (or the previous reduction's sums) are read. */
static void emit_combined_stores(persistent_emit *p, int first, int end)
{
    const fv_schedule_params *params = p->params;
    fv_emitter *e = &p->e;
    int capacity = row_capacity(params);
    char address[96];
    fv_codegen_line(e, "__syncthreads();  // the row buffers (or the previous sums) are read");
    open_batch_loop(e, params, "");
    for (int r = first; r < end; r++) {
        combined_address(address, sizeof address, r - first, "threadIdx.y", params->block_y,
                         capacity);
        fv_codegen_line(e, "fv_store<%d>(%s, partial%d[b]);", params->vector, address, r);
    }
    close_batch_loop(e);
    fv_codegen_line(e, "__syncthreads();");
}

/* Adds up, in row-group order, the row groups' vectors of outer reductions
 * first .. end - 1 at the current slice's column into sum<r> (`sum` alone
 * where the pass holds one reduction) and stores them in the block's
 * workspace row. */
static void emit_combined_sums(persistent_emit *p, int first, int end)
{
    const fv_schedule_params *params = p->params;
    int capacity = row_capacity(params);
    for (int r = first; r < end; r++) {
        char sum[16] = "sum", address[96], others[96];
        if (end - first > 1)
            snprintf(sum, sizeof sum, "sum%d", r);
        combined_address(address, sizeof address, r - first, NULL, params->block_y, capacity);
        combined_address(others, sizeof others, r - first, "y", params->block_y, capacity);
        emit_sum_in_order(&p->e, p->analysis.outer[r], r, params->vector, sum, address, "y",
                          params->block_y, others);
    }
}

/* The block's row groups add their partials in shared memory, in row-group
 * order, over the row buffers (no longer read once every thread is past
 * the first barrier), and write the block's partial row.  In one pass where
 * combine_in_one_pass: every row group stores all its partials, and after
 * the barrier that follows the stores row group y adds up the row groups'
 * vectors of its slices y, y + block_y, ...: two barriers in all.
 * Otherwise one outer reduction at a time, row group 0 adding up every
 * slice: two barriers per reduction.  The order of the additions, and so
 * the result, is the same.  H200, N = 16384, one pass against one at a
 * time: LN bwd bf16 / fp16 x 768 and x 1024 (a warp per row) -0.6..+1.7%,
 * mean +0.8%, over three calls, RMS bwd +0.2%; in blocks of two rows of 128
 * threads one pass lost 1.8-2.2% at LN bwd 16-bit x 8192, so they keep one
 * at a time (bench/results/h200-2026-12-01.md); blocks of several rows to a
 * warp were not measured and keep it too. */
static void emit_combined_partials(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    fv_emitter *e = &p->e;
    int count = p->analysis.outer_count;
    int capacity = row_capacity(params);
    bool one_pass = combine_in_one_pass(params, count);
    char reductions[16] = "";  /* the shape's first extent where a pass holds several */
    if (one_pass && count > 1)
        snprintf(reductions, sizeof reductions, "[%d]", count);
    fv_codegen_line(e, "// The block's %d row groups add their partials together, in order.", params->block_y);
    fv_codegen_line(e, "float *const combined = reinterpret_cast<float *>(row_buffers);  // %s[%d][%d]",
                    reductions, params->block_y, capacity);
    if (one_pass) {
        emit_combined_stores(p, 0, count);
        fv_codegen_line(e, "// Row group y adds up the slices y, y + %d, ...", params->block_y);
        open_batch_loop_from(e, params, "", "#pragma unroll", "threadIdx.y", params->block_y);
        emit_combined_sums(p, 0, count);
        close_batch_loop(e);
        return;
    }
    for (int r = 0; r < count; r++) {
        emit_combined_stores(p, r, r + 1);
        fv_codegen_line(e, "if (threadIdx.y == 0) {");
        e->indent += 4;
        open_batch_loop(e, params, "");
        emit_combined_sums(p, r, r + 1);
        close_batch_loop(e);
        e->indent -= 4;
        fv_codegen_line(e, "}");
    }
}

/* Multi-wave with partial clusters: each block stores the partials of each
 * block's share of the columns into that block's exchange (distributed
 * shared memory, after the row buffers), the cluster synchronizes, and each
 * block adds its exchange's entries, in sender order, into its share of the
 * cluster's workspace row.  Nothing is read from a peer, so no block waits
 * for its peers to be done with its shared memory; the stores wait for the
 * cluster barrier every block arrived at when it started
 * (write_cluster_setup), so that every peer is running. */
static void emit_cluster_partials(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    const persistent_analysis *a = &p->analysis;
    fv_emitter *e = &p->e;
    int cluster = partial_cluster_blocks_of(params);
    int count = a->outer_count;
    int vector = params->vector;
    int share = partial_share(row_capacity(params), vector, cluster);
    int64_t offset = params->extra[EXTRA_SHARED_BYTES] -
                     partial_exchange_bytes(count, row_capacity(params), vector, cluster);
    int width = vector < 4 ? vector : 4;
    int threads = params->block_x * params->block_y;
    fv_codegen_line(e, "// The cluster's %d blocks add their partials together: each block stores the",
                    cluster);
    fv_codegen_line(e, "// partials of each block's share of %d columns into that block's exchange, then", share);
    fv_codegen_line(e, "// adds the entries of its own share, in sender order, into the cluster's workspace row.");
    fv_codegen_line(e, "float *const exchange = reinterpret_cast<float *>(row_buffers + %lld);"
                       "  // [%d senders][%d reductions][%d columns]",
                    (long long)offset, cluster, count, share);
    fv_codegen_line(e, "const unsigned cluster_rank = cooperative_groups::this_cluster().block_rank();");
    fv_codegen_line(e, "fv_cluster_wait();  // every block of the cluster is running");
    open_batch_loop(e, params, "");
    fv_codegen_line(e, "const unsigned owner = (unsigned)(column / %d);", share);
    fv_codegen_line(e, "float *const to = cooperative_groups::this_cluster().map_shared_rank(exchange, owner) +");
    fv_codegen_line(e, "                  cluster_rank * %d + (column - (long long)owner * %d);",
                    count * share, share);
    for (int r = 0; r < count; r++)
        fv_codegen_line(e, "fv_store<%d>(to + %d, partial%d[b]);", vector, r * share, r);
    close_batch_loop(e);
    fv_codegen_line(e, "cooperative_groups::this_cluster().sync();  // every block's partials have arrived");
    fv_codegen_line(e, "for (int offset = threadIdx.x * %d; offset < %d; offset += %d) {", width,
                    share, threads * width);
    e->indent += 4;
    fv_codegen_line(e, "const long long column = (long long)cluster_rank * %d + offset;", share);
    fv_codegen_line(e, "if (column >= inner)");
    fv_codegen_line(e, "    break;");
    for (int r = 0; r < count; r++) {
        char sum[16], first[48], others[64];
        snprintf(sum, sizeof sum, "sum%d", r);
        snprintf(first, sizeof first, "exchange + %d + offset", r * share);
        snprintf(others, sizeof others, "exchange + sender * %d + %d + offset", count * share,
                 r * share);
        emit_sum_in_order(e, a->outer[r], r, width, sum, first, "sender", cluster, others);
    }
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

static void emit_partials(persistent_emit *p)
{
    fv_emitter *e = &p->e;
    const persistent_analysis *a = &p->analysis;
    e->out = &p->partials;
    for (int r = 0; r < a->outer_count; r++) {
        if (partial_in_shared(p->params, r)) {
            fv_codegen_line(e, "// %s over rows: [%d columns] in shared memory (registers are full);",
                            fv_ir_op_name(a->outer[r]->kind), row_capacity(p->params));
            fv_codegen_line(e, "// each thread adds to its own columns only.");
            fv_codegen_line(e, "float *const partial%d = reinterpret_cast<float *>(row_buffers + %zu);",
                            r, shared_partial_offset(p->params, r));
            open_batch_loop(e, p->params, "");
            fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", p->params->vector);
            fv_codegen_line(e, "    partial%d[%s + lane] = %s;", r, buffer_index(p->params),
                            fv_family_reduction_identity(a->outer[r]));
            close_batch_loop(e);
            continue;
        }
        fv_codegen_line(e, "float partial%d[%d][%d];  // %s over rows", r, p->params->serial,
                        p->params->vector, fv_ir_op_name(a->outer[r]->kind));
        fv_codegen_line(e, "for (int b = 0; b < %d; ++b)", p->params->serial);
        fv_codegen_line(e, "    for (int lane = 0; lane < %d; ++lane)", p->params->vector);
        fv_codegen_line(e, "        partial%d[b][lane] = %s;", r, fv_family_reduction_identity(a->outer[r]));
    }
    e->out = &p->write_partials;
    if (combine_partials(p->params, p->kind)) {
        emit_combined_partials(p);
        return;
    }
    if (partial_cluster_blocks_of(p->params) > 1) {
        emit_cluster_partials(p);
        return;
    }
    bool producer_group = warp_specialized(p->kind); /* holds no partials */
    if (producer_group) {
        fv_codegen_line(e, "if (group < %d) {", p->params->block_y);
        e->indent += 4;
    }
    open_batch_loop(e, p->params, "");
    for (int r = 0; r < a->outer_count; r++) {
        char columns[32];
        snprintf(columns, sizeof columns, "partial%d[b]", r);
        if (partial_in_shared(p->params, r)) {
            snprintf(columns, sizeof columns, "partial%d_columns", r);
            emit_shared_partial_columns(e, p->params, r);
        }
        if (span_lanes(p->params))  /* at the block's shift: the lanes in the row, one by one */
            fv_codegen_line(e, "fv_store_lanes_exact<%d>(workspace + ((long long)%d * partial_rows + partial_row) * inner + column, column, %s, %s);",
                            p->params->vector, r, e->row_length, columns);
        else
            fv_codegen_line(e, "fv_store<%d>(workspace + ((long long)%d * partial_rows + partial_row) * inner + column, %s);",
                            p->params->vector, r, columns);
    }
    close_batch_loop(e);
    if (producer_group) {
        e->indent -= 4;
        fv_codegen_line(e, "}");
    }
}

/* Warps of the threads stage 2 spreads over (stage_x x stage_y). */
static int stage_two_warps(const fv_schedule_params *params)
{
    return params->extra[EXTRA_STAGE_X] * params->extra[EXTRA_STAGE_Y] / WARP_THREADS;
}

/* True if stage 2 adds a column's slices within each warp by shuffles and
 * then the warps' sums through the scratch: where a warp holds whole groups
 * of slices (stage_x divides 32, several slices to a warp) and a scratch row
 * per (warp, outer reduction) takes no more rows than the slice-per-row
 * form's stage_y, so the scratch stays within what the shared-memory budgets
 * count for it (ws_static_shared, STATIC_SHARED_BYTES).  Otherwise every
 * slice's sum goes through the scratch, a reduction at a time. */
static bool stage_two_in_warps(const fv_schedule_params *params, int outer_count)
{
    int stage_x = params->extra[EXTRA_STAGE_X], stage_y = params->extra[EXTRA_STAGE_Y];
    if (stage_x >= WARP_THREADS || WARP_THREADS % stage_x != 0 ||
        stage_x * stage_y % WARP_THREADS != 0)
        return false;
    return stage_two_warps(params) * outer_count <= stage_y;
}

/* Rows of stage 2's scratch ([rows][stage_x * stage_vector] floats): one per
 * (warp, outer reduction) with stage_two_in_warps, else one per slice. */
static int stage_two_scratch_rows(const fv_schedule_params *params, int outer_count)
{
    if (stage_two_in_warps(params, outer_count))
        return stage_two_warps(params) * outer_count;
    return params->extra[EXTRA_STAGE_Y];
}

/* True if stage 2's scratch (`scratch_rows` x stage_x * stage_vector floats)
 * reuses the row buffers' dynamic shared memory, free once the grid has
 * synchronized, instead of static shared memory: in kernels with outer
 * partials in shared memory (see stats_with_rows). */
static bool shared_stage_scratch(const fv_schedule_params *params, int scratch_rows)
{
    int64_t bytes = (int64_t)scratch_rows * params->extra[EXTRA_STAGE_X] *
                    params->extra[EXTRA_STAGE_VECTOR] * 4;
    return params->extra[EXTRA_SHARED_PARTIALS] != 0 &&
           params->extra[EXTRA_SHARED_BYTES] >= bytes;
}

/* Workspace rows a stage-2 thread loads before adding any of them: all of
 * its rows at the kernel's largest grid where STAGE_TWO_LOAD_FLOATS allow,
 * so that one round trip to L2 brings them.  (A loop unrolled by 4 left a
 * remainder of dependent loads: LN bwd bf16 16384 x 2048's stage 2 took
 * 2.2 us of its 61 on an H200.) */
static int stage_two_rows_per_load(const fv_schedule_params *params, persistent_kind kind,
                                   int outer_count)
{
    int64_t rows = (int64_t)params->extra[EXTRA_GRID] * partials_per_group(params, kind);
    int64_t per_thread = (rows + params->extra[EXTRA_STAGE_Y] - 1) / params->extra[EXTRA_STAGE_Y];
    int64_t most = STAGE_TWO_LOAD_FLOATS / (outer_count * params->extra[EXTRA_STAGE_VECTOR]);
    if (per_thread > most)
        per_thread = most;
    return per_thread < 1 ? 1 : (int)per_thread;
}

/* Stage 2's first part: each thread adds its slice of the workspace rows
 * (rows slice, slice + stage_y, ...) in order, `per_load` rows loaded at a
 * time for every reduction before any is added. */
static void emit_stage_two_slices(fv_emitter *e, const persistent_analysis *a, int stage_y,
                                  int stage_vector, int per_load)
{
    char target[48], value[160];
    for (int r = 0; r < a->outer_count; r++) {
        fv_codegen_line(e, "float sum%d[%d];", r, stage_vector);
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", stage_vector);
        fv_codegen_line(e, "    sum%d[lane] = %s;", r, fv_family_reduction_identity(a->outer[r]));
    }
    fv_codegen_line(e, "if (column_active) {");
    fv_codegen_line(e, "    for (long long first = slice; first < partial_rows; first += %d) {",
                    stage_y * per_load);
    e->indent += 8;
    for (int r = 0; r < a->outer_count; r++)
        fv_codegen_line(e, "float part%d[%d][%d];  // [rows][lanes]", r, per_load, stage_vector);
    fv_codegen_line(e, "#pragma unroll");
    fv_codegen_line(e, "for (int k = 0; k < %d; ++k) {", per_load);
    fv_codegen_line(e, "    const long long p = first + (long long)k * %d;", stage_y);
    fv_codegen_line(e, "    if (p < partial_rows) {");
    for (int r = 0; r < a->outer_count; r++)
        fv_codegen_line(e, "        fv_load_past_l1<%d>(workspace + ((long long)%d * partial_rows + p) * inner + column, part%d[k]);",
                        stage_vector, r, r);
    fv_codegen_line(e, "    }");
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "#pragma unroll");
    fv_codegen_line(e, "for (int k = 0; k < %d; ++k) {", per_load);
    fv_codegen_line(e, "    if (first + (long long)k * %d < partial_rows) {", stage_y);
    e->indent += 8;
    for (int r = 0; r < a->outer_count; r++) {
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", stage_vector);
        snprintf(target, sizeof target, "sum%d[lane]", r);
        snprintf(value, sizeof value, "part%d[k][lane]", r);
        e->indent += 4;
        fv_family_combine(e, a->outer[r], target, value);
        e->indent -= 4;
    }
    e->indent -= 8;
    fv_codegen_line(e, "    }");
    fv_codegen_line(e, "}");
    e->indent -= 8;
    fv_codegen_line(e, "    }");
    fv_codegen_line(e, "}");
}

/* Stage 2: declares total<r>[stage_vector] and adds into it, in order,
 * the scratch entries of this thread's column in rows `row` for `index` =
 * 0 .. count - 1 (one per slice, or one per warp). */
static void emit_stage_two_total(fv_emitter *e, const fv_op *op, int r, int stage_x,
                                 int stage_vector, const char *index, int count, const char *row)
{
    char target[48], value[160];
    fv_codegen_line(e, "float total%d[%d];", r, stage_vector);
    fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane) {", stage_vector);
    fv_codegen_line(e, "    total%d[lane] = %s;", r, fv_family_reduction_identity(op));
    fv_codegen_line(e, "    for (int %s = 0; %s < %d; ++%s)", index, index, count, index);
    snprintf(target, sizeof target, "total%d[lane]", r);
    snprintf(value, sizeof value, "stage_scratch[%s][(thread_index %% %d) * %d + lane]", row,
             stage_x, stage_vector);
    e->indent += 8;
    fv_family_combine(e, op, target, value);
    e->indent -= 8;
    fv_codegen_line(e, "}");
}

/* Stage 2's second part with stage_two_in_warps: each warp adds its slices
 * of a column by shuffles (offsets stage_x, 2 stage_x, ... 16: a fixed tree,
 * and every lane of a column ends with the same bits), its first slice puts
 * the warp's sums in the scratch, and after one barrier each thread adds the
 * warps' sums in warp order. */
static void emit_stage_two_combine_in_warps(fv_emitter *e, const persistent_analysis *a,
                                            int stage_x, int warps, int stage_vector)
{
    char target[48], row[32];
    fv_codegen_line(e, "// The warp's %d slices of each column, added by shuffles.",
                    WARP_THREADS / stage_x);
    for (int r = 0; r < a->outer_count; r++) {
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int offset = %d; offset < %d; offset *= 2) {", stage_x,
                        WARP_THREADS);
        fv_codegen_line(e, "    #pragma unroll");
        fv_codegen_line(e, "    for (int lane = 0; lane < %d; ++lane) {", stage_vector);
        fv_codegen_line(e, "        const float other = __shfl_xor_sync(0xffffffffu, sum%d[lane], offset);",
                        r);
        snprintf(target, sizeof target, "sum%d[lane]", r);
        e->indent += 8;
        fv_family_combine(e, a->outer[r], target, "other");
        e->indent -= 8;
        fv_codegen_line(e, "    }");
        fv_codegen_line(e, "}");
    }
    fv_codegen_line(e, "const int warp = thread_index / %d;", WARP_THREADS);
    fv_codegen_line(e, "if (thread_index %% %d < %d) {  // the warp's first slice", WARP_THREADS,
                    stage_x);
    for (int r = 0; r < a->outer_count; r++) {
        fv_codegen_line(e, "    for (int lane = 0; lane < %d; ++lane)", stage_vector);
        fv_codegen_line(e, "        stage_scratch[warp * %d + %d][(thread_index %% %d) * %d + lane] = sum%d[lane];",
                        a->outer_count, r, stage_x, stage_vector, r);
    }
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "__syncthreads();");
    for (int r = 0; r < a->outer_count; r++) {
        snprintf(row, sizeof row, "w * %d + %d", a->outer_count, r);
        emit_stage_two_total(e, a->outer[r], r, stage_x, stage_vector, "w", warps, row);
    }
    fv_codegen_line(e, "__syncthreads();  // the scratch is read before the next columns'");
}

/* Stage 2's second part, a reduction at a time: the slices' sums go to the
 * scratch, and each thread adds its column's slices in slice order. */
static void emit_stage_two_combine(fv_emitter *e, const persistent_analysis *a, int stage_x,
                                   int stage_y, int stage_vector)
{
    for (int r = 0; r < a->outer_count; r++) {
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", stage_vector);
        fv_codegen_line(e, "    stage_scratch[slice][(thread_index %% %d) * %d + lane] = sum%d[lane];",
                        stage_x, stage_vector, r);
        fv_codegen_line(e, "__syncthreads();");
        emit_stage_two_total(e, a->outer[r], r, stage_x, stage_vector, "y", stage_y, "y");
        fv_codegen_line(e, "__syncthreads();");
    }
}

/* Stage 2: add the workspace rows up and write the reductions' outputs. */
static fv_status emit_stage_two(persistent_emit *p)
{
    const fv_fusion *fusion = p->view->fusion;
    const persistent_analysis *a = &p->analysis;
    int stage_vector = p->params->extra[EXTRA_STAGE_VECTOR];
    int stage_x = p->params->extra[EXTRA_STAGE_X];
    int stage_y = p->params->extra[EXTRA_STAGE_Y];
    int scratch_columns = stage_x * stage_vector;
    int scratch_rows = stage_two_scratch_rows(p->params, a->outer_count);
    if (shared_stage_scratch(p->params, scratch_rows))
        snprintf(p->stage_scratch, sizeof p->stage_scratch,
                 "float (*const stage_scratch)[%d] = reinterpret_cast<float (*)[%d]>(row_buffers);"
                 "  // [%d][%d]: the rows are done",
                 scratch_columns, scratch_columns, scratch_rows, scratch_columns);
    else
        snprintf(p->stage_scratch, sizeof p->stage_scratch,
                 "__shared__ float stage_scratch[%d][%d * %d];", scratch_rows, stage_x,
                 stage_vector);
    fv_emitter e;
    FV_TRY(fv_codegen_begin(&e, p->view, stage_vector));
    e.out = &p->stage_two;
    emit_stage_two_slices(&e, a, stage_y, stage_vector,
                          stage_two_rows_per_load(p->params, p->kind, a->outer_count));
    if (stage_two_in_warps(p->params, a->outer_count))
        emit_stage_two_combine_in_warps(&e, a, stage_x, stage_two_warps(p->params), stage_vector);
    else
        emit_stage_two_combine(&e, a, stage_x, stage_y, stage_vector);
    fv_codegen_line(&e, "if (slice == 0 && column_active) {");
    e.indent += 4;
    for (int r = 0; r < a->outer_count; r++) {
        char total[32], array[48];
        snprintf(total, sizeof total, "total%d[lane]", r);
        fv_codegen_rounded(fusion->values[a->outer[r]->outputs[0]].dtype, total, array,
                           sizeof array);
        fv_codegen_declare_lanes(&e, a->outer[r]->outputs[0], array);
    }
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (fv_codegen_spans_outer(p->view, id))
            continue;
        fv_codegen_compute_output(&e, p->targets, (int)o, id, (fv_emit_index){"0", "column"},
                                   (fv_emit_index){"0", "column"});
    }
    e.indent -= 4;
    fv_codegen_line(&e, "}");
    fv_codegen_end(&e);
    return FV_OK;
}

static void free_emit(persistent_emit *p)
{
    if (p->buffered_lines != NULL)
        for (int32_t v = 0; v < p->view->fusion->value_count; v++)
            free(p->buffered_lines[v]);
    free(p->buffered_lines);
    free(p->targets);
    analysis_free(&p->analysis);
    fv_codegen_end(&p->e);
    fv_text *texts[] = {&p->before_rows, &p->row_start, &p->fetch, &p->prologue, &p->load,
                        &p->stages, &p->epilogue, &p->partials, &p->write_partials,
                        &p->stage_two, &p->parameters, &p->cluster_setup, &p->accumulate,
                        &p->group_sum, &p->grouped_rows, &p->step_values_ahead,
                        &p->step_values};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        fv_text_free(texts[i]);
}

/* True if the emitter keeps the row-constant loads in L1 (and the row
 * outputs out of it, stores_rows_around_l1): multi-wave kernels that read
 * the weight from device memory in every pass
 * (reads_row_constants_every_pass; today LN bwd 16-bit at H = 24576 and
 * 32768, whose partials take shared memory).  LN
 * bwd bf16 / fp16 16384 x 24576 ran 22.6 / 21.8% faster so on an H200
 * (62.8 -> 77.0%, 64.4 -> 78.4% of copy) and 18.2 / 17.6% on an H100
 * (80.3 -> 94.8%, 80.6 -> 94.7%; bench/results/h200-2026-11-22.md). */
static bool keeps_row_constants_in_l1(const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    return p->kind == KIND_MULTIWAVE &&
           reads_row_constants_every_pass(&p->buffers, params->extra[EXTRA_CACHED] != 0,
                                          params->extra[EXTRA_WEIGHT_FLOATS] != 0);
}

/* True if the row outputs' vector stores do not allocate in L1
 * (fv_store_around_l1): where the weight loads ask L1 to keep their lines
 * (keeps_row_constants_in_l1), and in multi-wave kernels launched in
 * clusters (rows split over the blocks, or partials added together).
 * Against plain stores on an H200, rounds in the order plain, around,
 * around, plain over the bench at N = 16384 (bf16 and fp32 backward, bf16
 * forward; h200-2026-11-28.md, session 29): the 15 clustered kernels that
 * stored plainly (the 16th, LN bwd bf16 x 32768, keeps its weight in L1)
 * -0.25..+6.0%, a median +0.5% (RMS bwd fp32 x 24576 +6.0%, x 32768
 * +1.8%, x 20480 +1.4%, LN bwd fp32 x 24576 +1.0%);
 * 16-bit rows split over clusters of 2 with the weight cached in shared
 * memory (LN bwd bf16 x 24576, RMS bwd bf16 x 32768; not planned today)
 * took 2.1-2.4 times as long with plain stores.  The other kernels went
 * -1.2..+2.0% (forward rows of 32768 -1.1 / -1.2%), so they keep plain
 * stores.  Untimed on an H100 or a Blackwell GPU and in fp16, where the
 * rule applies as well. */
static bool stores_rows_around_l1(const persistent_emit *p)
{
    return keeps_row_constants_in_l1(p) ||
           (p->kind == KIND_MULTIWAVE && launch_cluster_blocks(p->params) > 1);
}

/* Multi-wave in clusters: the block's rank, its cluster (the row group),
 * the start of its slice of each row, and the exchange of inner sums. */
static void write_cluster_setup(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    int cluster = cluster_blocks(params);
    if (partial_cluster_blocks_of(params) > 1)
        fv_text_printf(&p->cluster_setup,
                       "// The cluster's blocks add their outer partials together after the rows;\n"
                       "// each arrives at a cluster barrier now, and waits before its first store\n"
                       "// into a peer's shared memory (a peer that has not started yet would lose it).\n"
                       "fv_cluster_arrive_relaxed();");
    if (cluster == 1)
        return;
    fv_text_printf(&p->cluster_setup,
             "// A cluster of %d blocks takes each row group; each block an equal slice of the\n"
             "// columns (at most %d, its buffers' capacity).\n"
             "const unsigned cluster_rank = cooperative_groups::this_cluster().block_rank();\n"
             "const unsigned cluster_id = blockIdx.x / %d, cluster_count = gridDim.x / %d;\n"
             "const long long slice_length = (inner / %d + %d - 1) / %d * %d;\n"
             "const long long slice_start = (long long)cluster_rank * slice_length;\n"
             "// the blocks' inner sums: [2 phases][%d rows][%d blocks][%d sums]\n"
             "__shared__ float cluster_exchange[2 * %d * %d * %d];\n"
             "__shared__ unsigned long long cluster_arrived[2];  // an mbarrier per phase\n"
             "fv_cluster_exchange_init(cluster_arrived);\n"
             "int exchange_phase = 0;",
             cluster, row_capacity(params), cluster, cluster, params->vector, cluster, cluster,
             params->vector, params->block_y, cluster, p->scratch_per_row / 32, params->block_y,
             cluster, p->scratch_per_row / 32);
}

static fv_status emit_sections(persistent_emit *p)
{
    const fv_fusion *fusion = p->view->fusion;
    FV_TRY(analyze(p->view, &p->analysis));
    find_buffered(p->view, &p->buffers);
    FV_TRY(fv_codegen_begin(&p->e, p->view, p->params->vector));
    p->targets = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    p->buffered_lines = calloc((size_t)fusion->value_count + 1, sizeof(char *));
    FV_CHECK_ALLOC(p->targets);
    FV_CHECK_ALLOC(p->buffered_lines);
    p->e.buffered_load = (const char **)p->buffered_lines;
    p->e.keep_row_constants_in_l1 = keeps_row_constants_in_l1(p);
    p->e.store_rows_around_l1 = stores_rows_around_l1(p);
    p->e.span_lanes = span_lanes(p->params);
    if (p->e.span_lanes)
        p->e.row_length = "row_length";
    write_whole_chunk_test(p->params, p->whole_chunk_test, sizeof p->whole_chunk_test);
    p->e.whole_chunk_test = p->whole_chunk_test;
    p->split_end_chunks = splits_end_chunks(p);
    write_lane_window_test(p);
    p->e.lane_window_test = p->lane_window_test;
    p->grouped = grouped_step(p);
    if (p->params->extra[EXTRA_HELD_VALUES] != 0 && !warp_specialized(p->kind))
        p->held_count = recomputed_values(p->view, &p->analysis, p->held);
    p->scratch_per_row = scratch_per_row(&p->analysis, p->grouped) *
                         (p->grouped ? p->params->extra[EXTRA_WS_UNROLL] : 1);
    write_cluster_setup(p);
    FV_TRY(fv_text_status(&p->cluster_setup));
    if (warp_specialized(p->kind)) {
        FV_TRY(emit_ws_before_rows(p));
        FV_TRY(emit_ws_step_values(p));
        emit_ws_fetch(p);
        emit_ws_row_start(p);
        emit_ws_load_step(p);
    } else {
        FV_TRY(set_register_buffer_lines(p));
        FV_TRY(emit_before_rows(p));
        emit_row_start(p);
    }
    emit_row_prologue(p);
    if (!warp_specialized(p->kind))
        emit_load_row(p);  /* the warp-specialized rows arrive by bulk copies */
    p->e.out = &p->stages;
    for (int level = 1; level <= p->analysis.levels; level++)
        FV_TRY(emit_reduction_level(p, level));
    FV_TRY(emit_epilogue(p));
    FV_TRY(fv_text_status(&p->grouped_rows));
    if (p->analysis.outer_count > 0) {
        emit_partials(p);
        FV_TRY(emit_stage_two(p));
    }
    fv_codegen_parameters(p->view, &p->parameters);
    return FV_OK;
}

/* The named sections and numbers a skeleton is filled with (the
 * warp-specialized kernels use 44). */
enum { SKELETON_FILL_CAPACITY = 48 };
typedef struct skeleton_fill {
    const char *names[SKELETON_FILL_CAPACITY];
    const char *sections[SKELETON_FILL_CAPACITY];
    char numbers[SKELETON_FILL_CAPACITY][16];
    int count;
    bool overflowed;            /* a section did not fit: the kernel is not emitted */
} skeleton_fill;

static void fill_text(skeleton_fill *fill, const char *name, const char *text)
{
    if (fill->count == SKELETON_FILL_CAPACITY) {
        fill->overflowed = true;
        return;
    }
    fill->names[fill->count] = name;
    fill->sections[fill->count++] = text;
}

static void fill_number(skeleton_fill *fill, const char *name, int value)
{
    /* past the capacity fill_text only records the overflow */
    fill_text(fill, name,
              fill->count < SKELETON_FILL_CAPACITY
                  ? fv_family_number(fill->numbers[fill->count], value)
                  : "");
}

static void fill_common(skeleton_fill *fill, const persistent_emit *p, const char *kernel_name)
{
    const fv_schedule_params *params = p->params;
    fill_text(fill, "KERNEL_NAME", kernel_name);
    fill_text(fill, "PARAMETERS", fv_text_str(&p->parameters));
    fill_number(fill, "BLOCK_X", params->block_x);
    fill_number(fill, "BLOCK_Y", params->block_y); /* row groups (warp-specialized: compute groups) */
    fill_number(fill, "LAUNCH_BLOCK_X", launch_block_x(params, p->kind));
    fill_number(fill, "SCRATCH_PER_ROW", p->scratch_per_row);
    fill_text(fill, "BEFORE_ROWS", fv_text_str(&p->before_rows));
    fill_text(fill, "ROW_START", fv_text_str(&p->row_start));
    fill_text(fill, "NEXT_SLOT", p->next_slot);
    fill_text(fill, "ROW_PROLOGUE", fv_text_str(&p->prologue));
    fill_text(fill, "EPILOGUE", fv_text_str(&p->epilogue));
    fill_text(fill, "PARTIALS", fv_text_str(&p->partials));
    fill_text(fill, "WRITE_PARTIALS", fv_text_str(&p->write_partials));
    fill_number(fill, "STAGE_X", params->extra[EXTRA_STAGE_X]);
    fill_number(fill, "STAGE_Y", params->extra[EXTRA_STAGE_Y]);
    fill_number(fill, "STAGE_VECTOR", params->extra[EXTRA_STAGE_VECTOR]);
    fill_text(fill, "STAGE_TWO", fv_text_str(&p->stage_two));
    fill_text(fill, "STAGE_SCRATCH", p->stage_scratch);
    fill_text(fill, "ROW_GROUP", row_group(params));
    fill_text(fill, "ROW_GROUPS", row_groups(params));
    fill_text(fill, "PARTIAL_GROUP", p->partial_group);
    fill_text(fill, "PARTIAL_GROUPS", p->partial_groups);
    bool combined = combine_partials(params, p->kind);
    fill_number(fill, "PARTIALS_PER_GROUP", partials_per_group(params, p->kind));
    fill_text(fill, "PARTIAL_IN_GROUP", combined ? "0" : "threadIdx.y");
}

static void fill_multiwave(skeleton_fill *fill, const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    fill_text(fill, "CLUSTER_HELPERS", clustered(params) ? fv_skeleton_cluster_exchange : "");
    fill_text(fill, "CLUSTER_SETUP", fv_text_str(&p->cluster_setup));
    fill_number(fill, "THREADS", params->block_x * params->block_y);
    fill_number(fill, "MIN_BLOCKS", params->extra[EXTRA_MIN_BLOCKS]);
    fill_number(fill, "VECTOR", params->vector);
    fill_number(fill, "BATCH", params->serial);
    fill_text(fill, "LOAD_ROW", fv_text_str(&p->load));
    fill_text(fill, "STAGES", fv_text_str(&p->stages));
}

static void fill_warp_specialized(skeleton_fill *fill, const persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    int stages = params->extra[EXTRA_WS_STAGES];
    fill_number(fill, "THREADS", launch_threads(params, p->kind));
    fill_number(fill, "GROUPS", params->block_y);
    fill_text(fill, "GROUP_OF_THREAD", p->group_of_thread);
    fill_text(fill, "PRODUCER_LEADER", p->producer_leader);
    fill_number(fill, "STAGES", stages);
    fill_number(fill, "SLOTS", stages / params->block_y);
    fill_number(fill, "UNROLL", params->extra[EXTRA_WS_UNROLL]);
    fill_number(fill, "ROW_ELEMENT_BYTES", (int)row_element_bytes(&p->buffers));
    fill_text(fill, "FETCH_ROW", fv_text_str(&p->fetch));
    fill_text(fill, "STAGES_CODE", fv_text_str(&p->stages));
    fill_text(fill, "LOAD_STEP", fv_text_str(&p->load));
    fill_text(fill, "STEP_VALUES_AHEAD", fv_text_str(&p->step_values_ahead));
    fill_text(fill, "STEP_VALUES", fv_text_str(&p->step_values));
    fill_text(fill, "GROUPED_ROWS", fv_text_str(&p->grouped_rows));
    fill_text(fill, "ROWS_PRAGMA", rows_pragma(params));
    fill_text(fill, "STAGE_RELEASE", stage_release(params));
    fill_number(fill, "PRODUCER_REGISTERS", params->extra[EXTRA_WS_PRODUCER_REGISTERS]);
    fill_number(fill, "COMPUTE_REGISTERS", params->extra[EXTRA_WS_COMPUTE_REGISTERS]);
    fill_number(fill, "START_REGISTERS", params->extra[EXTRA_WS_START_REGISTERS]);
}

/* The workspace's row groups (a partial row each, or one per row of the
 * group): the row groups of the rows, or the clusters that add their
 * blocks' partials together. */
static void set_partial_groups(persistent_emit *p)
{
    int partial_cluster = partial_cluster_blocks_of(p->params);
    if (partial_cluster == 1) {
        snprintf(p->partial_group, sizeof p->partial_group, "%s", row_group(p->params));
        snprintf(p->partial_groups, sizeof p->partial_groups, "%s", row_groups(p->params));
        return;
    }
    snprintf(p->partial_group, sizeof p->partial_group, "(blockIdx.x / %d)", partial_cluster);
    snprintf(p->partial_groups, sizeof p->partial_groups, "(gridDim.x / %d)", partial_cluster);
}

/* Warp-specialized: which group a thread is in, and which producer thread
 * issues the copies (producer_on_x). */
static void set_thread_roles(persistent_emit *p)
{
    const fv_schedule_params *params = p->params;
    if (producer_on_x(params, p->kind)) {
        snprintf(p->group_of_thread, sizeof p->group_of_thread,
                 "threadIdx.x < %d ? 0 : 1;  // the compute group, or 1: the producer",
                 params->block_x);
        snprintf(p->producer_leader, sizeof p->producer_leader, "threadIdx.x == %d",
                 params->block_x);
    } else {
        snprintf(p->group_of_thread, sizeof p->group_of_thread,
                 "threadIdx.y;  // a compute group, or %d: the producer", params->block_y);
        snprintf(p->producer_leader, sizeof p->producer_leader, "threadIdx.x == 0");
    }
}

static fv_status persistent_emit_kernel(const fv_segment_view *view,
                                        const fv_schedule_params *params, const char *kernel_name,
                                        fv_text *source, persistent_kind kind)
{
    persistent_emit p = {.kind = kind, .view = view, .params = params};
    if (row_slots(params) > 2)
        snprintf(p.next_slot, sizeof p.next_slot, "slot = slot == %d ? 0 : slot + 1;",
                 row_slots(params) - 1);
    else
        snprintf(p.next_slot, sizeof p.next_slot, "slot ^= 1;");
    set_partial_groups(&p);
    set_thread_roles(&p);
    fv_text stage_two = {0};
    fv_status status = emit_sections(&p);
    if (status == FV_OK) {
        skeleton_fill fill = {.count = 0};
        fill_common(&fill, &p, kernel_name);
        if (warp_specialized(kind))
            fill_warp_specialized(&fill, &p);
        else
            fill_multiwave(&fill, &p);
        /* the inner-outer second stage, filled first, then placed */
        if (forms[kind].inner_outer)
            status = fv_codegen_fill(fv_skeleton_inner_outer_stage_two, fill.names,
                                     fill.sections, fill.count, &stage_two);
        fill_text(&fill, "AFTER_ROWS", fv_text_str(&stage_two));
        if (status == FV_OK && fill.overflowed)
            status = fv_error_raise(FV_ERR_INTERNAL, __FILE__, __LINE__,
                                    "kernel %s has more than %d skeleton sections", kernel_name,
                                    SKELETON_FILL_CAPACITY);
        fv_family_kernel_head(forms[kind].family, params, source);
        if (status == FV_OK)
            status = fv_codegen_fill(forms[kind].skeleton, fill.names, fill.sections, fill.count,
                                     source);
    }
    fv_text_free(&stage_two);
    free_emit(&p);
    return status;
}

static fv_status inner_persistent_emit(const fv_segment_view *view,
                                       const fv_schedule_params *params, const char *kernel_name,
                                       fv_text *source)
{
    return persistent_emit_kernel(view, params, kernel_name, source, KIND_INNER);
}

static fv_status inner_outer_emit(const fv_segment_view *view, const fv_schedule_params *params,
                                  const char *kernel_name, fv_text *source)
{
    return persistent_emit_kernel(view, params, kernel_name, source, KIND_MULTIWAVE);
}

static fv_status ws_emit(const fv_segment_view *view, const fv_schedule_params *params,
                         const char *kernel_name, fv_text *source)
{
    return persistent_emit_kernel(view, params, kernel_name, source, KIND_WS);
}

static fv_status inner_tma_emit(const fv_segment_view *view, const fv_schedule_params *params,
                                const char *kernel_name, fv_text *source)
{
    return persistent_emit_kernel(view, params, kernel_name, source, KIND_INNER_TMA);
}

/* -------------------------------------------------------------- launch */

/* Grid, block, shared memory, and for the inner-outer kinds the workspace
 * (a partial row per block row or compute group and outer reduction, per
 * cluster where a cluster adds its partials together first) and a
 * cooperative launch for the grid sync.  The warp-specialized kinds add the
 * producer group as one more row of threads. */
static fv_status persistent_launch(const fv_segment_view *view, const fv_schedule_params *params,
                                   const fv_case *c, const fv_device *device,
                                   fv_launch_shape *shape, persistent_kind kind)
{
    const persistent_form *form = &forms[kind];
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(shape, 0, sizeof *shape);
    int64_t rows_per_block = params->block_y, cluster = launch_cluster_blocks(params);
    int64_t groups = (outer + rows_per_block - 1) / rows_per_block;
    if (partial_cluster_blocks_of(params) > 1) /* a cluster per `cluster` row groups */
        groups = (groups + cluster - 1) / cluster;
    if (groups > params->extra[EXTRA_GRID] / cluster)
        groups = params->extra[EXTRA_GRID] / cluster;
    shape->grid[0] = (int)((groups < 1 ? 1 : groups) * cluster);
    shape->cluster = cluster > 1 ? (int)cluster : 0;
    /* A one-wave grid the compiled kernel cannot keep resident (more
     * registers than estimated) would run its last blocks as a second wave:
     * RMS fwd bf16 16384 x 4095, 792 blocks for 6 per SM, compiled to 5 per
     * SM and ran 29% slower so on an H200.  Its rows are grid-strided, so
     * fewer blocks stay correct; on span chunks with the row constants at
     * the rows' shift, in multiples of the chunk (span_chunk_grid). */
    shape->resident = params->extra[EXTRA_GRID] <=
                      (int64_t)params->extra[EXTRA_PLANNED_BLOCKS] * device->sm_count;
    buffered_inputs buffers;
    find_buffered(view, &buffers);
    if (shift_per_block_of(params, &buffers))
        shape->grid_multiple = params->vector;
    shape->grid[1] = shape->grid[2] = 1;
    shape->block[0] = launch_block_x(params, kind);
    shape->block[1] = launch_threads(params, kind) / shape->block[0];
    shape->block[2] = 1;
    shape->dynamic_shared_bytes = params->extra[EXTRA_SHARED_BYTES];
    if (form->inner_outer) {
        persistent_analysis a;
        FV_TRY(analyze(view, &a));
        shape->workspace_bytes = (int64_t)a.outer_count * (shape->grid[0] / cluster) *
                                 partials_per_group(params, kind) * inner * 4;
        analysis_free(&a);
        shape->cooperative = true;
    }
    return FV_OK;
}

static fv_status inner_persistent_launch(const fv_segment_view *view,
                                         const fv_schedule_params *params, const fv_case *c,
                                         const fv_device *device, fv_launch_shape *shape)
{
    return persistent_launch(view, params, c, device, shape, KIND_INNER);
}

static fv_status inner_outer_launch(const fv_segment_view *view, const fv_schedule_params *params,
                                    const fv_case *c, const fv_device *device,
                                    fv_launch_shape *shape)
{
    return persistent_launch(view, params, c, device, shape, KIND_MULTIWAVE);
}

static fv_status ws_launch(const fv_segment_view *view, const fv_schedule_params *params,
                           const fv_case *c, const fv_device *device, fv_launch_shape *shape)
{
    return persistent_launch(view, params, c, device, shape, KIND_WS);
}

static fv_status inner_tma_launch(const fv_segment_view *view, const fv_schedule_params *params,
                                  const fv_case *c, const fv_device *device,
                                  fv_launch_shape *shape)
{
    return persistent_launch(view, params, c, device, shape, KIND_INNER_TMA);
}

/* fv_scheduler.relieve_registers of the multi-wave and forward families:
 * the row copy loop unrolled 4 at a time instead of wholly, the one form
 * with fewer registers live that these kernels have (copies whose 64-bit
 * addresses ptxas keeps live across the row's passes: fetch_unrolled_wholly).
 * False once taken, where a thread's batch is 4 or fewer, and where the
 * kernel reads its row constants from device memory in every pass: there
 * the general path was faster.  Where the form changes nothing (a loop
 * already unrolled 4 at a time) the plan sees the same source and sets the
 * family aside (fv_plan_relieve_registers).  On an H200 (bench/results/h200-2026-11-28.md,
 * session 32), one kernel so against the general path's 2-3: softmax fwd
 * 16384 x 32766 fp32 +40.4%, 16384 x 65534 bf16 / fp16 +9.3 / +12.8%; with
 * the weight read in every pass, LN / RMS fwd bf16 16384 x 65534 -5.6 /
 * -6.6% (4096 x 65534, 16 bits: -5.3..-6.4%), RMS fwd fp32 16384 x 32766
 * +1.2%. */
static bool persistent_relieve_registers(const fv_segment_view *view, fv_schedule_params *params,
                                         char *what, size_t what_size)
{
    buffered_inputs buffers;
    find_buffered(view, &buffers);
    if (params->extra[EXTRA_FETCH_UNROLLED_PARTLY] || params->serial <= 4 ||
        reads_row_constants_every_pass(&buffers, params->extra[EXTRA_CACHED] != 0,
                                       params->extra[EXTRA_WEIGHT_FLOATS] != 0))
        return false;
    params->extra[EXTRA_FETCH_UNROLLED_PARTLY] = 1;
    snprintf(what, what_size, "its row copy loop unrolled 4 at a time, not wholly");
    return true;
}

/* Bounds a kernel compiled to `registers` per thread to the blocks per SM
 * its grid was sized for (EXTRA_PLANNED_BLOCKS) where those registers keep
 * fewer, on devices of fast memory per SM; says so in `what`.  False
 * (params unchanged) where the kernel keeps its planned blocks or is
 * already bounded to them. */
static bool bound_to_planned_blocks(fv_schedule_params *params, const fv_device *device,
                                    int registers, char *what, size_t what_size)
{
    int planned = params->extra[EXTRA_PLANNED_BLOCKS];
    int threads = params->block_x * params->block_y;
    if (!fast_memory_per_sm(device) || planned <= params->extra[EXTRA_MIN_BLOCKS] ||
        registers <= 0 || threads <= 0)
        return false;
    int fit = blocks_by_registers(device, registers, threads);
    if (fit >= planned)
        return false;
    params->extra[EXTRA_MIN_BLOCKS] = planned;
    snprintf(what, what_size,
             "bounded to the %d blocks per SM planned (__launch_bounds__): unbounded it took "
             "%d registers, which fit %d", planned, registers, fit);
    return true;
}

/* fv_scheduler.hold_occupancy of the forward family: a kernel holding its
 * recomputed values in registers (hold_recomputed_values, whose estimate
 * falls short) that NVRTC compiled to more registers than fit the blocks
 * per SM the plan sized its grid for is bounded to them
 * (__launch_bounds__(threads, blocks): ptxas then holds its registers to
 * their share), on devices of fast memory per SM, where the multi-wave
 * kernels are bounded too (bounded_blocks_per_sm; the H100 ran those slower
 * bounded, and these are untimed there).  H200, N = 16384 (bench/results/
 * h200-2026-11-29.md, session 36): softmax fwd 16-bit x 12288, 192
 * registers unbounded (2 blocks of 128 threads per SM where 3 were
 * planned), 168 bounded: +26.2 / +27.1% (bf16 66.6 -> 84.5% of copy); x
 * 8192, 142 -> 127 registers (3 -> 4 blocks): +6.7 / +9.6%.  RMS fwd 16-bit
 * x 4095, which holds no values (95 -> 54 registers, 5 -> 6 blocks), ran
 * 4.3 / 4.8% slower bounded and stays as ptxas compiles it. */
static bool persistent_hold_occupancy(const fv_segment_view *view, fv_schedule_params *params,
                                      const fv_device *device, int registers, char *what,
                                      size_t what_size)
{
    (void)view;
    if (params->extra[EXTRA_HELD_VALUES] == 0)
        return false;
    return bound_to_planned_blocks(params, device, registers, what, what_size);
}

/* fv_scheduler.hold_occupancy of the multi-wave family: a kernel on span
 * chunks (compute_on_span_chunks), whose register estimate falls far short
 * (LN bwd bf16 16384 x 1987: ~144 estimated, 246 compiled), is bounded to
 * the blocks per SM its grid was sized for, as persistent_hold_occupancy
 * bounds the forward kernels; where it then spills it stays unbounded. */
static bool inner_outer_hold_occupancy(const fv_segment_view *view, fv_schedule_params *params,
                                       const fv_device *device, int registers, char *what,
                                       size_t what_size)
{
    (void)view;
    if (params->extra[EXTRA_SPAN_LANES] == 0)
        return false;
    return bound_to_planned_blocks(params, device, registers, what, what_size);
}

const fv_scheduler fv_sched_inner_persistent = {
    .name = "inner_persistent",
    .approach = FV_APPROACH_MULTIWAVE,
    .accepts = inner_persistent_accepts,
    .choose = inner_persistent_choose,
    .emit = inner_persistent_emit,
    .launch = inner_persistent_launch,
    .relieve_registers = persistent_relieve_registers,
    .hold_occupancy = persistent_hold_occupancy,
};

const fv_scheduler fv_sched_inner_outer_persistent = {
    .name = "inner_outer_persistent",
    .approach = FV_APPROACH_MULTIWAVE,
    .accepts = inner_outer_accepts,
    .choose = inner_outer_choose,
    .emit = inner_outer_emit,
    .launch = inner_outer_launch,
    .relieve_registers = persistent_relieve_registers,
    .hold_occupancy = inner_outer_hold_occupancy,
};

const fv_scheduler fv_sched_inner_outer_ws = {
    .name = "inner_outer_ws",
    .approach = FV_APPROACH_WS,
    .accepts = inner_outer_accepts,
    .selected = ws_selected,
    .choose = ws_choose,
    .emit = ws_emit,
    .launch = ws_launch,
};

const fv_scheduler fv_sched_inner_tma = {
    .name = "inner_tma",
    .approach = FV_APPROACH_WS,
    .accepts = inner_persistent_accepts,
    .selected = inner_tma_selected,
    .choose = inner_tma_choose,
    .emit = inner_tma_emit,
    .launch = inner_tma_launch,
};
