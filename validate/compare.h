/* compare.h: compares an output against its reference, element by element,
 * under one of two tolerance policies, and reports the result the way users
 * need it: mismatch count of the total, worst absolute and relative errors
 * with their indices, the largest ratio of error to allowed error, the rule
 * used, and a one-line repro command. */
#ifndef FV_VALIDATE_COMPARE_H
#define FV_VALIDATE_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/text.h"
#include "ir/case.h"
#include "validate/evaluator.h"

typedef enum fv_tolerance_policy {
    FV_TOLERANCE_BOUND,  /* allowed error = the evaluator's per-element bound */
    FV_TOLERANCE_NVFUSER /* nvFuser's tables: allclose(atol, rtol) by dtype and reduction size */
} fv_tolerance_policy;

/* Parses "bound" or "nvfuser".  Returns false otherwise. */
bool fv_tolerance_parse(const char *text, fv_tolerance_policy *policy);
const char *fv_tolerance_name(fv_tolerance_policy policy);

/* nvFuser's tolerance for an output of `dtype` with `reduction_size`
 * (research/nvfuser.md section 4): the absolute tolerance from the table
 * (the entry after the first key >= size; twice the last past the end) and
 * the relative tolerance 0.01 x that.  Sizes <= 1 use the first two entries. */
void fv_tolerance_nvfuser(fv_dtype dtype, int64_t reduction_size, double *absolute,
                          double *relative);

typedef struct fv_comparison {
    fv_tolerance_policy policy;
    char rule[128];
    double absolute, relative; /* nvFuser policy parameters */
    int64_t total;
    int64_t mismatches;
    int64_t nan_mismatches;    /* NaN on exactly one side */
    double worst_absolute;     /* largest |actual - expected| (finite pairs) */
    int64_t worst_absolute_index;
    double worst_absolute_actual, worst_absolute_expected, worst_absolute_allowed;
    double worst_relative;     /* largest |actual - expected| / |expected| */
    int64_t worst_relative_index;
    double worst_ratio;        /* largest error / allowed (inf for NaN mismatches) */
    int64_t worst_ratio_index;
    double worst_ratio_allowed;
    int64_t first_mismatch_index;
} fv_comparison;

/* Starts a comparison of one output. */
void fv_comparison_init(fv_comparison *comparison, fv_tolerance_policy policy,
                        const fv_eval_output *output);

/* Adds elements [first, first + count) (flat indices).  `bounds` is needed
 * for the bound policy and ignored by the nvFuser one; a NaN bound passes an
 * exact match only.  Cannot fail. */
void fv_comparison_add(fv_comparison *comparison, const double *actual, const double *expected,
                       const double *bounds, int64_t first, int64_t count);

/* Merges a comparison of another part of the same output. */
void fv_comparison_merge(fv_comparison *total, const fv_comparison *part);

bool fv_comparison_passed(const fv_comparison *comparison);

/* Appends a multi-line report of output `index`: its name, dtype and shape,
 * the rule, mismatches of the total with percentage, worst absolute and
 * relative differences with indices like (i, j) and their allowed error, and
 * the worst error/allowed ratio. */
void fv_comparison_format(const fv_comparison *comparison, const fv_case *c, int index,
                          const fv_eval_output *output, fv_text *text);

/* Appends the one-line command that reruns just this case. */
void fv_repro_command(const fv_case *c, fv_text *text);

#endif
