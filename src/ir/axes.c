/* axes.c: axis classes by union-find over (value, dim) slots. */
#include <stdlib.h>
#include <string.h>

#include "ir/axes.h"

typedef struct dim_sets {
    int32_t *parent; /* over slots value * FV_MAX_RANK + dim */
    bool *broken;    /* per slot, before the final pass */
} dim_sets;

static int32_t find_slot(dim_sets *sets, int32_t slot)
{
    while (sets->parent[slot] != slot) {
        sets->parent[slot] = sets->parent[sets->parent[slot]];
        slot = sets->parent[slot];
    }
    return slot;
}

static int32_t slot_of(int32_t value, int dim) { return value * FV_MAX_RANK + dim; }

/* Joins two dims when both iterate (broadcast dims carry no axis). */
static void join_dims(dim_sets *sets, const fv_fusion *fusion, int32_t a, int dim_a, int32_t b,
                      int dim_b)
{
    if (fusion->values[a].dims[dim_a].broadcast || fusion->values[b].dims[dim_b].broadcast)
        return;
    int32_t root_a = find_slot(sets, slot_of(a, dim_a));
    int32_t root_b = find_slot(sets, slot_of(b, dim_b));
    if (root_a != root_b)
        sets->parent[root_a] = root_b;
}

static bool listed(const int8_t *axes, int count, int axis)
{
    for (int i = 0; i < count; i++)
        if (axes[i] == axis)
            return true;
    return false;
}

static void join_elementwise(dim_sets *sets, const fv_fusion *fusion, const fv_op *op)
{
    const fv_value *output = &fusion->values[op->outputs[0]];
    for (int i = 0; i < op->input_count; i++) {
        const fv_value *input = &fusion->values[op->inputs[i]];
        if (input->kind == FV_VALUE_TENSOR && input->rank == output->rank)
            for (int d = 0; d < output->rank; d++)
                join_dims(sets, fusion, op->outputs[0], d, op->inputs[i], d);
    }
}

static void join_reduction(dim_sets *sets, const fv_fusion *fusion, const fv_op *op)
{
    const fv_value *input = &fusion->values[op->inputs[0]];
    int kept = 0;
    for (int d = 0; d < input->rank; d++) {
        bool reduced = listed(op->axes, op->axis_count, d);
        if (!reduced)
            for (int o = 0; o < op->output_count; o++)
                join_dims(sets, fusion, op->outputs[o], kept, op->inputs[0], d);
        if (!reduced || op->keepdim)
            kept++;
    }
}

/* Reshape keeps the dims that match at the front and at the back; the dims
 * in between are split or merged, so their axes cannot be followed. */
static void join_reshape(dim_sets *sets, const fv_fusion *fusion, const fv_op *op)
{
    int32_t in = op->inputs[0], out = op->outputs[0];
    const fv_value *input = &fusion->values[in];
    const fv_value *output = &fusion->values[out];
    int prefix = 0;
    while (prefix < input->rank && prefix < output->rank &&
           fv_ir_dims_same_extent(fusion, input->dims[prefix], output->dims[prefix])) {
        join_dims(sets, fusion, out, prefix, in, prefix);
        prefix++;
    }
    int suffix = 0;
    while (suffix < input->rank - prefix && suffix < output->rank - prefix &&
           fv_ir_dims_same_extent(fusion, input->dims[input->rank - 1 - suffix],
                                  output->dims[output->rank - 1 - suffix])) {
        join_dims(sets, fusion, out, output->rank - 1 - suffix, in, input->rank - 1 - suffix);
        suffix++;
    }
    for (int d = prefix; d < input->rank - suffix; d++)
        sets->broken[slot_of(in, d)] = true;
    for (int d = prefix; d < output->rank - suffix; d++)
        sets->broken[slot_of(out, d)] = true;
}

static void join_op(dim_sets *sets, const fv_fusion *fusion, const fv_op *op)
{
    int32_t in = op->inputs[0], out = op->outputs[0];
    const fv_value *output = &fusion->values[out];
    switch (op->kind) {
    case FV_OP_CAST:
    case FV_OP_SET:
    case FV_OP_SEGMENT_SET:
    case FV_OP_EXPAND:
        for (int d = 0; d < output->rank; d++)
            join_dims(sets, fusion, out, d, in, d);
        return;
    case FV_OP_BROADCAST_IN_DIM:
    case FV_OP_BROADCAST:
        for (int i = 0; i < op->axis_count; i++)
            join_dims(sets, fusion, out, op->axes[i], in, i);
        return;
    case FV_OP_PERMUTE:
        for (int d = 0; d < output->rank; d++)
            join_dims(sets, fusion, out, d, in, op->axes[d]);
        return;
    case FV_OP_SQUEEZE: {
        int kept = 0;
        for (int d = 0; d < fusion->values[in].rank; d++)
            if (!listed(op->axes, op->axis_count, d))
                join_dims(sets, fusion, out, kept++, in, d);
        return;
    }
    case FV_OP_RESHAPE:
        join_reshape(sets, fusion, op);
        return;
    default:
        break;
    }
    switch (fv_ir_op_category(op->kind)) {
    case FV_CATEGORY_REDUCTION:
        join_reduction(sets, fusion, op);
        break;
    case FV_CATEGORY_FACTORY:
        break;
    default:
        join_elementwise(sets, fusion, op);
        break;
    }
}

static void mark_value(bool *touched, int32_t value) { touched[value] = true; }

fv_status fv_ir_axes_build(const fv_fusion *fusion, const int32_t *order, int32_t op_count,
                           fv_axes *axes)
{
    memset(axes, 0, sizeof *axes);
    int32_t slots = fusion->value_count * FV_MAX_RANK;
    dim_sets sets = {malloc(sizeof(int32_t) * (size_t)(slots + 1)), calloc((size_t)slots + 1, 1)};
    int32_t *class_of_root = malloc(sizeof(int32_t) * (size_t)(slots + 1));
    bool *touched = calloc((size_t)fusion->value_count + 1, 1);
    axes->dim_class = malloc(sizeof *axes->dim_class * (size_t)(fusion->value_count + 1));
    fv_status status = FV_OK;
    if (!sets.parent || !sets.broken || !class_of_root || !touched || !axes->dim_class) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory (axes)");
        goto done;
    }
    for (int32_t s = 0; s < slots; s++) {
        sets.parent[s] = s;
        class_of_root[s] = -1;
    }
    for (int32_t i = 0; i < op_count; i++) {
        const fv_op *op = &fusion->ops[order[i]];
        join_op(&sets, fusion, op);
        for (int k = 0; k < op->input_count; k++)
            mark_value(touched, op->inputs[k]);
        for (int k = 0; k < op->output_count; k++)
            mark_value(touched, op->outputs[k]);
    }
    for (int32_t i = 0; i < fusion->input_count; i++)
        mark_value(touched, fusion->inputs[i]);
    for (int32_t i = 0; i < fusion->output_count; i++)
        mark_value(touched, fusion->outputs[i]);
    for (int32_t v = 0; v < fusion->value_count; v++) {
        const fv_value *value = &fusion->values[v];
        for (int d = 0; d < FV_MAX_RANK; d++)
            axes->dim_class[v][d] = -1;
        if (value->kind != FV_VALUE_TENSOR || !touched[v])
            continue;
        for (int d = 0; d < value->rank; d++) {
            if (value->dims[d].broadcast)
                continue;
            int32_t root = find_slot(&sets, slot_of(v, d));
            if (class_of_root[root] < 0)
                class_of_root[root] = axes->class_count++;
            axes->dim_class[v][d] = class_of_root[root];
        }
    }
    axes->broken = calloc((size_t)axes->class_count + 1, 1);
    if (axes->broken == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory (axes)");
        goto done;
    }
    for (int32_t s = 0; s < slots; s++)
        if (sets.broken[s] && class_of_root[find_slot(&sets, s)] >= 0)
            axes->broken[class_of_root[find_slot(&sets, s)]] = true;
done:
    free(sets.parent);
    free(sets.broken);
    free(class_of_root);
    free(touched);
    if (status != FV_OK)
        fv_ir_axes_free(axes);
    return status;
}

void fv_ir_axes_free(fv_axes *axes)
{
    free(axes->dim_class);
    free(axes->broken);
    memset(axes, 0, sizeof *axes);
}
