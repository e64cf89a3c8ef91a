/* evaluator.h: runs a case's fusion on the host, in double precision, to make
 * the references its GPU outputs are checked against.
 *
 * Reference mode computes every value exactly in double except where the
 * fusion itself narrows (an explicit cast, an op whose result is bf16/fp16),
 * and carries alongside each value a bound on the error a float32 evaluation
 * of the same fusion may make (first-order error analysis; see
 * docs/error-bounds.md).  The allowed error of each output element is that
 * bound.  Emulation mode instead rounds every op to its float32/half result
 * and sums in a chosen order: the tests use it to check that the bounds hold.
 *
 * Rows are streamed in blocks along one "stream" dimension (the rows N of a
 * [N, H] normalization), so memory stays bounded at any size; reductions over
 * that dimension (dw, db) are accumulated across blocks, in a fixed chunk order
 * so the result does not depend on the thread count.
 */
#ifndef FV_VALIDATE_EVALUATOR_H
#define FV_VALIDATE_EVALUATOR_H

#include <stdint.h>

#include "ir/case.h"

/* Part of every reference-store key: bump when the values or bounds change. */
#define FV_EVALUATOR_VERSION 2

/* Name and parameters of the bound rule, recorded with every comparison. */
#define FV_BOUND_POLICY_NAME "fv-bound-v2"

typedef enum fv_eval_mode {
    FV_EVAL_REFERENCE,   /* exact double values and error bounds */
    FV_EVAL_EMULATE_F32  /* float32 arithmetic as a GPU kernel does it, no bounds */
} fv_eval_mode;

typedef enum fv_sum_order {
    FV_SUM_SEQUENTIAL, /* one running sum, in index order */
    FV_SUM_PAIRWISE,   /* recursive halves */
    FV_SUM_BLOCKED,    /* sequential within blocks of `sum_block`, then over the partials */
    FV_SUM_STRIDED     /* `sum_block` interleaved lanes (as threads of a block), then a tree */
} fv_sum_order;

/* An input the caller has already generated with fv_gen_fill_raw over its
 * whole logical shape (elements 0 .. count-1, raw elements of the input's
 * dtype).  The evaluator converts these instead of generating them again;
 * the values are the same bit for bit, so references do not change. */
typedef struct fv_eval_given_input {
    const void *elements;   /* NULL: generate this input */
    int64_t count;          /* elements available */
} fv_eval_given_input;

typedef struct fv_eval_options {
    int threads;            /* worker threads; 0 = one per online core */
    int64_t memory_budget;  /* bytes of block buffers per thread (at least one row);
                               0 = 1 MiB, which keeps blocks in cache */
    fv_eval_mode mode;
    fv_sum_order sum_order; /* emulation mode only */
    int sum_block;          /* FV_SUM_BLOCKED / FV_SUM_STRIDED (default 32) */
    bool no_streaming;      /* evaluate everything as one block (tests) */
    const fv_eval_given_input *given_inputs; /* NULL, or one per fusion input position */
    bool concurrent_sink;   /* the sink is thread-safe: call it from several threads at
                               once (else calls are serialized) */
} fv_eval_options;

/* Everything a consumer needs to know about one output. */
typedef struct fv_eval_output {
    int32_t value;               /* value id in the fusion */
    int rank;
    int64_t extents[FV_MAX_RANK];
    int64_t rows;                /* extent of dim 0 (1 for rank 0) */
    int64_t row_elements;        /* elements per row (product of dims 1..) */
    fv_dtype dtype;
    int64_t reduction_size;      /* nvFuser's "reduction size" of the output */
} fv_eval_output;

/* Receives output blocks: rows [first_row, first_row + row_count) of output
 * `output_index`, row-major, `values` and `bounds` (allowed absolute error;
 * NULL in emulation mode) each row_count * row_elements doubles.  Calls are
 * serialized (concurrent with options->concurrent_sink) and may come from
 * any thread and in any row order; each row of each output comes exactly
 * once.  A non-FV_OK return stops the evaluation,
 * which then returns that status. */
typedef fv_status (*fv_eval_sink)(void *context, int output_index, int64_t first_row,
                                  int64_t row_count, const double *values,
                                  const double *bounds);

/* Describes output `index` of a bound case.  FV_ERR_INPUT if unbound. */
fv_status fv_eval_describe_output(const fv_case *c, int index, fv_eval_output *output);

/* Evaluates the case and streams every output to `sink`.  Fails with
 * FV_ERR_INPUT if the case is not fully bound, FV_ERR_UNSUPPORTED for a
 * fusion it cannot evaluate, FV_ERR_NOMEM if even one row does not fit the
 * budget, or whatever the sink returns.  Thread-safe for distinct cases. */
fv_status fv_eval_run(const fv_case *c, const fv_eval_options *options, fv_eval_sink sink,
                      void *context);

/* A convenience for tests and small cases: evaluates and returns each output
 * as a malloc'ed row-major array (`values[i]`, and `bounds[i]` in reference
 * mode, else NULL).  The caller frees each array and the two pointer arrays. */
fv_status fv_eval_to_memory(const fv_case *c, const fv_eval_options *options, double ***values,
                            double ***bounds);

#endif /* FV_VALIDATE_EVALUATOR_H */
