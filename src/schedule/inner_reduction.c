/* inner_reduction.c: the inner-reduction family: rows of [outer, inner]
 * reduced over the inner axis (sum, max, var_mean), with element-wise math
 * before the reductions and a row-level epilogue after them.  One group of
 * threads per row, several rows per block when rows are short. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/family.h"

enum { MAX_REDUCTIONS = 16 };

static int inner_bit(const fv_segment_view *view) { return 1 << (view->axis_count - 1); }

static bool inner_accepts(const fv_segment_view *view, char *why, size_t size)
{
    if (!fv_family_common_checks(view, why, size))
        return false;
    const fv_op *reductions[MAX_REDUCTIONS];
    int count = fv_family_reductions(view, reductions, MAX_REDUCTIONS);
    if (count == 0)
        return fv_family_reject(why, size, "inner_reduction: no reduction");
    if (view->axis_count == 0 || view->reduced_axes != inner_bit(view))
        return fv_family_reject(why, size, "inner_reduction: a reduction is not over the inner axis");
    for (int32_t v = 0; v < view->fusion->value_count; v++) {
        if (view->after_reduction[v] && fv_codegen_spans_inner(view, v)) {
            char label[40];
            return fv_family_reject(why, size,
                                    "inner_reduction: %s uses a reduced value along the reduced "
                                    "axis (a normalization)",
                                    fv_ir_value_label(view->fusion, v, label));
        }
    }
    for (int r = 0; r < count; r++)
        if (view->after_reduction[reductions[r]->inputs[0]])
            return fv_family_reject(why, size, "inner_reduction: chained reductions");
    return true;
}

static fv_status inner_choose(const fv_segment_view *view, const fv_case *c,
                              const fv_device *device, fv_schedule_params *params)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(params, 0, sizeof *params);
    params->vector = fv_family_vector_width(view, inner);
    int64_t vectors = inner / params->vector;
    params->block_x = fv_family_pow2_ceil(vectors);
    if (params->block_x < 32)
        params->block_x = 32;
    if (params->block_x > 512)
        params->block_x = 512;
    params->block_y = params->block_x >= 256 ? 1 : 256 / params->block_x;
    params->grid_limit = device->sm_count * 8;
    snprintf(params->description, sizeof params->description,
             "inner reduction: %d threads per row, %d rows per block, %d-element vectors, "
             "at most %d blocks",
             params->block_x, params->block_y, params->vector, params->grid_limit);
    return FV_OK;
}

/* ------------------------------------------------------------ emitting */

typedef struct inner_sections {
    fv_text prologue, accumulators, body, reduce, epilogue, parameters;
} inner_sections;

/* Marks the values needed to compute `targets` (ignoring what is declared). */
static fv_status emit_sections(const fv_segment_view *view, const fv_schedule_params *params,
                               inner_sections *s)
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
    /* Row prologue: values that do not vary along the row, before any reduction. */
    for (int r = 0; r < count; r++)
        targets[reductions[r]->inputs[0]] = true;
    for (int32_t o = 0; o < fusion->output_count; o++)
        targets[fusion->outputs[o]] = true;
    fv_family_needed_closure(view, targets);
    for (int32_t v = 0; v < fusion->value_count; v++)
        targets[v] = targets[v] && fusion->values[v].kind == FV_VALUE_TENSOR &&
                     !fv_codegen_spans_inner(view, v) && !view->after_reduction[v];
    e.out = &s->prologue;
    fv_codegen_compute(&e, targets, (fv_emit_index){"safe_row", "0"});
    e.out = &s->accumulators;
    fv_family_emit_accumulators(&e, reductions, count, 0);
    /* Body: reduction inputs and the outputs that span the row. */
    bool *before_body = fv_codegen_save(&e);
    memset(targets, 0, (size_t)fusion->value_count + 1);
    for (int r = 0; r < count; r++)
        targets[reductions[r]->inputs[0]] = true;
    e.out = &s->body;
    e.indent = 0;
    fv_codegen_compute(&e, targets, (fv_emit_index){"safe_row", "column"});
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (!fv_codegen_spans_inner(view, id))
            continue;
        fv_codegen_compute_output(&e, targets, (int)o, id, (fv_emit_index){"safe_row", "column"},
                                   (fv_emit_index){"row", "column"});
    }
    fv_family_emit_accumulate(&e, reductions, count, 0);
    fv_codegen_restore(&e, before_body);
    e.out = &s->reduce;
    fv_family_emit_row_reduce(&e, reductions, count, 0, params->block_x, 1);
    /* Epilogue: the row-level outputs. */
    e.out = &s->epilogue;
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (fv_codegen_spans_inner(view, id))
            continue;
        fv_codegen_compute_output(&e, targets, (int)o, id, (fv_emit_index){"row", "0"},
                                   (fv_emit_index){"row", "0"});
    }
    fv_codegen_parameters(view, &s->parameters);
    free(targets);
    fv_codegen_end(&e);
    return FV_OK;
}

static fv_status inner_emit(const fv_segment_view *view, const fv_schedule_params *params,
                            const char *kernel_name, fv_text *source)
{
    inner_sections s = {0};
    fv_status status = emit_sections(view, params, &s);
    if (status == FV_OK) {
        char threads[16], vector[16], block_x[16], block_y[16];
        const char *names[] = {"THREADS", "KERNEL_NAME", "PARAMETERS", "VECTOR", "BLOCK_X",
                               "BLOCK_Y", "ROW_PROLOGUE", "ACCUMULATORS", "BODY", "REDUCE",
                               "EPILOGUE"};
        const char *sections[] = {fv_family_number(threads, params->block_x * params->block_y),
                                  kernel_name, fv_text_str(&s.parameters),
                                  fv_family_number(vector, params->vector),
                                  fv_family_number(block_x, params->block_x),
                                  fv_family_number(block_y, params->block_y),
                                  fv_text_str(&s.prologue), fv_text_str(&s.accumulators),
                                  fv_text_str(&s.body), fv_text_str(&s.reduce),
                                  fv_text_str(&s.epilogue)};
        fv_family_kernel_head("inner_reduction", params, source);
        status = fv_codegen_fill(fv_skeleton_inner_reduction, names, sections, 11, source);
    }
    fv_text_free(&s.prologue);
    fv_text_free(&s.accumulators);
    fv_text_free(&s.body);
    fv_text_free(&s.reduce);
    fv_text_free(&s.epilogue);
    fv_text_free(&s.parameters);
    return status;
}

static fv_status inner_launch(const fv_segment_view *view, const fv_schedule_params *params,
                              const fv_case *c, const fv_device *device, fv_launch_shape *shape)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(shape, 0, sizeof *shape);
    int64_t blocks = (outer + params->block_y - 1) / params->block_y;
    if (blocks > params->grid_limit)
        blocks = params->grid_limit;
    shape->grid[0] = (int)(blocks < 1 ? 1 : blocks);
    shape->grid[1] = shape->grid[2] = 1;
    shape->block[0] = params->block_x;
    shape->block[1] = params->block_y;
    shape->block[2] = 1;
    (void)device;
    return FV_OK;
}

const fv_scheduler fv_sched_inner_reduction = {
    .name = "inner_reduction",
    .accepts = inner_accepts,
    .choose = inner_choose,
    .emit = inner_emit,
    .launch = inner_launch,
};
