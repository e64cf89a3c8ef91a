/* eval_plan.c: analyses a bound case for the evaluator: which ops are live,
 * which dimensions are the same axis (classes), which axis rows are streamed
 * along, in which pass each value can be computed, and which error channels
 * each value carries. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/axes.h"
#include "ir/round.h"
#include "validate/eval_internal.h"

/* --------------------------------------------------------- extents */

static fv_status compute_extents(eval_plan *plan)
{
    const fv_fusion *fusion = plan->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        const fv_value *value = &fusion->values[v];
        eval_value_plan *vp = &plan->values[v];
        vp->stream_dim = -1;
        for (int d = 0; d < FV_MAX_RANK; d++) {
            vp->extent[d] = 1;
            vp->stored[d] = 1;
            vp->dim_class[d] = -1;
        }
        if (value->kind == FV_VALUE_SCALAR) {
            if (vp->live || value->producer < 0) {
                FV_TRY(fv_case_scalar_value(plan->c, v, &vp->scalar));
                vp->scalar_f32_error = fabs(vp->scalar - (double)(float)vp->scalar);
            }
            continue;
        }
        for (int d = 0; d < value->rank; d++) {
            int64_t extent = fv_case_dim_extent(plan->c, value->dims[d]);
            if (extent < 0)
                FV_FAIL(FV_ERR_INPUT, "an extent is not bound in case %s", plan->c->id);
            vp->extent[d] = extent;
            vp->stored[d] = value->dims[d].broadcast ? 1 : extent;
        }
    }
    return FV_OK;
}

static void mark_live(eval_plan *plan)
{
    const fv_fusion *fusion = plan->fusion;
    for (int32_t o = 0; o < fusion->output_count; o++)
        plan->values[fusion->outputs[o]].live = true;
    for (int32_t i = 0; i < plan->op_count; i++) {
        const fv_op *op = &fusion->ops[plan->order[i]];
        for (int k = 0; k < op->input_count; k++)
            plan->values[op->inputs[k]].live = true;
        for (int k = 0; k < op->output_count; k++)
            plan->values[op->outputs[k]].live = true;
    }
}

/* ------------------------------------------------------------ classes */

static fv_status assign_classes(eval_plan *plan, bool **broken_classes)
{
    fv_axes axes;
    FV_TRY(fv_ir_axes_build(plan->fusion, plan->order, plan->op_count, &axes));
    plan->class_count = axes.class_count;
    for (int32_t v = 0; v < plan->fusion->value_count; v++)
        for (int d = 0; d < FV_MAX_RANK; d++)
            plan->values[v].dim_class[d] = plan->values[v].live ? axes.dim_class[v][d] : -1;
    *broken_classes = axes.broken;
    axes.broken = NULL;
    fv_ir_axes_free(&axes);
    return FV_OK;
}

static bool is_reduction(const fv_op *op) { return fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION; }

/* The reduced dims' classes get support bits, in op order. */
static fv_status assign_reduction_bits(eval_plan *plan)
{
    const fv_fusion *fusion = plan->fusion;
    plan->class_bit = malloc((size_t)plan->class_count + 1);
    FV_CHECK_ALLOC(plan->class_bit);
    memset(plan->class_bit, -1, (size_t)plan->class_count + 1);
    int next_bit = 0;
    for (int32_t i = 0; i < plan->op_count; i++) {
        const fv_op *op = &fusion->ops[plan->order[i]];
        if (!is_reduction(op))
            continue;
        const eval_value_plan *input = &plan->values[op->inputs[0]];
        for (int a = 0; a < op->axis_count; a++) {
            int32_t cls = input->dim_class[op->axes[a]];
            if (cls >= 0 && plan->class_bit[cls] < 0 && next_bit < FV_EVAL_MAX_REDUCTION_AXES)
                plan->class_bit[cls] = (int8_t)next_bit++;
        }
    }
    for (int32_t v = 0; v < fusion->value_count; v++) {
        eval_value_plan *vp = &plan->values[v];
        for (int d = 0; d < FV_MAX_RANK; d++)
            if (vp->dim_class[d] >= 0 && plan->class_bit[vp->dim_class[d]] >= 0)
                vp->own_support |= (uint8_t)(1u << plan->class_bit[vp->dim_class[d]]);
    }
    return FV_OK;
}

/* ------------------------------------------------------- stream choice */

/* Whether rows can be streamed along class `cls`: it must be dim 0 (and the
 * only dim of that class) of every live tensor that has it, untouched by a
 * splitting reshape, and reduced only alone by sum or max. */
static bool can_stream(const eval_plan *plan, int32_t cls, const bool *broken)
{
    const fv_fusion *fusion = plan->fusion;
    if (broken[cls])
        return false;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        const eval_value_plan *vp = &plan->values[v];
        if (!vp->live || fusion->values[v].kind != FV_VALUE_TENSOR)
            continue;
        for (int d = 0; d < fusion->values[v].rank; d++)
            if (vp->dim_class[d] == cls && d != 0)
                return false;
    }
    for (int32_t i = 0; i < plan->op_count; i++) {
        const fv_op *op = &fusion->ops[plan->order[i]];
        if (!is_reduction(op))
            continue;
        const eval_value_plan *input = &plan->values[op->inputs[0]];
        bool reduces_class = false;
        for (int a = 0; a < op->axis_count; a++)
            reduces_class = reduces_class || input->dim_class[op->axes[a]] == cls;
        if (reduces_class && (op->kind == FV_OP_VAR_MEAN || op->axis_count != 1))
            return false;
    }
    return true;
}

static void choose_stream_class(eval_plan *plan, const bool *broken)
{
    const fv_fusion *fusion = plan->fusion;
    plan->stream_class = -1;
    plan->rows = 1;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        const eval_value_plan *vp = &plan->values[v];
        if (!vp->live || fusion->values[v].kind != FV_VALUE_TENSOR || vp->dim_class[0] < 0)
            continue;
        int32_t cls = vp->dim_class[0];
        if (vp->extent[0] > plan->rows && vp->extent[0] >= 2 && can_stream(plan, cls, broken)) {
            plan->stream_class = cls;
            plan->rows = vp->extent[0];
        }
    }
}

bool eval_plan_is_stream_reduction(const eval_plan *plan, const fv_op *op)
{
    if (plan->stream_class < 0 || !is_reduction(op))
        return false;
    const eval_value_plan *input = &plan->values[op->inputs[0]];
    for (int a = 0; a < op->axis_count; a++)
        if (input->dim_class[op->axes[a]] == plan->stream_class)
            return true;
    return false;
}

/* ----------------------------------------------- passes and supports */

static uint16_t support_bit(unsigned support) { return (uint16_t)(1u << support); }

static uint8_t reduced_bits(const eval_plan *plan, const fv_op *op)
{
    const eval_value_plan *input = &plan->values[op->inputs[0]];
    uint8_t bits = 0;
    for (int a = 0; a < op->axis_count; a++) {
        int32_t cls = input->dim_class[op->axes[a]];
        if (cls >= 0 && plan->class_bit[cls] >= 0)
            bits |= (uint8_t)(1u << plan->class_bit[cls]);
    }
    return bits;
}

/* Supports that survive a reduction over `bits`. */
static uint16_t reduce_supports(uint16_t supports, uint8_t bits)
{
    uint16_t result = 0;
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        if (supports & support_bit(s))
            result |= support_bit(s & ~(unsigned)bits);
    return result;
}

static bool has_inexact_scalar(const eval_plan *plan, const fv_op *op, fv_dtype compute)
{
    if (compute == FV_F64 || !fv_dtype_is_float(compute))
        return false;
    for (int i = 0; i < op->input_count; i++) {
        const eval_value_plan *vp = &plan->values[op->inputs[i]];
        if (plan->fusion->values[op->inputs[i]].kind == FV_VALUE_SCALAR && vp->scalar_f32_error > 0)
            return true;
    }
    return false;
}

/* Which error channels the outputs of `op` can carry. */
static void derive_supports(eval_plan *plan, const fv_op *op)
{
    const fv_fusion *fusion = plan->fusion;
    eval_value_plan *out = &plan->values[op->outputs[0]];
    fv_dtype dtype = fusion->values[op->outputs[0]].dtype;
    uint16_t operands = 0;
    for (int i = 0; i < op->input_count; i++)
        operands |= plan->values[op->inputs[i]].supports;
    uint16_t own = support_bit(out->own_support);
    bool rounds = fv_dtype_is_float(dtype);
    uint16_t scalar_error = has_inexact_scalar(plan, op, dtype) ? support_bit(0) : 0;
    uint16_t supports = 0;
    switch (fv_ir_op_category(op->kind)) {
    case FV_CATEGORY_SHAPE:
        supports = operands;
        if (op->kind == FV_OP_CAST && operands != 0)
            supports |= own;
        break;
    case FV_CATEGORY_UNARY:
        supports = operands | scalar_error;
        if (rounds && op->kind != FV_OP_NEG && op->kind != FV_OP_ABS)
            supports |= own;
        break;
    case FV_CATEGORY_BINARY:
        supports = operands | scalar_error;
        if (rounds && op->kind != FV_OP_MAXIMUM && op->kind != FV_OP_MINIMUM)
            supports |= own;
        break;
    case FV_CATEGORY_COMPARE:
        supports = (operands | scalar_error) ? support_bit(0) : 0;
        break;
    case FV_CATEGORY_WHERE:
        supports = plan->values[op->inputs[1]].supports | plan->values[op->inputs[2]].supports |
                   scalar_error;
        if (plan->values[op->inputs[0]].supports)
            supports |= support_bit(0);
        break;
    case FV_CATEGORY_REDUCTION:
        if (op->kind == FV_OP_MAX)
            supports = operands ? support_bit(0) : 0;
        else
            supports = reduce_supports(operands, reduced_bits(plan, op)) | own |
                       (op->kind == FV_OP_VAR_MEAN ? support_bit(0) : 0);
        break;
    case FV_CATEGORY_FACTORY:
        supports = 0;
        break;
    }
    if (plan->mode != FV_EVAL_REFERENCE)
        supports = 0;
    for (int o = 0; o < op->output_count; o++)
        plan->values[op->outputs[o]].supports = supports;
}

static void assign_passes_and_supports(eval_plan *plan)
{
    const fv_fusion *fusion = plan->fusion;
    plan->pass_count = 1;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        eval_value_plan *vp = &plan->values[v];
        vp->row_varying = false;
        for (int d = 0; d < fusion->values[v].rank; d++) {
            if (plan->stream_class >= 0 && vp->dim_class[d] == plan->stream_class) {
                vp->row_varying = true;
                vp->stream_dim = d;
            }
        }
    }
    for (int32_t i = 0; i < plan->op_count; i++) {
        const fv_op *op = &fusion->ops[plan->order[i]];
        int pass = 0;
        for (int k = 0; k < op->input_count; k++)
            if (plan->values[op->inputs[k]].pass > pass)
                pass = plan->values[op->inputs[k]].pass;
        if (eval_plan_is_stream_reduction(plan, op))
            pass++;
        for (int o = 0; o < op->output_count; o++)
            plan->values[op->outputs[o]].pass = pass;
        if (pass + 1 > plan->pass_count)
            plan->pass_count = pass + 1;
        derive_supports(plan, op);
    }
}

/* nvFuser's reduction size: own reduced extents times the largest of the inputs'. */
static void assign_reduction_sizes(eval_plan *plan)
{
    const fv_fusion *fusion = plan->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++)
        plan->values[v].reduction_size = 1;
    for (int32_t o = 0; o < fusion->op_count; o++) {
        const fv_op *op = &fusion->ops[o];
        int64_t size = 1;
        for (int k = 0; k < op->input_count; k++)
            if (plan->values[op->inputs[k]].reduction_size > size)
                size = plan->values[op->inputs[k]].reduction_size;
        if (is_reduction(op))
            for (int a = 0; a < op->axis_count; a++)
                size *= plan->values[op->inputs[0]].extent[op->axes[a]];
        for (int k = 0; k < op->output_count; k++)
            plan->values[op->outputs[k]].reduction_size = size;
    }
}

fv_status eval_plan_build(const fv_case *c, const fv_eval_options *options, eval_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->c = c;
    plan->fusion = c->fusion;
    plan->fast_exp = fv_ir_outputs_all_half(c->fusion);
    plan->mode = options->mode;
    plan->sum_order = options->sum_order;
    plan->sum_block = options->sum_block > 0 ? options->sum_block : 32;
    plan->stream_class = -1;
    FV_TRY(fv_case_check_bound(c));
    plan->values = calloc((size_t)c->fusion->value_count + 1, sizeof *plan->values);
    FV_CHECK_ALLOC(plan->values);
    fv_status status;
    bool *broken = NULL;
    FV_TRY_GOTO(status, fv_ir_live_ops(c->fusion, &plan->order, &plan->op_count), failed);
    mark_live(plan);
    FV_TRY_GOTO(status, compute_extents(plan), failed);
    FV_TRY_GOTO(status, assign_classes(plan, &broken), failed);
    FV_TRY_GOTO(status, assign_reduction_bits(plan), failed);
    if (options->mode == FV_EVAL_REFERENCE && !options->no_streaming)
        choose_stream_class(plan, broken);
    free(broken);
    broken = NULL;
    assign_passes_and_supports(plan);
    assign_reduction_sizes(plan);
    return FV_OK;
failed:
    free(broken);
    eval_plan_free(plan);
    return status;
}

void eval_plan_free(eval_plan *plan)
{
    free(plan->order);
    free(plan->values);
    free(plan->class_bit);
    memset(plan, 0, sizeof *plan);
}
