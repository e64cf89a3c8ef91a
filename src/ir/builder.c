/* builder.c: the fv_ir_* builder functions: shape inference, dtype promotion
 * and symbol unification for every op of the IR. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/ir_internal.h"

fv_status fv_ir_internal_error(const fv_fusion *fusion, fv_status status, const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    if (fusion->current_loc.line > 0)
        return fv_error_raise(status, __FILE__, __LINE__, "%d:%d: %s", fusion->current_loc.line,
                              fusion->current_loc.column, message);
    return fv_error_raise(status, __FILE__, __LINE__, "%s", message);
}

#define BUILD_FAIL(fusion, ...) return fv_ir_internal_error((fusion), FV_ERR_INPUT, __VA_ARGS__)

/* ------------------------------------------------------------ op table */

typedef struct op_info {
    const char *name;
    fv_op_category category;
} op_info;

static const op_info op_table[FV_OP_KIND_COUNT] = {
    [FV_OP_CAST] = {"cast", FV_CATEGORY_SHAPE},
    [FV_OP_BROADCAST_IN_DIM] = {"broadcast_in_dim", FV_CATEGORY_SHAPE},
    [FV_OP_BROADCAST] = {"broadcast", FV_CATEGORY_SHAPE},
    [FV_OP_EXPAND] = {"expand", FV_CATEGORY_SHAPE},
    [FV_OP_SQUEEZE] = {"squeeze", FV_CATEGORY_SHAPE},
    [FV_OP_RESHAPE] = {"reshape", FV_CATEGORY_SHAPE},
    [FV_OP_PERMUTE] = {"permute", FV_CATEGORY_SHAPE},
    [FV_OP_SET] = {"set", FV_CATEGORY_SHAPE},
    [FV_OP_SEGMENT_SET] = {"segment_set", FV_CATEGORY_SHAPE},
    [FV_OP_NEG] = {"neg", FV_CATEGORY_UNARY},
    [FV_OP_ABS] = {"abs", FV_CATEGORY_UNARY},
    [FV_OP_EXP] = {"exp", FV_CATEGORY_UNARY},
    [FV_OP_LOG] = {"log", FV_CATEGORY_UNARY},
    [FV_OP_SQRT] = {"sqrt", FV_CATEGORY_UNARY},
    [FV_OP_RSQRT] = {"rsqrt", FV_CATEGORY_UNARY},
    [FV_OP_RECIPROCAL] = {"reciprocal", FV_CATEGORY_UNARY},
    [FV_OP_ADD] = {"add", FV_CATEGORY_BINARY},
    [FV_OP_SUB] = {"sub", FV_CATEGORY_BINARY},
    [FV_OP_MUL] = {"mul", FV_CATEGORY_BINARY},
    [FV_OP_DIV] = {"div", FV_CATEGORY_BINARY},
    [FV_OP_POW] = {"pow", FV_CATEGORY_BINARY},
    [FV_OP_MAXIMUM] = {"maximum", FV_CATEGORY_BINARY},
    [FV_OP_MINIMUM] = {"minimum", FV_CATEGORY_BINARY},
    [FV_OP_EQ] = {"eq", FV_CATEGORY_COMPARE},
    [FV_OP_NE] = {"ne", FV_CATEGORY_COMPARE},
    [FV_OP_LT] = {"lt", FV_CATEGORY_COMPARE},
    [FV_OP_LE] = {"le", FV_CATEGORY_COMPARE},
    [FV_OP_GT] = {"gt", FV_CATEGORY_COMPARE},
    [FV_OP_GE] = {"ge", FV_CATEGORY_COMPARE},
    [FV_OP_WHERE] = {"where", FV_CATEGORY_WHERE},
    [FV_OP_SUM] = {"sum", FV_CATEGORY_REDUCTION},
    [FV_OP_MAX] = {"max", FV_CATEGORY_REDUCTION},
    [FV_OP_VAR_MEAN] = {"var_mean", FV_CATEGORY_REDUCTION},
    [FV_OP_FULL] = {"full", FV_CATEGORY_FACTORY},
};

const char *fv_ir_op_name(fv_op_kind kind)
{
    if ((int)kind < 0 || kind >= FV_OP_KIND_COUNT)
        return "invalid";
    return op_table[kind].name;
}

fv_op_category fv_ir_op_category(fv_op_kind kind) { return op_table[kind].category; }

bool fv_ir_op_from_name(const char *name, fv_op_kind *kind)
{
    for (int k = 0; k < FV_OP_KIND_COUNT; k++) {
        if (strcmp(op_table[k].name, name) == 0) {
            *kind = (fv_op_kind)k;
            return true;
        }
    }
    return false;
}

/* ----------------------------------------------------------- helpers */

static fv_status check_value(const fv_fusion *fusion, int32_t id)
{
    if (id < 0 || id >= fusion->value_count)
        return fv_ir_internal_error(fusion, FV_ERR_INTERNAL, "unknown value id %d", (int)id);
    return FV_OK;
}

static fv_status check_tensor(const fv_fusion *fusion, int32_t id, const char *op_name)
{
    FV_TRY(check_value(fusion, id));
    if (fusion->values[id].kind != FV_VALUE_TENSOR) {
        char label[40];
        BUILD_FAIL(fusion, "%s expects a tensor, but %s is a scalar", op_name,
                   fv_ir_value_label(fusion, id, label));
    }
    return FV_OK;
}

/* Creates the op `kind` with the given inputs and one new output value. */
static fv_status new_op_with_output(fv_fusion *fusion, fv_op_kind kind, const int32_t *inputs,
                                    int input_count, fv_value_kind output_kind,
                                    fv_dtype output_dtype, int output_rank, int32_t *op_id,
                                    int32_t *output)
{
    FV_TRY(fv_ir_internal_new_op(fusion, kind, op_id));
    FV_TRY(fv_ir_internal_new_value(fusion, output_kind, output_dtype, output_rank, output));
    fv_op *op = &fusion->ops[*op_id];
    for (int i = 0; i < input_count; i++)
        op->inputs[i] = inputs[i];
    op->input_count = input_count;
    op->outputs[0] = *output;
    op->output_count = 1;
    fv_value *value = &fusion->values[*output];
    value->producer = *op_id;
    value->producer_output = 0;
    if (output_kind == FV_VALUE_SCALAR)
        value->origin = FV_SCALAR_COMPUTED;
    return FV_OK;
}

/* A shape-list dim as a plain target extent (broadcast flags dropped; a
 * plain broadcast dim counts as extent 1). */
static fv_dim target_extent(fv_dim dim)
{
    if (dim.broadcast && !dim.expanded)
        return fv_ir_dim_concrete(1);
    return (fv_dim){.extent = dim.symbol >= 0 ? -1 : dim.extent, .symbol = dim.symbol};
}

static bool is_concrete_one(fv_dim dim) { return dim.symbol < 0 && dim.extent == 1; }

static fv_dim plain_broadcast(void)
{
    return (fv_dim){.extent = 1, .symbol = -1, .broadcast = true, .expanded = false};
}

static fv_dim expanded_to(fv_dim target)
{
    fv_dim dim = target_extent(target);
    if (is_concrete_one(dim))
        return plain_broadcast();
    dim.broadcast = true;
    dim.expanded = true;
    return dim;
}

fv_dim fv_ir_dim_concrete(int64_t extent)
{
    return (fv_dim){.extent = extent, .symbol = -1, .broadcast = false, .expanded = false};
}

fv_dim fv_ir_dim_of(const fv_fusion *fusion, int32_t tensor, int dim)
{
    return fusion->values[tensor].dims[dim];
}

/* Combines two operands' dims for an element-wise op. */
static fv_status combine_dims(fv_fusion *fusion, fv_dim a, fv_dim b, fv_dim *out)
{
    if (a.broadcast && !a.expanded) {
        *out = b;
        return FV_OK;
    }
    if (b.broadcast && !b.expanded) {
        *out = a;
        return FV_OK;
    }
    FV_TRY(fv_ir_unify_dims(fusion, a, b));
    *out = a.broadcast ? b : a;
    return FV_OK;
}

/* --------------------------------------------------------- promotion */

static int dtype_category(fv_dtype dtype)
{
    if (dtype == FV_BOOL)
        return 0;
    if (fv_dtype_is_integer(dtype))
        return 1;
    return 2;
}

static fv_dtype wider(fv_dtype a, fv_dtype b)
{
    if (a == b)
        return a;
    if (dtype_category(a) != dtype_category(b))
        return dtype_category(a) > dtype_category(b) ? a : b;
    if (a == FV_F64 || b == FV_F64)
        return FV_F64;
    if (a == FV_F32 || b == FV_F32)
        return FV_F32;
    if (fv_dtype_is_half(a) && fv_dtype_is_half(b))
        return FV_F32; /* bf16 with f16 */
    return a == FV_I64 || b == FV_I64 ? FV_I64 : a;
}

/* Result dtype of an arithmetic op: tensors decide unless a scalar is of a
 * higher category (then f32 for floats, i64 for ints), as in PyTorch. */
static fv_dtype promote(const fv_fusion *fusion, const int32_t *operands, int count)
{
    fv_dtype tensor_dtype = FV_DTYPE_NONE;
    fv_dtype scalar_dtype = FV_DTYPE_NONE;
    for (int i = 0; i < count; i++) {
        const fv_value *value = &fusion->values[operands[i]];
        fv_dtype *slot = value->kind == FV_VALUE_TENSOR ? &tensor_dtype : &scalar_dtype;
        *slot = *slot == FV_DTYPE_NONE ? value->dtype : wider(*slot, value->dtype);
    }
    if (tensor_dtype == FV_DTYPE_NONE)
        return scalar_dtype;
    if (scalar_dtype == FV_DTYPE_NONE ||
        dtype_category(scalar_dtype) <= dtype_category(tensor_dtype))
        return tensor_dtype;
    return dtype_category(scalar_dtype) == 2 ? FV_F32 : FV_I64;
}

/* Element-wise output shape of tensor operands (scalars and 0-d tensors
 * broadcast freely).  Returns the rank, or raises on mismatch. */
static fv_status elementwise_shape(fv_fusion *fusion, const char *op_name, const int32_t *operands,
                                   int count, int *rank, fv_dim *dims)
{
    *rank = -1;
    for (int i = 0; i < count; i++) {
        const fv_value *value = &fusion->values[operands[i]];
        if (value->kind != FV_VALUE_TENSOR || value->rank == 0)
            continue;
        if (*rank < 0) {
            *rank = value->rank;
            memcpy(dims, value->dims, sizeof value->dims);
            continue;
        }
        if (value->rank != *rank)
            BUILD_FAIL(fusion,
                       "%s operands have ranks %d and %d; use broadcast_in_dim to match them",
                       op_name, *rank, value->rank);
        for (int d = 0; d < *rank; d++) {
            fv_status status = combine_dims(fusion, dims[d], value->dims[d], &dims[d]);
            if (status != FV_OK) {
                fv_error_clear();
                char label[40];
                BUILD_FAIL(fusion, "%s: dimension %d of %s does not match the other operand",
                           op_name, d, fv_ir_value_label(fusion, operands[i], label));
            }
        }
    }
    return FV_OK;
}

static bool any_tensor(const fv_fusion *fusion, const int32_t *operands, int count)
{
    for (int i = 0; i < count; i++)
        if (fusion->values[operands[i]].kind == FV_VALUE_TENSOR)
            return true;
    return false;
}

/* Builds an element-wise op (unary, binary, compare, where, cast). */
static fv_status build_elementwise(fv_fusion *fusion, fv_op_kind kind, const int32_t *operands,
                                   int count, fv_dtype dtype, int32_t *out)
{
    for (int i = 0; i < count; i++)
        FV_TRY(check_value(fusion, operands[i]));
    int rank = 0;
    fv_dim dims[FV_MAX_RANK];
    bool tensor = any_tensor(fusion, operands, count);
    if (tensor) {
        FV_TRY(elementwise_shape(fusion, fv_ir_op_name(kind), operands, count, &rank, dims));
        if (rank < 0)
            rank = 0;
    }
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, kind, operands, count,
                              tensor ? FV_VALUE_TENSOR : FV_VALUE_SCALAR, dtype, rank, &op_id,
                              out));
    fv_value *value = &fusion->values[*out];
    for (int d = 0; d < rank; d++)
        value->dims[d] = dims[d];
    if (kind == FV_OP_CAST)
        fusion->ops[op_id].dtype = dtype;
    return FV_OK;
}

/* ---------------------------------------------------------- builders */

fv_status fv_ir_define_tensor(fv_fusion *fusion, int rank, const int64_t *shape,
                              const int8_t *contiguity, fv_dtype dtype,
                              const int8_t *stride_order, int32_t *out)
{
    if (rank < 0 || rank > FV_MAX_RANK)
        return fv_ir_internal_error(fusion, FV_ERR_UNSUPPORTED,
                                    "tensors of rank %d are not supported (at most %d)", rank,
                                    FV_MAX_RANK);
    if (dtype == FV_DTYPE_NONE)
        BUILD_FAIL(fusion, "define_tensor needs a dtype");
    if (stride_order != NULL) {
        bool seen[FV_MAX_RANK] = {false};
        for (int d = 0; d < rank; d++) {
            if (stride_order[d] < 0 || stride_order[d] >= rank || seen[stride_order[d]])
                BUILD_FAIL(fusion, "stride_order must be a permutation of 0..%d", rank - 1);
            seen[stride_order[d]] = true;
        }
    }
    for (int d = 0; d < rank; d++)
        if (shape[d] < -1 || shape[d] == 0)
            BUILD_FAIL(fusion, "extent %lld of dimension %d is not supported (use -1 or > 0)",
                       (long long)shape[d], d);
    FV_TRY(fv_ir_internal_new_value(fusion, FV_VALUE_TENSOR, dtype, rank, out));
    for (int d = 0; d < rank; d++) {
        fv_dim dim = fv_ir_dim_concrete(shape[d]);
        if (shape[d] == 1) {
            dim = plain_broadcast();
        } else if (shape[d] == -1) {
            FV_TRY(fv_ir_internal_new_symbol(fusion, &dim.symbol));
            dim.extent = -1;
        }
        fusion->values[*out].dims[d] = dim;
        int8_t contiguous = contiguity ? contiguity[d] : 1;
        fusion->values[*out].contiguity[d] = dim.broadcast ? -1 : contiguous;
        if (stride_order != NULL)
            fusion->values[*out].stride_order[d] = stride_order[d];
    }
    FV_TRY(fv_ir_internal_add_input(fusion, *out));
    return FV_OK;
}

fv_status fv_ir_define_scalar(fv_fusion *fusion, double value, fv_dtype dtype, int32_t *out)
{
    if (dtype == FV_DTYPE_NONE)
        dtype = FV_F64;
    FV_TRY(fv_ir_internal_new_value(fusion, FV_VALUE_SCALAR, dtype, 0, out));
    fusion->values[*out].origin = FV_SCALAR_CONSTANT;
    fusion->values[*out].constant = value;
    return FV_OK;
}

fv_status fv_ir_define_scalar_input(fv_fusion *fusion, fv_dtype dtype, int32_t *out)
{
    if (dtype == FV_DTYPE_NONE)
        dtype = FV_F64;
    FV_TRY(fv_ir_internal_new_value(fusion, FV_VALUE_SCALAR, dtype, 0, out));
    fusion->values[*out].origin = FV_SCALAR_INPUT;
    FV_TRY(fv_ir_internal_add_input(fusion, *out));
    return FV_OK;
}

fv_status fv_ir_size(fv_fusion *fusion, int32_t tensor, int dim, int32_t *out)
{
    FV_TRY(check_tensor(fusion, tensor, "size"));
    const fv_value *value = &fusion->values[tensor];
    if (dim < 0)
        dim += value->rank;
    if (dim < 0 || dim >= value->rank)
        BUILD_FAIL(fusion, "size(%d) of a rank-%d tensor", dim, value->rank);
    fv_dim extent = value->dims[dim];
    if (extent.symbol < 0)
        return fv_ir_define_scalar(fusion, (double)(extent.broadcast && !extent.expanded ? 1 : extent.extent),
                                   FV_I64, out);
    FV_TRY(fv_ir_internal_new_value(fusion, FV_VALUE_SCALAR, FV_I64, 0, out));
    fusion->values[*out].origin = FV_SCALAR_EXTENT;
    fusion->values[*out].symbol = extent.symbol;
    return FV_OK;
}

fv_status fv_ir_dim_from_scalar(const fv_fusion *fusion, int32_t scalar, fv_dim *dim)
{
    FV_TRY(check_value(fusion, scalar));
    const fv_value *value = &fusion->values[scalar];
    if (value->kind == FV_VALUE_SCALAR && value->origin == FV_SCALAR_CONSTANT &&
        value->constant >= 1 && value->constant == (double)(int64_t)value->constant) {
        *dim = fv_ir_dim_concrete((int64_t)value->constant);
        return FV_OK;
    }
    if (value->kind == FV_VALUE_SCALAR && value->origin == FV_SCALAR_EXTENT) {
        *dim = (fv_dim){.extent = -1, .symbol = value->symbol};
        return FV_OK;
    }
    char label[40];
    return fv_ir_internal_error(fusion, FV_ERR_UNSUPPORTED,
                                "%s cannot be used as an extent: only positive integer literals "
                                "and T.size(i) are supported in shapes",
                                fv_ir_value_label(fusion, scalar, label));
}

fv_status fv_ir_cast(fv_fusion *fusion, int32_t input, fv_dtype dtype, int32_t *out)
{
    if (dtype == FV_DTYPE_NONE)
        BUILD_FAIL(fusion, "cast needs a dtype");
    return build_elementwise(fusion, FV_OP_CAST, &input, 1, dtype, out);
}

fv_status fv_ir_unary(fv_fusion *fusion, fv_op_kind kind, int32_t input, int32_t *out)
{
    FV_TRY(check_value(fusion, input));
    fv_op_category category = fv_ir_op_category(kind);
    bool shape_identity = kind == FV_OP_SET || kind == FV_OP_SEGMENT_SET;
    if (category != FV_CATEGORY_UNARY && !shape_identity)
        return fv_ir_internal_error(fusion, FV_ERR_INTERNAL, "%s is not a unary op",
                                    fv_ir_op_name(kind));
    if (shape_identity)
        FV_TRY(check_tensor(fusion, input, fv_ir_op_name(kind)));
    fv_dtype dtype = fusion->values[input].dtype;
    bool float_op = kind == FV_OP_EXP || kind == FV_OP_LOG || kind == FV_OP_SQRT ||
                    kind == FV_OP_RSQRT || kind == FV_OP_RECIPROCAL;
    if (float_op && !fv_dtype_is_float(dtype))
        dtype = fusion->values[input].kind == FV_VALUE_TENSOR ? FV_F32 : FV_F64;
    return build_elementwise(fusion, kind, &input, 1, dtype, out);
}

fv_status fv_ir_binary(fv_fusion *fusion, fv_op_kind kind, int32_t lhs, int32_t rhs, int32_t *out)
{
    fv_op_category category = fv_ir_op_category(kind);
    if (category != FV_CATEGORY_BINARY && category != FV_CATEGORY_COMPARE)
        return fv_ir_internal_error(fusion, FV_ERR_INTERNAL, "%s is not a binary op",
                                    fv_ir_op_name(kind));
    FV_TRY(check_value(fusion, lhs));
    FV_TRY(check_value(fusion, rhs));
    int32_t operands[2] = {lhs, rhs};
    fv_dtype dtype = category == FV_CATEGORY_COMPARE ? FV_BOOL : promote(fusion, operands, 2);
    return build_elementwise(fusion, kind, operands, 2, dtype, out);
}

fv_status fv_ir_where(fv_fusion *fusion, int32_t condition, int32_t if_true, int32_t if_false,
                      int32_t *out)
{
    FV_TRY(check_value(fusion, condition));
    FV_TRY(check_value(fusion, if_true));
    FV_TRY(check_value(fusion, if_false));
    if (fusion->values[condition].dtype != FV_BOOL) {
        char label[40];
        BUILD_FAIL(fusion, "where: condition %s has dtype %s, expected bool",
                   fv_ir_value_label(fusion, condition, label),
                   fv_dtype_name(fusion->values[condition].dtype));
    }
    int32_t operands[3] = {condition, if_true, if_false};
    fv_dtype dtype = promote(fusion, operands + 1, 2);
    return build_elementwise(fusion, FV_OP_WHERE, operands, 3, dtype, out);
}

fv_status fv_ir_broadcast_in_dim(fv_fusion *fusion, int32_t input, int output_rank,
                                 const fv_dim *shape, const int *broadcast_dims, int32_t *out)
{
    FV_TRY(check_tensor(fusion, input, "broadcast_in_dim"));
    const fv_value *source = &fusion->values[input];
    if (output_rank < source->rank || output_rank > FV_MAX_RANK)
        BUILD_FAIL(fusion, "broadcast_in_dim: output rank %d for an input of rank %d",
                   output_rank, source->rank);
    int mapped_from[FV_MAX_RANK] = {-1, -1, -1, -1};
    for (int i = 0; i < source->rank; i++) {
        int target = broadcast_dims[i];
        if (target < 0 || target >= output_rank || (i > 0 && target <= broadcast_dims[i - 1]))
            BUILD_FAIL(fusion, "broadcast_in_dim: broadcast_dims must be increasing and below %d",
                       output_rank);
        mapped_from[target] = i;
    }
    fv_dim dims[FV_MAX_RANK];
    for (int d = 0; d < output_rank; d++) {
        fv_dim target = target_extent(shape[d]);
        if (mapped_from[d] < 0) {
            dims[d] = expanded_to(target);
            continue;
        }
        fv_dim in = source->dims[mapped_from[d]];
        if (!in.broadcast) {
            if (fv_ir_unify_dims(fusion, in, target) != FV_OK) {
                fv_error_clear();
                BUILD_FAIL(fusion,
                           "broadcast_in_dim: input dimension %d does not match the target "
                           "extent of output dimension %d",
                           mapped_from[d], d);
            }
            dims[d] = in;
        } else {
            if (in.expanded && !is_concrete_one(target))
                FV_TRY(fv_ir_unify_dims(fusion, in, target));
            dims[d] = expanded_to(target);
        }
    }
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_BROADCAST_IN_DIM, &input, 1, FV_VALUE_TENSOR,
                              fusion->values[input].dtype, output_rank, &op_id, out));
    fv_op *op = &fusion->ops[op_id];
    op->axis_count = fusion->values[input].rank;
    for (int i = 0; i < op->axis_count; i++)
        op->axes[i] = (int8_t)broadcast_dims[i];
    memcpy(fusion->values[*out].dims, dims, sizeof(fv_dim) * (size_t)output_rank);
    return FV_OK;
}

fv_status fv_ir_broadcast(fv_fusion *fusion, int32_t input, int output_rank,
                          const bool *is_broadcast_dim, int32_t *out)
{
    FV_TRY(check_tensor(fusion, input, "broadcast"));
    if (output_rank > FV_MAX_RANK)
        return fv_ir_internal_error(fusion, FV_ERR_UNSUPPORTED, "broadcast to rank %d (at most %d)",
                                    output_rank, FV_MAX_RANK);
    const fv_value *source = &fusion->values[input];
    int kept = 0;
    int8_t axes[FV_MAX_RANK];
    fv_dim dims[FV_MAX_RANK];
    for (int d = 0; d < output_rank; d++) {
        if (is_broadcast_dim[d]) {
            dims[d] = plain_broadcast();
            continue;
        }
        if (kept >= source->rank)
            break;
        axes[kept] = (int8_t)d;
        dims[d] = source->dims[kept++];
    }
    if (kept != source->rank || output_rank - kept < 0)
        BUILD_FAIL(fusion, "broadcast: %d non-broadcast flags for an input of rank %d",
                   kept, source->rank);
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_BROADCAST, &input, 1, FV_VALUE_TENSOR,
                              source->dtype, output_rank, &op_id, out));
    fv_op *op = &fusion->ops[op_id];
    op->axis_count = kept;
    memcpy(op->axes, axes, (size_t)kept);
    memcpy(fusion->values[*out].dims, dims, sizeof(fv_dim) * (size_t)output_rank);
    return FV_OK;
}

fv_status fv_ir_expand(fv_fusion *fusion, int32_t input, const fv_dim *shape, int32_t *out)
{
    FV_TRY(check_tensor(fusion, input, "expand"));
    const fv_value *source = &fusion->values[input];
    fv_dim dims[FV_MAX_RANK];
    for (int d = 0; d < source->rank; d++) {
        fv_dim in = source->dims[d];
        fv_dim target = target_extent(shape[d]);
        if (in.broadcast) {
            if (in.expanded && !is_concrete_one(target))
                FV_TRY(fv_ir_unify_dims(fusion, in, target));
            dims[d] = expanded_to(target);
        } else {
            if (fv_ir_unify_dims(fusion, in, target) != FV_OK) {
                fv_error_clear();
                BUILD_FAIL(fusion, "expand: dimension %d is not a broadcast dimension and its "
                                   "extent differs from the target",
                           d);
            }
            dims[d] = in;
        }
    }
    int rank = source->rank; /* `source` points into values[], which may move */
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_EXPAND, &input, 1, FV_VALUE_TENSOR, source->dtype,
                              rank, &op_id, out));
    memcpy(fusion->values[*out].dims, dims, sizeof(fv_dim) * (size_t)rank);
    return FV_OK;
}

/* Normalizes dims (negative from the end), sorts them and rejects repeats. */
static fv_status normalize_axes(fv_fusion *fusion, const char *op_name, int rank, int count,
                                const int *dims, int8_t *axes)
{
    if (count > rank)
        BUILD_FAIL(fusion, "%s: %d dims for a rank-%d tensor", op_name, count, rank);
    for (int i = 0; i < count; i++) {
        int axis = dims[i] < 0 ? dims[i] + rank : dims[i];
        if (axis < 0 || axis >= rank)
            BUILD_FAIL(fusion, "%s: dim %d is out of range for a rank-%d tensor", op_name, dims[i],
                       rank);
        axes[i] = (int8_t)axis;
    }
    for (int i = 1; i < count; i++)
        for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
            int8_t swap = axes[j];
            axes[j] = axes[j - 1];
            axes[j - 1] = swap;
        }
    for (int i = 1; i < count; i++)
        if (axes[i] == axes[i - 1])
            BUILD_FAIL(fusion, "%s: dim %d is given twice", op_name, axes[i]);
    return FV_OK;
}

static bool axis_listed(const int8_t *axes, int count, int axis)
{
    for (int i = 0; i < count; i++)
        if (axes[i] == axis)
            return true;
    return false;
}

fv_status fv_ir_squeeze(fv_fusion *fusion, int32_t input, int dim_count, const int *dims,
                        int32_t *out)
{
    FV_TRY(check_tensor(fusion, input, "squeeze"));
    const fv_value *source = &fusion->values[input];
    int8_t axes[FV_MAX_RANK];
    FV_TRY(normalize_axes(fusion, "squeeze", source->rank, dim_count, dims, axes));
    fv_dim kept[FV_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < source->rank; d++) {
        if (!axis_listed(axes, dim_count, d)) {
            kept[rank++] = source->dims[d];
            continue;
        }
        if (!source->dims[d].broadcast)
            BUILD_FAIL(fusion, "squeeze: dimension %d is not a broadcast (size-1) dimension", d);
    }
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_SQUEEZE, &input, 1, FV_VALUE_TENSOR, source->dtype,
                              rank, &op_id, out));
    fv_op *op = &fusion->ops[op_id];
    op->axis_count = dim_count;
    memcpy(op->axes, axes, (size_t)dim_count);
    memcpy(fusion->values[*out].dims, kept, sizeof(fv_dim) * (size_t)rank);
    return FV_OK;
}

fv_status fv_ir_permute(fv_fusion *fusion, int32_t input, const int *order, int32_t *out)
{
    FV_TRY(check_tensor(fusion, input, "permute"));
    const fv_value *source = &fusion->values[input];
    bool seen[FV_MAX_RANK] = {false};
    int8_t axes[FV_MAX_RANK];
    for (int d = 0; d < source->rank; d++) {
        int axis = order[d] < 0 ? order[d] + source->rank : order[d];
        if (axis < 0 || axis >= source->rank || seen[axis])
            BUILD_FAIL(fusion, "permute: dims must be a permutation of 0..%d", source->rank - 1);
        seen[axis] = true;
        axes[d] = (int8_t)axis;
    }
    int rank = source->rank; /* `source` points into values[], which may move */
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_PERMUTE, &input, 1, FV_VALUE_TENSOR, source->dtype,
                              rank, &op_id, out));
    fv_op *op = &fusion->ops[op_id];
    op->axis_count = rank;
    memcpy(op->axes, axes, (size_t)rank);
    for (int d = 0; d < rank; d++)
        fusion->values[*out].dims[d] = fusion->values[input].dims[axes[d]];
    return FV_OK;
}

fv_status fv_ir_reshape(fv_fusion *fusion, int32_t input, int output_rank, const fv_dim *shape,
                        int32_t *out)
{
    FV_TRY(check_tensor(fusion, input, "reshape"));
    if (output_rank < 0 || output_rank > FV_MAX_RANK)
        return fv_ir_internal_error(fusion, FV_ERR_UNSUPPORTED,
                                    "reshape to rank %d (at most %d)", output_rank, FV_MAX_RANK);
    const fv_value *source = &fusion->values[input];
    int64_t in_count = 1, out_count = 1;
    bool concrete = true;
    for (int d = 0; d < source->rank; d++) {
        fv_dim dim = target_extent(source->dims[d]);
        if (dim.symbol >= 0 && fusion->symbol_extent[fv_ir_symbol_root(fusion, dim.symbol)] < 0)
            concrete = false;
        else
            in_count *= dim.symbol >= 0 ? fusion->symbol_extent[fv_ir_symbol_root(fusion, dim.symbol)]
                                        : dim.extent;
    }
    fv_dim dims[FV_MAX_RANK];
    for (int d = 0; d < output_rank; d++) {
        fv_dim dim = target_extent(shape[d]);
        dims[d] = is_concrete_one(dim) ? plain_broadcast() : dim;
        if (dim.symbol >= 0 && fusion->symbol_extent[fv_ir_symbol_root(fusion, dim.symbol)] < 0)
            concrete = false;
        else
            out_count *= dim.symbol >= 0 ? fusion->symbol_extent[fv_ir_symbol_root(fusion, dim.symbol)]
                                         : dim.extent;
    }
    if (concrete && in_count != out_count)
        BUILD_FAIL(fusion, "reshape: %lld elements cannot become %lld", (long long)in_count,
                   (long long)out_count);
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_RESHAPE, &input, 1, FV_VALUE_TENSOR, source->dtype,
                              output_rank, &op_id, out));
    memcpy(fusion->values[*out].dims, dims, sizeof(fv_dim) * (size_t)output_rank);
    return FV_OK;
}

/* Output dims of a reduction over `axes` of `source`. */
static int reduced_dims(const fv_value *source, const int8_t *axes, int axis_count, bool keepdim,
                        fv_dim *dims)
{
    int rank = 0;
    for (int d = 0; d < source->rank; d++) {
        if (!axis_listed(axes, axis_count, d))
            dims[rank++] = source->dims[d];
        else if (keepdim)
            dims[rank++] = plain_broadcast();
    }
    return rank;
}

fv_status fv_ir_reduce(fv_fusion *fusion, fv_op_kind kind, int32_t input, int dim_count,
                       const int *dims, bool keepdim, fv_dtype dtype, int32_t *out)
{
    if (kind != FV_OP_SUM && kind != FV_OP_MAX)
        return fv_ir_internal_error(fusion, FV_ERR_INTERNAL, "%s is not sum or max",
                                    fv_ir_op_name(kind));
    FV_TRY(check_tensor(fusion, input, fv_ir_op_name(kind)));
    const fv_value *source = &fusion->values[input];
    int8_t axes[FV_MAX_RANK];
    FV_TRY(normalize_axes(fusion, fv_ir_op_name(kind), source->rank, dim_count, dims, axes));
    fv_dim out_dims[FV_MAX_RANK];
    int rank = reduced_dims(source, axes, dim_count, keepdim, out_dims);
    fv_dtype out_dtype = dtype == FV_DTYPE_NONE ? source->dtype : dtype;
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, kind, &input, 1, FV_VALUE_TENSOR, out_dtype, rank, &op_id,
                              out));
    fv_op *op = &fusion->ops[op_id];
    op->axis_count = dim_count;
    memcpy(op->axes, axes, (size_t)dim_count);
    op->keepdim = keepdim;
    op->dtype = dtype;
    memcpy(fusion->values[*out].dims, out_dims, sizeof(fv_dim) * (size_t)rank);
    return FV_OK;
}

fv_status fv_ir_var_mean(fv_fusion *fusion, int32_t input, int dim_count, const int *dims,
                         int64_t correction, bool keepdim, int32_t *variance, int32_t *mean)
{
    FV_TRY(check_tensor(fusion, input, "var_mean"));
    const fv_value *source = &fusion->values[input];
    if (!fv_dtype_is_float(source->dtype))
        BUILD_FAIL(fusion, "var_mean needs a floating-point input, not %s",
                   fv_dtype_name(source->dtype));
    if (correction < 0)
        BUILD_FAIL(fusion, "var_mean: correction must not be negative");
    int8_t axes[FV_MAX_RANK];
    FV_TRY(normalize_axes(fusion, "var_mean", source->rank, dim_count, dims, axes));
    fv_dim out_dims[FV_MAX_RANK];
    int rank = reduced_dims(source, axes, dim_count, keepdim, out_dims);
    fv_dtype dtype = source->dtype;
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_VAR_MEAN, &input, 1, FV_VALUE_TENSOR, dtype, rank,
                              &op_id, variance));
    FV_TRY(fv_ir_internal_new_value(fusion, FV_VALUE_TENSOR, dtype, rank, mean));
    fv_op *op = &fusion->ops[op_id];
    op->outputs[1] = *mean;
    op->output_count = 2;
    op->axis_count = dim_count;
    memcpy(op->axes, axes, (size_t)dim_count);
    op->keepdim = keepdim;
    op->correction = correction;
    fusion->values[*mean].producer = op_id;
    fusion->values[*mean].producer_output = 1;
    memcpy(fusion->values[*variance].dims, out_dims, sizeof(fv_dim) * (size_t)rank);
    memcpy(fusion->values[*mean].dims, out_dims, sizeof(fv_dim) * (size_t)rank);
    return FV_OK;
}

fv_status fv_ir_full(fv_fusion *fusion, int rank, const fv_dim *shape, int32_t fill,
                     fv_dtype dtype, int32_t *out)
{
    FV_TRY(check_value(fusion, fill));
    if (rank < 0 || rank > FV_MAX_RANK)
        return fv_ir_internal_error(fusion, FV_ERR_UNSUPPORTED, "full of rank %d (at most %d)",
                                    rank, FV_MAX_RANK);
    if (fusion->values[fill].kind != FV_VALUE_SCALAR)
        BUILD_FAIL(fusion, "full: fill_value must be a scalar");
    if (dtype == FV_DTYPE_NONE)
        BUILD_FAIL(fusion, "full needs a dtype");
    int32_t op_id;
    FV_TRY(new_op_with_output(fusion, FV_OP_FULL, &fill, 1, FV_VALUE_TENSOR, dtype, rank, &op_id,
                              out));
    fusion->ops[op_id].dtype = dtype;
    for (int d = 0; d < rank; d++) {
        fv_dim dim = target_extent(shape[d]);
        fusion->values[*out].dims[d] = is_concrete_one(dim) ? plain_broadcast() : dim;
    }
    return FV_OK;
}
