/* eval_internal.h: the evaluator's plan (what to compute where), its block
 * arrays with error channels, and the array kernels.  Private to validate/.
 *
 * Error channels.  The error bound of a value is kept as a few arrays, one
 * per "support": the set of reduction axes along which that part of the error
 * varies independently from element to element.  Rounding at an element-wise
 * op of a [N, H] value varies along N and H; the error of a row statistic
 * broadcast back to [N, H] is the same along H.  A later sum along an axis adds
 * components that vary along it in quadrature (they are independent rounding
 * errors) and the others linearly (they are correlated).  Supports are bit
 * sets over at most FV_EVAL_MAX_REDUCTION_AXES reduction axis classes.
 */
#ifndef FV_VALIDATE_EVAL_INTERNAL_H
#define FV_VALIDATE_EVAL_INTERNAL_H

#include <stdint.h>

#include "ir/case.h"
#include "validate/evaluator.h"

#define FV_EVAL_MAX_REDUCTION_AXES 4
#define FV_EVAL_SUPPORTS (1 << FV_EVAL_MAX_REDUCTION_AXES)

/* Confidence factor for quadrature sums (Hoeffding: a sum of independent
 * terms bounded by e_i exceeds lambda * sqrt(sum e_i^2) with probability at
 * most 2 exp(-lambda^2 / 2)). */
#define FV_EVAL_LAMBDA 5.0

/* ------------------------------------------------------------------ plan */

typedef struct eval_value_plan {
    bool live;                     /* some output depends on it */
    bool row_varying;              /* has the stream dimension */
    int stream_dim;                /* its dim in the stream class, or -1 */
    int pass;                      /* first pass in which it can be computed */
    int32_t dim_class[FV_MAX_RANK];/* axis class per dim (-1: broadcast) */
    uint8_t own_support;           /* reduction-axis bits of its iteration dims */
    uint16_t supports;             /* bit s set: it can carry a channel of support s */
    int64_t extent[FV_MAX_RANK];   /* logical extents (expanded dims included) */
    int64_t stored[FV_MAX_RANK];   /* stored extents (broadcast dims 1) */
    int64_t reduction_size;        /* nvFuser's reduction size */
    double scalar;                 /* scalars: value in this case */
    double scalar_f32_error;       /* scalars: |s - f32(s)| */
} eval_value_plan;

typedef struct eval_plan {
    const fv_case *c;
    const fv_fusion *fusion;
    fv_eval_mode mode;
    fv_sum_order sum_order; /* emulation mode */
    int sum_block;
    int32_t *order;        /* live ops, topological */
    int32_t op_count;
    eval_value_plan *values;
    int32_t stream_class;  /* -1: one block holds everything */
    int64_t rows;          /* extent of the stream class (1 without streaming) */
    int pass_count;
    int32_t class_count;
    int8_t *class_bit;     /* per class: reduction-axis bit, or -1 */
    bool fast_exp;         /* the outputs are all 16-bit: exp is bounded (and emulated)
                              as the kernels' fv_exp_fast */
} eval_plan;

/* Analyses a bound case: live ops, axis classes, the stream dimension,
 * passes, supports and extents.  FV_ERR_UNSUPPORTED for fusions the
 * evaluator cannot handle. */
fv_status eval_plan_build(const fv_case *c, const fv_eval_options *options, eval_plan *plan);
void eval_plan_free(eval_plan *plan);

/* True if `op` reduces over the stream class (a cross-block reduction). */
bool eval_plan_is_stream_reduction(const eval_plan *plan, const fv_op *op);

/* ---------------------------------------------------------------- arrays */

/* One value over one block: stored extents (broadcast dims 1, the stream dim
 * = the block's rows), row-major, plus its error channels. */
typedef struct eval_array {
    int rank;
    int64_t extent[FV_MAX_RANK];
    int64_t count;                       /* product of extents */
    int64_t capacity;                    /* elements allocated per array */
    double *value;
    double *channel[FV_EVAL_SUPPORTS];   /* NULL where the support is absent */
    uint16_t supports;                   /* which channels exist */
} eval_array;

/* Allocates arrays for `capacity` elements with the plan's supports of
 * `value` (reference mode) or none (emulation).  FV_ERR_NOMEM. */
fv_status eval_array_allocate(eval_array *array, const eval_plan *plan, int32_t value,
                              int64_t capacity);
void eval_array_free(eval_array *array);

/* Sets the array's extents for a block of `rows` rows (or all of a
 * row-invariant value) and zeroes its channels. */
void eval_array_shape(eval_array *array, const eval_plan *plan, int32_t value, int64_t rows);

/* Total error bound of element i (sum over channels). */
double eval_array_total_error(const eval_array *array, int64_t index);

/* ---------------------------------------------------------------- kernels */

/* Scratch space for one thread (grown on demand). */
typedef struct eval_scratch {
    double *buffers[6];
    int64_t capacity;
} eval_scratch;

fv_status eval_scratch_reserve(eval_scratch *scratch, int64_t count);
void eval_scratch_free(eval_scratch *scratch);

/* Evaluates a non-reduction op (element-wise, shape, factory) into `out`
 * from its operand arrays (NULL for scalar operands, whose values come from
 * the plan). */
fv_status eval_kernel_pointwise(const eval_plan *plan, const fv_op *op, const eval_array *const *operands,
                                eval_array *out, eval_scratch *scratch);

/* Evaluates a reduction (sum, max, var_mean) that does not cross blocks. */
fv_status eval_kernel_reduction(const eval_plan *plan, const fv_op *op, const eval_array *input,
                                eval_array *out, eval_array *second_out, eval_scratch *scratch);

/* ----------------------------------------- cross-block (stream) reductions */

/* Partial state of a sum/max over the stream dimension for one chunk of rows:
 * per output element, the value sum (or max), the sum of squares (for the
 * accumulation-error estimate), and per channel either a linear sum or a sum
 * of squares. */
typedef struct eval_stream_partial {
    int64_t count;                          /* output elements */
    int64_t rows;                           /* rows accumulated */
    double *value;
    double *square_sum;
    double *max_error;                      /* max: largest total error */
    double *channel[FV_EVAL_SUPPORTS];
    uint16_t supports;
} eval_stream_partial;

fv_status eval_stream_partial_allocate(eval_stream_partial *partial, const eval_plan *plan,
                                       const fv_op *op);
void eval_stream_partial_free(eval_stream_partial *partial);
void eval_stream_partial_reset(eval_stream_partial *partial, const fv_op *op);

/* Adds a block of the reduction's input (rows of the stream dim) to `partial`. */
void eval_stream_accumulate(const eval_plan *plan, const fv_op *op, const eval_array *input,
                            eval_stream_partial *partial);

/* Adds `source` into `total` (chunks are merged in row order). */
void eval_stream_merge(const fv_op *op, eval_stream_partial *total,
                       const eval_stream_partial *source);

/* Turns the merged state into the reduction's output value and bounds. */
void eval_stream_finalize(const eval_plan *plan, const fv_op *op,
                          const eval_stream_partial *total, eval_array *out);

#endif /* FV_VALIDATE_EVAL_INTERNAL_H */
