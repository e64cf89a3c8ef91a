/* emit.c: element-wise CUDA C for segment values, kernel parameters, and
 * skeleton filling. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* ------------------------------------------------------------- types */

const char *fv_codegen_register_type(fv_dtype dtype)
{
    switch (dtype) {
    case FV_F64: return "double";
    case FV_I64: return "long long";
    case FV_I32: return "int";
    case FV_BOOL: return "bool";
    default: return "float";
    }
}

const char *fv_codegen_storage_type(fv_dtype dtype)
{
    switch (dtype) {
    case FV_F64: return "double";
    case FV_F16: return "__half";
    case FV_BF16: return "__nv_bfloat16";
    case FV_I64: return "long long";
    case FV_I32: return "int";
    case FV_BOOL: return "bool";
    default: return "float";
    }
}

/* Half and f32 tensors are loaded as float through 16-byte vectors. */
static bool float_storage(fv_dtype dtype)
{
    return dtype == FV_F32 || dtype == FV_F16 || dtype == FV_BF16;
}

bool fv_codegen_spans_inner(const fv_segment_view *view, int32_t value)
{
    if (view->axis_count == 0)
        return false;
    return (view->spans[value] >> (view->axis_count - 1)) & 1;
}

bool fv_codegen_spans_outer(const fv_segment_view *view, int32_t value)
{
    return view->axis_count == 2 && (view->spans[value] & 1);
}

/* ------------------------------------------------------------ emitter */

fv_status fv_codegen_begin(fv_emitter *emitter, const fv_segment_view *view, int vector)
{
    memset(emitter, 0, sizeof *emitter);
    emitter->view = view;
    emitter->vector = vector > 0 ? vector : 1;
    emitter->row_length = "inner";
    emitter->declared = calloc((size_t)view->fusion->value_count + 1, sizeof(bool));
    FV_CHECK_ALLOC(emitter->declared);
    return FV_OK;
}

void fv_codegen_end(fv_emitter *emitter)
{
    free(emitter->declared);
    emitter->declared = NULL;
}

void fv_codegen_line(fv_emitter *emitter, const char *format, ...)
{
    fv_text_printf(emitter->out, "%*s", emitter->indent, "");
    va_list args;
    va_start(args, format);
    fv_text_vprintf(emitter->out, format, args);
    va_end(args);
    fv_text_printf(emitter->out, "\n");
}

bool *fv_codegen_save(const fv_emitter *emitter)
{
    size_t bytes = sizeof(bool) * (size_t)(emitter->view->fusion->value_count + 1);
    bool *saved = malloc(bytes);
    if (saved != NULL)
        memcpy(saved, emitter->declared, bytes);
    return saved;
}

void fv_codegen_restore(fv_emitter *emitter, bool *saved)
{
    if (saved == NULL)
        return;
    memcpy(emitter->declared, saved,
           sizeof(bool) * (size_t)(emitter->view->fusion->value_count + 1));
    free(saved);
}

/* --------------------------------------------------------- parameters */

static bool is_literal(const fv_value *value)
{
    return value->kind == FV_VALUE_SCALAR && value->origin == FV_SCALAR_CONSTANT;
}

int32_t fv_codegen_scalar_params(const fv_segment_view *view, int32_t *ids)
{
    const fv_fusion *fusion = view->fusion;
    bool *used = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (used == NULL)
        return 0;
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        if (fusion->values[op->outputs[0]].kind == FV_VALUE_SCALAR)
            continue; /* computed on the host */
        for (int k = 0; k < op->input_count; k++) {
            const fv_value *operand = &fusion->values[op->inputs[k]];
            if (operand->kind == FV_VALUE_SCALAR && !is_literal(operand))
                used[op->inputs[k]] = true;
        }
    }
    int32_t count = 0;
    for (int32_t v = 0; v < fusion->value_count; v++)
        if (used[v])
            ids[count++] = v;
    free(used);
    return count;
}

static int32_t scalar_param_index(const fv_segment_view *view, int32_t value)
{
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(view->fusion->value_count + 1));
    if (ids == NULL)
        return -1;
    int32_t count = fv_codegen_scalar_params(view, ids), found = -1;
    for (int32_t i = 0; i < count && found < 0; i++)
        if (ids[i] == value)
            found = i;
    free(ids);
    return found;
}

static void describe_tensor(const fv_segment_view *view, int32_t value, fv_text *out)
{
    char label[40];
    const fv_value *v = &view->fusion->values[value];
    bool outer = fv_codegen_spans_outer(view, value), inner = fv_codegen_spans_inner(view, value);
    fv_text_printf(out, "%s %s %s", fv_ir_value_label(view->fusion, value, label),
                   fv_dtype_name(v->dtype),
                   outer && inner ? "[outer, inner]"
                                  : (outer ? "[outer]" : (inner ? "[inner]" : "[1]")));
}

void fv_codegen_parameters(const fv_segment_view *view, fv_text *out)
{
    const fv_fusion *fusion = view->fusion;
    int position = 0;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t id = fusion->inputs[i];
        if (fusion->values[id].kind != FV_VALUE_TENSOR)
            continue;
        fv_text_printf(out, "    const %s *__restrict__ in%d,  // ",
                       fv_codegen_storage_type(fusion->values[id].dtype), position++);
        describe_tensor(view, id, out);
        fv_text_printf(out, "\n");
    }
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        fv_text_printf(out, "    %s *__restrict__ out%d,  // ",
                       fv_codegen_storage_type(fusion->values[id].dtype), (int)o);
        describe_tensor(view, id, out);
        fv_text_printf(out, "\n");
    }
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(fusion->value_count + 1));
    int32_t count = ids ? fv_codegen_scalar_params(view, ids) : 0;
    for (int32_t s = 0; s < count; s++) {
        char label[40];
        fv_text_printf(out, "    double scalar%d,  // %s\n", (int)s,
                       fv_ir_value_label(fusion, ids[s], label));
    }
    free(ids);
    fv_text_printf(out, "    long long outer, long long inner,\n"
                        "    float *__restrict__ workspace, unsigned *__restrict__ semaphores");
}

/* ------------------------------------------------------------- values */

static void format_literal(const fv_value *value, char *buffer, size_t size)
{
    switch (value->dtype) {
    case FV_BOOL: snprintf(buffer, size, "%s", value->constant != 0 ? "true" : "false"); break;
    case FV_I64: snprintf(buffer, size, "%lldLL", (long long)value->constant); break;
    case FV_I32: snprintf(buffer, size, "%d", (int)value->constant); break;
    default: snprintf(buffer, size, "%.17g", value->constant); break;
    }
}

void fv_codegen_value(const fv_emitter *emitter, int32_t value, const char *lane, char *buffer,
                      size_t size)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    if (is_literal(v)) {
        format_literal(v, buffer, size);
        return;
    }
    if (v->kind == FV_VALUE_SCALAR) {
        snprintf(buffer, size, "scalar%d", (int)scalar_param_index(emitter->view, value));
        return;
    }
    if (fv_codegen_spans_inner(emitter->view, value))
        snprintf(buffer, size, "v%d[%s]", (int)value, lane);
    else
        snprintf(buffer, size, "v%d", (int)value);
}

/* Register type of a value (scalar parameters are doubles). */
static const char *value_type(const fv_emitter *emitter, int32_t value)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    if (v->kind == FV_VALUE_SCALAR && !is_literal(v))
        return "double";
    if (is_literal(v) && fv_dtype_is_float(v->dtype))
        return "double";
    return fv_codegen_register_type(v->dtype);
}

/* Operand k of an op at `lane`, converted to `type`. */
static void operand(const fv_emitter *emitter, const fv_op *op, int k, const char *lane,
                    const char *type, char *buffer, size_t size)
{
    char expression[96];
    fv_codegen_value(emitter, op->inputs[k], lane, expression, sizeof expression);
    if (strcmp(value_type(emitter, op->inputs[k]), type) == 0)
        snprintf(buffer, size, "%s", expression);
    else
        snprintf(buffer, size, "(%s)(%s)", type, expression);
}

static bool constant_equals(const fv_emitter *emitter, int32_t value, double expected)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    return is_literal(v) && v->constant == expected;
}

/* The wider register type of two operands, for comparisons. */
static const char *comparison_type(const fv_emitter *emitter, const fv_op *op)
{
    const char *a = value_type(emitter, op->inputs[0]), *b = value_type(emitter, op->inputs[1]);
    static const char *const ranked[] = {"double", "float", "long long", "int", "bool"};
    for (size_t i = 0; i < sizeof ranked / sizeof ranked[0]; i++)
        if (strcmp(a, ranked[i]) == 0 || strcmp(b, ranked[i]) == 0)
            return ranked[i];
    return a;
}

const char *fv_codegen_exp_function(const fv_fusion *fusion)
{
    return fusion->fast_exp ? "fv_exp_fast" : "expf";
}

static const char *math_function(const fv_emitter *emitter, fv_op_kind kind, bool is_double)
{
    switch (kind) {
    case FV_OP_EXP: return is_double ? "exp" : fv_codegen_exp_function(emitter->view->fusion);
    case FV_OP_LOG: return is_double ? "log" : "logf";
    case FV_OP_SQRT: return is_double ? "sqrt" : "sqrtf";
    case FV_OP_RSQRT: return is_double ? "rsqrt" : "rsqrtf";
    default: return "";
    }
}

/* True for a float division of a row's elements by one value per row
 * (softmax's exp / sum; the divisor varies from row to row, not along a
 * row): it multiplies by the value's reciprocal, one IEEE division per
 * thread and row instead of one per element, within 1.5 ulp of the quotient
 * while the divisor's magnitude is in [2^-126, 2^126] (a softmax sum is at
 * least 1).  Per-element IEEE divisions kept softmax issue-bound.  Literals
 * and scalar parameters keep the division. */
static bool divides_row_by_scalar(const fv_emitter *emitter, const fv_op *op, bool is_double)
{
    const fv_segment_view *view = emitter->view;
    return !is_double && fv_codegen_spans_inner(view, op->outputs[0]) &&
           !fv_codegen_spans_inner(view, op->inputs[1]) &&
           fv_codegen_spans_outer(view, op->inputs[1]);
}

/* The C expression of an arithmetic op's result at `lane`, in `type`. */
static void arithmetic(const fv_emitter *emitter, const fv_op *op, const char *lane,
                       const char *type, char *buffer, size_t size)
{
    char a[128] = "", b[128] = "", c[128] = "";
    bool is_double = strcmp(type, "double") == 0;
    bool is_integer = strcmp(type, "long long") == 0 || strcmp(type, "int") == 0;
    fv_op_category category = fv_ir_op_category(op->kind);
    const char *operand_type = category == FV_CATEGORY_COMPARE ? comparison_type(emitter, op) : type;
    if (op->kind == FV_OP_WHERE) {
        operand(emitter, op, 0, lane, "bool", a, sizeof a);
        operand(emitter, op, 1, lane, type, b, sizeof b);
        operand(emitter, op, 2, lane, type, c, sizeof c);
        snprintf(buffer, size, "%s ? %s : %s", a, b, c);
        return;
    }
    operand(emitter, op, 0, lane, operand_type, a, sizeof a);
    if (op->input_count > 1)
        operand(emitter, op, 1, lane, operand_type, b, sizeof b);
    switch (op->kind) {
    case FV_OP_NEG: snprintf(buffer, size, "-%s", a); break;
    case FV_OP_ABS: snprintf(buffer, size, "%s(%s)", is_integer ? "llabs" : (is_double ? "fabs" : "fabsf"), a); break;
    case FV_OP_EXP: case FV_OP_LOG: case FV_OP_SQRT: case FV_OP_RSQRT:
        snprintf(buffer, size, "%s(%s)", math_function(emitter, op->kind, is_double), a);
        break;
    case FV_OP_RECIPROCAL:
        if (is_integer)
            snprintf(buffer, size, "%s == 0 ? 0 : 1 / %s", a, a);
        else
            snprintf(buffer, size, "%s / %s", is_double ? "1.0" : "1.0f", a);
        break;
    case FV_OP_ADD: snprintf(buffer, size, "%s + %s", a, b); break;
    case FV_OP_SUB: snprintf(buffer, size, "%s - %s", a, b); break;
    case FV_OP_MUL: snprintf(buffer, size, "%s * %s", a, b); break;
    case FV_OP_DIV:
        if (is_integer)
            snprintf(buffer, size, "%s == 0 ? 0 : %s / %s", b, a, b);
        else if (divides_row_by_scalar(emitter, op, is_double))
            snprintf(buffer, size, "%s * (1.0f / %s)", a, b);
        else
            snprintf(buffer, size, "%s / %s", a, b);
        break;
    case FV_OP_POW:
        if (constant_equals(emitter, op->inputs[1], 2.0))
            snprintf(buffer, size, "%s * %s", a, a);
        else if (constant_equals(emitter, op->inputs[1], 3.0))
            snprintf(buffer, size, "%s * %s * %s", a, a, a);
        else
            snprintf(buffer, size, "%s(%s, %s)", is_double ? "pow" : "powf", a, b);
        break;
    case FV_OP_MAXIMUM: snprintf(buffer, size, "fv_maximum(%s, %s)", a, b); break;
    case FV_OP_MINIMUM: snprintf(buffer, size, "fv_minimum(%s, %s)", a, b); break;
    case FV_OP_EQ: snprintf(buffer, size, "%s == %s", a, b); break;
    case FV_OP_NE: snprintf(buffer, size, "%s != %s", a, b); break;
    case FV_OP_LT: snprintf(buffer, size, "%s < %s", a, b); break;
    case FV_OP_LE: snprintf(buffer, size, "%s <= %s", a, b); break;
    case FV_OP_GT: snprintf(buffer, size, "%s > %s", a, b); break;
    case FV_OP_GE: snprintf(buffer, size, "%s >= %s", a, b); break;
    default: snprintf(buffer, size, "%s", a); break; /* set, segment_set, shape ops */
    }
}

void fv_codegen_rounded(fv_dtype dtype, const char *expression, char *buffer, size_t size)
{
    if (dtype == FV_BF16)
        snprintf(buffer, size, "fv_round_bf16(%s)", expression);
    else if (dtype == FV_F16)
        snprintf(buffer, size, "fv_round_f16(%s)", expression);
    else
        snprintf(buffer, size, "%s", expression);
}

static void cast_expression(const fv_emitter *emitter, const fv_op *op, const char *lane,
                            char *buffer, size_t size)
{
    fv_dtype target = op->dtype;
    char a[128];
    fv_codegen_value(emitter, op->inputs[0], lane, a, sizeof a);
    if (target == FV_BOOL) {
        snprintf(buffer, size, "%s != 0", a);
        return;
    }
    char converted[160];
    snprintf(converted, sizeof converted, "(%s)(%s)", fv_codegen_register_type(target), a);
    fv_codegen_rounded(target, converted, buffer, size);
}

static void op_expression(const fv_emitter *emitter, const fv_op *op, const char *lane,
                          char *buffer, size_t size)
{
    const fv_value *out = &emitter->view->fusion->values[op->outputs[0]];
    if (op->kind == FV_OP_CAST) {
        cast_expression(emitter, op, lane, buffer, size);
        return;
    }
    if (op->kind == FV_OP_FULL) {
        char fill[64];
        format_literal(&emitter->view->fusion->values[op->inputs[0]], fill, sizeof fill);
        const fv_value *fill_value = &emitter->view->fusion->values[op->inputs[0]];
        if (!is_literal(fill_value))
            fv_codegen_value(emitter, op->inputs[0], lane, fill, sizeof fill);
        char converted[96];
        snprintf(converted, sizeof converted, "(%s)(%s)", fv_codegen_register_type(out->dtype), fill);
        fv_codegen_rounded(out->dtype, converted, buffer, size);
        return;
    }
    char expression[512];
    arithmetic(emitter, op, lane, fv_codegen_register_type(out->dtype), expression,
               sizeof expression);
    bool shape = fv_ir_op_category(op->kind) == FV_CATEGORY_SHAPE;
    if (shape || fv_ir_op_category(op->kind) == FV_CATEGORY_COMPARE)
        snprintf(buffer, size, "%s", expression);
    else
        fv_codegen_rounded(out->dtype, expression, buffer, size);
}

static void comment_op(fv_emitter *emitter, const fv_op *op)
{
    const fv_fusion *fusion = emitter->view->fusion;
    char out[40];
    fv_text line = {0};
    fv_text_printf(&line, "// %s = %s(", fv_ir_value_label(fusion, op->outputs[0], out),
                   fv_ir_op_name(op->kind));
    for (int k = 0; k < op->input_count; k++) {
        char label[40];
        const fv_value *operand_value = &fusion->values[op->inputs[k]];
        if (is_literal(operand_value))
            format_literal(operand_value, label, sizeof label);
        else
            fv_ir_value_label(fusion, op->inputs[k], label);
        fv_text_printf(&line, "%s%s", k ? ", " : "", label);
    }
    fv_text_printf(&line, ")  %s", fv_dtype_name(fusion->values[op->outputs[0]].dtype));
    if (op->loc.line > 0)
        fv_text_printf(&line, ", line %d", op->loc.line);
    fv_codegen_line(emitter, "%s", fv_text_str(&line));
    fv_text_free(&line);
}

static void emit_op(fv_emitter *emitter, const fv_op *op)
{
    int32_t out = op->outputs[0];
    const char *type = fv_codegen_register_type(emitter->view->fusion->values[out].dtype);
    char expression[640];
    comment_op(emitter, op);
    if (fv_codegen_spans_inner(emitter->view, out)) {
        op_expression(emitter, op, "lane", expression, sizeof expression);
        fv_codegen_line(emitter, "%s v%d[%d];", type, (int)out, emitter->vector);
        fv_codegen_line(emitter, "#pragma unroll");
        fv_codegen_line(emitter, "for (int lane = 0; lane < %d; ++lane)", emitter->vector);
        fv_codegen_line(emitter, "    v%d[lane] = %s;", (int)out, expression);
    } else {
        op_expression(emitter, op, "0", expression, sizeof expression);
        fv_codegen_line(emitter, "const %s v%d = %s;", type, (int)out, expression);
    }
    emitter->declared[out] = true;
}

static void offset_expression(const fv_emitter *emitter, int32_t value, fv_emit_index where,
                              char *buffer, size_t size)
{
    bool outer = fv_codegen_spans_outer(emitter->view, value);
    bool inner = fv_codegen_spans_inner(emitter->view, value);
    if (outer && inner)
        snprintf(buffer, size, "(%s) * inner + (%s)", where.outer, where.inner);
    else if (outer)
        snprintf(buffer, size, "%s", where.outer);
    else if (inner)
        snprintf(buffer, size, "%s", where.inner);
    else
        snprintf(buffer, size, "0");
}

int fv_codegen_input_position(const fv_fusion *fusion, int32_t value)
{
    int position = 0;
    for (int32_t i = 0; i < fusion->values[value].input_index; i++)
        position += fusion->values[fusion->inputs[i]].kind == FV_VALUE_TENSOR;
    return position;
}

static void emit_load(fv_emitter *emitter, int32_t value, fv_emit_index where)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    const char *type = fv_codegen_register_type(v->dtype);
    char offset[160], label[40];
    int position = fv_codegen_input_position(emitter->view->fusion, value);
    offset_expression(emitter, value, where, offset, sizeof offset);
    fv_codegen_line(emitter, "// %s: input %d, %s",
                    fv_ir_value_label(emitter->view->fusion, value, label), position,
                    fv_dtype_name(v->dtype));
    if (emitter->buffered_load != NULL && emitter->buffered_load[value] != NULL) {
        const char *line = emitter->buffered_load[value];
        while (*line != '\0') {
            const char *end = strchr(line, '\n');
            int length = end ? (int)(end - line) : (int)strlen(line);
            fv_codegen_line(emitter, "%.*s", length, line);
            line += length + (end ? 1 : 0);
        }
    } else if (fv_codegen_spans_inner(emitter->view, value) && emitter->span_lanes) {
        bool chunk = emitter->load_span_chunks && float_storage(v->dtype) &&
                     fv_codegen_spans_outer(emitter->view, value);
        fv_codegen_line(emitter, "%s v%d[%d];", type, (int)value, emitter->vector);
        fv_codegen_line(emitter, "%s<%d>(in%d + %s, %s, %s, v%d);",
                        chunk                     ? "fv_load_chunk"
                        : float_storage(v->dtype) ? "fv_load_lanes"
                                                  : "fv_load_lanes_exact",
                        emitter->vector, position, offset, where.inner, emitter->row_length,
                        (int)value);
    } else if (fv_codegen_spans_inner(emitter->view, value)) {
        fv_codegen_line(emitter, "%s v%d[%d];", type, (int)value, emitter->vector);
        bool keep = emitter->keep_row_constants_in_l1 && float_storage(v->dtype) &&
                    !fv_codegen_spans_outer(emitter->view, value);
        fv_codegen_line(emitter, "%s<%d>(in%d + %s, v%d);",
                        keep ? "fv_load_kept_in_l1"
                             : float_storage(v->dtype) ? "fv_load" : "fv_load_exact",
                        emitter->vector,
                        position, offset, (int)value);
    } else if (float_storage(v->dtype)) {
        fv_codegen_line(emitter, "const float v%d = fv_to_float(in%d[%s]);", (int)value, position,
                        offset);
    } else {
        fv_codegen_line(emitter, "const %s v%d = in%d[%s];", type, (int)value, position, offset);
    }
    emitter->declared[value] = true;
}

void fv_codegen_needed(const fv_emitter *emitter, const bool *targets, bool *needed)
{
    const fv_segment_view *view = emitter->view;
    const fv_fusion *fusion = view->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++)
        needed[v] = targets[v] && !emitter->declared[v];
    for (int32_t i = view->op_count - 1; i >= 0; i--) {
        const fv_op *op = &fusion->ops[view->order[i]];
        if (!needed[op->outputs[0]] || (fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
                                         !fv_ir_is_trivial_reduction(fusion, op)))
            continue;
        for (int k = 0; k < op->input_count; k++)
            if (!emitter->declared[op->inputs[k]] &&
                fusion->values[op->inputs[k]].kind == FV_VALUE_TENSOR)
                needed[op->inputs[k]] = true;
    }
}

void fv_codegen_compute(fv_emitter *emitter, const bool *targets, fv_emit_index where)
{
    const fv_segment_view *view = emitter->view;
    const fv_fusion *fusion = view->fusion;
    bool *needed = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (needed == NULL)
        return;
    fv_codegen_needed(emitter, targets, needed);
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t id = fusion->inputs[i];
        if (needed[id] && fusion->values[id].kind == FV_VALUE_TENSOR)
            emit_load(emitter, id, where);
    }
    for (int32_t i = 0; i < view->op_count; i++) {
        const fv_op *op = &fusion->ops[view->order[i]];
        if (!needed[op->outputs[0]] || emitter->declared[op->outputs[0]] ||
            fusion->values[op->outputs[0]].kind == FV_VALUE_SCALAR)
            continue;
        if (fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
            !fv_ir_is_trivial_reduction(fusion, op)) {
            fv_codegen_line(emitter, "#error reduction result v%d used before it is reduced",
                            (int)op->outputs[0]);
            continue;
        }
        emit_op(emitter, op);
    }
    free(needed);
}

void fv_codegen_declare(fv_emitter *emitter, int32_t value, const char *expression)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    char label[40];
    fv_codegen_line(emitter, "const %s v%d = %s;  // %s", fv_codegen_register_type(v->dtype),
                    (int)value, expression, fv_ir_value_label(emitter->view->fusion, value, label));
    emitter->declared[value] = true;
}

void fv_codegen_declare_lanes(fv_emitter *emitter, int32_t value, const char *array)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    char label[40];
    fv_codegen_line(emitter, "%s v%d[%d];  // %s", fv_codegen_register_type(v->dtype), (int)value,
                    emitter->vector, fv_ir_value_label(emitter->view->fusion, value, label));
    fv_codegen_line(emitter, "#pragma unroll");
    fv_codegen_line(emitter, "for (int lane = 0; lane < %d; ++lane)", emitter->vector);
    fv_codegen_line(emitter, "    v%d[lane] = %s;", (int)value, array);
    emitter->declared[value] = true;
}

int32_t fv_codegen_stored_value(const fv_segment_view *view, int32_t value)
{
    const fv_fusion *fusion = view->fusion;
    int32_t producer = fusion->values[value].producer;
    if (producer < 0 || !fv_dtype_is_half(fusion->values[value].dtype))
        return value;
    const fv_op *op = &fusion->ops[producer];
    if (op->kind != FV_OP_CAST)
        return value;
    fv_dtype from = fusion->values[op->inputs[0]].dtype;
    bool float_register = strcmp(fv_codegen_register_type(from), "float") == 0;
    return float_register && fusion->values[op->inputs[0]].kind == FV_VALUE_TENSOR ? op->inputs[0]
                                                                                   : value;
}

void fv_codegen_store(fv_emitter *emitter, int position, int32_t value, fv_emit_index where)
{
    const fv_value *v = &emitter->view->fusion->values[value];
    int32_t source = fv_codegen_stored_value(emitter->view, value);
    char offset[160];
    offset_expression(emitter, value, where, offset, sizeof offset);
    bool row_output = float_storage(v->dtype) && fv_codegen_spans_outer(emitter->view, value);
    bool around = emitter->store_rows_around_l1 && row_output;
    bool streaming = emitter->store_rows_streaming && row_output;
    /* float outputs on span chunks: a constant `whole` argument on the steps
     * known to lie wholly in the row leaves them no test */
    bool has_whole_test = float_storage(v->dtype) && emitter->whole_chunk_test != NULL &&
                          emitter->whole_chunk_test[0] != '\0';
    if (fv_codegen_spans_inner(emitter->view, value) && emitter->span_lanes)
        fv_codegen_line(emitter, "%s<%d>(out%d + %s, %s, %s, v%d%s%s);",
                        float_storage(v->dtype) ? "fv_store_lanes" : "fv_store_lanes_exact",
                        emitter->vector, position, offset, where.inner, emitter->row_length,
                        (int)source, has_whole_test ? ", " : "",
                        has_whole_test ? emitter->whole_chunk_test : "");
    else if (fv_codegen_spans_inner(emitter->view, value))
        fv_codegen_line(emitter, "%s<%d>(out%d + %s, v%d);",
                        around      ? "fv_store_around_l1"
                        : streaming ? "fv_store_streaming"
                        : float_storage(v->dtype) ? "fv_store" : "fv_store_exact",
                        emitter->vector, position, offset, (int)source);
    else if (float_storage(v->dtype))
        fv_codegen_line(emitter, "out%d[%s] = fv_from_float<%s>(v%d);", position, offset,
                        fv_codegen_storage_type(v->dtype), (int)source);
    else
        fv_codegen_line(emitter, "out%d[%s] = (%s)v%d;", position, offset,
                        fv_codegen_storage_type(v->dtype), (int)source);
}

void fv_codegen_compute_output(fv_emitter *emitter, bool *scratch, int position, int32_t value,
                               fv_emit_index where, fv_emit_index store_at)
{
    memset(scratch, 0, (size_t)emitter->view->fusion->value_count + 1);
    scratch[fv_codegen_stored_value(emitter->view, value)] = true;
    fv_codegen_compute(emitter, scratch, where);
    fv_codegen_store(emitter, position, value, store_at);
}

/* ----------------------------------------------------------- skeletons */

static int find_section(const char *name, size_t length, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == length && strncmp(names[i], name, length) == 0)
            return i;
    return -1;
}

/* Appends `section` with every line indented by `indent` spaces. */
static void append_indented(fv_text *out, const char *section, int indent)
{
    const char *line = section;
    while (*line != '\0') {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        if (length > 0)
            fv_text_printf(out, "%*s%.*s\n", indent, "", (int)length, line);
        else
            fv_text_printf(out, "\n");
        line += length + (end ? 1 : 0);
    }
}

fv_status fv_codegen_fill(const char *skeleton, const char *const *names,
                          const char *const *sections, int count, fv_text *out)
{
    const char *line = skeleton;
    while (*line != '\0') {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        size_t indent = strspn(line, " ");
        const char *at = line + indent;
        /* a line holding only @NAME@ */
        if (length > indent + 2 && at[0] == '@' && line[length - 1] == '@' &&
            memchr(at + 1, '@', length - indent - 2) == NULL) {
            int section = find_section(at + 1, length - indent - 2, names, count);
            if (section < 0)
                FV_FAIL(FV_ERR_INTERNAL, "skeleton placeholder %.*s has no section",
                        (int)(length - indent), at);
            append_indented(out, sections[section], (int)indent);
        } else {
            for (size_t i = 0; i < length; i++) {
                if (line[i] != '@') {
                    fv_text_append(out, &line[i], 1);
                    continue;
                }
                const char *close = memchr(line + i + 1, '@', length - i - 1);
                int section = close ? find_section(line + i + 1, (size_t)(close - line - i - 1),
                                                   names, count)
                                    : -1;
                if (section < 0)
                    FV_FAIL(FV_ERR_INTERNAL, "unknown skeleton placeholder in: %.*s",
                            (int)length, line);
                fv_text_printf(out, "%s", sections[section]);
                i = (size_t)(close - line);
            }
            fv_text_printf(out, "\n");
        }
        line += length + (end ? 1 : 0);
    }
    return fv_text_status(out);
}
