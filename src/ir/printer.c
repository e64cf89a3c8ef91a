/* printer.c: prints a fusion as an nvFuser Python-frontend definition, and
 * derives the canonical text and hash from the same walk.
 *
 * Values are named in print order (T0, T1, ... for tensors, S0, ... for
 * scalars), inputs first in input order, then ops in a depth-first
 * post-order from the outputs.  Both the names and the order therefore depend
 * only on the DAG, the input order and the output order, never on the names
 * or statement order of the source: this is what makes the canonical text
 * canonical.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "ir/ir.h"

typedef struct printer {
    const fv_fusion *fusion;
    fv_text *out;
    int32_t *number;    /* per value: printed number, or -1 if not printed yet */
    int next_tensor;
    int next_scalar;
} printer;

static const char *indent = "    ";

static void print_double(fv_text *out, double value)
{
    char buffer[40];
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buffer, sizeof buffer, "%.*g", precision, value);
        if (strtod(buffer, NULL) == value)
            break;
    }
    /* Keep a decimal point so that the reader sees a float literal. */
    if (strpbrk(buffer, ".eEn") == NULL)
        strcat(buffer, ".0");
    fv_text_printf(out, "%s", buffer);
}

static void print_name(printer *p, int32_t value)
{
    const fv_value *v = &p->fusion->values[value];
    fv_text_printf(p->out, "%c%d", v->kind == FV_VALUE_TENSOR ? 'T' : 'S', p->number[value]);
}

static int32_t assign_number(printer *p, int32_t value)
{
    if (p->fusion->values[value].kind == FV_VALUE_TENSOR)
        p->number[value] = p->next_tensor++;
    else
        p->number[value] = p->next_scalar++;
    return p->number[value];
}

/* First input tensor dim whose extent is in the class of `symbol`. */
static bool find_input_dim(const fv_fusion *fusion, int32_t symbol, int32_t *input, int *dim)
{
    int32_t root = fv_ir_symbol_root(fusion, symbol);
    for (int32_t i = 0; i < fusion->input_count; i++) {
        const fv_value *value = &fusion->values[fusion->inputs[i]];
        if (value->kind != FV_VALUE_TENSOR)
            continue;
        for (int d = 0; d < value->rank; d++) {
            if (value->dims[d].symbol >= 0 && !value->dims[d].broadcast &&
                fv_ir_symbol_root(fusion, value->dims[d].symbol) == root) {
                *input = fusion->inputs[i];
                *dim = d;
                return true;
            }
        }
    }
    return false;
}

static void print_extent(printer *p, fv_dim dim)
{
    if (dim.broadcast && !dim.expanded) {
        fv_text_printf(p->out, "1");
        return;
    }
    int32_t input;
    int input_dim;
    if (dim.symbol >= 0 && find_input_dim(p->fusion, dim.symbol, &input, &input_dim)) {
        print_name(p, input);
        fv_text_printf(p->out, ".size(%d)", input_dim);
        return;
    }
    int64_t extent = dim.symbol >= 0
                         ? p->fusion->symbol_extent[fv_ir_symbol_root(p->fusion, dim.symbol)]
                         : dim.extent;
    fv_text_printf(p->out, "%lld", (long long)extent);
}

static void print_shape(printer *p, const fv_value *value)
{
    fv_text_printf(p->out, "[");
    for (int d = 0; d < value->rank; d++) {
        if (d > 0)
            fv_text_printf(p->out, ", ");
        print_extent(p, value->dims[d]);
    }
    fv_text_printf(p->out, "]");
}

static void print_int_list(fv_text *out, const int8_t *items, int count)
{
    fv_text_printf(out, "[");
    for (int i = 0; i < count; i++)
        fv_text_printf(out, "%s%d", i ? ", " : "", items[i]);
    fv_text_printf(out, "]");
}

static void print_input(printer *p, int32_t id)
{
    const fv_value *value = &p->fusion->values[id];
    assign_number(p, id);
    fv_text_printf(p->out, "%s", indent);
    print_name(p, id);
    if (value->kind == FV_VALUE_SCALAR) {
        fv_text_printf(p->out, " = fd.define_scalar(dtype=DataType.%s)\n",
                       fv_dtype_frontend_name(value->dtype));
        return;
    }
    fv_text_printf(p->out, " = fd.define_tensor(shape=[");
    for (int d = 0; d < value->rank; d++) {
        fv_dim dim = value->dims[d];
        long long extent = dim.broadcast ? 1 : (dim.symbol >= 0 ? -1 : dim.extent);
        fv_text_printf(p->out, "%s%lld", d ? ", " : "", extent);
    }
    fv_text_printf(p->out, "], contiguity=[");
    for (int d = 0; d < value->rank; d++) {
        int8_t contiguous = value->contiguity[d];
        fv_text_printf(p->out, "%s%s", d ? ", " : "",
                       contiguous < 0 ? "None" : (contiguous ? "True" : "False"));
    }
    fv_text_printf(p->out, "], dtype=DataType.%s, is_cpu=False",
                   fv_dtype_frontend_name(value->dtype));
    bool row_major = true;
    for (int d = 0; d < value->rank; d++)
        row_major = row_major && value->stride_order[d] == value->rank - 1 - d;
    if (!row_major) {
        fv_text_printf(p->out, ", stride_order=");
        print_int_list(p->out, value->stride_order, value->rank);
    }
    fv_text_printf(p->out, ")\n");
}

/* Prints the definition of a scalar that no op produces, before its first use. */
static void ensure_scalar(printer *p, int32_t id)
{
    const fv_value *value = &p->fusion->values[id];
    if (p->number[id] >= 0 || value->kind != FV_VALUE_SCALAR || value->producer >= 0)
        return;
    assign_number(p, id);
    fv_text_printf(p->out, "%s", indent);
    print_name(p, id);
    if (value->origin == FV_SCALAR_EXTENT) {
        fv_text_printf(p->out, " = ");
        fv_dim dim = {.extent = -1, .symbol = value->symbol};
        print_extent(p, dim);
        fv_text_printf(p->out, "\n");
        return;
    }
    fv_text_printf(p->out, " = fd.define_scalar(");
    if (value->dtype == FV_BOOL)
        fv_text_printf(p->out, "%s", value->constant != 0 ? "True" : "False");
    else if (fv_dtype_is_integer(value->dtype))
        fv_text_printf(p->out, "%lld", (long long)value->constant);
    else
        print_double(p->out, value->constant);
    fv_text_printf(p->out, ", dtype=DataType.%s)\n", fv_dtype_frontend_name(value->dtype));
}

static void print_operands(printer *p, const fv_op *op)
{
    for (int i = 0; i < op->input_count; i++) {
        if (i > 0)
            fv_text_printf(p->out, ", ");
        print_name(p, op->inputs[i]);
    }
}

static void print_reduction_arguments(printer *p, const fv_op *op)
{
    fv_text_printf(p->out, ", dims=");
    print_int_list(p->out, op->axes, op->axis_count);
    if (op->kind == FV_OP_VAR_MEAN)
        fv_text_printf(p->out, ", correction=%lld", (long long)op->correction);
    fv_text_printf(p->out, ", keepdim=%s", op->keepdim ? "True" : "False");
    if (op->kind != FV_OP_VAR_MEAN)
        fv_text_printf(p->out, ", dtype=DataType.%s", fv_dtype_frontend_name(op->dtype));
}

/* The keyword arguments after the operands, by op kind. */
static void print_attributes(printer *p, const fv_op *op, const fv_value *output)
{
    const fv_value *input = &p->fusion->values[op->inputs[0]];
    switch (op->kind) {
    case FV_OP_CAST:
        fv_text_printf(p->out, ", dtype=DataType.%s", fv_dtype_frontend_name(op->dtype));
        break;
    case FV_OP_BROADCAST_IN_DIM:
        fv_text_printf(p->out, ", shape=");
        print_shape(p, output);
        fv_text_printf(p->out, ", broadcast_dims=");
        print_int_list(p->out, op->axes, op->axis_count);
        break;
    case FV_OP_BROADCAST: {
        fv_text_printf(p->out, ", is_broadcast_dim=[");
        for (int d = 0; d < output->rank; d++) {
            bool kept = false;
            for (int i = 0; i < op->axis_count; i++)
                kept = kept || op->axes[i] == d;
            fv_text_printf(p->out, "%s%s", d ? ", " : "", kept ? "False" : "True");
        }
        fv_text_printf(p->out, "]");
        break;
    }
    case FV_OP_EXPAND:
        fv_text_printf(p->out, ", shape=");
        print_shape(p, output);
        break;
    case FV_OP_RESHAPE:
        fv_text_printf(p->out, ", new_shape=");
        print_shape(p, output);
        break;
    case FV_OP_SQUEEZE:
    case FV_OP_PERMUTE:
        fv_text_printf(p->out, ", dims=");
        print_int_list(p->out, op->axes, op->axis_count);
        break;
    case FV_OP_SUM:
    case FV_OP_MAX:
    case FV_OP_VAR_MEAN:
        print_reduction_arguments(p, op);
        break;
    default:
        break;
    }
    (void)input;
}

static void print_op(printer *p, const fv_op *op)
{
    for (int i = 0; i < op->input_count; i++)
        ensure_scalar(p, op->inputs[i]);
    fv_text_printf(p->out, "%s", indent);
    for (int o = 0; o < op->output_count; o++) {
        assign_number(p, op->outputs[o]);
        if (o > 0)
            fv_text_printf(p->out, ", ");
        print_name(p, op->outputs[o]);
    }
    const fv_value *output = &p->fusion->values[op->outputs[0]];
    if (op->kind == FV_OP_FULL) {
        fv_text_printf(p->out, " = fd.ops.full(shape=");
        print_shape(p, output);
        fv_text_printf(p->out, ", fill_value=");
        print_name(p, op->inputs[0]);
        fv_text_printf(p->out, ", dtype=DataType.%s)\n", fv_dtype_frontend_name(op->dtype));
        return;
    }
    fv_text_printf(p->out, " = fd.ops.%s(", fv_ir_op_name(op->kind));
    print_operands(p, op);
    print_attributes(p, op, output);
    fv_text_printf(p->out, ")\n");
}

static fv_status print_fusion(const fv_fusion *fusion, const char *name, fv_text *out,
                              bool with_harness)
{
    printer p = {.fusion = fusion, .out = out};
    p.number = malloc(sizeof(int32_t) * (size_t)(fusion->value_count + 1));
    FV_CHECK_ALLOC(p.number);
    for (int32_t v = 0; v < fusion->value_count; v++)
        p.number[v] = -1;
    int32_t *order = NULL;
    int32_t count = 0;
    fv_status status = fv_ir_live_ops(fusion, &order, &count);
    if (status != FV_OK) {
        free(p.number);
        fv_error_trace(__FILE__, __LINE__);
        return status;
    }
    if (with_harness)
        fv_text_printf(out, "from nvfuser import FusionDefinition, DataType\n\n");
    fv_text_printf(out, "def %s(fd : FusionDefinition) -> None :\n", name);
    for (int32_t i = 0; i < fusion->input_count; i++)
        print_input(&p, fusion->inputs[i]);
    for (int32_t i = 0; i < count; i++)
        print_op(&p, &fusion->ops[order[i]]);
    for (int32_t o = 0; o < fusion->output_count; o++) {
        fv_text_printf(out, "%sfd.add_output(", indent);
        print_name(&p, fusion->outputs[o]);
        if (fusion->output_stride_order[o][0] >= 0) {
            fv_text_printf(out, ", stride_order=");
            print_int_list(out, fusion->output_stride_order[o],
                           fusion->values[fusion->outputs[o]].rank);
        }
        fv_text_printf(out, ")\n");
    }
    if (with_harness)
        fv_text_printf(out, "\nwith FusionDefinition() as fd:\n%s%s(fd)\n", indent, name);
    free(order);
    free(p.number);
    return fv_text_status(out);
}

fv_status fv_ir_print(const fv_fusion *fusion, fv_text *out)
{
    const char *name = fusion->name[0] ? fusion->name : "nvfuser_fusion_id0";
    return print_fusion(fusion, name, out, true);
}

fv_status fv_ir_canonical_text(const fv_fusion *fusion, fv_text *out)
{
    return print_fusion(fusion, "fusion", out, false);
}

fv_status fv_ir_hash(const fv_fusion *fusion, char hex[65])
{
    fv_text text = {0};
    fv_status status = fv_ir_canonical_text(fusion, &text);
    if (status == FV_OK)
        fv_sha256_hex_of(fv_text_str(&text), text.length, hex);
    fv_text_free(&text);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}
