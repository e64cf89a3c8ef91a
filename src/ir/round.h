/* round.h: exact conversions between double and the element types, rounding
 * to nearest, ties to even, as the GPU's conversion instructions do.  The
 * reference evaluator rounds explicit casts with these; the input generator
 * uses them to store generated values; the comparator decodes GPU outputs. */
#ifndef FV_IR_ROUND_H
#define FV_IR_ROUND_H

#include <stdint.h>

#include "ir/ir.h"

/* double -> bfloat16 bits (8-bit exponent, 7-bit fraction), rounded to
 * nearest even; overflow gives infinity; NaN gives a quiet NaN of the same
 * sign.  Cannot fail. */
uint16_t fv_bf16_from_double(double value);
double fv_bf16_to_double(uint16_t bits);

/* double -> IEEE binary16 bits (5-bit exponent, 10-bit fraction), rounded to
 * nearest even, with subnormals; overflow gives infinity; NaN stays NaN. */
uint16_t fv_f16_from_double(double value);
double fv_f16_to_double(uint16_t bits);

/* The value `value` takes when stored as `dtype`: floats round to nearest
 * even; integers truncate toward zero and saturate at the type's limits (NaN
 * gives 0); bool gives 0 or 1; FV_F64 and FV_DTYPE_NONE return it unchanged. */
double fv_round_to_dtype(double value, fv_dtype dtype);

/* Unit roundoff of a float dtype: 2^-53, 2^-24, 2^-11, 2^-8 (0 for others). */
double fv_dtype_unit_roundoff(fv_dtype dtype);

/* Spacing of `dtype` numbers at magnitude |value| (the ulp of the larger
 * neighbour; the subnormal spacing below the normal range).  0 for integer
 * and bool dtypes. */
double fv_dtype_ulp(double value, fv_dtype dtype);

/* Stores `count` doubles into `destination` as `dtype` elements (rounded as
 * fv_round_to_dtype; bool as one byte).  Cannot fail. */
void fv_store_elements(fv_dtype dtype, const double *source, void *destination, int64_t count);

/* Loads `count` elements of `dtype` into doubles (exactly).  Cannot fail. */
void fv_load_elements(fv_dtype dtype, const void *source, double *destination, int64_t count);

#endif
