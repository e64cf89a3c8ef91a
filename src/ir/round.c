/* round.c: conversions between double and the element types (round to
 * nearest, ties to even, directly from double; no intermediate float). */
#include "ir/round.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A binary floating-point format: fraction bits (without the implicit bit)
 * and exponent bits.  Bias, minimum and maximum exponent follow IEEE 754. */
typedef struct binary_format {
    int fraction_bits;
    int exponent_bits;
} binary_format;

static const binary_format format_f16 = {10, 5};
static const binary_format format_bf16 = {7, 8};

static int format_bias(binary_format format) { return (1 << (format.exponent_bits - 1)) - 1; }

static int format_min_exponent(binary_format format) { return 1 - format_bias(format); }

static uint64_t double_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static double double_from_bits(uint64_t bits)
{
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Rounds a finite nonzero magnitude, given as significand * 2^(exponent - 52)
 * with significand < 2^53, to the format's encoding (without the sign).
 * Returns the infinity encoding when the rounded value overflows. */
static uint32_t encode_finite_magnitude(uint64_t significand, int exponent, binary_format format)
{
    const int min_exponent = format_min_exponent(format);
    const uint32_t infinity = ((1u << format.exponent_bits) - 1) << format.fraction_bits;
    bool subnormal_range = exponent < min_exponent;
    /* The result is a multiple of 2^quantum_exponent. */
    int quantum_exponent = (subnormal_range ? min_exponent : exponent) - format.fraction_bits;
    int shift = quantum_exponent - (exponent - 52); /* at least 52 - fraction_bits */
    uint64_t quanta = 0;
    if (shift <= 60) { /* larger shifts leave less than 2^-7 of a quantum: zero */
        uint64_t remainder = significand & ((UINT64_C(1) << shift) - 1);
        uint64_t half = UINT64_C(1) << (shift - 1);
        quanta = significand >> shift;
        if (remainder > half || (remainder == half && (quanta & 1) != 0))
            quanta++;
    }
    /* For normal numbers `quanta` includes the implicit bit, which adds one to
     * the biased exponent (exponent - min_exponent + 1); a carry out of the
     * fraction moves to the next binade, and out of the largest to infinity. */
    int64_t field_base = subnormal_range ? 0 : (int64_t)exponent - min_exponent;
    int64_t magnitude = field_base * ((int64_t)1 << format.fraction_bits) + (int64_t)quanta;
    if (magnitude >= (int64_t)infinity)
        return infinity;
    return (uint32_t)magnitude;
}

static uint16_t encode_from_double(double value, binary_format format)
{
    const uint64_t bits = double_bits(value);
    const int total_bits = format.exponent_bits + format.fraction_bits;
    const uint32_t sign = (uint32_t)(bits >> 63) << total_bits;
    const uint32_t infinity = ((1u << format.exponent_bits) - 1) << format.fraction_bits;
    const int exponent_field = (int)((bits >> 52) & 0x7FF);
    const uint64_t fraction = bits & ((UINT64_C(1) << 52) - 1);

    if (exponent_field == 0x7FF) {
        if (fraction != 0) /* quiet NaN, sign kept */
            return (uint16_t)(sign | infinity | (1u << (format.fraction_bits - 1)));
        return (uint16_t)(sign | infinity);
    }
    if (exponent_field == 0 && fraction == 0)
        return (uint16_t)sign;
    uint64_t significand = fraction;
    int exponent = -1022;
    if (exponent_field != 0) {
        significand |= UINT64_C(1) << 52;
        exponent = exponent_field - 1023;
    }
    return (uint16_t)(sign | encode_finite_magnitude(significand, exponent, format));
}

static double decode_to_double(uint16_t encoded, binary_format format)
{
    const int total_bits = format.exponent_bits + format.fraction_bits;
    const uint64_t sign = (uint64_t)((encoded >> total_bits) & 1) << 63;
    const uint32_t exponent_mask = (1u << format.exponent_bits) - 1;
    const uint32_t exponent_field = (encoded >> format.fraction_bits) & exponent_mask;
    const uint64_t fraction = encoded & ((1u << format.fraction_bits) - 1);
    const int fraction_shift = 52 - format.fraction_bits;

    if (exponent_field == exponent_mask) /* infinity, or NaN with its payload */
        return double_from_bits(sign | (UINT64_C(0x7FF) << 52) | (fraction << fraction_shift));
    if (exponent_field == 0) { /* subnormal or zero: fraction * 2^(min_exponent - fraction_bits) */
        double magnitude = (double)fraction *
                           ldexp(1.0, format_min_exponent(format) - format.fraction_bits);
        return sign != 0 ? -magnitude : magnitude;
    }
    uint64_t double_exponent = (uint64_t)((int)exponent_field - format_bias(format) + 1023);
    return double_from_bits(sign | (double_exponent << 52) | (fraction << fraction_shift));
}

uint16_t fv_bf16_from_double(double value) { return encode_from_double(value, format_bf16); }

double fv_bf16_to_double(uint16_t bits) { return decode_to_double(bits, format_bf16); }

uint16_t fv_f16_from_double(double value) { return encode_from_double(value, format_f16); }

double fv_f16_to_double(uint16_t bits) { return decode_to_double(bits, format_f16); }

/* Truncation toward zero with saturation; NaN gives 0. */
static int64_t int64_from_double(double value)
{
    if (isnan(value))
        return 0;
    if (value >= 0x1p63)
        return INT64_MAX;
    if (value <= -0x1p63)
        return INT64_MIN;
    return (int64_t)value;
}

static int32_t int32_from_double(double value)
{
    if (isnan(value))
        return 0;
    if (value >= 0x1p31)
        return INT32_MAX;
    if (value <= -0x1p31)
        return INT32_MIN;
    return (int32_t)value;
}

static float float_from_double(double value)
{
    /* IEEE conversion (round to nearest even in the default environment);
     * out-of-range magnitudes become infinity as rounding dictates. */
    return (float)value;
}

/* Rounds a double whose magnitude is within [smallest_normal, largest_safe)
 * of the target to `fraction_bits` fraction bits, to nearest even, on its
 * bits: the result stays a normal number of the target, so no exponent or
 * overflow handling is needed.  Returns false outside that range. */
static bool round_normal_fast(double value, int fraction_bits, double smallest_normal,
                              double largest_safe, double *rounded)
{
    double magnitude = fabs(value);
    if (!(magnitude >= smallest_normal && magnitude < largest_safe))
        return false;
    uint64_t bits = double_bits(value);
    int dropped = 52 - fraction_bits;
    uint64_t half = UINT64_C(1) << (dropped - 1);
    uint64_t lowest_kept = (bits >> dropped) & 1;
    bits += half - 1 + lowest_kept;
    bits &= ~((UINT64_C(1) << dropped) - 1);
    *rounded = double_from_bits(bits);
    return true;
}

double fv_round_to_dtype(double value, fv_dtype dtype)
{
    double rounded;
    if (dtype == FV_BF16 && round_normal_fast(value, 7, 0x1p-126, 0x1p126, &rounded))
        return rounded;
    if (dtype == FV_F16 && round_normal_fast(value, 10, 0x1p-14, 0x1p15, &rounded))
        return rounded;
    switch (dtype) {
    case FV_F32:
        return (double)float_from_double(value);
    case FV_F16:
        return fv_f16_to_double(fv_f16_from_double(value));
    case FV_BF16:
        return fv_bf16_to_double(fv_bf16_from_double(value));
    case FV_I64:
        return (double)int64_from_double(value);
    case FV_I32:
        return (double)int32_from_double(value);
    case FV_BOOL:
        return value != 0 ? 1.0 : 0.0;
    case FV_F64:
    case FV_DTYPE_NONE:
    case FV_DTYPE_COUNT:
        break;
    }
    return value;
}

double fv_dtype_unit_roundoff(fv_dtype dtype)
{
    switch (dtype) {
    case FV_F64:
        return 0x1p-53;
    case FV_F32:
        return 0x1p-24;
    case FV_F16:
        return 0x1p-11;
    case FV_BF16:
        return 0x1p-8;
    default:
        return 0;
    }
}

/* Spacing parameters of a float dtype; false for the others. */
static bool spacing_parameters(fv_dtype dtype, int *fraction_bits, int *min_exponent,
                               int *max_exponent)
{
    switch (dtype) {
    case FV_F64:
        *fraction_bits = 52, *min_exponent = -1022, *max_exponent = 1023;
        return true;
    case FV_F32:
        *fraction_bits = 23, *min_exponent = -126, *max_exponent = 127;
        return true;
    case FV_F16:
        *fraction_bits = 10, *min_exponent = -14, *max_exponent = 15;
        return true;
    case FV_BF16:
        *fraction_bits = 7, *min_exponent = -126, *max_exponent = 127;
        return true;
    default:
        return false;
    }
}

/* The ulp of the larger neighbour: |value| lies in [lower, upper] for two
 * adjacent dtype numbers; the result is the spacing of dtype numbers in
 * upper's binade, 2^(max(exponent(upper), min_exponent) - fraction_bits).
 * For |value| representable this is its own ulp; beyond the largest finite
 * number (and for infinity) it is the ulp of the largest finite number; NaN
 * gives NaN. */
double fv_dtype_ulp(double value, fv_dtype dtype)
{
    int fraction_bits, min_exponent, max_exponent;
    if (!spacing_parameters(dtype, &fraction_bits, &min_exponent, &max_exponent))
        return 0;
    double magnitude = fabs(value);
    if (isnan(magnitude))
        return magnitude;
    if (magnitude == 0)
        return ldexp(1.0, min_exponent - fraction_bits);
    int exponent = isinf(magnitude) ? max_exponent : ilogb(magnitude);
    if (exponent < min_exponent)
        return ldexp(1.0, min_exponent - fraction_bits);
    /* Above the largest dtype number of this binade, the upper neighbour is
     * the next power of two. */
    double binade_largest = ldexp(1.0, exponent + 1) - ldexp(1.0, exponent - fraction_bits);
    if (magnitude > binade_largest)
        exponent++;
    if (exponent > max_exponent)
        exponent = max_exponent;
    return ldexp(1.0, exponent - fraction_bits);
}

void fv_store_elements(fv_dtype dtype, const double *source, void *destination, int64_t count)
{
    switch (dtype) {
    case FV_F64:
        if (count > 0)
            memcpy(destination, source, (size_t)count * sizeof(double));
        break;
    case FV_F32:
        for (int64_t i = 0; i < count; i++)
            ((float *)destination)[i] = float_from_double(source[i]);
        break;
    case FV_F16:
        for (int64_t i = 0; i < count; i++)
            ((uint16_t *)destination)[i] = fv_f16_from_double(source[i]);
        break;
    case FV_BF16:
        for (int64_t i = 0; i < count; i++)
            ((uint16_t *)destination)[i] = fv_bf16_from_double(source[i]);
        break;
    case FV_I64:
        for (int64_t i = 0; i < count; i++)
            ((int64_t *)destination)[i] = int64_from_double(source[i]);
        break;
    case FV_I32:
        for (int64_t i = 0; i < count; i++)
            ((int32_t *)destination)[i] = int32_from_double(source[i]);
        break;
    case FV_BOOL:
        for (int64_t i = 0; i < count; i++)
            ((uint8_t *)destination)[i] = source[i] != 0 ? 1 : 0;
        break;
    case FV_DTYPE_NONE:
    case FV_DTYPE_COUNT:
        break; /* no storage format: nothing to write */
    }
}

void fv_load_elements(fv_dtype dtype, const void *source, double *destination, int64_t count)
{
    switch (dtype) {
    case FV_F64:
        if (count > 0)
            memcpy(destination, source, (size_t)count * sizeof(double));
        break;
    case FV_F32:
        for (int64_t i = 0; i < count; i++)
            destination[i] = (double)((const float *)source)[i];
        break;
    case FV_F16:
        for (int64_t i = 0; i < count; i++)
            destination[i] = fv_f16_to_double(((const uint16_t *)source)[i]);
        break;
    case FV_BF16:
        for (int64_t i = 0; i < count; i++)
            destination[i] = fv_bf16_to_double(((const uint16_t *)source)[i]);
        break;
    case FV_I64: /* exact up to 2^53 in magnitude, rounded to nearest beyond */
        for (int64_t i = 0; i < count; i++)
            destination[i] = (double)((const int64_t *)source)[i];
        break;
    case FV_I32:
        for (int64_t i = 0; i < count; i++)
            destination[i] = (double)((const int32_t *)source)[i];
        break;
    case FV_BOOL: /* any nonzero byte reads as true */
        for (int64_t i = 0; i < count; i++)
            destination[i] = ((const uint8_t *)source)[i] != 0 ? 1.0 : 0.0;
        break;
    case FV_DTYPE_NONE:
    case FV_DTYPE_COUNT:
        break;
    }
}
