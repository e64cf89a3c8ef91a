/* norm_fusions.h: normalization fusions built with the C builder API, shared
 * by the evaluator and bound tests.  Each builds a symbolic-size fusion in
 * `dtype` (the compute is always f32; with dtype fp32 there is no cast). */
#ifndef FV_TESTS_NORM_FUSIONS_H
#define FV_TESTS_NORM_FUSIONS_H

#include "ir/case.h"

typedef enum norm_kind {
    NORM_LAYER_BACKWARD,  /* x, dy, w, mean[N,1], invstd[N,1] -> dx, dw, db */
    NORM_RMS_BACKWARD,    /* x, rms[N,1], dy, w -> dx, dw (Thunder's rms form) */
    NORM_LAYER_FORWARD,   /* x, w, b -> y, mean[N], invstd[N] (var_mean) */
    NORM_RMS_FORWARD,     /* x, w -> y, invrms[N,1] */
    NORM_SOFTMAX          /* x -> y */
} norm_kind;

/* Builds the fusion and a case bound to rows x hidden with `seed`; inputs
 * that are statistics (invstd, rms) get uniform(0.5, 1.5).  Returns NULL on
 * failure (the fv error message says why). */
fv_case *norm_case(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden, uint64_t seed);

#endif
