/* view.c: the canonical view of a segment: its axis classes merged into at
 * most two canonical axes (outer, inner) by the tensors that span them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"

/* Sets `why` and returns false (the view stays non-canonical). */
static bool reject(fv_segment_view *view, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static bool reject(fv_segment_view *view, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(view->why, sizeof view->why, format, args);
    va_end(args);
    view->canonical = false;
    return false;
}

static bool input_layout_ok(fv_segment_view *view)
{
    const fv_fusion *fusion = view->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        const fv_value *input = &fusion->values[fusion->inputs[i]];
        char label[40];
        fv_ir_value_label(fusion, fusion->inputs[i], label);
        if (input->kind != FV_VALUE_TENSOR)
            continue;
        for (int d = 0; d < input->rank; d++) {
            if (input->contiguity[d] == 0)
                return reject(view, "input %s is not contiguous", label);
            if (input->stride_order[d] != input->rank - 1 - d)
                return reject(view, "input %s has a permuted stride order", label);
        }
    }
    return true;
}

/* Whether value v spans class c. */
static bool spans_class(const fv_segment_view *view, int32_t v, int32_t c)
{
    for (int d = 0; d < FV_MAX_RANK; d++)
        if (view->axes.dim_class[v][d] == c)
            return true;
    return false;
}

static bool reduces_class(const fv_segment_view *view, const fv_op *op, int32_t c)
{
    for (int a = 0; a < op->axis_count; a++)
        if (view->axes.dim_class[op->inputs[0]][op->axes[a]] == c)
            return true;
    return false;
}

/* Two classes merge when the same tensors span them and the same reductions
 * reduce them. */
static bool same_signature(const fv_segment_view *view, int32_t a, int32_t b)
{
    const fv_fusion *fusion = view->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++)
        if (spans_class(view, v, a) != spans_class(view, v, b))
            return false;
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        if (fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
            !fv_ir_is_trivial_reduction(fusion, op) &&
            reduces_class(view, op, a) != reduces_class(view, op, b))
            return false;
    }
    return true;
}

/* The tensor spanning the most classes gives the outer-to-inner order. */
static int32_t reference_tensor(const fv_segment_view *view)
{
    int32_t best = -1, best_count = 0;
    for (int32_t v = 0; v < view->fusion->value_count; v++) {
        int count = 0;
        for (int d = 0; d < FV_MAX_RANK; d++)
            count += view->axes.dim_class[v][d] >= 0;
        if (count > best_count) {
            best = v;
            best_count = count;
        }
    }
    return best;
}

/* Every tensor must list its classes in the reference order. */
static bool orders_agree(fv_segment_view *view, const int32_t *position)
{
    for (int32_t v = 0; v < view->fusion->value_count; v++) {
        int last = -1;
        for (int d = 0; d < FV_MAX_RANK; d++) {
            int32_t c = view->axes.dim_class[v][d];
            if (c < 0)
                continue;
            if (position[c] < 0 || position[c] < last) {
                char label[40];
                return reject(view, "tensor %s is permuted or spans an axis the largest tensor lacks",
                              fv_ir_value_label(view->fusion, v, label));
            }
            last = position[c];
        }
    }
    return true;
}

static bool group_classes(fv_segment_view *view, int32_t reference)
{
    int32_t ordered[FV_MAX_RANK];
    int count = 0;
    for (int d = 0; d < FV_MAX_RANK; d++)
        if (view->axes.dim_class[reference][d] >= 0)
            ordered[count++] = view->axes.dim_class[reference][d];
    int32_t *position = malloc(sizeof(int32_t) * (size_t)(view->axes.class_count + 1));
    if (position == NULL)
        return reject(view, "%s", "out of memory");
    for (int32_t c = 0; c < view->axes.class_count; c++)
        position[c] = -1;
    for (int i = 0; i < count; i++)
        position[ordered[i]] = i;
    bool ok = orders_agree(view, position);
    free(position);
    if (!ok)
        return false;
    view->axis_count = 0;
    for (int i = 0; i < count; i++) {
        bool joins = i > 0 && same_signature(view, ordered[i - 1], ordered[i]);
        if (!joins) {
            if (view->axis_count == FV_CANONICAL_MAX_AXES)
                return reject(view, "%s", "more than two canonical axes (mixed broadcast patterns)");
            view->axis_count++;
        }
        int a = view->axis_count - 1;
        view->axis_classes[a][view->axis_class_count[a]++] = ordered[i];
    }
    return true;
}

static bool assign_spans(fv_segment_view *view)
{
    const fv_fusion *fusion = view->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        view->spans[v] = 0;
        for (int a = 0; a < view->axis_count; a++) {
            int spanned = 0;
            for (int k = 0; k < view->axis_class_count[a]; k++)
                spanned += spans_class(view, v, view->axis_classes[a][k]);
            if (spanned != 0 && spanned != view->axis_class_count[a]) {
                char label[40];
                return reject(view, "tensor %s spans only part of a merged axis",
                              fv_ir_value_label(fusion, v, label));
            }
            if (spanned)
                view->spans[v] |= (uint8_t)(1u << a);
        }
    }
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        if (fv_ir_op_category(op->kind) != FV_CATEGORY_REDUCTION ||
            fv_ir_is_trivial_reduction(fusion, op))
            continue;
        for (int a = 0; a < view->axis_count; a++)
            if (reduces_class(view, op, view->axis_classes[a][0]))
                view->reduced_axes |= (uint8_t)(1u << a);
    }
    return true;
}

static void mark_after_reduction(fv_segment_view *view)
{
    const fv_fusion *fusion = view->fusion;
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        bool after = fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
                     !fv_ir_is_trivial_reduction(fusion, op);
        for (int k = 0; k < op->input_count && !after; k++)
            after = view->after_reduction[op->inputs[k]];
        for (int k = 0; k < op->output_count; k++)
            view->after_reduction[op->outputs[k]] = after;
    }
}

fv_status fv_sched_view_build(const fv_fusion *segment, fv_segment_view *view)
{
    memset(view, 0, sizeof *view);
    view->fusion = segment;
    view->canonical = true;
    FV_TRY(fv_ir_live_ops(segment, &view->order, &view->op_count));
    fv_status status = fv_ir_axes_build(segment, view->order, view->op_count, &view->axes);
    view->spans = calloc((size_t)segment->value_count + 1, 1);
    view->after_reduction = calloc((size_t)segment->value_count + 1, sizeof(bool));
    if (status != FV_OK || view->spans == NULL || view->after_reduction == NULL) {
        fv_sched_view_free(view);
        if (status != FV_OK)
            return status;
        FV_FAIL(FV_ERR_NOMEM, "out of memory building a segment view");
    }
    mark_after_reduction(view);
    for (int32_t c = 0; c < view->axes.class_count; c++) {
        if (view->axes.broken[c]) {
            reject(view, "%s", "a reshape splits or merges an axis");
            return FV_OK;
        }
    }
    if (!input_layout_ok(view))
        return FV_OK;
    int32_t reference = reference_tensor(view);
    if (reference < 0) {
        view->axis_count = 0; /* scalars and 0-d tensors only */
        return FV_OK;
    }
    if (group_classes(view, reference))
        assign_spans(view);
    return FV_OK;
}

void fv_sched_view_free(fv_segment_view *view)
{
    free(view->order);
    free(view->spans);
    free(view->after_reduction);
    fv_ir_axes_free(&view->axes);
    memset(view, 0, sizeof *view);
}

int64_t fv_sched_axis_extent(const fv_segment_view *view, const fv_case *c, int axis)
{
    if (axis < 0 || axis >= view->axis_count)
        return 1;
    int64_t extent = 1;
    const fv_fusion *fusion = view->fusion;
    for (int k = 0; k < view->axis_class_count[axis]; k++) {
        int32_t cls = view->axis_classes[axis][k];
        bool found = false;
        for (int32_t v = 0; v < fusion->value_count && !found; v++)
            for (int d = 0; d < FV_MAX_RANK && !found; d++)
                if (view->axes.dim_class[v][d] == cls) {
                    extent *= fv_case_dim_extent(c, fusion->values[v].dims[d]);
                    found = true;
                }
    }
    return extent;
}

bool fv_sched_after_reduction(const fv_segment_view *view, int32_t id)
{
    return view->after_reduction[id];
}

int fv_sched_launch_blocks(const fv_launch_shape *shape, int resident)
{
    int grid = shape->grid[0];
    if ((!shape->cooperative && !shape->resident) || grid <= resident)
        return grid;
    int multiple = shape->grid_multiple > 1 ? shape->grid_multiple : 1;
    return resident >= multiple ? resident / multiple * multiple : multiple;
}

void fv_sched_canonical_extents(const fv_segment_view *view, const fv_case *c, int64_t *outer,
                                int64_t *inner)
{
    if (view->axis_count == 2) {
        *outer = fv_sched_axis_extent(view, c, 0);
        *inner = fv_sched_axis_extent(view, c, 1);
    } else {
        *outer = 1;
        *inner = view->axis_count == 1 ? fv_sched_axis_extent(view, c, 0) : 1;
    }
}
