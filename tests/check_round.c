/* check_round.c: tests of round.h: bit-level bf16/fp16 conversions (ties,
 * subnormals, overflow, specials), exhaustive round trips, agreement with an
 * independent reference rounding, integer/bool rounding, ulps, store/load. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ir/round.h"
#include "test_support.h"

/* ------------------------------------------------------------ helpers */

static uint64_t splitmix_state;

static uint64_t next_random(void)
{
    uint64_t z = (splitmix_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double from_bits(uint64_t bits)
{
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

#define ASSERT_BF16(value, expected)                                                       \
    do {                                                                                   \
        uint16_t got_ = fv_bf16_from_double(value);                                        \
        ck_assert_msg(got_ == (expected), "bf16(%a) = 0x%04x, expected 0x%04x", (double)(value), \
                      got_, (unsigned)(expected));                                         \
    } while (0)

#define ASSERT_F16(value, expected)                                                        \
    do {                                                                                   \
        uint16_t got_ = fv_f16_from_double(value);                                         \
        ck_assert_msg(got_ == (expected), "f16(%a) = 0x%04x, expected 0x%04x", (double)(value), \
                      got_, (unsigned)(expected));                                         \
    } while (0)

/* Reference rounding, written independently of round.c: the magnitude is
 * scaled (frexp/ldexp) to a count of quanta of its binade (or of the
 * subnormal range), split into integer and fraction with floor, and the tie
 * is resolved explicitly.  `precision` counts the implicit bit. */
static double reference_round(double x, int precision, int min_exponent, double largest)
{
    if (isnan(x) || isinf(x) || x == 0)
        return x;
    int frexp_exponent;
    frexp(fabs(x), &frexp_exponent); /* |x| = f * 2^frexp_exponent, f in [0.5, 1) */
    int exponent = frexp_exponent - 1;
    if (exponent < min_exponent)
        exponent = min_exponent;
    int quantum = exponent - (precision - 1);
    double scaled = ldexp(fabs(x), -quantum); /* exact: a power-of-two scaling */
    double whole = floor(scaled);
    double fraction = scaled - whole; /* exact */
    double count = whole;
    if (fraction > 0.5 || (fraction == 0.5 && fmod(whole, 2.0) != 0.0))
        count = whole + 1;
    double result = ldexp(count, quantum);
    if (result > largest)
        result = INFINITY;
    return copysign(result, x);
}

static const double f16_largest = 65504.0;
static const double bf16_largest = 0x1.fep127;

static double reference_f16(double x) { return reference_round(x, 11, -14, f16_largest); }
static double reference_bf16(double x) { return reference_round(x, 8, -126, bf16_largest); }

/* True if a decoded result and a reference agree bit for bit (decoding is
 * one-to-one on non-NaNs, so equal value and sign means equal bits). */
static bool same_value(double got, double expected)
{
    if (isnan(got) || isnan(expected))
        return isnan(got) && isnan(expected) && signbit(got) == signbit(expected);
    return got == expected && signbit(got) == signbit(expected);
}

/* A random double for conversion tests: a third fully random bit patterns, a
 * third random magnitudes in [2^low, 2^high), a third near a tie of the
 * format (a random finite pattern plus half an ulp, nudged by 0 or a few
 * double ulps). */
static double random_test_double(int low, int high, bool bf16)
{
    uint64_t r = next_random();
    switch (r % 3) {
    case 0:
        return from_bits(next_random());
    case 1: {
        int exponent = low + (int)(next_random() % (uint64_t)(high - low));
        double mantissa = 1.0 + (double)(next_random() >> 12) * 0x1p-52;
        double value = ldexp(mantissa, exponent);
        return (r >> 8) & 1 ? -value : value;
    }
    default: {
        uint16_t bits = (uint16_t)(next_random() & 0x7FFF);
        double base = bf16 ? fv_bf16_to_double(bits) : fv_f16_to_double(bits);
        if (!isfinite(base))
            base = bf16 ? bf16_largest : f16_largest;
        double half_ulp = fv_dtype_ulp(base, bf16 ? FV_BF16 : FV_F16) / 2;
        double value = base + half_ulp;
        int nudge = (int)((r >> 8) % 5) - 2; /* -2 .. 2 double ulps */
        for (; nudge > 0; nudge--)
            value = nextafter(value, INFINITY);
        for (; nudge < 0; nudge++)
            value = nextafter(value, 0);
        return (r >> 16) & 1 ? -value : value;
    }
    }
}

/* --------------------------------------------------------------- bf16 */

START_TEST(test_bf16_exact_and_special)
{
    ASSERT_BF16(1.0, 0x3F80);
    ASSERT_BF16(-1.0, 0xBF80);
    ASSERT_BF16(-2.0, 0xC000);
    ASSERT_BF16(0.1, 0x3DCD);
    ASSERT_BF16(0.0, 0x0000);
    ASSERT_BF16(-0.0, 0x8000);
    ASSERT_BF16(INFINITY, 0x7F80);
    ASSERT_BF16(-INFINITY, 0xFF80);
    ASSERT_BF16(NAN, 0x7FC0);
    ASSERT_BF16(-NAN, 0xFFC0);
    ASSERT_BF16(from_bits(UINT64_C(0x7FF0000000000001)), 0x7FC0); /* signalling NaN: quiet */
    ASSERT_BF16(DBL_TRUE_MIN, 0x0000);
    ASSERT_BF16(-DBL_TRUE_MIN, 0x8000);
    ck_assert(fv_bf16_to_double(0x3F80) == 1.0);
    ck_assert(fv_bf16_to_double(0x7F7F) == bf16_largest);
    ck_assert(isinf(fv_bf16_to_double(0xFF80)) && fv_bf16_to_double(0xFF80) < 0);
    ck_assert(isnan(fv_bf16_to_double(0x7FC0)) && !signbit(fv_bf16_to_double(0x7FC0)));
    ck_assert(isnan(fv_bf16_to_double(0xFFC1)) && signbit(fv_bf16_to_double(0xFFC1)));
    ck_assert(signbit(fv_bf16_to_double(0x8000)) && fv_bf16_to_double(0x8000) == 0);
}
END_TEST

START_TEST(test_bf16_ties)
{
    /* Between 1 (0x3F80, even) and 1+2^-7 (0x3F81, odd). */
    ASSERT_BF16(1.0 + 0x1p-8, 0x3F80);
    ASSERT_BF16(nextafter(1.0 + 0x1p-8, 2.0), 0x3F81);
    ASSERT_BF16(nextafter(1.0 + 0x1p-8, 0.0), 0x3F80);
    /* Between 1+2^-7 (odd) and 1+2^-6 (0x3F82, even): up. */
    ASSERT_BF16(1.0 + 3 * 0x1p-8, 0x3F82);
    ASSERT_BF16(nextafter(1.0 + 3 * 0x1p-8, 0.0), 0x3F81);
    ASSERT_BF16(-(1.0 + 3 * 0x1p-8), 0xBF82);
    ASSERT_BF16(-(1.0 + 0x1p-8), 0xBF80);
    /* Double rounding through float would make this a tie (to 0x3F80). */
    ASSERT_BF16(1.0 + 0x1p-8 + 0x1p-40, 0x3F81);
    ASSERT_BF16(1.0 + 3 * 0x1p-8 - 0x1p-40, 0x3F81);
    /* Carry into the next binade: 2 - 2^-8 is a tie between 0x3FFF and 2. */
    ASSERT_BF16(2.0 - 0x1p-8, 0x4000);
    ASSERT_BF16(2.0 - 0x1p-8 - 0x1p-30, 0x3FFF);
}
END_TEST

START_TEST(test_bf16_overflow)
{
    ASSERT_BF16(bf16_largest, 0x7F7F);
    ASSERT_BF16(-bf16_largest, 0xFF7F);
    double threshold = 0x1.ffp127; /* (2 - 2^-8) * 2^127: tie, to even = infinity */
    ASSERT_BF16(threshold, 0x7F80);
    ASSERT_BF16(-threshold, 0xFF80);
    ASSERT_BF16(nextafter(threshold, 0.0), 0x7F7F);
    ASSERT_BF16(nextafter(-threshold, 0.0), 0xFF7F);
    ASSERT_BF16(0x1p128, 0x7F80);
    ASSERT_BF16(DBL_MAX, 0x7F80);
    ASSERT_BF16(-DBL_MAX, 0xFF80);
    ASSERT_BF16((double)FLT_MAX, 0x7F80); /* above the threshold */
}
END_TEST

START_TEST(test_bf16_subnormals)
{
    ASSERT_BF16(0x1p-133, 0x0001); /* smallest subnormal */
    ASSERT_BF16(-0x1p-133, 0x8001);
    ASSERT_BF16(0x1p-134, 0x0000); /* tie between 0 and 1: to 0 */
    ASSERT_BF16(-0x1p-134, 0x8000);
    ASSERT_BF16(nextafter(0x1p-134, 1.0), 0x0001);
    ASSERT_BF16(3 * 0x1p-134, 0x0002); /* tie between 1 and 2: to 2 */
    ASSERT_BF16(5 * 0x1p-134, 0x0002); /* tie between 2 and 3: to 2 */
    ASSERT_BF16(127 * 0x1p-133, 0x007F); /* largest subnormal */
    ASSERT_BF16(0x1p-126, 0x0080);       /* smallest normal */
    ASSERT_BF16(127.5 * 0x1p-133, 0x0080); /* tie across the boundary: to even */
    ASSERT_BF16(nextafter(127.5 * 0x1p-133, 0.0), 0x007F);
    ASSERT_BF16(126.5 * 0x1p-133, 0x007E);
}
END_TEST

START_TEST(test_bf16_rounding_into_subnormals)
{
    /* 1.1875 * 2^-130 = 19 * 2^-134 = 9.5 * 2^-133: tie between 9 and 10 -> 10. */
    ASSERT_BF16(1.1875 * 0x1p-130, 0x000A);
    /* 1.3 * 2^-130 = 10.4 * 2^-133 -> 10. */
    ASSERT_BF16(1.3 * 0x1p-130, 0x000A);
    /* 1.33 * 2^-130 = 10.64 * 2^-133 -> 11. */
    ASSERT_BF16(1.33 * 0x1p-130, 0x000B);
    ck_assert(fv_bf16_to_double(0x0001) == 0x1p-133);
    ck_assert(fv_bf16_to_double(0x007F) == 127 * 0x1p-133);
    ck_assert(fv_bf16_to_double(0x8005) == -5 * 0x1p-133);
}
END_TEST

START_TEST(test_bf16_all_patterns)
{
    for (uint32_t bits = 0; bits <= 0xFFFF; bits++) {
        /* Decoding agrees with widening the float whose top half these are. */
        uint32_t float_bits = bits << 16;
        float widened;
        memcpy(&widened, &float_bits, sizeof widened);
        double decoded = fv_bf16_to_double((uint16_t)bits);
        ck_assert_msg(same_value(decoded, (double)widened), "decode 0x%04x", bits);
        uint16_t again = fv_bf16_from_double(decoded);
        if (isnan(decoded))
            ck_assert_msg(isnan(fv_bf16_to_double(again)) &&
                              (again & 0x8000) == (bits & 0x8000) && (again & 0x0040) != 0,
                          "NaN 0x%04x -> 0x%04x", bits, again);
        else
            ck_assert_msg(again == bits, "round trip 0x%04x -> 0x%04x", bits, again);
    }
}
END_TEST

START_TEST(test_bf16_random_against_reference)
{
    splitmix_state = 12345;
    for (int i = 0; i < 1000000; i++) {
        double x = random_test_double(-140, 130, true);
        double got = fv_bf16_to_double(fv_bf16_from_double(x));
        double expected = reference_bf16(x);
        ck_assert_msg(same_value(got, expected), "bf16(%a): got %a, reference %a", x, got,
                      expected);
    }
}
END_TEST

/* --------------------------------------------------------------- fp16 */

START_TEST(test_f16_exact_and_special)
{
    ASSERT_F16(1.0, 0x3C00);
    ASSERT_F16(-1.0, 0xBC00);
    ASSERT_F16(0.1, 0x2E66);
    ASSERT_F16(0.5, 0x3800);
    ASSERT_F16(0.0, 0x0000);
    ASSERT_F16(-0.0, 0x8000);
    ASSERT_F16(INFINITY, 0x7C00);
    ASSERT_F16(-INFINITY, 0xFC00);
    ASSERT_F16(NAN, 0x7E00);
    ASSERT_F16(-NAN, 0xFE00);
    ASSERT_F16(DBL_TRUE_MIN, 0x0000);
    ASSERT_F16(-0x1p-26, 0x8000); /* tiny negatives round to -0 */
    ck_assert(fv_f16_to_double(0x3C00) == 1.0);
    ck_assert(fv_f16_to_double(0x7BFF) == 65504.0);
    ck_assert(fv_f16_to_double(0xC000) == -2.0);
    ck_assert(isinf(fv_f16_to_double(0x7C00)));
    ck_assert(isnan(fv_f16_to_double(0x7C01)));
    ck_assert(isnan(fv_f16_to_double(0xFE00)) && signbit(fv_f16_to_double(0xFE00)));
}
END_TEST

START_TEST(test_f16_ties)
{
    ASSERT_F16(1.0 + 0x1p-11, 0x3C00);     /* tie, down to even */
    ASSERT_F16(1.0 + 3 * 0x1p-11, 0x3C02); /* tie, up to even */
    ASSERT_F16(nextafter(1.0 + 0x1p-11, 2.0), 0x3C01);
    ASSERT_F16(nextafter(1.0 + 3 * 0x1p-11, 0.0), 0x3C01);
    ASSERT_F16(2049.0, 0x6800); /* between 2048 and 2050: to 2048 */
    ASSERT_F16(2051.0, 0x6802); /* between 2050 and 2052: to 2052 */
    ASSERT_F16(-2051.0, 0xE802);
    ASSERT_F16(2049.0 + 0x1p-30, 0x6801);
    ASSERT_F16(1.0 + 0x1p-11 + 0x1p-40, 0x3C01); /* double rounding via float would tie */
    ASSERT_F16(2.0 - 0x1p-12, 0x4000);           /* carry into the next binade */
}
END_TEST

START_TEST(test_f16_overflow)
{
    ASSERT_F16(65504.0, 0x7BFF);
    ASSERT_F16(65519.0, 0x7BFF);
    ASSERT_F16(nextafter(65520.0, 0.0), 0x7BFF);
    ASSERT_F16(65520.0, 0x7C00); /* threshold: tie, to even = infinity */
    ASSERT_F16(-65520.0, 0xFC00);
    ASSERT_F16(nextafter(-65520.0, 0.0), 0xFBFF);
    ASSERT_F16(65536.0, 0x7C00);
    ASSERT_F16(1e300, 0x7C00);
    ASSERT_F16(-DBL_MAX, 0xFC00);
}
END_TEST

START_TEST(test_f16_subnormals)
{
    ASSERT_F16(0x1p-24, 0x0001);
    ASSERT_F16(-0x1p-24, 0x8001);
    ASSERT_F16(0x1p-25, 0x0000); /* tie between 0 and 1: to 0 */
    ASSERT_F16(-0x1p-25, 0x8000);
    ASSERT_F16(nextafter(0x1p-25, 1.0), 0x0001);
    ASSERT_F16(nextafter(0x1p-25, 0.0), 0x0000);
    ASSERT_F16(3 * 0x1p-25, 0x0002);
    ASSERT_F16(1023 * 0x1p-24, 0x03FF); /* largest subnormal */
    ASSERT_F16(0x1p-14, 0x0400);        /* smallest normal */
    ASSERT_F16(1023.5 * 0x1p-24, 0x0400); /* tie across the boundary: to even */
    ASSERT_F16(nextafter(1023.5 * 0x1p-24, 0.0), 0x03FF);
    ASSERT_F16(1022.5 * 0x1p-24, 0x03FE);
    ASSERT_F16(6e-8, 0x0001);   /* 1.0066 quanta */
    ASSERT_F16(1e-5, 0x00A8);   /* 167.77 quanta -> 168 */
    ASSERT_F16(-5e-5, 0x8347);  /* 838.86 quanta -> 839 */
    ck_assert(fv_f16_to_double(0x0001) == 0x1p-24);
    ck_assert(fv_f16_to_double(0x03FF) == 1023 * 0x1p-24);
    ck_assert(fv_f16_to_double(0x0400) == 0x1p-14);
}
END_TEST

/* The value of an fp16 pattern from its fields, written out with ldexp. */
static double f16_by_fields(uint32_t bits)
{
    int exponent = (int)((bits >> 10) & 0x1F);
    double fraction = (double)(bits & 0x3FF);
    double sign = (bits & 0x8000) ? -1.0 : 1.0;
    if (exponent == 31)
        return fraction == 0 ? sign * INFINITY : copysign(NAN, sign);
    if (exponent == 0)
        return sign * ldexp(fraction, -24);
    return sign * ldexp(1024 + fraction, exponent - 25);
}

START_TEST(test_f16_all_patterns)
{
    for (uint32_t bits = 0; bits <= 0xFFFF; bits++) {
        double decoded = fv_f16_to_double((uint16_t)bits);
        ck_assert_msg(same_value(decoded, f16_by_fields(bits)), "decode 0x%04x", bits);
        uint16_t again = fv_f16_from_double(decoded);
        if (isnan(decoded))
            ck_assert_msg(isnan(fv_f16_to_double(again)) &&
                              (again & 0x8000) == (bits & 0x8000) && (again & 0x0200) != 0,
                          "NaN 0x%04x -> 0x%04x", bits, again);
        else
            ck_assert_msg(again == bits, "round trip 0x%04x -> 0x%04x", bits, again);
    }
}
END_TEST

START_TEST(test_f16_random_against_reference)
{
    splitmix_state = 777;
    for (int i = 0; i < 2000000; i++) {
        double x = random_test_double(-30, 18, false);
        uint16_t bits = fv_f16_from_double(x);
        double got = fv_f16_to_double(bits);
        double expected = reference_f16(x);
        ck_assert_msg(same_value(got, expected), "f16(%a): got %a (0x%04x), reference %a", x,
                      got, bits, expected);
#ifdef __FLT16_MANT_DIG__
        /* The compiler's own double -> _Float16 conversion, a third opinion. */
        volatile double source = x;
        _Float16 converted = (_Float16)source;
        uint16_t compiler_bits;
        memcpy(&compiler_bits, &converted, sizeof compiler_bits);
        if (isnan(x))
            ck_assert((compiler_bits & 0x7C00) == 0x7C00 && (compiler_bits & 0x3FF) != 0);
        else
            ck_assert_msg(bits == compiler_bits, "f16(%a): 0x%04x, compiler 0x%04x", x, bits,
                          compiler_bits);
#endif
    }
}
END_TEST

/* -------------------------------------------------- other dtypes */

START_TEST(test_round_to_dtype)
{
    ck_assert(fv_round_to_dtype(0.1, FV_F64) == 0.1);
    ck_assert(fv_round_to_dtype(0.1, FV_DTYPE_NONE) == 0.1);
    ck_assert(fv_round_to_dtype(1.0 + 0x1p-24, FV_F32) == 1.0);
    ck_assert(fv_round_to_dtype(1.0 + 3 * 0x1p-24, FV_F32) == 1.0 + 0x1p-22);
    ck_assert(fv_round_to_dtype(0.1, FV_F32) == (double)0.1f);
    ck_assert(isinf(fv_round_to_dtype(1e39, FV_F32)));
    ck_assert(fv_round_to_dtype(0.1, FV_F16) == 0x1.998p-4);
    ck_assert(fv_round_to_dtype(0.1, FV_BF16) == 0x1.9ap-4);
    ck_assert(signbit(fv_round_to_dtype(-0.0, FV_BF16)));

    ck_assert(fv_round_to_dtype(2.7, FV_I32) == 2.0);
    ck_assert(fv_round_to_dtype(-2.7, FV_I32) == -2.0);
    ck_assert(fv_round_to_dtype(3e9, FV_I32) == 2147483647.0);
    ck_assert(fv_round_to_dtype(-3e9, FV_I32) == -2147483648.0);
    ck_assert(fv_round_to_dtype(INFINITY, FV_I32) == 2147483647.0);
    ck_assert(fv_round_to_dtype(NAN, FV_I32) == 0.0);
    ck_assert(fv_round_to_dtype(-0.5, FV_I64) == 0.0);
    ck_assert(fv_round_to_dtype(1e15 + 0.5, FV_I64) == 1e15);
    ck_assert(fv_round_to_dtype(1e19, FV_I64) == 0x1p63); /* INT64_MAX, as a double */
    ck_assert(fv_round_to_dtype(-1e19, FV_I64) == -0x1p63);
    ck_assert(fv_round_to_dtype(NAN, FV_I64) == 0.0);

    ck_assert(fv_round_to_dtype(0.0, FV_BOOL) == 0.0);
    ck_assert(fv_round_to_dtype(-0.0, FV_BOOL) == 0.0);
    ck_assert(fv_round_to_dtype(0.25, FV_BOOL) == 1.0);
    ck_assert(fv_round_to_dtype(-7.0, FV_BOOL) == 1.0);
}
END_TEST

START_TEST(test_unit_roundoff_and_ulp)
{
    ck_assert(fv_dtype_unit_roundoff(FV_F64) == 0x1p-53);
    ck_assert(fv_dtype_unit_roundoff(FV_F32) == 0x1p-24);
    ck_assert(fv_dtype_unit_roundoff(FV_F16) == 0x1p-11);
    ck_assert(fv_dtype_unit_roundoff(FV_BF16) == 0x1p-8);
    ck_assert(fv_dtype_unit_roundoff(FV_I32) == 0);

    ck_assert(fv_dtype_ulp(1.0, FV_F64) == 0x1p-52);
    ck_assert(fv_dtype_ulp(1.0, FV_F32) == 0x1p-23);
    ck_assert(fv_dtype_ulp(1.0, FV_F16) == 0x1p-10);
    ck_assert(fv_dtype_ulp(-1.0, FV_BF16) == 0x1p-7);
    ck_assert(fv_dtype_ulp(-3.0, FV_BF16) == 0x1p-6);
    ck_assert(fv_dtype_ulp(0.999, FV_F16) == 0x1p-11);  /* both neighbours below 1 */
    ck_assert(fv_dtype_ulp(0.9999, FV_F16) == 0x1p-10); /* larger neighbour is 1 */
    ck_assert(fv_dtype_ulp(65504.0, FV_F16) == 32.0);
    ck_assert(fv_dtype_ulp(1e6, FV_F16) == 32.0);
    ck_assert(fv_dtype_ulp(INFINITY, FV_F16) == 32.0);
    ck_assert(fv_dtype_ulp(0.0, FV_F16) == 0x1p-24);
    ck_assert(fv_dtype_ulp(1e-6, FV_F16) == 0x1p-24);
    ck_assert(fv_dtype_ulp(0x1p-14, FV_F16) == 0x1p-24);
    ck_assert(fv_dtype_ulp(0x1p-127, FV_BF16) == 0x1p-133);
    ck_assert(fv_dtype_ulp(DBL_TRUE_MIN, FV_F64) == DBL_TRUE_MIN);
    ck_assert(isnan(fv_dtype_ulp(NAN, FV_F32)));
    ck_assert(fv_dtype_ulp(5.0, FV_I32) == 0);
    ck_assert(fv_dtype_ulp(5.0, FV_BOOL) == 0);
    /* Every fp16 number x > 0 but the largest: ulp(x) = next(x) - x. */
    for (uint16_t bits = 1; bits < 0x7BFF; bits++) {
        double x = fv_f16_to_double(bits), next = fv_f16_to_double((uint16_t)(bits + 1));
        ck_assert_msg(fv_dtype_ulp(x, FV_F16) == next - x, "ulp(%a)", x);
    }
}
END_TEST

START_TEST(test_store_and_load)
{
    const double source[] = {0.0, -0.0, 1.0, -2.5, 0.1, 1.0 + 0x1p-8 + 0x1p-40, 65520.0,
                             1e19, -3e9, NAN, 7.9, -1e-30};
    const int64_t count = (int64_t)(sizeof source / sizeof source[0]);
    const fv_dtype dtypes[] = {FV_F64, FV_F32, FV_F16, FV_BF16, FV_I64, FV_I32, FV_BOOL};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        fv_dtype dtype = dtypes[d];
        unsigned char raw[sizeof source / sizeof source[0] * 8 + 1];
        memset(raw, 0xAB, sizeof raw);
        double loaded[sizeof source / sizeof source[0]];
        fv_store_elements(dtype, source, raw, count);
        ck_assert_msg(raw[(size_t)count * fv_dtype_size(dtype)] == 0xAB, "overrun %s",
                      fv_dtype_name(dtype));
        fv_load_elements(dtype, raw, loaded, count);
        for (int64_t i = 0; i < count; i++) {
            double expected = fv_round_to_dtype(source[i], dtype);
            ck_assert_msg(same_value(loaded[i], expected), "%s element %lld: %a, expected %a",
                          fv_dtype_name(dtype), (long long)i, loaded[i], expected);
        }
    }
    /* Raw formats, byte for byte. */
    uint16_t halves[2];
    fv_store_elements(FV_BF16, (const double[]){1.0 + 0x1p-8 + 0x1p-40, -65520.0}, halves, 2);
    ck_assert(halves[0] == 0x3F81 && halves[1] == 0xC780);
    fv_store_elements(FV_F16, (const double[]){0.1, -65520.0}, halves, 2);
    ck_assert(halves[0] == 0x2E66 && halves[1] == 0xFC00);
    int64_t longs[3];
    fv_store_elements(FV_I64, (const double[]){1e19, -1e19, -7.9}, longs, 3);
    ck_assert(longs[0] == INT64_MAX && longs[1] == INT64_MIN && longs[2] == -7);
    int32_t ints[2];
    fv_store_elements(FV_I32, (const double[]){NAN, 2147483647.9}, ints, 2);
    ck_assert(ints[0] == 0 && ints[1] == INT32_MAX);
    uint8_t flags[3];
    fv_store_elements(FV_BOOL, (const double[]){0.0, 0.5, -3.0}, flags, 3);
    ck_assert(flags[0] == 0 && flags[1] == 1 && flags[2] == 1);
    const uint8_t odd_flags[2] = {0, 0x7F};
    double flag_values[2];
    fv_load_elements(FV_BOOL, odd_flags, flag_values, 2);
    ck_assert(flag_values[0] == 0.0 && flag_values[1] == 1.0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("round");
    TCase *bf16 = tcase_create("bf16");
    tcase_add_test(bf16, test_bf16_exact_and_special);
    tcase_add_test(bf16, test_bf16_ties);
    tcase_add_test(bf16, test_bf16_overflow);
    tcase_add_test(bf16, test_bf16_subnormals);
    tcase_add_test(bf16, test_bf16_rounding_into_subnormals);
    tcase_add_test(bf16, test_bf16_all_patterns);
    tcase_add_test(bf16, test_bf16_random_against_reference);
    tcase_set_timeout(bf16, 60);
    suite_add_tcase(suite, bf16);

    TCase *f16 = tcase_create("f16");
    tcase_add_test(f16, test_f16_exact_and_special);
    tcase_add_test(f16, test_f16_ties);
    tcase_add_test(f16, test_f16_overflow);
    tcase_add_test(f16, test_f16_subnormals);
    tcase_add_test(f16, test_f16_all_patterns);
    tcase_add_test(f16, test_f16_random_against_reference);
    tcase_set_timeout(f16, 60);
    suite_add_tcase(suite, f16);

    TCase *others = tcase_create("other dtypes");
    tcase_add_test(others, test_round_to_dtype);
    tcase_add_test(others, test_unit_roundoff_and_ulp);
    tcase_add_test(others, test_store_and_load);
    suite_add_tcase(suite, others);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
