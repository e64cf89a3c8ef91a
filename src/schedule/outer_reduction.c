/* outer_reduction.c: the outer-reduction family: columns of [outer, inner]
 * reduced over the outer axis (sum, max), with element-wise math before the
 * reductions (which may write full-size outputs, as layer-norm's dx next to
 * dw and db) and a column-level epilogue.  Large outer extents are split over
 * the grid and finished by a deterministic grid reduction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/family.h"

enum {
    MAX_REDUCTIONS = 16,
    OUTER_THREADS = 256,
    /* outer_launch splits the rows until the grid has at least this many
     * blocks per SM, but into at most ceil(rows / (OUTER_SPLIT_ROWS_PER_THREAD
     * x row threads)) splits: 16 rows per thread or more, 32 or more where
     * the rows divide evenly.  H200, LN bwd bf16 16384 x 20481 (641 column
     * slices, 1-element vectors) / 16384 x 32760 / 2049 x 20481, against 4
     * blocks per SM and 4 rows: +9.7 / +5.9 / +2.4%
     * (bench/results/h200-2026-11-30.md, session 44). */
    OUTER_GRID_BLOCKS_PER_SM = 32,
    OUTER_SPLIT_ROWS_PER_THREAD = 32,
};

static bool outer_accepts(const fv_segment_view *view, char *why, size_t size)
{
    if (!fv_family_common_checks(view, why, size))
        return false;
    const fv_op *reductions[MAX_REDUCTIONS];
    int count = fv_family_reductions(view, reductions, MAX_REDUCTIONS);
    if (count == 0)
        return fv_family_reject(why, size, "outer_reduction: no reduction");
    if (view->axis_count != 2 || view->reduced_axes != 1)
        return fv_family_reject(why, size, "outer_reduction: a reduction is not over the outer axis");
    for (int r = 0; r < count; r++) {
        if (reductions[r]->kind == FV_OP_VAR_MEAN)
            return fv_family_reject(why, size, "outer_reduction: var_mean over the outer axis");
        if (view->after_reduction[reductions[r]->inputs[0]])
            return fv_family_reject(why, size, "outer_reduction: chained reductions");
    }
    for (int32_t v = 0; v < view->fusion->value_count; v++) {
        if (view->after_reduction[v] && fv_codegen_spans_outer(view, v)) {
            char label[40];
            return fv_family_reject(why, size,
                                    "outer_reduction: %s uses a reduced value along the reduced axis",
                                    fv_ir_value_label(view->fusion, v, label));
        }
    }
    return true;
}

static fv_status outer_choose(const fv_segment_view *view, const fv_case *c,
                              const fv_device *device, fv_schedule_params *params)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(params, 0, sizeof *params);
    params->vector = fv_family_vector_width(view, inner);
    params->block_x = fv_family_pow2_ceil(inner / params->vector);
    if (params->block_x > 32)
        params->block_x = 32;
    params->block_y = OUTER_THREADS / params->block_x;
    if (params->block_y > 32)
        params->block_y = 32;
    params->grid_limit = device->sm_count * OUTER_GRID_BLOCKS_PER_SM;
    snprintf(params->description, sizeof params->description,
             "outer reduction: %d column vectors x %d rows per block, %d-element vectors, "
             "rows split over the grid and reduced in block order",
             params->block_x, params->block_y, params->vector);
    return FV_OK;
}

/* --------------------------------------------------------------- emitting */

typedef struct outer_sections {
    fv_text prologue, accumulators, body, block_reduce, grid_reduce, epilogue, parameters;
} outer_sections;

static void emit_accumulators(fv_emitter *e, const fv_op *const *reductions, int count)
{
    for (int r = 0; r < count; r++) {
        fv_codegen_line(e, "float accumulator%d[%d];  // %s", r, e->vector,
                        fv_ir_op_name(reductions[r]->kind));
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", e->vector);
        fv_codegen_line(e, "    accumulator%d[lane] = %s;", r, fv_family_reduction_identity(reductions[r]));
    }
}

static void emit_accumulate(fv_emitter *e, const fv_op *const *reductions, int count)
{
    for (int r = 0; r < count; r++) {
        char input[64], target[32];
        fv_codegen_value(e, reductions[r]->inputs[0], "lane", input, sizeof input);
        snprintf(target, sizeof target, "accumulator%d[lane]", r);
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", e->vector);
        e->indent += 4;
        fv_family_combine(e, reductions[r], target, input);
        e->indent -= 4;
    }
}

/* Rows of the block into total<r> on the threads with threadIdx.y == 0. */
static void emit_block_reduce(fv_emitter *e, const fv_op *const *reductions, int count, int block_y)
{
    for (int r = 0; r < count; r++) {
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane)", e->vector);
        fv_codegen_line(e, "    block_partials[%d][threadIdx.y][threadIdx.x * %d + lane] = accumulator%d[lane];",
                        r, e->vector, r);
    }
    fv_codegen_line(e, "__syncthreads();");
    for (int r = 0; r < count; r++) {
        char target[32], partial[96];
        fv_codegen_line(e, "float total%d[%d];", r, e->vector);
        fv_codegen_line(e, "#pragma unroll");
        fv_codegen_line(e, "for (int lane = 0; lane < %d; ++lane) {", e->vector);
        e->indent += 4;
        fv_codegen_line(e, "total%d[lane] = %s;", r, fv_family_reduction_identity(reductions[r]));
        fv_codegen_line(e, "for (int y = 0; y < %d; ++y)", block_y);
        snprintf(target, sizeof target, "total%d[lane]", r);
        snprintf(partial, sizeof partial, "block_partials[%d][y][threadIdx.x * %d + lane]", r, e->vector);
        e->indent += 4;
        fv_family_combine(e, reductions[r], target, partial);
        e->indent -= 8;
        fv_codegen_line(e, "}");
    }
}

/* Partials of every block to the workspace; the last block adds them up in
 * block order. */
static void emit_grid_reduce(fv_emitter *e, const fv_op *const *reductions, int count)
{
    fv_codegen_line(e, "if (threadIdx.y == 0 && column_active) {");
    for (int r = 0; r < count; r++) {
        fv_codegen_line(e, "    float *partials%d = workspace + (long long)%d * gridDim.y * inner;", r, r);
        fv_codegen_line(e, "    for (int lane = 0; lane < %d; ++lane)", e->vector);
        fv_codegen_line(e, "        partials%d[(long long)blockIdx.y * inner + column + lane] = total%d[lane];", r, r);
    }
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "__threadfence();");
    fv_codegen_line(e, "__syncthreads();");
    fv_codegen_line(e, "if (threadIdx.x == 0 && threadIdx.y == 0) {");
    fv_codegen_line(e, "    const unsigned arrived = atomicAdd(&semaphores[blockIdx.x], 1u);");
    fv_codegen_line(e, "    is_last_block = arrived == gridDim.y - 1;");
    fv_codegen_line(e, "    if (is_last_block)");
    fv_codegen_line(e, "        semaphores[blockIdx.x] = 0;  // ready for the next launch");
    fv_codegen_line(e, "}");
    fv_codegen_line(e, "__syncthreads();");
    fv_codegen_line(e, "if (is_last_block && threadIdx.y == 0 && column_active) {");
    fv_codegen_line(e, "    __threadfence();");
    for (int r = 0; r < count; r++) {
        char target[32], partial[128];
        fv_codegen_line(e, "    const float *partials%d = workspace + (long long)%d * gridDim.y * inner;", r, r);
        fv_codegen_line(e, "    for (int lane = 0; lane < %d; ++lane) {", e->vector);
        fv_codegen_line(e, "        total%d[lane] = %s;", r, fv_family_reduction_identity(reductions[r]));
        fv_codegen_line(e, "        for (unsigned y = 0; y < gridDim.y; ++y)");
        snprintf(target, sizeof target, "total%d[lane]", r);
        snprintf(partial, sizeof partial, "__ldcg(&partials%d[(long long)y * inner + column + lane])", r);
        e->indent += 12;
        fv_family_combine(e, reductions[r], target, partial);
        e->indent -= 12;
        fv_codegen_line(e, "    }");
    }
    fv_codegen_line(e, "}");
}

static void emit_epilogue(fv_emitter *e, const fv_op *const *reductions, int count, bool *targets)
{
    const fv_fusion *fusion = e->view->fusion;
    for (int r = 0; r < count; r++) {
        char array[48];
        fv_dtype dtype = fusion->values[reductions[r]->outputs[0]].dtype;
        snprintf(array, sizeof array, "%stotal%d[lane]%s",
                 dtype == FV_BF16 ? "fv_round_bf16(" : (dtype == FV_F16 ? "fv_round_f16(" : ""), r,
                 fv_dtype_is_half(dtype) ? ")" : "");
        fv_codegen_declare_lanes(e, reductions[r]->outputs[0], array);
    }
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (fv_codegen_spans_outer(e->view, id))
            continue;
        fv_codegen_compute_output(e, targets, (int)o, id, (fv_emit_index){"0", "column"},
                                   (fv_emit_index){"0", "column"});
    }
}

static fv_status emit_sections(const fv_segment_view *view, const fv_schedule_params *params,
                               outer_sections *s)
{
    const fv_fusion *fusion = view->fusion;
    const fv_op *reductions[MAX_REDUCTIONS];
    int count = fv_family_reductions(view, reductions, MAX_REDUCTIONS);
    fv_emitter e;
    FV_TRY(fv_codegen_begin(&e, view, params->vector));
    bool *targets = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (targets == NULL) {
        fv_codegen_end(&e);
        FV_FAIL(FV_ERR_NOMEM, "out of memory emitting a kernel");
    }
    /* Column prologue: values that do not vary along the reduced axis. */
    for (int r = 0; r < count; r++)
        targets[reductions[r]->inputs[0]] = true;
    for (int32_t o = 0; o < fusion->output_count; o++)
        targets[fusion->outputs[o]] = true;
    fv_family_needed_closure(view, targets);
    for (int32_t v = 0; v < fusion->value_count; v++)
        targets[v] = targets[v] && fusion->values[v].kind == FV_VALUE_TENSOR &&
                     !fv_codegen_spans_outer(view, v) && !view->after_reduction[v];
    e.out = &s->prologue;
    fv_codegen_compute(&e, targets, (fv_emit_index){"0", "safe_column"});
    e.out = &s->accumulators;
    emit_accumulators(&e, reductions, count);
    bool *before_body = fv_codegen_save(&e);
    e.out = &s->body;
    memset(targets, 0, (size_t)fusion->value_count + 1);
    for (int r = 0; r < count; r++)
        targets[reductions[r]->inputs[0]] = true;
    fv_codegen_compute(&e, targets, (fv_emit_index){"row", "column"});
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (!fv_codegen_spans_outer(view, id))
            continue;
        fv_codegen_compute_output(&e, targets, (int)o, id, (fv_emit_index){"row", "column"},
                                   (fv_emit_index){"row", "column"});
    }
    emit_accumulate(&e, reductions, count);
    fv_codegen_restore(&e, before_body);
    e.out = &s->block_reduce;
    emit_block_reduce(&e, reductions, count, params->block_y);
    e.out = &s->grid_reduce;
    emit_grid_reduce(&e, reductions, count);
    e.out = &s->epilogue;
    emit_epilogue(&e, reductions, count, targets);
    fv_codegen_parameters(view, &s->parameters);
    free(targets);
    fv_codegen_end(&e);
    return FV_OK;
}

static fv_status outer_emit(const fv_segment_view *view, const fv_schedule_params *params,
                            const char *kernel_name, fv_text *source)
{
    outer_sections s = {0};
    const fv_op *reductions[MAX_REDUCTIONS];
    int count = fv_family_reductions(view, reductions, MAX_REDUCTIONS);
    fv_status status = emit_sections(view, params, &s);
    if (status == FV_OK) {
        char threads[16], vector[16], block_x[16], block_y[16], reduction_count[16];
        const char *names[] = {"THREADS", "KERNEL_NAME", "PARAMETERS", "VECTOR", "BLOCK_X",
                               "BLOCK_Y", "REDUCTIONS", "COLUMN_PROLOGUE", "ACCUMULATORS", "BODY",
                               "BLOCK_REDUCE", "GRID_REDUCE", "EPILOGUE"};
        const char *sections[] = {fv_family_number(threads, params->block_x * params->block_y),
                                  kernel_name, fv_text_str(&s.parameters),
                                  fv_family_number(vector, params->vector),
                                  fv_family_number(block_x, params->block_x),
                                  fv_family_number(block_y, params->block_y),
                                  fv_family_number(reduction_count, count),
                                  fv_text_str(&s.prologue), fv_text_str(&s.accumulators),
                                  fv_text_str(&s.body), fv_text_str(&s.block_reduce),
                                  fv_text_str(&s.grid_reduce), fv_text_str(&s.epilogue)};
        fv_family_kernel_head("outer_reduction", params, source);
        status = fv_codegen_fill(fv_skeleton_outer_reduction, names, sections, 13, source);
    }
    fv_text_free(&s.prologue);
    fv_text_free(&s.accumulators);
    fv_text_free(&s.body);
    fv_text_free(&s.block_reduce);
    fv_text_free(&s.grid_reduce);
    fv_text_free(&s.epilogue);
    fv_text_free(&s.parameters);
    return status;
}

static fv_status outer_launch(const fv_segment_view *view, const fv_schedule_params *params,
                              const fv_case *c, const fv_device *device, fv_launch_shape *shape)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(shape, 0, sizeof *shape);
    const fv_op *reductions[MAX_REDUCTIONS];
    int count = fv_family_reductions(view, reductions, MAX_REDUCTIONS);
    int64_t column_slices = fv_family_ceil_div(inner / params->vector, params->block_x);
    /* Split the rows until the grid has grid_limit blocks or more, into at
     * most one split per OUTER_SPLIT_ROWS_PER_THREAD rows of each row
     * thread (rounded up): more splits lost in 16-bit, LN bwd 2049 x 32760
     * at 15 rows per thread -2.7 / -2.5% (bf16 / fp16), likely from the
     * partials the last block of each column slice adds. */
    int64_t splits = fv_family_ceil_div(params->grid_limit, column_slices);
    int64_t most = fv_family_ceil_div(outer, (int64_t)OUTER_SPLIT_ROWS_PER_THREAD * params->block_y);
    if (splits > most)
        splits = most;
    if (splits > 65535)
        splits = 65535;
    if (splits < 1)
        splits = 1;
    shape->grid[0] = (int)column_slices;
    shape->grid[1] = (int)splits;
    shape->grid[2] = 1;
    shape->block[0] = params->block_x;
    shape->block[1] = params->block_y;
    shape->block[2] = 1;
    shape->workspace_bytes = splits > 1 ? (int64_t)count * splits * inner * 4 : 0;
    shape->semaphore_count = (int)column_slices;
    (void)device;
    return FV_OK;
}

const fv_scheduler fv_sched_outer_reduction = {
    .name = "outer_reduction",
    .accepts = outer_accepts,
    .choose = outer_choose,
    .emit = outer_emit,
    .launch = outer_launch,
};
