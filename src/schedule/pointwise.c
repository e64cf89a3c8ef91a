/* pointwise.c: the pointwise family: segments without reductions, over a
 * [outer, inner] domain with broadcasts.  One thread per vector of inner
 * elements; a 2-D grid strides over both axes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/family.h"

enum { POINTWISE_THREADS = 256 };

static bool pointwise_accepts(const fv_segment_view *view, char *why, size_t size)
{
    if (!fv_family_common_checks(view, why, size))
        return false;
    const fv_op *reductions[1];
    if (fv_family_reductions(view, reductions, 1) > 0)
        return fv_family_reject(why, size, "pointwise: the segment has a %s",
                                fv_ir_op_name(reductions[0]->kind));
    return true;
}

static fv_status pointwise_choose(const fv_segment_view *view, const fv_case *c,
                                  const fv_device *device, fv_schedule_params *params)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(params, 0, sizeof *params);
    params->vector = fv_family_vector_width(view, inner);
    int64_t vectors = inner / params->vector;
    params->block_x = outer == 1 ? POINTWISE_THREADS : fv_family_pow2_ceil(vectors);
    if (params->block_x < 32)
        params->block_x = 32;
    if (params->block_x > POINTWISE_THREADS)
        params->block_x = POINTWISE_THREADS;
    params->block_y = POINTWISE_THREADS / params->block_x;
    snprintf(params->description, sizeof params->description,
             "pointwise: %d-element vectors, block %dx%d", params->vector, params->block_x,
             params->block_y);
    (void)device;
    return FV_OK;
}

/* Stores each output; those not spanning an axis are written once. */
static void store_outputs(fv_emitter *emitter, fv_emit_index where)
{
    const fv_segment_view *view = emitter->view;
    for (int32_t o = 0; o < view->fusion->output_count; o++) {
        int32_t id = view->fusion->outputs[o];
        bool guard_inner = !fv_codegen_spans_inner(view, id);
        bool guard_outer = view->axis_count == 2 && !fv_codegen_spans_outer(view, id);
        if (guard_inner || guard_outer)
            fv_codegen_line(emitter, "if (%s%s%s) {", guard_inner ? "column == 0" : "",
                            guard_inner && guard_outer ? " && " : "", guard_outer ? "row == 0" : "");
        emitter->indent += (guard_inner || guard_outer) ? 4 : 0;
        fv_codegen_store(emitter, (int)o, id, where);
        emitter->indent -= (guard_inner || guard_outer) ? 4 : 0;
        if (guard_inner || guard_outer)
            fv_codegen_line(emitter, "}");
    }
}

static fv_status pointwise_emit(const fv_segment_view *view, const fv_schedule_params *params,
                                const char *kernel_name, fv_text *source)
{
    fv_emitter emitter;
    FV_TRY(fv_codegen_begin(&emitter, view, params->vector));
    fv_text body = {0}, parameters = {0};
    emitter.out = &body;
    bool *targets = calloc((size_t)view->fusion->value_count + 1, sizeof(bool));
    if (targets == NULL) {
        fv_codegen_end(&emitter);
        FV_FAIL(FV_ERR_NOMEM, "out of memory emitting a kernel");
    }
    for (int32_t o = 0; o < view->fusion->output_count; o++)
        targets[fv_codegen_stored_value(view, view->fusion->outputs[o])] = true;
    fv_emit_index where = {"row", "column"};
    fv_codegen_compute(&emitter, targets, where);
    store_outputs(&emitter, where);
    fv_codegen_parameters(view, &parameters);
    char threads[16], vector[16];
    const char *names[] = {"THREADS", "KERNEL_NAME", "PARAMETERS", "VECTOR", "BODY"};
    const char *sections[] = {fv_family_number(threads, params->block_x * params->block_y),
                              kernel_name, fv_text_str(&parameters),
                              fv_family_number(vector, params->vector), fv_text_str(&body)};
    fv_family_kernel_head("pointwise", params, source);
    fv_status status = fv_codegen_fill(fv_skeleton_pointwise, names, sections, 5, source);
    free(targets);
    fv_text_free(&body);
    fv_text_free(&parameters);
    fv_codegen_end(&emitter);
    return status;
}

static fv_status pointwise_launch(const fv_segment_view *view, const fv_schedule_params *params,
                                  const fv_case *c, const fv_device *device,
                                  fv_launch_shape *shape)
{
    int64_t outer, inner;
    fv_sched_canonical_extents(view, c, &outer, &inner);
    memset(shape, 0, sizeof *shape);
    int64_t vectors = inner / params->vector;
    int64_t grid_x = (vectors + params->block_x - 1) / params->block_x;
    int64_t grid_y = (outer + params->block_y - 1) / params->block_y;
    int64_t limit = (int64_t)device->sm_count * 64;
    shape->grid[0] = (int)(grid_x < 1 ? 1 : (grid_x > limit ? limit : grid_x));
    shape->grid[1] = (int)(grid_y < 1 ? 1 : (grid_y > 65535 ? 65535 : grid_y));
    shape->grid[2] = 1;
    shape->block[0] = params->block_x;
    shape->block[1] = params->block_y;
    shape->block[2] = 1;
    return FV_OK;
}

const fv_scheduler fv_sched_pointwise = {
    .name = "pointwise",
    .accepts = pointwise_accepts,
    .choose = pointwise_choose,
    .emit = pointwise_emit,
    .launch = pointwise_launch,
};
