/* case.c: binding a fusion's symbolic extents to sizes, scalar evaluation,
 * and case ids. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/case.h"
#include "ir/round.h"

bool fv_distribution_parse(const char *text, fv_distribution *distribution)
{
    double a = 0, b = 0;
    int consumed = -1;
    if (strcmp(text, "ones") == 0 || strcmp(text, "zeros") == 0) {
        *distribution = (fv_distribution){FV_DIST_CONSTANT, text[0] == 'o' ? 1 : 0, 0};
        return true;
    }
    if (sscanf(text, " normal ( %lf , %lf ) %n", &a, &b, &consumed) == 2 && consumed >= 0 &&
        text[consumed] == '\0') {
        if (!(b >= 0) || !isfinite(a) || !isfinite(b))
            return false;
        *distribution = (fv_distribution){FV_DIST_NORMAL, a, b};
        return true;
    }
    consumed = -1;
    if (sscanf(text, " uniform ( %lf , %lf ) %n", &a, &b, &consumed) == 2 && consumed >= 0 &&
        text[consumed] == '\0') {
        if (!(a <= b) || !isfinite(a) || !isfinite(b))
            return false;
        *distribution = (fv_distribution){FV_DIST_UNIFORM, a, b};
        return true;
    }
    consumed = -1;
    if (sscanf(text, " constant ( %lf ) %n", &a, &consumed) == 1 && consumed >= 0 &&
        text[consumed] == '\0' && isfinite(a)) {
        *distribution = (fv_distribution){FV_DIST_CONSTANT, a, 0};
        return true;
    }
    return false;
}

void fv_distribution_format(const fv_distribution *distribution, char *buffer, size_t size)
{
    switch (distribution->kind) {
    case FV_DIST_NORMAL:
        snprintf(buffer, size, "normal(%.17g,%.17g)", distribution->a, distribution->b);
        break;
    case FV_DIST_UNIFORM:
        snprintf(buffer, size, "uniform(%.17g,%.17g)", distribution->a, distribution->b);
        break;
    case FV_DIST_CONSTANT:
        snprintf(buffer, size, "constant(%.17g)", distribution->a);
        break;
    }
}

fv_status fv_case_create(fv_fusion *fusion, fv_case **out)
{
    if (fusion->input_count > FV_CASE_MAX_INPUTS)
        FV_FAIL(FV_ERR_UNSUPPORTED, "the fusion has %d inputs; at most %d are supported",
                (int)fusion->input_count, FV_CASE_MAX_INPUTS);
    fv_case *c = calloc(1, sizeof *c);
    FV_CHECK_ALLOC(c);
    c->symbol_count = fusion->symbol_count;
    c->symbol_extents = malloc(sizeof(int64_t) * (size_t)(fusion->symbol_count + 1));
    if (c->symbol_extents == NULL) {
        free(c);
        FV_FAIL(FV_ERR_NOMEM, "out of memory creating a case");
    }
    for (int32_t s = 0; s < fusion->symbol_count; s++)
        c->symbol_extents[s] = -1;
    fv_ir_fusion_retain(fusion);
    c->fusion = fusion;
    c->dtype = fv_ir_half_dtype(fusion);
    for (int i = 0; i < FV_CASE_MAX_INPUTS; i++)
        c->distributions[i] = (fv_distribution){FV_DIST_NORMAL, 0, 1};
    *out = c;
    return FV_OK;
}

fv_status fv_case_clone(const fv_case *c, fv_case **out)
{
    fv_case *copy = malloc(sizeof *copy);
    FV_CHECK_ALLOC(copy);
    *copy = *c;
    copy->symbol_extents = malloc(sizeof(int64_t) * (size_t)(c->symbol_count + 1));
    if (copy->symbol_extents == NULL) {
        free(copy);
        FV_FAIL(FV_ERR_NOMEM, "out of memory copying case %s", c->id);
    }
    memcpy(copy->symbol_extents, c->symbol_extents, sizeof(int64_t) * (size_t)c->symbol_count);
    fv_ir_fusion_retain(copy->fusion);
    *out = copy;
    return FV_OK;
}

void fv_case_with_approach(fv_case *c, fv_case_approach approach)
{
    char base[FV_CASE_ID_CAPACITY];
    fv_case_approach previous;
    fv_case_split_approach(c->id, base, sizeof base, &previous);
    c->approach = approach;
    if (approach == FV_APPROACH_AUTO)
        snprintf(c->id, sizeof c->id, "%s", base);
    else
        snprintf(c->id, sizeof c->id, "%.*s@%s", (int)(sizeof c->id - 12), base,
                 fv_case_approach_name(approach));
}

void fv_case_free(fv_case *c)
{
    if (c == NULL)
        return;
    fv_ir_fusion_release(c->fusion);
    free(c->symbol_extents);
    free(c);
}

/* The extent bound to (or known for) a symbol's class, or -1. */
static int64_t symbol_extent(const fv_case *c, int32_t symbol)
{
    int32_t root = fv_ir_symbol_root(c->fusion, symbol);
    if (c->fusion->symbol_extent[root] >= 0)
        return c->fusion->symbol_extent[root];
    return c->symbol_extents[root];
}

int64_t fv_case_dim_extent(const fv_case *c, fv_dim dim)
{
    if (dim.broadcast && !dim.expanded)
        return 1;
    if (dim.symbol >= 0)
        return symbol_extent(c, dim.symbol);
    return dim.extent;
}

fv_status fv_case_bind(fv_case *c, int input_position, int dim, int64_t extent)
{
    const fv_fusion *fusion = c->fusion;
    if (input_position < 0 || input_position >= fusion->input_count)
        FV_FAIL(FV_ERR_INPUT, "input %d does not exist (the definition has %d inputs)",
                input_position, (int)fusion->input_count);
    const fv_value *input = &fusion->values[fusion->inputs[input_position]];
    char label[40];
    fv_ir_value_label(fusion, fusion->inputs[input_position], label);
    if (input->kind != FV_VALUE_TENSOR || dim < 0 || dim >= input->rank)
        FV_FAIL(FV_ERR_INPUT, "%s has no dimension %d", label, dim);
    if (extent <= 0)
        FV_FAIL(FV_ERR_INPUT, "extent %lld for %s dim %d must be positive", (long long)extent,
                label, dim);
    fv_dim target = input->dims[dim];
    if (target.broadcast)
        FV_FAIL(FV_ERR_INPUT, "%s dim %d is a broadcast dimension and cannot be sized", label,
                dim);
    int64_t known = fv_case_dim_extent(c, target);
    if (known >= 0 && known != extent) {
        if (target.symbol < 0 || c->fusion->symbol_extent[fv_ir_symbol_root(fusion, target.symbol)] >= 0)
            FV_FAIL(FV_ERR_INPUT, "%s dim %d has the fixed extent %lld in the definition, not %lld",
                    label, dim, (long long)known, (long long)extent);
        FV_FAIL(FV_ERR_INPUT,
                "conflicting sizes: %s dim %d is %lld, but the definition makes it equal to a "
                "dimension already bound to %lld",
                label, dim, (long long)extent, (long long)known);
    }
    if (target.symbol >= 0)
        c->symbol_extents[fv_ir_symbol_root(fusion, target.symbol)] = extent;
    return FV_OK;
}

/* Product of a value's extents, or -1 if any is unbound. */
static int64_t value_numel(const fv_case *c, const fv_value *value, bool stored)
{
    int64_t count = 1;
    for (int d = 0; d < value->rank; d++) {
        if (stored && value->dims[d].broadcast)
            continue;
        int64_t extent = fv_case_dim_extent(c, value->dims[d]);
        if (extent < 0)
            return -1;
        count *= extent;
    }
    return count;
}

fv_status fv_case_check_bound(const fv_case *c)
{
    const fv_fusion *fusion = c->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        const fv_value *input = &fusion->values[fusion->inputs[i]];
        for (int d = 0; d < input->rank; d++) {
            if (fv_case_dim_extent(c, input->dims[d]) < 0) {
                char label[40];
                FV_FAIL(FV_ERR_INPUT,
                        "the extent of %s dim %d is not bound: give it in the sweep's sizes or "
                        "in an inputs list",
                        fv_ir_value_label(fusion, fusion->inputs[i], label), d);
            }
        }
    }
    for (int32_t o = 0; o < fusion->op_count; o++) {
        const fv_op *op = &fusion->ops[o];
        if (op->kind != FV_OP_RESHAPE)
            continue;
        int64_t before = value_numel(c, &fusion->values[op->inputs[0]], false);
        int64_t after = value_numel(c, &fusion->values[op->outputs[0]], false);
        if (before != after)
            FV_FAIL(FV_ERR_INPUT, "line %d: reshape of %lld elements into %lld at these sizes",
                    op->loc.line, (long long)before, (long long)after);
    }
    return FV_OK;
}

int fv_case_shape(const fv_case *c, int32_t value, int64_t extents[FV_MAX_RANK])
{
    const fv_value *v = &c->fusion->values[value];
    for (int d = 0; d < v->rank; d++)
        extents[d] = fv_case_dim_extent(c, v->dims[d]);
    return v->rank;
}

int64_t fv_case_numel(const fv_case *c, int32_t value)
{
    return value_numel(c, &c->fusion->values[value], false);
}

int64_t fv_case_stored_numel(const fv_case *c, int32_t value)
{
    return value_numel(c, &c->fusion->values[value], true);
}

/* Applies a scalar op to already-computed operand values. */
static fv_status apply_scalar_op(const fv_op *op, fv_dtype dtype, const double *x, double *result)
{
    double r;
    switch (op->kind) {
    case FV_OP_CAST: r = x[0]; break;
    case FV_OP_SET:
    case FV_OP_SEGMENT_SET: r = x[0]; break;
    case FV_OP_NEG: r = -x[0]; break;
    case FV_OP_ABS: r = fabs(x[0]); break;
    case FV_OP_EXP: r = exp(x[0]); break;
    case FV_OP_LOG: r = log(x[0]); break;
    case FV_OP_SQRT: r = sqrt(x[0]); break;
    case FV_OP_RSQRT: r = 1.0 / sqrt(x[0]); break;
    case FV_OP_RECIPROCAL: r = 1.0 / x[0]; break;
    case FV_OP_ADD: r = x[0] + x[1]; break;
    case FV_OP_SUB: r = x[0] - x[1]; break;
    case FV_OP_MUL: r = x[0] * x[1]; break;
    case FV_OP_DIV:
        r = fv_dtype_is_integer(dtype) ? (x[1] == 0 ? 0 : trunc(x[0] / x[1])) : x[0] / x[1];
        break;
    case FV_OP_POW: r = pow(x[0], x[1]); break;
    case FV_OP_MAXIMUM: r = fmax(x[0], x[1]); break;
    case FV_OP_MINIMUM: r = fmin(x[0], x[1]); break;
    case FV_OP_EQ: r = x[0] == x[1]; break;
    case FV_OP_NE: r = x[0] != x[1]; break;
    case FV_OP_LT: r = x[0] < x[1]; break;
    case FV_OP_LE: r = x[0] <= x[1]; break;
    case FV_OP_GT: r = x[0] > x[1]; break;
    case FV_OP_GE: r = x[0] >= x[1]; break;
    case FV_OP_WHERE: r = x[0] != 0 ? x[1] : x[2]; break;
    default:
        FV_FAIL(FV_ERR_INTERNAL, "%s cannot produce a scalar", fv_ir_op_name(op->kind));
    }
    /* Scalars are exact in double except where an explicit cast narrows them. */
    *result = op->kind == FV_OP_CAST || !fv_dtype_is_float(dtype) ? fv_round_to_dtype(r, dtype) : r;
    return FV_OK;
}

fv_status fv_case_scalar_value(const fv_case *c, int32_t value, double *result)
{
    const fv_fusion *fusion = c->fusion;
    /* Operands always have smaller ids than the values computed from them,
     * so one pass in id order evaluates every scalar up to `value`. */
    double *values = malloc(sizeof(double) * (size_t)(value + 1));
    FV_CHECK_ALLOC(values);
    for (int32_t id = 0; id <= value; id++) {
        const fv_value *v = &fusion->values[id];
        values[id] = NAN;
        if (v->kind != FV_VALUE_SCALAR)
            continue;
        switch (v->origin) {
        case FV_SCALAR_CONSTANT: values[id] = v->constant; break;
        case FV_SCALAR_INPUT: /* -1 in a segment that does not read it */
            values[id] = v->input_index >= 0 && v->input_index < FV_CASE_MAX_INPUTS
                             ? c->scalar_inputs[v->input_index]
                             : NAN;
            break;
        case FV_SCALAR_EXTENT: {
            int64_t extent = symbol_extent(c, v->symbol);
            if (extent < 0) {
                free(values);
                FV_FAIL(FV_ERR_INPUT, "a size() used as a scalar is not bound in this case");
            }
            values[id] = (double)extent;
            break;
        }
        case FV_SCALAR_COMPUTED: {
            const fv_op *op = &fusion->ops[v->producer];
            double operands[3] = {0, 0, 0};
            for (int i = 0; i < op->input_count; i++)
                operands[i] = values[op->inputs[i]];
            fv_status status = apply_scalar_op(op, v->dtype, operands, &values[id]);
            if (status != FV_OK) {
                free(values);
                fv_error_trace(__FILE__, __LINE__);
                return status;
            }
            break;
        }
        }
    }
    *result = values[value];
    free(values);
    return FV_OK;
}

void fv_case_size_label(const fv_case *c, char *buffer, size_t size)
{
    const fv_fusion *fusion = c->fusion;
    int32_t largest = -1;
    int64_t largest_count = -1;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t id = fusion->inputs[i];
        if (fusion->values[id].kind != FV_VALUE_TENSOR)
            continue;
        int64_t count = fv_case_numel(c, id);
        if (count > largest_count) {
            largest = id;
            largest_count = count;
        }
    }
    size_t used = 0;
    buffer[0] = '\0';
    if (largest < 0) {
        snprintf(buffer, size, "scalar");
        return;
    }
    const fv_value *value = &fusion->values[largest];
    for (int d = 0; d < value->rank && used < size; d++) {
        if (value->dims[d].broadcast)
            continue;
        int written = snprintf(buffer + used, size - used, "%s%lld", used ? "x" : "",
                               (long long)fv_case_dim_extent(c, value->dims[d]));
        if (written < 0)
            break;
        used += (size_t)written;
    }
}

void fv_case_make_id(fv_case *c)
{
    char sizes[96];
    fv_case_size_label(c, sizes, sizeof sizes);
    snprintf(c->id, sizeof c->id, "%s/%s/%s/s%llu", c->family, fv_dtype_name(c->dtype), sizes,
             (unsigned long long)c->seed);
}

static const char *const approach_names[] = {"auto", "multiwave", "ws"};

const char *fv_case_approach_name(fv_case_approach approach)
{
    return approach >= FV_APPROACH_AUTO && approach <= FV_APPROACH_WS ? approach_names[approach]
                                                                       : "?";
}

bool fv_case_approach_parse(const char *text, fv_case_approach *approach)
{
    for (int i = 0; i <= FV_APPROACH_WS; i++)
        if (strcmp(text, approach_names[i]) == 0) {
            *approach = (fv_case_approach)i;
            return true;
        }
    return false;
}

void fv_case_split_approach(const char *id, char *base, size_t size, fv_case_approach *approach)
{
    *approach = FV_APPROACH_AUTO;
    const char *at = strrchr(id, '@');
    fv_case_approach parsed;
    if (at != NULL && fv_case_approach_parse(at + 1, &parsed) && parsed != FV_APPROACH_AUTO) {
        *approach = parsed;
        snprintf(base, size, "%.*s", (int)(at - id), id);
        return;
    }
    snprintf(base, size, "%s", id);
}

bool fv_case_static_shapes(const fv_case *c)
{
    const fv_fusion *fusion = c->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        const fv_value *v = &fusion->values[fusion->inputs[i]];
        for (int d = 0; v->kind == FV_VALUE_TENSOR && d < v->rank; d++)
            if (v->dims[d].extent < 0)
                return false;
    }
    return true;
}
