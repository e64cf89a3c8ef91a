/* inner_multipass.c: the inner-multipass family: forward norms and softmax
 * whose rows no persistent budget holds (e.g. softmax over a 128256-word
 * vocabulary).  One kernel instead of the general path's two or three: a
 * block per row walks the row once per reduction level (twice for a
 * var_mean; softmax's maximum and sum of exponentials together, online) and
 * once more for the outputs, reading the inputs from device memory in each
 * pass.  The passes after the first are meant to find the row in L2, so that
 * DRAM sees each input read once where the general path reads it in every
 * kernel; the outputs are streaming stores, evicted from L2 before the
 * inputs' lines, and the passes alternate direction, each starting on the
 * lines the one before read last.  Where a row per SM outgrows the L2 (fp32 x
 * 131072 on an H200: 66 MiB against 50), a cluster of blocks shares each row
 * (choose_cluster), except in softmax's online pass.  The segmenter asks
 * this family after inner_persistent, so it takes the rows that family set
 * aside for their length or for spilling in every form; it declines shorter
 * rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/family.h"

enum {
    MAX_REDUCTIONS = 16,
    MAX_LEVELS = 8,
    /* params->extra: */
    EXTRA_UNROLL = 0,          /* iterations of a pass unrolled (loads in flight per thread) */
    EXTRA_SPANS = 1,           /* rows walked on the aligned chunks of their span */
    EXTRA_CLUSTER = 2,         /* blocks per thread-block cluster sharing each row, a slice
                                  each; 1: a row per block */
    PASS_UNROLL = 4,
    MAX_CLUSTER = 8,           /* the portable limit of blocks per thread-block cluster */
};

/* The segment's reductions, each with its level: 1 + the highest level its
 * input depends on (softmax: max 1, sum 2); `level` per value id. */
typedef struct multipass_analysis {
    const fv_op *reductions[MAX_REDUCTIONS];
    int reduction_level[MAX_REDUCTIONS];
    int count, levels;
    int passes;  /* over each row: one per level, two for a level with a var_mean, one for
                    a softmax pair of levels (online), one more for the outputs */
    bool online[MAX_REDUCTIONS + 2];  /* levels L and L + 1 are softmax's max and sum: one
                                         pass (levels go up to the reductions' count) */
    int online_pairs;
    bool has_var_mean;
    int *level;
} multipass_analysis;

/* The only reduction of `level`, or NULL when it has none or several. */
static const fv_op *only_reduction(const multipass_analysis *a, int level)
{
    const fv_op *found = NULL;
    for (int r = 0; r < a->count; r++) {
        if (a->reduction_level[r] != level)
            continue;
        if (found != NULL)
            return NULL;
        found = a->reductions[r];
    }
    return found;
}

/* The op that defines `value` if it is of `kind`, else NULL. */
static const fv_op *defined_by(const fv_fusion *fusion, int32_t value, fv_op_kind kind)
{
    int32_t producer = fusion->values[value].producer;
    if (producer < 0 || fusion->ops[producer].kind != kind)
        return NULL;
    return &fusion->ops[producer];
}

/* `value` with the broadcasts that define it looked through. */
static int32_t before_broadcasts(const fv_fusion *fusion, int32_t value)
{
    for (;;) {
        const fv_op *op = defined_by(fusion, value, FV_OP_BROADCAST_IN_DIM);
        if (op == NULL)
            op = defined_by(fusion, value, FV_OP_BROADCAST);
        if (op == NULL)
            return value;
        value = op->inputs[0];
    }
}

/* Marks the levels whose only reduction is max(x) and whose next level's
 * only reduction is sum(exp(x - max)): softmax's two, which one pass
 * computes online (a running maximum rescales the running sum). */
static void find_online_pairs(const fv_segment_view *view, multipass_analysis *a)
{
    const fv_fusion *fusion = view->fusion;
    for (int level = 1; level < a->levels; level++) {
        const fv_op *maximum = only_reduction(a, level);
        const fv_op *sum = only_reduction(a, level + 1);
        if (maximum == NULL || sum == NULL || maximum->kind != FV_OP_MAX ||
            sum->kind != FV_OP_SUM || a->online[level - 1])
            continue;
        const fv_op *exponential = defined_by(fusion, sum->inputs[0], FV_OP_EXP);
        const fv_op *shifted =
            exponential ? defined_by(fusion, exponential->inputs[0], FV_OP_SUB) : NULL;
        a->online[level] = shifted != NULL && shifted->inputs[0] == maximum->inputs[0] &&
                           before_broadcasts(fusion, shifted->inputs[1]) == maximum->outputs[0];
    }
}

static fv_status analyze(const fv_segment_view *view, multipass_analysis *a)
{
    memset(a, 0, sizeof *a);
    const fv_fusion *fusion = view->fusion;
    a->level = calloc((size_t)fusion->value_count + 1, sizeof(int));
    if (a->level == NULL)
        FV_FAIL(FV_ERR_NOMEM, "out of memory analysing a segment");
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        int level = 0;
        for (int k = 0; k < op->input_count; k++)
            level = a->level[op->inputs[k]] > level ? a->level[op->inputs[k]] : level;
        if (fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
            !fv_ir_is_trivial_reduction(fusion, op) && a->count < MAX_REDUCTIONS) {
            level++;
            a->reduction_level[a->count] = level;
            a->reductions[a->count++] = op;
            a->levels = level > a->levels ? level : a->levels;
        }
        for (int k = 0; k < op->output_count; k++)
            a->level[op->outputs[k]] = level;
    }
    find_online_pairs(view, a);
    bool var_mean_at[MAX_REDUCTIONS + 2] = {false};
    for (int r = 0; r < a->count; r++)
        var_mean_at[a->reduction_level[r]] |= a->reductions[r]->kind == FV_OP_VAR_MEAN;
    a->passes = a->levels + 1;
    for (int level = 1; level <= a->levels; level++) {
        a->online_pairs += a->online[level];
        a->has_var_mean = a->has_var_mean || var_mean_at[level];
        a->passes += var_mean_at[level] - a->online[level];
    }
    return FV_OK;
}

/* ----------------------------------------------------------- acceptance */

/* The tensor inputs along the row: those along both axes (count and bytes
 * per element, summed) and the row constants (a weight or bias [H]). */
typedef struct row_inputs {
    int along_both, row_constants;
    int64_t element_bytes;
} row_inputs;

static row_inputs count_row_inputs(const fv_segment_view *view)
{
    const fv_fusion *fusion = view->fusion;
    row_inputs counted = {0, 0, 0};
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        if (fusion->values[v].kind != FV_VALUE_TENSOR || !fv_codegen_spans_inner(view, v))
            continue;
        if (!fv_codegen_spans_outer(view, v)) {
            counted.row_constants++;
            continue;
        }
        counted.along_both++;
        counted.element_bytes += (int64_t)fv_dtype_size(fusion->values[v].dtype);
    }
    return counted;
}

static bool check_segment(const fv_segment_view *view, const multipass_analysis *a, char *why,
                          size_t size)
{
    if (!fv_family_common_checks(view, why, size))
        return false;
    if (view->axis_count != 2)
        return fv_family_reject(why, size, "inner_multipass: needs an [outer, inner] segment");
    if (a->count == 0)
        return fv_family_reject(why, size, "inner_multipass: no reduction");
    if (a->count >= MAX_REDUCTIONS || a->levels > MAX_LEVELS)
        return fv_family_reject(why, size, "inner_multipass: more than %d reductions or %d levels",
                                MAX_REDUCTIONS - 1, MAX_LEVELS);
    if (view->reduced_axes != 1 << 1)
        return fv_family_reject(why, size, "inner_multipass: a reduction is not over the inner axis");
    const fv_fusion *fusion = view->fusion;
    bool normalizes = false;
    for (int32_t v = 0; v < fusion->value_count; v++)
        normalizes = normalizes || (a->level[v] > 0 && fv_codegen_spans_inner(view, v));
    if (!normalizes)
        return fv_family_reject(why, size,
                                "inner_multipass: no reduced value is used along the reduced axis");
    for (int32_t v = 0; v < fusion->value_count; v++) {
        const fv_value *value = &fusion->values[v];
        if (value->kind != FV_VALUE_TENSOR || !fv_codegen_spans_inner(view, v))
            continue;
        bool boundary = value->input_index >= 0, output = false;
        for (int32_t o = 0; o < fusion->output_count; o++)
            output = output || fusion->outputs[o] == v;
        if ((boundary || output) && fv_codegen_spans_outer(view, v) &&
            value->dtype != FV_BF16 && value->dtype != FV_F16 && value->dtype != FV_F32)
            return fv_family_reject(why, size, "inner_multipass: tensors along both axes must be "
                                               "bf16, fp16 or fp32");
        if (output && !fv_codegen_spans_outer(view, v))
            return fv_family_reject(why, size, "inner_multipass: an output along the row only "
                                               "(every block would write it)");
    }
    int along_both = count_row_inputs(view).along_both;
    if (along_both > 1)
        return fv_family_reject(why, size,
                                "inner_multipass: %d inputs along both axes (one at most: a "
                                "backward's dy and x are read again by its outer reduction, "
                                "and the general path's split measured faster)",
                                along_both);
    for (int r = 0; r < a->count; r++)
        for (int k = 0; k < a->reductions[r]->output_count; k++)
            if (fusion->values[a->reductions[r]->outputs[k]].dtype != FV_F32)
                return fv_family_reject(why, size,
                                        "inner_multipass: reductions must accumulate in fp32");
    return true;
}

static bool multipass_accepts(const fv_segment_view *view, char *why, size_t size)
{
    multipass_analysis a;
    if (analyze(view, &a) != FV_OK)
        return fv_family_reject(why, size, "out of memory");
    bool ok = check_segment(view, &a, why, size);
    free(a.level);
    return ok;
}

/* ------------------------------------------------------------ choosing */


/* Blocks per cluster sharing each row, a slice each.  A row per block
 * unless a row per SM outgrows the L2; then a cluster takes each row, the
 * fewest blocks (2, 4 or 8) that bring the rows in flight to half the L2,
 * while each slice still gives every thread a vector.  Even rows in flight
 * under the L2 lose most of their lines before the later passes (ncu,
 * softmax bf16 4096 x 128256 on an H200, 33 MiB against 50: 8% of the reads
 * hit L2, 1.64 GB read for 1.05), and clusters bring the reads down to the
 * input's size; but each block then pays a block reduction and a cluster
 * exchange per level for a fraction of the bytes, and a cluster of 4 left
 * 12 of 132 SMs idle.  Measured on an H200 (4096 rows, against a row per
 * block; bench/results/h200-2026-11-29.md, session 34): RMS fwd fp32 x
 * 131072 +13.3% in clusters of 4, layer norm +1.6% there (one kernel for the
 * general path's two); rows that fit the L2 gained or lost a few percent by
 * shape and cluster size (bf16 x 65534 lost 9-49%).  Softmax's online pass,
 * near its instruction issue limit, keeps a row per block: in clusters it
 * lost on 5 of its 6 shapes at every size (6-151% more time), and gained
 * 3.4% only at fp32 x 128257 in clusters of 2.  Clusters need compute
 * capability 9.0. */
static int choose_cluster(const fv_device *device, int64_t row_bytes, int64_t row_vectors,
                          int block_x, bool online)
{
    if (device->major < 9 || online || device->sm_count * row_bytes <= device->l2_bytes)
        return 1;
    int cluster = 1;
    while (cluster < MAX_CLUSTER &&
           (int64_t)(device->sm_count / cluster) * row_bytes * 2 > device->l2_bytes &&
           (row_vectors + 2 * cluster - 1) / (2 * cluster) >= block_x)
        cluster *= 2;
    return cluster;
}

/* One block of 1024 threads per SM: the most threads per SM at the fewest
 * rows in flight (two blocks of 512 took 1-26% more time on an H200).  A row
 * whose length the 16-byte vector does not divide is walked on its span's
 * chunks, unless the fusion has row constants (a weight [H]): their chunks
 * are not aligned, and lane by lane loads of them took 15-52% more time than
 * the shorter vectors that divide the row. */
static fv_status multipass_choose(const fv_segment_view *view, const fv_case *c,
                                  const fv_device *device, fv_schedule_params *params)
{
    multipass_analysis a;
    FV_TRY(analyze(view, &a));
    int levels = a.levels, passes = a.passes, online = a.online_pairs;
    bool has_var_mean = a.has_var_mean;
    free(a.level);
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(params, 0, sizeof *params);
    /* the widest 16-byte vector; a row whose length it does not divide is
     * walked on its span's chunks */
    int full_vector = fv_family_vector_width(view, 16);
    params->vector = fv_family_vector_width(view, inner);
    row_inputs inputs = count_row_inputs(view);
    bool spans = params->vector < full_vector && inputs.row_constants == 0;
    if (spans)
        params->vector = full_vector;
    int64_t row_bytes = inner * inputs.element_bytes;  /* what one row's passes read */
    int block_x = device->max_threads_per_block < 1024 ? device->max_threads_per_block : 1024;
    if (inner < (int64_t)block_x * params->vector)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "rows of %lld elements would leave threads of a %d-thread block idle in every "
                "pass (this family is for rows no persistent budget holds)",
                (long long)inner, block_x);
    int cluster = choose_cluster(device, row_bytes, inner / params->vector, block_x, online > 0);
    int64_t rows_in_flight = device->sm_count / cluster;
    /* a row per SM fits the L2 by choose_cluster's rule; clusters aim at half of it */
    int64_t l2_share = device->l2_bytes / (cluster > 1 ? 2 : 1);
    char sharing[96] = "a row per block";
    if (cluster > 1)
        snprintf(sharing, sizeof sharing, "a row per cluster of %d blocks", cluster);
    if (has_var_mean && rows_in_flight * row_bytes > l2_share)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "rows in flight (%lld MiB, %s) outgrow %sthe L2 (%lld MiB): var_mean's two passes "
                "and the outputs' would read each row from device memory three times, the "
                "general path twice",
                (long long)((rows_in_flight * row_bytes) >> 20), sharing,
                cluster > 1 ? "half " : "", (long long)(device->l2_bytes >> 20));
    params->block_x = block_x;
    params->block_y = 1;
    params->grid_limit = device->sm_count / cluster * cluster;
    params->extra[EXTRA_UNROLL] = PASS_UNROLL;
    params->extra[EXTRA_SPANS] = spans;
    params->extra[EXTRA_CLUSTER] = cluster;
    snprintf(params->description, sizeof params->description,
             "inner multipass: %s of %d threads%s, one block per SM, %d-element "
             "vectors%s, %d passes over each row (%d reduction level%s%s, then the outputs); "
             "rows in flight %lld MiB (%lld x %d KiB read per pass) against %lld MiB of L2",
             sharing, params->block_x, cluster > 1 ? " (a slice of the row each)" : "",
             params->vector,
             spans ? " on the aligned chunks of each row's span" : "", passes, levels,
             levels == 1 ? "" : "s",
             online ? ", softmax's maximum and sum in one online pass" : "",
             (long long)((rows_in_flight * row_bytes) >> 20),
             (long long)rows_in_flight, (int)((row_bytes + 1023) / 1024),
             (long long)(device->l2_bytes >> 20));
    return FV_OK;
}

/* ------------------------------------------------------------ emitting */

typedef struct multipass_sections {
    fv_text row_start, prologue, passes, epilogue, parameters, cluster_setup;
} multipass_sections;

static bool clustered(const fv_schedule_params *params)
{
    return params->extra[EXTRA_CLUSTER] > 1;
}

/* The vectors a pass's loop walks: the row's (the block's slice of it, in
 * clusters), or on a span's chunks those of them wholly in the row
 * (`walk_begin`, `walk_end`; the row's partial end chunks come after the
 * loop, emit_end_chunks). */
static void walk_bounds(const fv_emitter *e, const fv_schedule_params *params,
                        const char **begin, const char **end)
{
    bool slices = clustered(params);
    *begin = e->span_lanes ? "walk_begin" : slices ? "slice_begin" : NULL;
    *end = e->span_lanes ? "walk_end" : slices ? "slice_end" : "row_vectors";
}

/* The vector's first column: on a span's chunks, negative before the row. */
static void emit_column(fv_emitter *e, bool spans)
{
    if (spans)
        fv_codegen_line(e, "const long long column = (first_chunk + vector_index) * %d - "
                           "row_start;  // negative before the row", e->vector);
    else
        fv_codegen_line(e, "const long long column = vector_index * %d;", e->vector);
}

/* Opens a loop over the thread's vectors (walk_bounds): forward on even
 * passes, backward on odd ones; `unroll` iterations at a time. */
static void open_pass(fv_emitter *e, int pass, const fv_schedule_params *params)
{
    int block_x = params->block_x, unroll = params->extra[EXTRA_UNROLL];
    const char *begin, *end;
    walk_bounds(e, params, &begin, &end);
    if (unroll > 1)
        fv_codegen_line(e, "#pragma unroll %d", unroll);
    if (pass % 2 == 0)
        fv_codegen_line(e, "for (long long vector_index = %s%sthreadIdx.x; vector_index < "
                           "%s; vector_index += %d) {", begin ? begin : "", begin ? " + " : "",
                        end, block_x);
    else
        fv_codegen_line(e, "for (long long vector_index = %s - 1 - threadIdx.x; "
                           "vector_index >= %s; vector_index -= %d) {",
                        end, begin ? begin : "0", block_x);
    e->indent += 4;
    emit_column(e, e->span_lanes);
}

static void close_pass(fv_emitter *e)
{
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

/* The body of a pass for the thread's vector at `column`, emitted by a
 * pass's own function with its context. */
typedef void (*pass_body)(fv_emitter *e, const void *context);

/* On a span's chunks: the row's first and last chunk where they are not
 * wholly in the row, lane by lane (lanes outside the row masked), by
 * threads 0 and 1 of the block whose slice holds them. */
static void emit_end_chunks(fv_emitter *e, const fv_schedule_params *params, pass_body body,
                            const void *context)
{
    fv_codegen_line(e, "if (threadIdx.x < 2 && threadIdx.x < row_vectors) {  "
                       "// the row's end chunks, if partial: lane by lane");
    e->indent += 4;
    fv_codegen_line(e, "const long long vector_index = threadIdx.x == 0 ? 0 : row_vectors - 1;");
    emit_column(e, true);
    fv_codegen_line(e, "if (!(column >= 0 && column + %d <= inner)%s) {", e->vector,
                    clustered(params) ? " && vector_index >= slice_begin && vector_index < slice_end"
                                      : "");
    e->indent += 4;
    body(e, context);
    e->indent -= 4;
    fv_codegen_line(e, "}");
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

/* Emits a pass over the row: the loop (open_pass) around its body, with
 * the values the body declares forgotten after it.  On a span's chunks the
 * loop walks the chunks wholly in the row, with 16-byte vector loads and
 * stores and no lane masks, and the row's partial end chunks follow it
 * (emit_end_chunks): no mask on every lane, and no branch in the loop
 * between the two forms, which would keep the unrolled iterations' loads
 * from being issued together. */
static void emit_pass(fv_emitter *e, int pass, const fv_schedule_params *params,
                      pass_body body, const void *context)
{
    bool spans = e->span_lanes;
    open_pass(e, pass, params);
    bool *before = fv_codegen_save(e);
    e->span_lanes = false;
    body(e, context);
    e->span_lanes = spans;
    fv_codegen_restore(e, before);
    close_pass(e);
    if (!spans)
        return;
    before = fv_codegen_save(e);
    emit_end_chunks(e, params, body, context);
    fv_codegen_restore(e, before);
}

/* The values every pass and the epilogue need (reduction inputs, outputs
 * and what they depend on), in `needed`. */
static void mark_needed(const fv_segment_view *view, const multipass_analysis *a, bool *needed)
{
    const fv_fusion *fusion = view->fusion;
    memset(needed, 0, (size_t)fusion->value_count + 1);
    for (int r = 0; r < a->count; r++)
        needed[a->reductions[r]->inputs[0]] = true;
    for (int32_t o = 0; o < fusion->output_count; o++)
        needed[fusion->outputs[o]] = true;
    fv_family_needed_closure(view, needed);
}

/* Row values (one per row, not along it) of `level` that the kernel needs:
 * computed once per row, before the passes (level 0) or after the
 * reduction of their level. */
static void emit_row_values(fv_emitter *e, const multipass_analysis *a, const bool *needed,
                            bool *targets, int level)
{
    const fv_fusion *fusion = e->view->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++)
        targets[v] = needed[v] && fusion->values[v].kind == FV_VALUE_TENSOR &&
                     !fv_codegen_spans_inner(e->view, v) && a->level[v] == level;
    fv_codegen_compute(e, targets, (fv_emit_index){"row", "0"});
}

/* The reductions of one level, each with its accumulator's number. */
typedef struct level_reductions {
    const fv_op *ops[MAX_REDUCTIONS];
    int number[MAX_REDUCTIONS];
    int count;
    bool has_var_mean;
} level_reductions;

static void declare_accumulators(fv_emitter *e, const level_reductions *level)
{
    for (int r = 0; r < level->count; r++) {
        if (level->ops[r]->kind == FV_OP_VAR_MEAN)
            fv_codegen_line(e, "float accumulator%d = 0.0f;  // var_mean: the row's sum",
                            level->number[r]);
        else
            fv_family_emit_accumulators(e, &level->ops[r], 1, level->number[r]);
    }
}

/* A level pass's body: the inputs of the level's reductions (of its
 * var_means only, for their squares pass), computed at `column`. */
typedef struct level_pass {
    const level_reductions *level;
    bool *targets;
} level_pass;

static void compute_level_inputs(fv_emitter *e, const level_pass *p, bool var_means_only)
{
    memset(p->targets, 0, (size_t)e->view->fusion->value_count + 1);
    for (int r = 0; r < p->level->count; r++)
        if (!var_means_only || p->level->ops[r]->kind == FV_OP_VAR_MEAN)
            p->targets[p->level->ops[r]->inputs[0]] = true;
    fv_codegen_compute(e, p->targets, (fv_emit_index){"row", "column"});
}

/* The first pass of a level: its reduction inputs folded into their
 * accumulators (a var_mean's into its sum). */
static void emit_accumulate_body(fv_emitter *e, const void *context)
{
    const level_pass *p = context;
    const level_reductions *level = p->level;
    compute_level_inputs(e, p, false);
    for (int r = 0; r < level->count; r++) {
        if (level->ops[r]->kind != FV_OP_VAR_MEAN) {
            fv_family_emit_accumulate(e, &level->ops[r], 1, level->number[r]);
            continue;
        }
        char input[64];
        fv_codegen_value(e, level->ops[r]->inputs[0], "lane", input, sizeof input);
        const char *indent = fv_family_open_lane_loop(e);
        fv_codegen_line(e, "%saccumulator%d += %s;", indent, level->number[r], input);
    }
}

/* var_mean's squares pass: each lane's squared deviation from the mean. */
static void emit_squares_body(fv_emitter *e, const void *context)
{
    const level_pass *p = context;
    const level_reductions *level = p->level;
    compute_level_inputs(e, p, true);
    for (int r = 0; r < level->count; r++) {
        if (level->ops[r]->kind != FV_OP_VAR_MEAN)
            continue;
        char input[64];
        fv_codegen_value(e, level->ops[r]->inputs[0], "lane", input, sizeof input);
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane) {", e->vector);
        const char *mask = e->span_lanes ? "fv_in_row(column + lane, inner) ? " : "";
        fv_codegen_line(e, "    const float deviation = %s%s - mean%d%s;", mask, input,
                        level->number[r], e->span_lanes ? " : 0.0f" : "");
        fv_codegen_line(e, "    squares%d += deviation * deviation;", level->number[r]);
        fv_codegen_line(e, "}");
    }
}

/* var_mean's second pass: the squared deviations from the row's mean (the
 * persistent kernels' two-pass variance; no division per element, unlike
 * Welford's update, whose slow path spills under 64 registers). */
static void emit_squares_pass(fv_emitter *e, const level_reductions *level, bool *targets,
                              int pass, const fv_schedule_params *params)
{
    for (int r = 0; r < level->count; r++)
        if (level->ops[r]->kind == FV_OP_VAR_MEAN)
            fv_codegen_line(e, "float squares%d = 0.0f;  // var_mean: squared deviations",
                            level->number[r]);
    const level_pass body = {level, targets};
    emit_pass(e, pass, params, emit_squares_body, &body);
    for (int r = 0; r < level->count; r++) {
        const fv_op *op = level->ops[r];
        if (op->kind != FV_OP_VAR_MEAN)
            continue;
        int n = level->number[r];
        char expression[128];
        snprintf(expression, sizeof expression, "squares%d", n);
        fv_family_emit_row_total(e, expression, false, params->block_x,
                                 params->extra[EXTRA_CLUSTER]);
        snprintf(expression, sizeof expression, "squares%d / ((float)inner - %lld.0f)", n,
                 (long long)op->correction);
        fv_codegen_declare(e, op->outputs[0], expression);
        snprintf(expression, sizeof expression, "mean%d", n);
        fv_codegen_declare(e, op->outputs[1], expression);
    }
}

/* One pass per level (two with a var_mean): the level's reduction inputs
 * along the row, folded into accumulators and combined over the block, then
 * the level's row values.  Returns the number of passes so far. */
static int emit_level(fv_emitter *e, const multipass_analysis *a, const bool *needed,
                      bool *targets, int level_number, int pass, const fv_schedule_params *params)
{
    level_reductions level = {.count = 0};
    for (int r = 0; r < a->count; r++)
        if (a->reduction_level[r] == level_number) {
            level.number[level.count] = r;
            level.has_var_mean = level.has_var_mean || a->reductions[r]->kind == FV_OP_VAR_MEAN;
            level.ops[level.count++] = a->reductions[r];
        }
    fv_codegen_line(e, "// pass %d: reduction level %d", pass + 1, level_number);
    declare_accumulators(e, &level);
    const level_pass body = {&level, targets};
    emit_pass(e, pass, params, emit_accumulate_body, &body);
    for (int r = 0; r < level.count; r++) {
        int n = level.number[r];
        if (level.ops[r]->kind != FV_OP_VAR_MEAN) {
            fv_family_emit_row_reduce(e, &level.ops[r], 1, n, params->block_x,
                                      params->extra[EXTRA_CLUSTER]);
            continue;
        }
        if (clustered(params)) {
            char accumulator[32];
            snprintf(accumulator, sizeof accumulator, "accumulator%d", n);
            fv_family_emit_row_total(e, accumulator, false, params->block_x, 1);
            fv_codegen_line(e, "const float mean%d = fv_cluster_total<%d>(accumulator%d, "
                               "cluster_exchange, cluster_arrived, exchange_phase) / (float)inner;",
                            n, params->extra[EXTRA_CLUSTER], n);
            continue;
        }
        fv_codegen_line(e, "const float mean%d = fv_row_sum<%d>(accumulator%d, reduction_scratch) "
                           "/ (float)inner;", n, params->block_x, n);
    }
    pass++;
    if (level.has_var_mean) {
        fv_codegen_line(e, "// pass %d: reduction level %d, squared deviations", pass + 1,
                        level_number);
        emit_squares_pass(e, &level, targets, pass, params);
        pass++;
    }
    emit_row_values(e, a, needed, targets, level_number);
    return pass;
}

/* The online pass's body: the chunk's maximum, the sum rescaled when it
 * raises the running maximum, then the chunk's exponentials added. */
typedef struct online_pass {
    const fv_op *maximum;
    int m, s;  /* the accumulators' numbers */
    bool *targets;
} online_pass;

static void emit_online_body(fv_emitter *e, const void *context)
{
    const online_pass *p = context;
    int m = p->m, s = p->s;
    memset(p->targets, 0, (size_t)e->view->fusion->value_count + 1);
    p->targets[p->maximum->inputs[0]] = true;
    fv_codegen_compute(e, p->targets, (fv_emit_index){"row", "column"});
    char input[64];
    fv_codegen_value(e, p->maximum->inputs[0], "lane", input, sizeof input);
    fv_codegen_line(e, "float chunk_maximum = accumulator%d;", m);
    const char *indent = fv_family_open_lane_loop(e);
    fv_codegen_line(e, "%schunk_maximum = fv_maximum(chunk_maximum, %s);", indent, input);
    fv_codegen_line(e, "if (chunk_maximum != accumulator%d) {  // rescale the sum", m);
    const char *exp_function = fv_codegen_exp_function(e->view->fusion);
    fv_codegen_line(e, "    accumulator%d *= %s(accumulator%d - chunk_maximum);", s, exp_function, m);
    fv_codegen_line(e, "    accumulator%d = chunk_maximum;", m);
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "if (accumulator%d != -INFINITY) {  // else every element so far is -inf", m);
    e->indent += 4;
    indent = fv_family_open_lane_loop(e);
    fv_codegen_line(e, "%saccumulator%d += %s(%s - accumulator%d);", indent, s, exp_function, input, m);
    e->indent -= 4;
    fv_codegen_line(e, "}");
}

/* Softmax's max and sum(exp(x - max)) (levels `level` and `level + 1`) in
 * one pass: each thread keeps a running maximum and the sum of exponentials
 * at it, rescaling the sum when a chunk raises the maximum; the block then
 * merges the pairs (fv_row_online_max_sum).  Returns the passes so far. */
static int emit_online_levels(fv_emitter *e, const multipass_analysis *a, const bool *needed,
                              bool *targets, int level, int pass, const fv_schedule_params *params)
{
    const fv_op *maximum = only_reduction(a, level);
    const fv_op *sum = only_reduction(a, level + 1);
    int m = 0, s = 0;
    for (int r = 0; r < a->count; r++) {
        m = a->reductions[r] == maximum ? r : m;
        s = a->reductions[r] == sum ? r : s;
    }
    fv_codegen_line(e, "// pass %d: reduction levels %d and %d online, the maximum and the sum of "
                       "exponentials at the running maximum", pass + 1, level, level + 1);
    fv_codegen_line(e, "float accumulator%d = -INFINITY;  // max", m);
    fv_codegen_line(e, "float accumulator%d = 0.0f;  // sum of exp(x - accumulator%d)", s, m);
    const online_pass body = {maximum, m, s, targets};
    emit_pass(e, pass, params, emit_online_body, &body);
    fv_codegen_line(e, "fv_row_online_max_sum<%d>(accumulator%d, accumulator%d, reduction_scratch);",
                    params->block_x, m, s);
    char name[32];
    snprintf(name, sizeof name, "accumulator%d", m);
    fv_codegen_declare(e, maximum->outputs[0], name);
    snprintf(name, sizeof name, "accumulator%d", s);
    fv_codegen_declare(e, sum->outputs[0], name);
    emit_row_values(e, a, needed, targets, level);
    emit_row_values(e, a, needed, targets, level + 1);
    return pass + 1;
}

/* The last pass's body: the outputs along the row, computed and stored. */
static void emit_output_body(fv_emitter *e, const void *context)
{
    bool *targets = (bool *)context;
    const fv_fusion *fusion = e->view->fusion;
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (fv_codegen_spans_inner(e->view, id))
            fv_codegen_compute_output(e, targets, (int)o, id, (fv_emit_index){"row", "column"},
                                      (fv_emit_index){"row", "column"});
    }
}

static void emit_output_pass(fv_emitter *e, bool *targets, int pass,
                             const fv_schedule_params *params)
{
    fv_codegen_line(e, "// pass %d: the outputs along the row", pass + 1);
    emit_pass(e, pass, params, emit_output_body, targets);
}

/* The outputs of one value per row (layer norm's mean and inverse standard
 * deviation), stored by the row's first thread (of the cluster's first block
 * in clusters); nothing if there are none. */
static void emit_row_outputs(fv_emitter *e, fv_text *out, bool *targets, bool slices)
{
    const fv_fusion *fusion = e->view->fusion;
    e->out = out;
    e->indent = 0;
    bool any = false;
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (fv_codegen_spans_inner(e->view, id))
            continue;
        if (!any)
            fv_codegen_line(e, "if (threadIdx.x == 0%s) {", slices ? " && cluster_rank == 0" : "");
        any = true;
        e->indent = 4;
        fv_codegen_compute_output(e, targets, (int)o, id, (fv_emit_index){"row", "0"},
                                  (fv_emit_index){"row", "0"});
    }
    e->indent = 0;
    if (any)
        fv_codegen_line(e, "}");
}

/* The row's vectors: `row_vectors` of them from its first column, or on a
 * span, from the aligned chunk that holds its first element (`first_chunk`
 * of the flat tensor) to the one that holds its last. */
static void emit_row_start(fv_emitter *e, fv_text *out, int cluster)
{
    e->out = out;
    e->indent = 0;
    if (!e->span_lanes) {
        fv_codegen_line(e, "const long long row_vectors = inner / %d;", e->vector);
    } else {
        fv_codegen_line(e, "const long long row_start = row * inner;  // the row's first element");
        fv_codegen_line(e, "const long long first_chunk = row_start / %d;", e->vector);
        fv_codegen_line(e, "const long long row_vectors = (row_start + inner - 1) / %d - "
                           "first_chunk + 1;", e->vector);
    }
    if (cluster > 1) {
        fv_codegen_line(e, "const long long slice_vectors = (row_vectors + %d) / %d;",
                        cluster - 1, cluster);
        fv_codegen_line(e, "const long long slice_begin = cluster_rank * slice_vectors;");
        fv_codegen_line(e, "const long long slice_end = slice_begin + slice_vectors < row_vectors ? "
                           "slice_begin + slice_vectors : row_vectors;");
    }
    if (!e->span_lanes)
        return;
    fv_codegen_line(e, "// the chunks wholly in the row: all but a partial first and last");
    fv_codegen_line(e, "const long long whole_begin = row_start %% %d != 0 ? 1 : 0;", e->vector);
    fv_codegen_line(e, "const long long whole_end = (row_start + inner) %% %d != 0 ? row_vectors - 1 "
                       ": row_vectors;", e->vector);
    if (cluster <= 1) {
        fv_codegen_line(e, "const long long walk_begin = whole_begin, walk_end = whole_end;");
        return;
    }
    fv_codegen_line(e, "const long long walk_begin = slice_begin > whole_begin ? slice_begin : "
                       "whole_begin;");
    fv_codegen_line(e, "const long long walk_end = slice_end < whole_end ? slice_end : whole_end;");
}

/* In clusters: the block's rank and the exchange of its totals. */
static void emit_cluster_setup(fv_text *out, int cluster)
{
    if (cluster <= 1)
        return;
    fv_text_printf(out,
                   "// A cluster of %d blocks shares each row: block `cluster_rank` walks its slice\n"
                   "// of the row's vectors, and the blocks add their totals in rank order.\n"
                   "const unsigned cluster_rank = cooperative_groups::this_cluster().block_rank();\n"
                   "__shared__ float cluster_exchange[2 * %d];  // [2 phases][%d blocks], a total each\n"
                   "__shared__ unsigned long long cluster_arrived[2];  // an mbarrier per phase\n"
                   "fv_cluster_exchange_init(cluster_arrived);\n"
                   "int exchange_phase = 0;\n",
                   cluster, cluster, cluster);
}

static fv_status emit_sections(const fv_segment_view *view, const fv_schedule_params *params,
                               multipass_sections *s)
{
    const fv_fusion *fusion = view->fusion;
    multipass_analysis a;
    FV_TRY(analyze(view, &a));
    fv_emitter e;
    fv_status status = fv_codegen_begin(&e, view, params->vector);
    if (status != FV_OK) {
        free(a.level);
        return status;
    }
    bool *needed = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    bool *targets = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (needed == NULL || targets == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory emitting a kernel");
        goto done;
    }
    mark_needed(view, &a, needed);
    e.span_lanes = e.load_span_chunks = params->extra[EXTRA_SPANS] != 0;
    e.store_rows_streaming = true;
    emit_row_start(&e, &s->row_start, params->extra[EXTRA_CLUSTER]);
    emit_cluster_setup(&s->cluster_setup, params->extra[EXTRA_CLUSTER]);
    e.out = &s->prologue;
    emit_row_values(&e, &a, needed, targets, 0);
    e.out = &s->passes;
    e.indent = 0;
    int pass = 0;
    for (int level = 1; level <= a.levels; level++) {
        if (a.online[level])
            pass = emit_online_levels(&e, &a, needed, targets, level++, pass, params);
        else
            pass = emit_level(&e, &a, needed, targets, level, pass, params);
    }
    emit_output_pass(&e, targets, pass, params);
    emit_row_outputs(&e, &s->epilogue, targets, clustered(params));
    fv_codegen_parameters(view, &s->parameters);
done:
    free(needed);
    free(targets);
    free(a.level);
    fv_codegen_end(&e);
    return status;
}

static fv_status multipass_emit(const fv_segment_view *view, const fv_schedule_params *params,
                                const char *kernel_name, fv_text *source)
{
    multipass_sections s = {0};
    fv_status status = emit_sections(view, params, &s);
    if (status == FV_OK) {
        char block_x[16], first_row[32] = "blockIdx.x", row_step[32] = "gridDim.x";
        fv_text helpers = {0};
        int cluster = params->extra[EXTRA_CLUSTER];
        if (cluster > 1) {
            snprintf(first_row, sizeof first_row, "blockIdx.x / %d", cluster);
            snprintf(row_step, sizeof row_step, "gridDim.x / %d", cluster);
            fv_text_printf(&helpers, "#include <cooperative_groups.h>\n%s\n",
                           fv_skeleton_cluster_exchange);
        }
        const char *names[] = {"KERNEL_NAME", "PARAMETERS", "BLOCK_X", "ROW_START",
                               "ROW_PROLOGUE", "PASSES", "EPILOGUE", "CLUSTER_HELPERS",
                               "CLUSTER_SETUP", "FIRST_ROW", "ROW_STEP"};
        const char *sections[] = {kernel_name, fv_text_str(&s.parameters),
                                  fv_family_number(block_x, params->block_x),
                                  fv_text_str(&s.row_start), fv_text_str(&s.prologue),
                                  fv_text_str(&s.passes), fv_text_str(&s.epilogue),
                                  fv_text_str(&helpers), fv_text_str(&s.cluster_setup),
                                  first_row, row_step};
        fv_family_kernel_head("inner_multipass", params, source);
        status = fv_codegen_fill(fv_skeleton_inner_multipass, names, sections, 11, source);
        fv_text_free(&helpers);
    }
    fv_text_free(&s.row_start);
    fv_text_free(&s.prologue);
    fv_text_free(&s.passes);
    fv_text_free(&s.epilogue);
    fv_text_free(&s.parameters);
    fv_text_free(&s.cluster_setup);
    return status;
}

static fv_status multipass_launch(const fv_segment_view *view, const fv_schedule_params *params,
                                  const fv_case *c, const fv_device *device,
                                  fv_launch_shape *shape)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(shape, 0, sizeof *shape);
    int cluster = params->extra[EXTRA_CLUSTER];
    int64_t blocks = outer * cluster < params->grid_limit ? outer * cluster : params->grid_limit;
    shape->grid[0] = (int)(blocks < cluster ? cluster : blocks);
    shape->grid[1] = shape->grid[2] = 1;
    shape->block[0] = params->block_x;
    shape->block[1] = shape->block[2] = 1;
    shape->cluster = cluster > 1 ? cluster : 0;
    shape->resident = cluster > 1;
    (void)device;
    return FV_OK;
}

/* A kernel that spilled: its passes one iteration at a time (fewer loads in
 * flight per thread, fewer registers live). */
static bool multipass_relieve_registers(const fv_segment_view *view, fv_schedule_params *params,
                                        char *what, size_t what_size)
{
    (void)view;
    if (params->extra[EXTRA_UNROLL] <= 1)
        return false;
    params->extra[EXTRA_UNROLL] = 1;
    snprintf(what, what_size, "passes not unrolled (were %d iterations at a time)", PASS_UNROLL);
    return true;
}

const fv_scheduler fv_sched_inner_multipass = {
    .name = "inner_multipass",
    .accepts = multipass_accepts,
    .choose = multipass_choose,
    .emit = multipass_emit,
    .launch = multipass_launch,
    .relieve_registers = multipass_relieve_registers,
};
