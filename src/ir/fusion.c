/* fusion.c: fusion storage (values, ops, inputs, outputs), symbols and their
 * union-find, copies and simple whole-fusion queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/ir_internal.h"

/* Grows `*array` (of `element_size` bytes each) to hold at least `needed`. */
static fv_status grow(void **array, int32_t *capacity, int32_t needed, size_t element_size)
{
    if (needed <= *capacity)
        return FV_OK;
    int32_t new_capacity = *capacity ? *capacity : 16;
    while (new_capacity < needed)
        new_capacity *= 2;
    void *grown = realloc(*array, (size_t)new_capacity * element_size);
    FV_CHECK_ALLOC(grown);
    *array = grown;
    *capacity = new_capacity;
    return FV_OK;
}

fv_status fv_ir_fusion_create(fv_fusion **fusion)
{
    fv_fusion *created = calloc(1, sizeof *created);
    FV_CHECK_ALLOC(created);
    created->reference_count = 1;
    *fusion = created;
    return FV_OK;
}

static void fusion_free(fv_fusion *fusion)
{
    free(fusion->values);
    free(fusion->ops);
    free(fusion->inputs);
    free(fusion->outputs);
    free(fusion->output_stride_order);
    free(fusion->symbol_parent);
    free(fusion->symbol_extent);
    free(fusion);
}

void fv_ir_fusion_retain(fv_fusion *fusion)
{
    if (fusion != NULL)
        fusion->reference_count++;
}

void fv_ir_fusion_release(fv_fusion *fusion)
{
    if (fusion != NULL && --fusion->reference_count <= 0)
        fusion_free(fusion);
}

/* Duplicates `count` elements of `size` bytes (NULL stays NULL). */
static fv_status duplicate(const void *source, int32_t count, size_t size, void **copy)
{
    *copy = NULL;
    if (source == NULL || count <= 0)
        return FV_OK;
    *copy = malloc((size_t)count * size);
    FV_CHECK_ALLOC(*copy);
    memcpy(*copy, source, (size_t)count * size);
    return FV_OK;
}

fv_status fv_ir_fusion_copy(const fv_fusion *source, fv_fusion **copy)
{
    fv_fusion *created = calloc(1, sizeof *created);
    FV_CHECK_ALLOC(created);
    *created = *source;
    created->values = NULL;
    created->ops = NULL;
    created->inputs = NULL;
    created->outputs = NULL;
    created->output_stride_order = NULL;
    created->symbol_parent = NULL;
    created->symbol_extent = NULL;
    created->reference_count = 1;
    created->value_capacity = source->value_count;
    created->op_capacity = source->op_count;
    created->input_capacity = source->input_count;
    created->output_capacity = source->output_count;
    created->symbol_capacity = source->symbol_count;
    fv_status status = FV_OK;
    void *pointer;
#define COPY_FIELD(field, count)                                                       \
    FV_TRY_GOTO(status, duplicate(source->field, count, sizeof *source->field, &pointer), \
                failed);                                                               \
    created->field = pointer
    COPY_FIELD(values, source->value_count);
    COPY_FIELD(ops, source->op_count);
    COPY_FIELD(inputs, source->input_count);
    COPY_FIELD(outputs, source->output_count);
    COPY_FIELD(output_stride_order, source->output_count);
    COPY_FIELD(symbol_parent, source->symbol_count);
    COPY_FIELD(symbol_extent, source->symbol_count);
#undef COPY_FIELD
    *copy = created;
    return FV_OK;
failed:
    fusion_free(created);
    return status;
}

void fv_ir_set_location(fv_fusion *fusion, int line, int column)
{
    fusion->current_loc.line = line;
    fusion->current_loc.column = column;
}

fv_status fv_ir_internal_new_value(fv_fusion *fusion, fv_value_kind kind, fv_dtype dtype, int rank,
                                   int32_t *id)
{
    void *array = fusion->values;
    FV_TRY(grow(&array, &fusion->value_capacity, fusion->value_count + 1, sizeof(fv_value)));
    fusion->values = array;
    fv_value *value = &fusion->values[fusion->value_count];
    memset(value, 0, sizeof *value);
    value->kind = kind;
    value->dtype = dtype;
    value->rank = rank;
    value->producer = -1;
    value->input_index = -1;
    value->symbol = -1;
    for (int i = 0; i < FV_MAX_RANK; i++) {
        value->dims[i] = (fv_dim){.extent = 1, .symbol = -1, .broadcast = false, .expanded = false};
        value->contiguity[i] = 1;
        value->stride_order[i] = (int8_t)(rank - 1 - i);
    }
    value->loc = fusion->current_loc;
    *id = fusion->value_count++;
    return FV_OK;
}

fv_status fv_ir_internal_new_op(fv_fusion *fusion, fv_op_kind kind, int32_t *id)
{
    void *array = fusion->ops;
    FV_TRY(grow(&array, &fusion->op_capacity, fusion->op_count + 1, sizeof(fv_op)));
    fusion->ops = array;
    fv_op *op = &fusion->ops[fusion->op_count];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->dtype = FV_DTYPE_NONE;
    op->loc = fusion->current_loc;
    for (int i = 0; i < 3; i++)
        op->inputs[i] = FV_NO_VALUE;
    op->outputs[0] = op->outputs[1] = FV_NO_VALUE;
    *id = fusion->op_count++;
    return FV_OK;
}

fv_status fv_ir_internal_add_input(fv_fusion *fusion, int32_t value)
{
    void *array = fusion->inputs;
    FV_TRY(grow(&array, &fusion->input_capacity, fusion->input_count + 1, sizeof(int32_t)));
    fusion->inputs = array;
    fusion->values[value].input_index = fusion->input_count;
    fusion->inputs[fusion->input_count++] = value;
    return FV_OK;
}

fv_status fv_ir_internal_new_symbol(fv_fusion *fusion, int32_t *symbol)
{
    int32_t capacity = fusion->symbol_capacity;
    void *parents = fusion->symbol_parent;
    FV_TRY(grow(&parents, &capacity, fusion->symbol_count + 1, sizeof(int32_t)));
    fusion->symbol_parent = parents;
    void *extents = fusion->symbol_extent;
    int32_t extent_capacity = fusion->symbol_capacity;
    FV_TRY(grow(&extents, &extent_capacity, fusion->symbol_count + 1, sizeof(int64_t)));
    fusion->symbol_extent = extents;
    fusion->symbol_capacity = capacity;
    int32_t created = fusion->symbol_count++;
    fusion->symbol_parent[created] = created;
    fusion->symbol_extent[created] = -1;
    *symbol = created;
    return FV_OK;
}

fv_status fv_ir_add_output(fv_fusion *fusion, int32_t value, const int8_t *stride_order)
{
    if (value < 0 || value >= fusion->value_count)
        FV_FAIL(FV_ERR_INTERNAL, "add_output of an unknown value %d", value);
    const fv_value *output = &fusion->values[value];
    if (output->kind != FV_VALUE_TENSOR)
        return fv_ir_internal_error(fusion, FV_ERR_UNSUPPORTED,
                                    "add_output of a scalar is not supported");
    int32_t capacity = fusion->output_capacity;
    void *outputs = fusion->outputs;
    FV_TRY(grow(&outputs, &capacity, fusion->output_count + 1, sizeof(int32_t)));
    fusion->outputs = outputs;
    void *orders = fusion->output_stride_order;
    int32_t order_capacity = fusion->output_capacity;
    FV_TRY(grow(&orders, &order_capacity, fusion->output_count + 1, FV_MAX_RANK));
    fusion->output_stride_order = orders;
    fusion->output_capacity = capacity;
    int32_t slot = fusion->output_count++;
    fusion->outputs[slot] = value;
    for (int i = 0; i < FV_MAX_RANK; i++)
        fusion->output_stride_order[slot][i] = stride_order ? stride_order[i] : -1;
    if (stride_order == NULL)
        fusion->output_stride_order[slot][0] = -1;
    return FV_OK;
}

bool fv_ir_outputs_all_half(const fv_fusion *fusion)
{
    for (int32_t i = 0; i < fusion->output_count; i++)
        if (!fv_dtype_is_half(fusion->values[fusion->outputs[i]].dtype))
            return false;
    return fusion->output_count > 0;
}

int32_t fv_ir_symbol_root(const fv_fusion *fusion, int32_t symbol)
{
    while (fusion->symbol_parent[symbol] != symbol)
        symbol = fusion->symbol_parent[symbol];
    return symbol;
}

fv_status fv_ir_unify_dims(fv_fusion *fusion, fv_dim a, fv_dim b)
{
    if (a.symbol < 0 && b.symbol < 0) {
        if (a.extent != b.extent)
            return fv_ir_internal_error(fusion, FV_ERR_INPUT, "extents %lld and %lld do not match",
                                        (long long)a.extent, (long long)b.extent);
        return FV_OK;
    }
    if (a.symbol < 0 || b.symbol < 0) {
        fv_dim symbolic = a.symbol < 0 ? b : a;
        int64_t concrete = a.symbol < 0 ? a.extent : b.extent;
        int32_t root = fv_ir_symbol_root(fusion, symbolic.symbol);
        int64_t known = fusion->symbol_extent[root];
        if (known >= 0 && known != concrete)
            return fv_ir_internal_error(fusion, FV_ERR_INPUT,
                                        "extents %lld and %lld do not match",
                                        (long long)known, (long long)concrete);
        fusion->symbol_extent[root] = concrete;
        return FV_OK;
    }
    int32_t root_a = fv_ir_symbol_root(fusion, a.symbol);
    int32_t root_b = fv_ir_symbol_root(fusion, b.symbol);
    if (root_a == root_b)
        return FV_OK;
    int64_t extent_a = fusion->symbol_extent[root_a];
    int64_t extent_b = fusion->symbol_extent[root_b];
    if (extent_a >= 0 && extent_b >= 0 && extent_a != extent_b)
        return fv_ir_internal_error(fusion, FV_ERR_INPUT, "extents %lld and %lld do not match",
                                    (long long)extent_a, (long long)extent_b);
    /* The smaller id stays root, so canonical naming follows creation order. */
    int32_t root = root_a < root_b ? root_a : root_b;
    int32_t child = root_a < root_b ? root_b : root_a;
    fusion->symbol_parent[child] = root;
    fusion->symbol_extent[root] = extent_a >= 0 ? extent_a : extent_b;
    return FV_OK;
}

bool fv_ir_dims_same_extent(const fv_fusion *fusion, fv_dim a, fv_dim b)
{
    if (a.symbol >= 0 && b.symbol >= 0)
        return fv_ir_symbol_root(fusion, a.symbol) == fv_ir_symbol_root(fusion, b.symbol);
    int64_t extent_a = a.symbol >= 0 ? fusion->symbol_extent[fv_ir_symbol_root(fusion, a.symbol)]
                                     : a.extent;
    int64_t extent_b = b.symbol >= 0 ? fusion->symbol_extent[fv_ir_symbol_root(fusion, b.symbol)]
                                     : b.extent;
    return extent_a >= 0 && extent_a == extent_b;
}

bool fv_ir_is_scalar(const fv_fusion *fusion, int32_t id)
{
    return fusion->values[id].kind == FV_VALUE_SCALAR;
}

const char *fv_ir_value_label(const fv_fusion *fusion, int32_t id, char buffer[40])
{
    if (id >= 0 && id < fusion->value_count && fusion->values[id].name[0] != '\0')
        snprintf(buffer, 40, "%s", fusion->values[id].name);
    else
        snprintf(buffer, 40, "v%d", (int)id);
    return buffer;
}

/* Depth-first post-order from the outputs, without recursion. */
fv_status fv_ir_live_ops(const fv_fusion *fusion, int32_t **order, int32_t *count)
{
    *order = NULL;
    *count = 0;
    int32_t *result = malloc(sizeof(int32_t) * (size_t)(fusion->op_count + 1));
    uint8_t *state = calloc((size_t)fusion->op_count + 1, 1); /* 0 new, 1 open, 2 done */
    int32_t *stack = malloc(sizeof(int32_t) * (size_t)(fusion->op_count + 1));
    if (result == NULL || state == NULL || stack == NULL) {
        free(result);
        free(state);
        free(stack);
        FV_FAIL(FV_ERR_NOMEM, "out of memory ordering ops");
    }
    int32_t emitted = 0;
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t root = fusion->values[fusion->outputs[o]].producer;
        if (root < 0 || state[root] != 0)
            continue;
        int32_t depth = 0;
        stack[depth++] = root;
        state[root] = 1;
        while (depth > 0) {
            int32_t op_id = stack[depth - 1];
            const fv_op *op = &fusion->ops[op_id];
            bool pushed = false;
            for (int i = 0; i < op->input_count && !pushed; i++) {
                int32_t producer = fusion->values[op->inputs[i]].producer;
                if (producer >= 0 && state[producer] == 0) {
                    state[producer] = 1;
                    stack[depth++] = producer;
                    pushed = true;
                }
            }
            if (!pushed) {
                state[op_id] = 2;
                result[emitted++] = op_id;
                depth--;
            }
        }
    }
    free(state);
    free(stack);
    *order = result;
    *count = emitted;
    return FV_OK;
}

fv_status fv_ir_use_counts(const fv_fusion *fusion, int32_t **counts)
{
    int32_t *uses = calloc((size_t)fusion->value_count + 1, sizeof(int32_t));
    FV_CHECK_ALLOC(uses);
    for (int32_t o = 0; o < fusion->op_count; o++)
        for (int i = 0; i < fusion->ops[o].input_count; i++)
            uses[fusion->ops[o].inputs[i]]++;
    *counts = uses;
    return FV_OK;
}

fv_status fv_ir_substitute_dtype(const fv_fusion *source, fv_dtype from, fv_dtype to,
                                 fv_fusion **result)
{
    FV_TRY(fv_ir_fusion_copy(source, result));
    fv_fusion *copy = *result;
    copy->fast_exp = false;  /* the segmenter's mark, from outputs that may change here */
    if (from == to)
        return FV_OK;
    for (int32_t v = 0; v < copy->value_count; v++)
        if (copy->values[v].dtype == from)
            copy->values[v].dtype = to;
    for (int32_t o = 0; o < copy->op_count; o++)
        if (copy->ops[o].dtype == from)
            copy->ops[o].dtype = to;
    return FV_OK;
}

fv_dtype fv_ir_half_dtype(const fv_fusion *fusion)
{
    for (int32_t v = 0; v < fusion->value_count; v++)
        if (fv_dtype_is_half(fusion->values[v].dtype))
            return fusion->values[v].dtype;
    return FV_F32;
}

bool fv_ir_is_trivial_reduction(const fv_fusion *fusion, const fv_op *op)
{
    if (op->kind != FV_OP_SUM && op->kind != FV_OP_MAX)
        return false;
    const fv_value *input = &fusion->values[op->inputs[0]];
    for (int a = 0; a < op->axis_count; a++) {
        fv_dim dim = input->dims[op->axes[a]];
        if (!dim.broadcast || dim.expanded)
            return false;
    }
    return true;
}
