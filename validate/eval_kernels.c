/* eval_kernels.c: the evaluator's array kernels.  Each op is computed over a
 * block array in double precision together with its error channels (reference
 * mode), or rounded to float32 as a GPU would (emulation mode).
 *
 * Error model (docs/error-bounds.md): an op with result v and operands x_k
 * passes on sum_k |df/dx_k| * e_k per channel (first-order propagation) and
 * adds its own rounding, k * u * |v| with u = 2^-24 for float32 compute, in the
 * channel of its own support.  Sums add channels that vary along the summed
 * axis in quadrature (times FV_EVAL_LAMBDA) and the others linearly, plus an
 * accumulation error estimated from the terms' sum and sum of squares.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/round.h"
#include "validate/eval_internal.h"
#include "validate/fast_exp_model.h"

#define UNIT_ROUNDOFF_F32 0x1p-24
#define UNIT_ROUNDOFF_F64 0x1p-53

/* ------------------------------------------------------------- arrays */

fv_status eval_array_allocate(eval_array *array, const eval_plan *plan, int32_t value,
                              int64_t capacity)
{
    memset(array, 0, sizeof *array);
    if (capacity < 1)
        capacity = 1;
    array->capacity = capacity;
    array->value = malloc(sizeof(double) * (size_t)capacity);
    FV_CHECK_ALLOC(array->value);
    array->supports = plan->values[value].supports;
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        if (!(array->supports & (1u << s)))
            continue;
        array->channel[s] = malloc(sizeof(double) * (size_t)capacity);
        if (array->channel[s] == NULL) {
            eval_array_free(array);
            FV_FAIL(FV_ERR_NOMEM, "out of memory for error channels (%lld elements)",
                    (long long)capacity);
        }
    }
    return FV_OK;
}

void eval_array_free(eval_array *array)
{
    free(array->value);
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        free(array->channel[s]);
    memset(array, 0, sizeof *array);
}

void eval_array_shape(eval_array *array, const eval_plan *plan, int32_t value, int64_t rows)
{
    const eval_value_plan *vp = &plan->values[value];
    array->rank = plan->fusion->values[value].rank;
    array->count = 1;
    for (int d = 0; d < FV_MAX_RANK; d++) {
        array->extent[d] = d < array->rank ? vp->stored[d] : 1;
        if (d == vp->stream_dim)
            array->extent[d] = rows;
        array->count *= array->extent[d];
    }
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        if (array->channel[s] != NULL)
            memset(array->channel[s], 0, sizeof(double) * (size_t)array->count);
}

double eval_array_total_error(const eval_array *array, int64_t index)
{
    double total = 0;
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        if (array->channel[s] != NULL)
            total += array->channel[s][index];
    return total;
}

fv_status eval_scratch_reserve(eval_scratch *scratch, int64_t count)
{
    if (count <= scratch->capacity)
        return FV_OK;
    for (int i = 0; i < 6; i++) {
        free(scratch->buffers[i]);
        scratch->buffers[i] = malloc(sizeof(double) * (size_t)count);
        if (scratch->buffers[i] == NULL) {
            eval_scratch_free(scratch);
            FV_FAIL(FV_ERR_NOMEM, "out of memory for evaluator scratch (%lld elements)",
                    (long long)count);
        }
    }
    scratch->capacity = count;
    return FV_OK;
}

void eval_scratch_free(eval_scratch *scratch)
{
    for (int i = 0; i < 6; i++)
        free(scratch->buffers[i]);
    memset(scratch, 0, sizeof *scratch);
}

/* ----------------------------------------------------- rounding model */

/* Rounding of an op's float32 result in units of u: 1 for correctly rounded
 * operations, 2 for a division (kernels multiply by the divisor's rounded
 * reciprocal where it is one value per row), 4 for CUDA's 2-ulp functions
 * (rsqrtf, expf, logf), 8 for powf. */
static double op_rounding_units(fv_op_kind kind)
{
    switch (kind) {
    case FV_OP_DIV:
        return 2;
    case FV_OP_RSQRT:
    case FV_OP_EXP:
    case FV_OP_LOG:
        return 4;
    case FV_OP_POW:
        return 8;
    default:
        return 1;
    }
}

/* fv_exp_fast, the exp of fusions whose outputs are all 16-bit, computes
 * 2^fl(a·fl(log2 e)) on the special-function unit.  Its own error against
 * e^a is at most (FV_FAST_EXP_UNITS + FV_FAST_EXP_ARGUMENT_UNITS·|a|)·u
 * relative (validate/fast_exp_model.h): the unit's (2.45 u measured over
 * every float a in [-104, 88.72], tests/exp_fast_accuracy.cu) and the
 * argument's rounding (|a|·(u + 0.224 u), the product's and log2 e's).  A
 * result under 2^-126 is flushed to zero, an error of the whole value; the
 * argument the kernel holds may be off by its own error `argument_error`, so
 * the value may be flushed wherever e^(a - argument_error) is under 2^-126.
 * (Within about 7e-6 of ln(FLT_MAX) the unit may return inf where expf does
 * not; the comparison reports an inf against a finite reference whatever
 * the bound, so no bound is made for it.) */
#define FAST_EXP_LOG2_E 1.44269504088896341f

static double fast_exp_error(double argument, double argument_error, double value)
{
    double magnitude = fabs(value);
    if (magnitude == 0)
        return 0;  /* e^-inf (or a double underflow): the unit returns +0 as well */
    double error = (FV_FAST_EXP_UNITS + FV_FAST_EXP_ARGUMENT_UNITS * fabs(argument)) *
                   UNIT_ROUNDOFF_F32 * magnitude;
    /* flushed below 2^-126·e^argument_error·(1 + 2^-16), which is under
     * 3·2^-126 while argument_error < 1: most values need no exp() here */
    if (argument_error < 1 && magnitude >= 3 * 0x1p-126)
        return error;
    double flushed_below = 0x1p-126 * exp(argument_error) * (1 + 0x1p-16);
    return magnitude < flushed_below ? error + magnitude : error;
}

/* Emulation: fv_exp_fast's value, but for the unit's own error (the argument
 * rounded as the kernel rounds it, the result flushed under 2^-126). */
static double emulate_fast_exp(double argument)
{
    float scaled = (float)argument * FAST_EXP_LOG2_E;
    double value = exp2((double)scaled);
    return value < 0x1p-126 ? 0 : value;
}

/* The rounding error an op's result of `dtype` may carry against the exact
 * reference.  Half results are computed in f32 and narrowed; the reference
 * narrows the exact value, so they may differ by one half-precision ulp. */
static double rounding_error(double units, fv_dtype dtype, double value)
{
    double magnitude = fabs(value);
    switch (dtype) {
    case FV_F64: return units * UNIT_ROUNDOFF_F64 * magnitude;
    case FV_F32: return units * UNIT_ROUNDOFF_F32 * magnitude;
    case FV_F16:
    case FV_BF16: return fv_dtype_ulp(value, dtype) + units * UNIT_ROUNDOFF_F32 * magnitude;
    default: return 0;
    }
}

/* Emulation: the value a GPU holds for a result of `dtype` computed in f32. */
static double emulate_round(double value, fv_dtype dtype)
{
    if (dtype == FV_F64 || !fv_dtype_is_float(dtype))
        return fv_round_to_dtype(value, dtype);
    double single = (double)(float)value;
    return dtype == FV_F32 ? single : fv_round_to_dtype(single, dtype);
}

/* -------------------------------------------------- strided iteration */

#define MAX_ARRAYS 4 /* output + up to three operands */

typedef struct loop_nest {
    int rank;
    int64_t extent[FV_MAX_RANK];
    int64_t stride[MAX_ARRAYS][FV_MAX_RANK];
    int array_count;
} loop_nest;

/* Row-major strides of `extent` (rank dims). */
static void row_major_strides(int rank, const int64_t *extent, int64_t *stride)
{
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
        stride[d] = step;
        step *= extent[d];
    }
}

/* Drops extent-1 dims and merges dims that are contiguous in every array. */
static void coalesce(loop_nest *nest)
{
    loop_nest merged = {.array_count = nest->array_count};
    for (int d = 0; d < nest->rank; d++) {
        if (nest->extent[d] == 1)
            continue;
        int last = merged.rank - 1;
        bool joinable = last >= 0;
        for (int a = 0; a < nest->array_count && joinable; a++)
            joinable = merged.stride[a][last] == nest->stride[a][d] * nest->extent[d];
        if (joinable) {
            merged.extent[last] *= nest->extent[d];
            for (int a = 0; a < nest->array_count; a++)
                merged.stride[a][last] = nest->stride[a][d];
            continue;
        }
        merged.extent[merged.rank] = nest->extent[d];
        for (int a = 0; a < nest->array_count; a++)
            merged.stride[a][merged.rank] = nest->stride[a][d];
        merged.rank++;
    }
    if (merged.rank == 0) {
        merged.rank = 1;
        merged.extent[0] = 1;
        for (int a = 0; a < nest->array_count; a++)
            merged.stride[a][0] = 0;
    }
    *nest = merged;
}

/* Offsets of every array at the start of each innermost row, visited in
 * order; calls `row` with them.  Stops at the first failing call. */
typedef void (*row_function)(void *context, const int64_t *offsets, int64_t length,
                             const int64_t *inner_strides);

static void for_each_row(const loop_nest *nest, row_function row, void *context)
{
    int inner = nest->rank - 1;
    int64_t index[FV_MAX_RANK] = {0};
    int64_t offsets[MAX_ARRAYS] = {0};
    int64_t inner_strides[MAX_ARRAYS];
    for (int a = 0; a < nest->array_count; a++)
        inner_strides[a] = nest->stride[a][inner];
    for (;;) {
        row(context, offsets, nest->extent[inner], inner_strides);
        int d = inner - 1;
        while (d >= 0) {
            index[d]++;
            for (int a = 0; a < nest->array_count; a++)
                offsets[a] += nest->stride[a][d];
            if (index[d] < nest->extent[d])
                break;
            for (int a = 0; a < nest->array_count; a++)
                offsets[a] -= nest->stride[a][d] * nest->extent[d];
            index[d] = 0;
            d--;
        }
        if (d < 0)
            return;
    }
}

/* Strides of an operand in the output's dims for an element-wise op: same
 * rank, 0 where the operand is broadcast. */
static void elementwise_strides(const eval_array *out, const eval_array *operand, int64_t *stride)
{
    int64_t own[FV_MAX_RANK];
    row_major_strides(operand->rank, operand->extent, own);
    for (int d = 0; d < out->rank; d++)
        stride[d] = (operand->rank == 0 || operand->extent[d] == 1) ? 0 : own[d];
}

/* Strides of the input of a data-movement op, in the output's dims. */
static void movement_strides(const fv_op *op, const eval_array *in, const eval_array *out,
                             int64_t *stride)
{
    int64_t own[FV_MAX_RANK];
    row_major_strides(in->rank, in->extent, own);
    for (int d = 0; d < FV_MAX_RANK; d++)
        stride[d] = 0;
    switch (op->kind) {
    case FV_OP_BROADCAST_IN_DIM:
    case FV_OP_BROADCAST:
        for (int i = 0; i < op->axis_count; i++)
            stride[op->axes[i]] = in->extent[i] == 1 ? 0 : own[i];
        break;
    case FV_OP_PERMUTE:
        for (int d = 0; d < out->rank; d++)
            stride[d] = in->extent[op->axes[d]] == 1 ? 0 : own[op->axes[d]];
        break;
    case FV_OP_SQUEEZE: {
        int kept = 0;
        for (int d = 0; d < in->rank; d++) {
            bool squeezed = false;
            for (int a = 0; a < op->axis_count; a++)
                squeezed = squeezed || op->axes[a] == d;
            if (!squeezed)
                stride[kept++] = own[d];
        }
        break;
    }
    default: /* cast, set, segment_set, expand: same dims */
        for (int d = 0; d < out->rank; d++)
            stride[d] = in->extent[d] == 1 ? 0 : own[d];
        break;
    }
}

/* ------------------------------------------------- point-wise context */

typedef enum rounding_kind {
    ROUNDING_NONE,  /* exact ops: neg, abs, selections, comparisons, where */
    ROUNDING_OP,    /* units * u * |v| (plus a half ulp flip for half results) */
    ROUNDING_CAST   /* one target ulp, unless the input is exact */
} rounding_kind;

typedef struct pointwise {
    const eval_plan *plan;
    const fv_op *op;
    fv_op_category category;
    bool reference;
    bool narrowing;              /* the reference rounds the result to `dtype` */
    rounding_kind rounding;
    double rounding_units;
    fv_dtype dtype;              /* output dtype */
    unsigned own;                /* output's own support */
    int operand_count;
    const eval_array *operands[3];
    double scalar[3];            /* scalar operands (value) */
    double scalar_error[3];      /* their float32 conversion error, or 0 */
    bool is_scalar[3];
    eval_array *out;
    double *derivative[3];       /* scratch rows */
    double *total[3];            /* scratch rows: operands' total errors */
} pointwise;

/* Operand k's values along the current row: a scalar is a stride-0 view of
 * its value. */
static inline const double *operand_row(const pointwise *p, int k, const int64_t *offsets,
                                        const int64_t *strides, int64_t *stride)
{
    if (p->is_scalar[k]) {
        *stride = 0;
        return &p->scalar[k];
    }
    *stride = strides[k + 1];
    return p->operands[k]->value + offsets[k + 1];
}

static void operand_totals(pointwise *p, int k, const int64_t *offsets, const int64_t *strides,
                           int64_t length)
{
    double *total = p->total[k];
    if (p->is_scalar[k]) {
        for (int64_t j = 0; j < length; j++)
            total[j] = p->scalar_error[k];
        return;
    }
    for (int64_t j = 0; j < length; j++)
        total[j] = 0;
    const eval_array *array = p->operands[k];
    int64_t stride = strides[k + 1];
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        const double *channel = array->channel[s];
        if (channel == NULL)
            continue;
        channel += offsets[k + 1];
        for (int64_t j = 0; j < length; j++)
            total[j] += channel[j * stride];
    }
}

/* Value and |derivative| of a unary op (or cast/set), one loop per kind. */
static void unary_row(pointwise *p, const int64_t *offsets, const int64_t *strides, int64_t n)
{
    int64_t sa, so = strides[0];
    const double *a = operand_row(p, 0, offsets, strides, &sa);
    double *out = p->out->value + offsets[0];
    double *d = p->derivative[0];
    switch (p->op->kind) {
    case FV_OP_NEG:
        for (int64_t j = 0; j < n; j++) out[j * so] = -a[j * sa], d[j] = 1;
        break;
    case FV_OP_ABS:
        for (int64_t j = 0; j < n; j++) out[j * so] = fabs(a[j * sa]), d[j] = 1;
        break;
    case FV_OP_EXP:
        if (!p->reference && p->plan->fast_exp && p->dtype != FV_F64) {
            for (int64_t j = 0; j < n; j++) d[j] = out[j * so] = emulate_fast_exp(a[j * sa]);
            break;
        }
        for (int64_t j = 0; j < n; j++) d[j] = out[j * so] = exp(a[j * sa]);
        break;
    case FV_OP_LOG:
        for (int64_t j = 0; j < n; j++) out[j * so] = log(a[j * sa]), d[j] = 1 / fabs(a[j * sa]);
        break;
    case FV_OP_SQRT:
        for (int64_t j = 0; j < n; j++) {
            double v = sqrt(a[j * sa]);
            out[j * so] = v;
            d[j] = 0.5 / v;
        }
        break;
    case FV_OP_RSQRT:
        for (int64_t j = 0; j < n; j++) {
            double v = 1 / sqrt(a[j * sa]);
            out[j * so] = v;
            d[j] = 0.5 * v / fabs(a[j * sa]);
        }
        break;
    case FV_OP_RECIPROCAL:
        for (int64_t j = 0; j < n; j++) {
            double x = a[j * sa];
            double v = fv_dtype_is_integer(p->dtype) ? (x == 0 ? 0 : trunc(1 / x)) : 1 / x;
            out[j * so] = v;
            d[j] = 1 / (x * x);
        }
        break;
    default: /* cast, set, segment_set */
        for (int64_t j = 0; j < n; j++) out[j * so] = a[j * sa], d[j] = 1;
        break;
    }
}

static bool compare_value(fv_op_kind kind, double a, double b)
{
    switch (kind) {
    case FV_OP_EQ: return a == b;
    case FV_OP_NE: return a != b;
    case FV_OP_LT: return a < b;
    case FV_OP_LE: return a <= b;
    case FV_OP_GT: return a > b;
    case FV_OP_GE: return a >= b;
    default: return false;
    }
}

static void compare_row(pointwise *p, const int64_t *offsets, const int64_t *strides, int64_t n)
{
    int64_t sa, sb, so = strides[0];
    const double *a = operand_row(p, 0, offsets, strides, &sa);
    const double *b = operand_row(p, 1, offsets, strides, &sb);
    double *out = p->out->value + offsets[0];
    if (p->reference) {
        operand_totals(p, 0, offsets, strides, n);
        operand_totals(p, 1, offsets, strides, n);
    }
    for (int64_t j = 0; j < n; j++) {
        out[j * so] = compare_value(p->op->kind, a[j * sa], b[j * sb]);
        /* A comparison whose operands' errors overlap may flip: derivative 1
         * here marks it uncertain (channel 0 carries it). */
        double slack = p->reference ? p->total[0][j] + p->total[1][j] : 0;
        p->derivative[0][j] = (slack > 0 && fabs(a[j * sa] - b[j * sb]) <= slack) ? 1 : 0;
    }
}

static void binary_row(pointwise *p, const int64_t *offsets, const int64_t *strides, int64_t n)
{
    int64_t sa, sb, so = strides[0];
    const double *a = operand_row(p, 0, offsets, strides, &sa);
    const double *b = operand_row(p, 1, offsets, strides, &sb);
    double *out = p->out->value + offsets[0];
    double *da = p->derivative[0], *db = p->derivative[1];
    bool integer = fv_dtype_is_integer(p->dtype);
    switch (p->op->kind) {
    case FV_OP_ADD:
        for (int64_t j = 0; j < n; j++) out[j * so] = a[j * sa] + b[j * sb], da[j] = db[j] = 1;
        break;
    case FV_OP_SUB:
        for (int64_t j = 0; j < n; j++) out[j * so] = a[j * sa] - b[j * sb], da[j] = db[j] = 1;
        break;
    case FV_OP_MUL:
        for (int64_t j = 0; j < n; j++) {
            double x = a[j * sa], y = b[j * sb];
            out[j * so] = x * y;
            da[j] = fabs(y);
            db[j] = fabs(x);
        }
        break;
    case FV_OP_DIV:
        for (int64_t j = 0; j < n; j++) {
            double x = a[j * sa], y = b[j * sb];
            out[j * so] = integer ? (y == 0 ? 0 : trunc(x / y)) : x / y;
            da[j] = 1 / fabs(y);
            db[j] = fabs(x) / (y * y);
        }
        break;
    case FV_OP_POW:
        for (int64_t j = 0; j < n; j++) {
            double x = a[j * sa], y = b[j * sb], v = pow(x, y);
            out[j * so] = v;
            da[j] = fabs(y * pow(x, y - 1));
            db[j] = y == (double)(int64_t)y ? 0 : fabs(v * log(fabs(x)));
        }
        break;
    case FV_OP_MAXIMUM:
    case FV_OP_MINIMUM: {
        bool maximum = p->op->kind == FV_OP_MAXIMUM;
        if (p->reference) {
            operand_totals(p, 0, offsets, strides, n);
            operand_totals(p, 1, offsets, strides, n);
        }
        for (int64_t j = 0; j < n; j++) {
            double x = a[j * sa], y = b[j * sb];
            bool take_x = maximum ? x >= y : x <= y;
            out[j * so] = isnan(x) || isnan(y) ? NAN : (take_x ? x : y);
            da[j] = take_x;
            db[j] = !take_x;
            /* the selection may differ: either operand's error applies */
            if (p->reference && fabs(x - y) <= p->total[0][j] + p->total[1][j])
                da[j] = db[j] = 1;
        }
        break;
    }
    default:
        break;
    }
}

static void where_row(pointwise *p, const int64_t *offsets, const int64_t *strides, int64_t n)
{
    int64_t sc, sa, sb, so = strides[0];
    const double *c = operand_row(p, 0, offsets, strides, &sc);
    const double *a = operand_row(p, 1, offsets, strides, &sa);
    const double *b = operand_row(p, 2, offsets, strides, &sb);
    double *out = p->out->value + offsets[0];
    if (p->reference) {
        operand_totals(p, 0, offsets, strides, n);
        operand_totals(p, 1, offsets, strides, n);
        operand_totals(p, 2, offsets, strides, n);
    }
    for (int64_t j = 0; j < n; j++) {
        bool take_a = c[j * sc] != 0;
        double x = a[j * sa], y = b[j * sb];
        out[j * so] = take_a ? x : y;
        p->derivative[0][j] = 0;
        p->derivative[1][j] = take_a;
        p->derivative[2][j] = !take_a;
        if (p->reference) /* extra error if the condition may flip */
            p->total[0][j] = p->total[0][j] > 0
                                 ? fabs(x - y) + (take_a ? p->total[2][j] : p->total[1][j])
                                 : 0;
    }
}

/* Rounds the row's values as the fusion's semantics (reference) or a float32
 * GPU (emulation) would. */
static void round_row(pointwise *p, const int64_t *offsets, const int64_t *strides, int64_t n)
{
    double *out = p->out->value + offsets[0];
    int64_t so = strides[0];
    if (!p->reference) {
        for (int64_t j = 0; j < n; j++)
            out[j * so] = emulate_round(out[j * so], p->dtype);
    } else if (p->narrowing) {
        for (int64_t j = 0; j < n; j++)
            out[j * so] = fv_round_to_dtype(out[j * so], p->dtype);
    }
}

/* Spacing of `dtype` numbers around |value| (fast path for the common
 * normal range; fv_dtype_ulp elsewhere). */
static inline double spacing(double value, fv_dtype dtype)
{
    double magnitude = fabs(value);
    int fraction_bits = dtype == FV_BF16 ? 7 : (dtype == FV_F16 ? 10 : 23);
    double smallest_normal = dtype == FV_F16 ? 0x1p-14 : 0x1p-126;
    if (magnitude >= smallest_normal && magnitude < 0x1p15) {
        int exponent;
        frexp(magnitude, &exponent);
        return ldexp(1.0, exponent - 1 - fraction_bits);
    }
    return fv_dtype_ulp(value, dtype);
}

/* Adds the op's own rounding to the output channel of its own support. */
static void add_own_rounding(pointwise *p, double *channel, const int64_t *offsets,
                             const int64_t *strides, int64_t n)
{
    const double *values = p->out->value + offsets[0];
    int64_t so = strides[0];
    if (p->rounding == ROUNDING_CAST) {
        /* An exact input rounds the same on both sides; otherwise one ulp
         * of the target (the rounding may go the other way). */
        bool to_float = fv_dtype_is_float(p->dtype);
        for (int64_t j = 0; j < n; j++)
            if (p->total[0][j] > 0)
                channel[j * so] += to_float ? spacing(values[j * so], p->dtype) : 1;
        return;
    }
    if (p->rounding != ROUNDING_OP)
        return;
    if (p->op->kind == FV_OP_EXP && p->plan->fast_exp && p->dtype != FV_F64) {
        int64_t sa;
        const double *arguments = operand_row(p, 0, offsets, strides, &sa);
        operand_totals(p, 0, offsets, strides, n);
        bool half = fv_dtype_is_half(p->dtype);
        for (int64_t j = 0; j < n; j++)
            channel[j * so] += (half ? spacing(values[j * so], p->dtype) : 0) +
                               fast_exp_error(arguments[j * sa], p->total[0][j], values[j * so]);
        return;
    }
    double unit = p->dtype == FV_F64 ? UNIT_ROUNDOFF_F64 : UNIT_ROUNDOFF_F32;
    double factor = p->rounding_units * unit;
    if (fv_dtype_is_half(p->dtype)) {
        for (int64_t j = 0; j < n; j++)
            channel[j * so] += spacing(values[j * so], p->dtype) + factor * fabs(values[j * so]);
    } else if (fv_dtype_is_float(p->dtype)) {
        for (int64_t j = 0; j < n; j++)
            channel[j * so] += factor * fabs(values[j * so]);
    }
}

/* out channel s = sum_k |d_k| e_k,s (+ own rounding, + scalar errors). */
static void channel_rows(pointwise *p, const int64_t *offsets, const int64_t *strides, int64_t n)
{
    eval_array *out = p->out;
    bool where = p->op->kind == FV_OP_WHERE;
    bool compare = p->category == FV_CATEGORY_COMPARE;
    int64_t so = strides[0];
    if (p->rounding == ROUNDING_CAST)
        operand_totals(p, 0, offsets, strides, n);
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        double *channel = out->channel[s];
        if (channel == NULL)
            continue;
        channel += offsets[0];
        for (int64_t j = 0; j < n; j++)
            channel[j * so] = 0;
        if (compare) {
            if (s == 0)
                for (int64_t j = 0; j < n; j++)
                    channel[j * so] = p->derivative[0][j];
            continue;
        }
        for (int k = where ? 1 : 0; k < p->operand_count; k++) {
            const double *d = p->derivative[k];
            if (p->is_scalar[k]) {
                double e = p->scalar_error[k];
                if (s == 0 && e > 0)
                    for (int64_t j = 0; j < n; j++)
                        channel[j * so] += d[j] * e;
                continue;
            }
            const double *in = p->operands[k]->channel[s];
            if (in == NULL)
                continue;
            in += offsets[k + 1];
            int64_t si = strides[k + 1];
            for (int64_t j = 0; j < n; j++) {
                double e = in[j * si];
                if (e != 0) /* keeps 0 * inf (an exact operand at a pole) at 0 */
                    channel[j * so] += d[j] * e;
            }
        }
        if (where && s == 0)
            for (int64_t j = 0; j < n; j++)
                channel[j * so] += p->total[0][j];
        if (s == p->own)
            add_own_rounding(p, channel, offsets, strides, n);
    }
}

static void pointwise_row(void *context, const int64_t *offsets, int64_t length,
                          const int64_t *strides)
{
    pointwise *p = context;
    switch (p->category) {
    case FV_CATEGORY_BINARY: binary_row(p, offsets, strides, length); break;
    case FV_CATEGORY_COMPARE: compare_row(p, offsets, strides, length); break;
    case FV_CATEGORY_WHERE: where_row(p, offsets, strides, length); break;
    default: unary_row(p, offsets, strides, length); break;
    }
    round_row(p, offsets, strides, length);
    if (p->reference)
        channel_rows(p, offsets, strides, length);
}

/* Copies value and channels for a data-movement op (exact). */
typedef struct movement {
    const eval_array *in;
    eval_array *out;
} movement;

static void movement_row(void *context, const int64_t *offsets, int64_t length,
                         const int64_t *strides)
{
    movement *m = context;
    for (int64_t j = 0; j < length; j++)
        m->out->value[offsets[0] + j * strides[0]] = m->in->value[offsets[1] + j * strides[1]];
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        double *out = m->out->channel[s];
        if (out == NULL)
            continue;
        const double *in = m->in->channel[s];
        for (int64_t j = 0; j < length; j++)
            out[offsets[0] + j * strides[0]] = in ? in[offsets[1] + j * strides[1]] : 0;
    }
}

static fv_status run_movement(const fv_op *op, const eval_array *in, eval_array *out)
{
    loop_nest nest = {.rank = out->rank > 0 ? out->rank : 1, .array_count = 2};
    for (int d = 0; d < FV_MAX_RANK; d++)
        nest.extent[d] = d < out->rank ? out->extent[d] : 1;
    row_major_strides(out->rank, out->extent, nest.stride[0]);
    if (op->kind == FV_OP_RESHAPE) {
        /* Same elements in the same row-major order (the planner only
         * streams through reshapes that keep the stream dim outermost). */
        if (in->count != out->count)
            FV_FAIL(FV_ERR_UNSUPPORTED,
                    "line %d: reshape of a tensor with expanded broadcast dimensions",
                    op->loc.line);
        nest.rank = 1;
        nest.extent[0] = out->count;
        nest.stride[0][0] = 1;
        nest.stride[1][0] = 1;
    } else {
        movement_strides(op, in, out, nest.stride[1]);
    }
    if (out->rank == 0) {
        nest.stride[0][0] = 0;
        nest.stride[1][0] = 0;
    }
    coalesce(&nest);
    movement context = {in, out};
    for_each_row(&nest, movement_row, &context);
    return FV_OK;
}

static void fill_full(const eval_plan *plan, const fv_op *op, eval_array *out)
{
    double fill = fv_round_to_dtype(plan->values[op->inputs[0]].scalar, op->dtype);
    for (int64_t i = 0; i < out->count; i++)
        out->value[i] = fill;
}

fv_status eval_kernel_pointwise(const eval_plan *plan, const fv_op *op,
                                const eval_array *const *operands, eval_array *out,
                                eval_scratch *scratch)
{
    fv_op_category category = fv_ir_op_category(op->kind);
    if (op->kind == FV_OP_FULL) {
        fill_full(plan, op, out);
        return FV_OK;
    }
    bool moves = category == FV_CATEGORY_SHAPE && op->kind != FV_OP_CAST;
    if (moves)
        return run_movement(op, operands[0], out);

    const fv_fusion *fusion = plan->fusion;
    pointwise p = {.plan = plan, .op = op, .category = category,
                   .reference = plan->mode == FV_EVAL_REFERENCE,
                   .dtype = fusion->values[op->outputs[0]].dtype,
                   .own = plan->values[op->outputs[0]].own_support,
                   .operand_count = op->input_count, .out = out};
    p.narrowing = op->kind == FV_OP_CAST || fv_dtype_is_half(p.dtype) ||
                  !fv_dtype_is_float(p.dtype);
    p.rounding_units = op_rounding_units(op->kind);
    if (op->kind == FV_OP_CAST)
        p.rounding = ROUNDING_CAST;
    else if (category == FV_CATEGORY_UNARY || category == FV_CATEGORY_BINARY)
        p.rounding = (op->kind == FV_OP_NEG || op->kind == FV_OP_ABS ||
                      op->kind == FV_OP_MAXIMUM || op->kind == FV_OP_MINIMUM)
                         ? ROUNDING_NONE
                         : ROUNDING_OP;
    else
        p.rounding = ROUNDING_NONE;
    loop_nest nest = {.rank = out->rank > 0 ? out->rank : 1, .array_count = 1 + op->input_count};
    for (int d = 0; d < FV_MAX_RANK; d++)
        nest.extent[d] = d < out->rank ? out->extent[d] : 1;
    row_major_strides(out->rank, out->extent, nest.stride[0]);
    if (out->rank == 0)
        nest.stride[0][0] = 0;
    bool f64_compute = p.dtype == FV_F64;
    for (int k = 0; k < op->input_count; k++) {
        const eval_value_plan *vp = &plan->values[op->inputs[k]];
        p.is_scalar[k] = fusion->values[op->inputs[k]].kind == FV_VALUE_SCALAR;
        if (p.is_scalar[k]) {
            p.scalar[k] = vp->scalar;
            if (!f64_compute && fv_dtype_is_float(p.dtype)) {
                if (p.reference)
                    p.scalar_error[k] = vp->scalar_f32_error;
                else
                    p.scalar[k] = (double)(float)vp->scalar;
            }
            for (int d = 0; d < FV_MAX_RANK; d++)
                nest.stride[k + 1][d] = 0;
            continue;
        }
        p.operands[k] = operands[k];
        elementwise_strides(out, operands[k], nest.stride[k + 1]);
        if (out->rank == 0)
            nest.stride[k + 1][0] = 0;
    }
    coalesce(&nest);
    FV_TRY(eval_scratch_reserve(scratch, nest.extent[nest.rank - 1]));
    for (int k = 0; k < 3; k++) {
        p.derivative[k] = scratch->buffers[k];
        p.total[k] = scratch->buffers[3 + k];
    }
    for_each_row(&nest, pointwise_row, &p);
    return FV_OK;
}

/* ---------------------------------------------------------- reductions */

/* Offsets of all elements of `array` over the dims in `mask` (others 0),
 * in row-major order of those dims.  Returns the count. */
static int64_t subspace_offsets(const eval_array *array, unsigned mask, int64_t *offsets)
{
    int64_t stride[FV_MAX_RANK];
    row_major_strides(array->rank, array->extent, stride);
    int64_t count = 1;
    offsets[0] = 0;
    for (int d = 0; d < array->rank; d++) {
        if (!(mask & (1u << d)) || array->extent[d] == 1)
            continue;
        int64_t extent = array->extent[d];
        for (int64_t i = count - 1; i >= 0; i--)
            for (int64_t k = extent - 1; k >= 0; k--)
                offsets[i * extent + k] = offsets[i] + k * stride[d];
        count *= extent;
    }
    return count;
}

typedef struct reduction_layout {
    unsigned reduced_dims;   /* bit d: input dim d is reduced */
    int64_t kept_count, reduced_count;
    int64_t *kept;           /* offsets of each output element's first term */
    int64_t *reduced;        /* offsets of the terms relative to it */
    double multiplicity;     /* logical/stored extent over reduced expanded dims */
    uint8_t reduced_bits;    /* support bits of the reduced axes */
    double unit;             /* accumulation unit roundoff */
} reduction_layout;

static fv_status layout_reduction(const eval_plan *plan, const fv_op *op, const eval_array *input,
                                  reduction_layout *layout)
{
    memset(layout, 0, sizeof *layout);
    const eval_value_plan *in_plan = &plan->values[op->inputs[0]];
    layout->multiplicity = 1;
    for (int a = 0; a < op->axis_count; a++) {
        int d = op->axes[a];
        layout->reduced_dims |= 1u << d;
        if (input->extent[d] == 1)
            layout->multiplicity *= (double)in_plan->extent[d];
        int32_t cls = in_plan->dim_class[d];
        if (cls >= 0 && plan->class_bit[cls] >= 0)
            layout->reduced_bits |= (uint8_t)(1u << plan->class_bit[cls]);
    }
    unsigned all = (1u << input->rank) - 1;
    layout->kept = malloc(sizeof(int64_t) * (size_t)input->count);
    layout->reduced = malloc(sizeof(int64_t) * (size_t)input->count);
    if (layout->kept == NULL || layout->reduced == NULL) {
        free(layout->kept);
        free(layout->reduced);
        FV_FAIL(FV_ERR_NOMEM, "out of memory laying out a reduction");
    }
    layout->kept_count = subspace_offsets(input, all & ~layout->reduced_dims, layout->kept);
    layout->reduced_count = subspace_offsets(input, layout->reduced_dims, layout->reduced);
    fv_dtype out_dtype = plan->fusion->values[op->outputs[0]].dtype;
    layout->unit = out_dtype == FV_F64 ? UNIT_ROUNDOFF_F64 : UNIT_ROUNDOFF_F32;
    return FV_OK;
}

static void free_layout(reduction_layout *layout)
{
    free(layout->kept);
    free(layout->reduced);
}

static inline void neumaier_add(double *sum, double *compensation, double x)
{
    double t = *sum + x;
    *compensation += fabs(*sum) >= fabs(x) ? (*sum - t) + x : (x - t) + *sum;
    *sum = t;
}

/* Compensated (Neumaier) sum of terms at base + offsets[i]. */
static double exact_sum(const double *data, int64_t base, const int64_t *offsets, int64_t count,
                        double *square_sum)
{
    double sum = 0, compensation = 0, squares = 0;
    for (int64_t i = 0; i < count; i++) {
        double x = data[base + offsets[i]];
        double t = sum + x;
        compensation += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
        sum = t;
        squares += x * x;
    }
    *square_sum = squares;
    return sum + compensation;
}

/* Sums `terms` in float32 in the chosen order (emulation mode). */
static double ordered_f32_sum(const double *terms, int64_t count, fv_sum_order order, int block);

static double pairwise_f32(const double *terms, int64_t count)
{
    if (count == 1)
        return (double)(float)terms[0];
    int64_t half = count / 2;
    return (double)(float)(pairwise_f32(terms, half) + pairwise_f32(terms + half, count - half));
}

static double ordered_f32_sum(const double *terms, int64_t count, fv_sum_order order, int block)
{
    if (count == 0)
        return 0;
    if (block < 1)
        block = 32;
    float sum = 0;
    switch (order) {
    case FV_SUM_SEQUENTIAL:
        for (int64_t i = 0; i < count; i++)
            sum = (float)((double)sum + terms[i]);
        return sum;
    case FV_SUM_PAIRWISE:
        return pairwise_f32(terms, count);
    case FV_SUM_BLOCKED:
        for (int64_t start = 0; start < count; start += block) {
            float partial = 0;
            int64_t end = start + block < count ? start + block : count;
            for (int64_t i = start; i < end; i++)
                partial = (float)((double)partial + terms[i]);
            sum = (float)((double)sum + partial);
        }
        return sum;
    case FV_SUM_STRIDED: {
        /* `block` lanes each sum a strided subsequence, then a tree. */
        double lanes[1024];
        int width = block > 1024 ? 1024 : block;
        for (int l = 0; l < width; l++) {
            float partial = 0;
            for (int64_t i = l; i < count; i += width)
                partial = (float)((double)partial + terms[i]);
            lanes[l] = partial;
        }
        return pairwise_f32(lanes, width);
    }
    }
    return sum;
}

/* Accumulation error of summing n terms with sum S and sum of squares Q in
 * float32, in any reasonable order (docs/error-bounds.md). */
static double accumulation_error(double unit, double terms, double sum, double square_sum)
{
    if (terms <= 1)
        return 0;
    double spread = (terms - 1) * (sum * sum / 3 + square_sum / 2);
    return FV_EVAL_LAMBDA * unit * sqrt(spread);
}

/* Adds the channel `s` of the input (or `errors`, an input-shaped array) into
 * the output channel, linearly over reduced axes outside the support and in
 * quadrature over those inside. */
static void reduce_channel(const eval_plan *plan, const fv_op *op, const eval_array *input,
                           const double *errors, unsigned support, const reduction_layout *layout,
                           double scale, double *out_channel, int64_t *scratch_offsets)
{
    const eval_value_plan *in_plan = &plan->values[op->inputs[0]];
    unsigned quadrature_dims = 0;
    for (int a = 0; a < op->axis_count; a++) {
        int d = op->axes[a];
        int32_t cls = in_plan->dim_class[d];
        if (cls >= 0 && plan->class_bit[cls] >= 0 && (support & (1u << plan->class_bit[cls])))
            quadrature_dims |= 1u << d;
    }
    if (quadrature_dims == 0) {
        for (int64_t o = 0; o < layout->kept_count; o++) {
            double sum = 0;
            for (int64_t r = 0; r < layout->reduced_count; r++)
                sum += errors[layout->kept[o] + layout->reduced[r]];
            out_channel[o] += scale * layout->multiplicity * sum;
        }
        return;
    }
    int64_t *outer = scratch_offsets;
    int64_t outer_count = subspace_offsets(input, quadrature_dims, outer);
    int64_t *inner = scratch_offsets + outer_count;
    int64_t inner_count = subspace_offsets(input, layout->reduced_dims & ~quadrature_dims, inner);
    for (int64_t o = 0; o < layout->kept_count; o++) {
        double squares = 0;
        for (int64_t q = 0; q < outer_count; q++) {
            double linear = 0;
            for (int64_t l = 0; l < inner_count; l++)
                linear += errors[layout->kept[o] + outer[q] + inner[l]];
            linear *= layout->multiplicity;
            squares += linear * linear;
        }
        out_channel[o] += scale * FV_EVAL_LAMBDA * sqrt(squares);
    }
}

static void reduce_all_channels(const eval_plan *plan, const fv_op *op, const eval_array *input,
                                const reduction_layout *layout, double scale, eval_array *out,
                                int64_t *scratch_offsets)
{
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        if (input->channel[s] == NULL)
            continue;
        unsigned target = s & ~(unsigned)layout->reduced_bits;
        if (out->channel[target] == NULL)
            continue;
        reduce_channel(plan, op, input, input->channel[s], s, layout, scale, out->channel[target],
                       scratch_offsets);
    }
}

static fv_status reduce_sum(const eval_plan *plan, const fv_op *op, const eval_array *input,
                            eval_array *out, const reduction_layout *layout, eval_scratch *scratch)
{
    fv_dtype dtype = plan->fusion->values[op->outputs[0]].dtype;
    unsigned own = plan->values[op->outputs[0]].own_support;
    double terms = (double)layout->reduced_count * layout->multiplicity;
    for (int64_t o = 0; o < layout->kept_count; o++) {
        if (plan->mode == FV_EVAL_EMULATE_F32) {
            double *gathered = scratch->buffers[0];
            int64_t n = 0;
            for (double m = 0; m < layout->multiplicity; m++)
                for (int64_t r = 0; r < layout->reduced_count; r++)
                    gathered[n++] = input->value[layout->kept[o] + layout->reduced[r]];
            out->value[o] = emulate_round(ordered_f32_sum(gathered, n, plan->sum_order, plan->sum_block), dtype);
            continue;
        }
        double squares = 0;
        double sum = exact_sum(input->value, layout->kept[o], layout->reduced, layout->reduced_count,
                               &squares);
        sum *= layout->multiplicity;
        squares *= layout->multiplicity;
        out->value[o] = fv_dtype_is_half(dtype) ? fv_round_to_dtype(sum, dtype) : sum;
        if (out->channel[own] != NULL)
            out->channel[own][o] += accumulation_error(layout->unit, terms, sum, squares) +
                                    rounding_error(1, dtype, sum);
    }
    if (plan->mode == FV_EVAL_REFERENCE) {
        int64_t *offsets = (int64_t *)scratch->buffers[1];
        reduce_all_channels(plan, op, input, layout, 1.0, out, offsets);
    }
    return FV_OK;
}

static fv_status reduce_max(const eval_plan *plan, const fv_op *op, const eval_array *input,
                            eval_array *out, const reduction_layout *layout)
{
    for (int64_t o = 0; o < layout->kept_count; o++) {
        double best = -INFINITY, worst_error = 0;
        for (int64_t r = 0; r < layout->reduced_count; r++) {
            int64_t at = layout->kept[o] + layout->reduced[r];
            double x = input->value[at];
            if (isnan(x) || isnan(best))
                best = NAN;
            else if (x > best)
                best = x;
            if (plan->mode == FV_EVAL_REFERENCE) {
                double e = eval_array_total_error(input, at);
                if (e > worst_error)
                    worst_error = e;
            }
        }
        out->value[o] = best;
        if (out->channel[0] != NULL)
            out->channel[0][o] += worst_error;
    }
    return FV_OK;
}

/* var_mean: mean = sum/n, var = sum((x - mean)^2) / (n - correction). */
static fv_status reduce_var_mean(const eval_plan *plan, const fv_op *op, const eval_array *input,
                                 eval_array *variance, eval_array *mean,
                                 const reduction_layout *layout, eval_scratch *scratch)
{
    fv_dtype dtype = plan->fusion->values[op->outputs[0]].dtype;
    unsigned own = plan->values[op->outputs[0]].own_support;
    unsigned in_own = plan->values[op->inputs[0]].own_support;
    double n = (double)layout->reduced_count * layout->multiplicity;
    double divisor = n - (double)op->correction;
    bool reference = plan->mode == FV_EVAL_REFERENCE;
    int64_t *offsets = (int64_t *)scratch->buffers[1];
    double *term_errors = scratch->buffers[2];
    for (int64_t o = 0; o < layout->kept_count; o++) {
        double squares = 0;
        double m;
        if (reference) {
            m = exact_sum(input->value, layout->kept[o], layout->reduced, layout->reduced_count,
                          &squares) * layout->multiplicity / n;
        } else {
            double *gathered = scratch->buffers[0];
            for (int64_t r = 0; r < layout->reduced_count; r++)
                gathered[r] = input->value[layout->kept[o] + layout->reduced[r]];
            m = emulate_round(ordered_f32_sum(gathered, layout->reduced_count, plan->sum_order,
                                               plan->sum_block) *
                                  layout->multiplicity / n, FV_F32);
        }
        double sum = 0, compensation = 0, term_squares = 0;
        double *terms = scratch->buffers[0];
        for (int64_t r = 0; r < layout->reduced_count; r++) {
            double d = input->value[layout->kept[o] + layout->reduced[r]] - m;
            double t = reference ? d * d
                                 : emulate_round(emulate_round(d, FV_F32) * emulate_round(d, FV_F32),
                                                 FV_F32);
            terms[r] = t;
            neumaier_add(&sum, &compensation, t);
            term_squares += t * t;
        }
        if (!reference) {
            sum = ordered_f32_sum(terms, layout->reduced_count, plan->sum_order, plan->sum_block);
            compensation = 0;
        }
        sum = (sum + compensation) * layout->multiplicity;
        mean->value[o] = reference ? m : emulate_round(m, dtype);
        variance->value[o] = reference ? sum / divisor : emulate_round(sum / divisor, dtype);
        if (!reference)
            continue;
        double mean_acc = accumulation_error(layout->unit, n, m * n, squares * layout->multiplicity);
        if (mean->channel[own] != NULL)
            mean->channel[own][o] += mean_acc / n + rounding_error(1, dtype, m);
        if (variance->channel[own] != NULL)
            variance->channel[own][o] +=
                accumulation_error(layout->unit, n, sum, term_squares * layout->multiplicity) /
                    divisor +
                rounding_error(1, dtype, variance->value[o]);
    }
    if (!reference)
        return FV_OK;
    /* Mean channels: the sum's, divided by n. */
    reduce_all_channels(plan, op, input, layout, 1.0 / n, mean, offsets);
    /* Variance channels: terms d^2 carry 2|d| e per input channel, and their
     * own rounding 3 u d^2 in the input's support. */
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        if (input->channel[s] == NULL && s != in_own)
            continue;
        unsigned target = s & ~(unsigned)layout->reduced_bits;
        if (variance->channel[target] == NULL)
            continue;
        for (int64_t o = 0; o < layout->kept_count; o++)
            for (int64_t r = 0; r < layout->reduced_count; r++) {
                int64_t at = layout->kept[o] + layout->reduced[r];
                double d = fabs(input->value[at] - mean->value[o]);
                double e = input->channel[s] ? 2 * d * input->channel[s][at] : 0;
                if (s == in_own)
                    e += 3 * UNIT_ROUNDOFF_F32 * d * d;
                term_errors[at] = e;
            }
        reduce_channel(plan, op, input, term_errors, s, layout, 1.0 / divisor,
                       variance->channel[target], offsets);
    }
    /* The mean's own error enters the variance only to second order. */
    if (variance->channel[0] != NULL)
        for (int64_t o = 0; o < layout->kept_count; o++) {
            double e_mean = eval_array_total_error(mean, o);
            variance->channel[0][o] += n * e_mean * e_mean / divisor;
        }
    return FV_OK;
}

fv_status eval_kernel_reduction(const eval_plan *plan, const fv_op *op, const eval_array *input,
                                eval_array *out, eval_array *second_out, eval_scratch *scratch)
{
    reduction_layout layout;
    FV_TRY(layout_reduction(plan, op, input, &layout));
    int64_t needed = input->count * 2 + 2;
    if (layout.reduced_count * (int64_t)(layout.multiplicity > 1 ? layout.multiplicity : 1) > needed)
        needed = layout.reduced_count * (int64_t)layout.multiplicity;
    fv_status status = eval_scratch_reserve(scratch, needed);
    if (status == FV_OK) {
        if (op->kind == FV_OP_SUM)
            status = reduce_sum(plan, op, input, out, &layout, scratch);
        else if (op->kind == FV_OP_MAX)
            status = reduce_max(plan, op, input, out, &layout);
        else
            status = reduce_var_mean(plan, op, input, out, second_out, &layout, scratch);
    }
    free_layout(&layout);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* ------------------------------------------- cross-block reductions */

fv_status eval_stream_partial_allocate(eval_stream_partial *partial, const eval_plan *plan,
                                       const fv_op *op)
{
    memset(partial, 0, sizeof *partial);
    const eval_value_plan *in = &plan->values[op->inputs[0]];
    int rank = plan->fusion->values[op->inputs[0]].rank;
    int64_t count = 1;
    for (int d = 1; d < rank; d++) /* the stream dim is dim 0 */
        count *= in->stored[d];
    partial->count = count;
    partial->supports = in->supports;
    size_t bytes = sizeof(double) * (size_t)count;
    partial->value = malloc(bytes * 2); /* sum and its compensation */
    partial->square_sum = malloc(bytes);
    partial->max_error = malloc(bytes);
    bool ok = partial->value && partial->square_sum && partial->max_error;
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS && ok; s++)
        if (partial->supports & (1u << s)) {
            partial->channel[s] = malloc(bytes);
            ok = partial->channel[s] != NULL;
        }
    if (!ok) {
        eval_stream_partial_free(partial);
        FV_FAIL(FV_ERR_NOMEM, "out of memory for a reduction over rows (%lld elements)",
                (long long)count);
    }
    eval_stream_partial_reset(partial, op);
    return FV_OK;
}

void eval_stream_partial_free(eval_stream_partial *partial)
{
    free(partial->value);
    free(partial->square_sum);
    free(partial->max_error);
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        free(partial->channel[s]);
    memset(partial, 0, sizeof *partial);
}

void eval_stream_partial_reset(eval_stream_partial *partial, const fv_op *op)
{
    double start = op->kind == FV_OP_MAX ? -INFINITY : 0;
    for (int64_t i = 0; i < partial->count; i++) {
        partial->value[i] = start;
        partial->value[partial->count + i] = 0;
        partial->square_sum[i] = 0;
        partial->max_error[i] = 0;
    }
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        if (partial->channel[s])
            memset(partial->channel[s], 0, sizeof(double) * (size_t)partial->count);
    partial->rows = 0;
}

void eval_stream_accumulate(const eval_plan *plan, const fv_op *op, const eval_array *input,
                            eval_stream_partial *partial)
{
    int32_t stream_bit = plan->class_bit[plan->stream_class];
    int64_t count = partial->count;
    int64_t rows = input->extent[0];
    for (int64_t r = 0; r < rows; r++) {
        const double *row = input->value + r * count;
        if (op->kind == FV_OP_MAX) {
            for (int64_t i = 0; i < count; i++) {
                double x = row[i];
                double *best = &partial->value[i];
                *best = (isnan(x) || isnan(*best)) ? NAN : (x > *best ? x : *best);
            }
        } else {
            double *compensation = partial->value + count;
            for (int64_t i = 0; i < count; i++) {
                neumaier_add(&partial->value[i], &compensation[i], row[i]);
                partial->square_sum[i] += row[i] * row[i];
            }
        }
        for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
            const double *channel = input->channel[s];
            if (channel == NULL)
                continue;
            channel += r * count;
            double *acc = partial->channel[s];
            if (op->kind == FV_OP_MAX) {
                for (int64_t i = 0; i < count; i++)
                    partial->max_error[i] = fmax(partial->max_error[i], channel[i]);
            } else if (stream_bit >= 0 && (s & (1u << stream_bit))) {
                for (int64_t i = 0; i < count; i++)
                    acc[i] += channel[i] * channel[i];
            } else {
                for (int64_t i = 0; i < count; i++)
                    acc[i] += channel[i];
            }
        }
    }
    partial->rows += rows;
}

void eval_stream_merge(const fv_op *op, eval_stream_partial *total,
                       const eval_stream_partial *source)
{
    int64_t count = total->count;
    for (int64_t i = 0; i < count; i++) {
        if (op->kind == FV_OP_MAX) {
            double x = source->value[i], *best = &total->value[i];
            *best = (isnan(x) || isnan(*best)) ? NAN : (x > *best ? x : *best);
            total->max_error[i] = fmax(total->max_error[i], source->max_error[i]);
        } else {
            neumaier_add(&total->value[i], &total->value[count + i], source->value[i]);
            total->value[count + i] += source->value[count + i];
            total->square_sum[i] += source->square_sum[i];
        }
    }
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
        if (total->channel[s])
            for (int64_t i = 0; i < count; i++)
                total->channel[s][i] += source->channel[s][i];
    total->rows += source->rows;
}

void eval_stream_finalize(const eval_plan *plan, const fv_op *op,
                          const eval_stream_partial *total, eval_array *out)
{
    fv_dtype dtype = plan->fusion->values[op->outputs[0]].dtype;
    unsigned own = plan->values[op->outputs[0]].own_support;
    int32_t stream_bit = plan->class_bit[plan->stream_class];
    double unit = dtype == FV_F64 ? UNIT_ROUNDOFF_F64 : UNIT_ROUNDOFF_F32;
    int64_t count = total->count;
    for (int64_t i = 0; i < count; i++) {
        if (op->kind == FV_OP_MAX) {
            out->value[i] = total->value[i];
            if (out->channel[0])
                out->channel[0][i] += total->max_error[i];
            continue;
        }
        double sum = total->value[i] + total->value[count + i];
        out->value[i] = fv_dtype_is_half(dtype) ? fv_round_to_dtype(sum, dtype) : sum;
        if (out->channel[own])
            out->channel[own][i] += accumulation_error(unit, (double)total->rows, sum,
                                                       total->square_sum[i]) +
                                    rounding_error(1, dtype, sum);
    }
    if (op->kind == FV_OP_MAX)
        return;
    for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++) {
        const double *acc = total->channel[s];
        if (acc == NULL)
            continue;
        bool quadrature = stream_bit >= 0 && (s & (1u << stream_bit));
        unsigned target = quadrature ? s & ~(1u << stream_bit) : s;
        if (out->channel[target] == NULL)
            continue;
        for (int64_t i = 0; i < count; i++)
            out->channel[target][i] += quadrature ? FV_EVAL_LAMBDA * sqrt(acc[i]) : acc[i];
    }
}
