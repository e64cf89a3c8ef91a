/* fast_exp_model.h: the error model of fv_exp_fast (src/codegen/common.cuh),
 * the exp of fusions whose outputs are all 16-bit, in one place for the
 * evaluator's bound (validate/eval_kernels.c) and its check over every float
 * argument on a GPU (tests/exp_fast_accuracy.cu):
 *
 *   |fv_exp_fast(a) - e^a| <= (FV_FAST_EXP_UNITS + FV_FAST_EXP_ARGUMENT_UNITS·|a|)·2^-24·e^a
 *
 * for a up to FV_FAST_EXP_HIGHEST_ARGUMENT (results under 2^-126 flushed to
 * zero; docs/error-bounds.md, fv-bound-v2). */
#ifndef FV_VALIDATE_FAST_EXP_MODEL_H
#define FV_VALIDATE_FAST_EXP_MODEL_H

#define FV_FAST_EXP_UNITS 4.0           /* the unit's own error, 2.45 measured, and margin */
#define FV_FAST_EXP_ARGUMENT_UNITS 1.25 /* per unit of |a|: the argument's rounding */
#define FV_FAST_EXP_HIGHEST_ARGUMENT 88.72f /* within about 7e-6 of ln(FLT_MAX) the
                                               unit may overflow */

#endif
