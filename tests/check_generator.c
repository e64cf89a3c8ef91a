/* check_generator.c: tests of the input generator: the documented formula
 * (recomputed here independently), determinism, thread-count independence,
 * distinct streams, fill vs fill_indices, statistics, dtype rounding and
 * rejection of bad arguments. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/round.h"
#include "test_support.h"
#include "validate/generator.h"
#include "validate/philox.h"

static const fv_distribution standard_normal = {FV_DIST_NORMAL, 0.0, 1.0};
static const fv_distribution unit_uniform = {FV_DIST_UNIFORM, 0.5, 1.5};

/* The documented definition, written out again (docs/input-generator.md). */
static double documented_element(uint64_t seed, int position, fv_distribution distribution,
                                  fv_dtype dtype, uint64_t index)
{
    const uint32_t key[2] = {(uint32_t)(seed & 0xFFFFFFFFu), (uint32_t)position};
    const uint32_t counter[4] = {(uint32_t)(index & 0xFFFFFFFFu), (uint32_t)(index >> 32), 0,
                                 (uint32_t)(seed >> 32)};
    uint32_t out[4];
    fv_philox4x32_10(counter, key, out);
    const double two_to_26 = 67108864.0, two_to_53 = 9007199254740992.0;
    double u_a = ((double)(out[0] >> 5) * two_to_26 + (double)(out[1] >> 6)) / two_to_53;
    double u_b = ((double)(out[2] >> 5) * two_to_26 + (double)(out[3] >> 6)) / two_to_53;
    double pi = acos(-1.0);
    double value;
    if (distribution.kind == FV_DIST_NORMAL) {
        double z = sqrt(-2.0 * log(1.0 - u_a)) * cos(2.0 * pi * u_b);
        value = distribution.a + distribution.b * z;
    } else if (distribution.kind == FV_DIST_UNIFORM) {
        value = distribution.a + (distribution.b - distribution.a) * u_a;
    } else {
        value = distribution.a;
    }
    return fv_round_to_dtype(value, dtype);
}

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static double *allocate_doubles(int64_t count)
{
    double *values = malloc((size_t)count * sizeof(double));
    ck_assert_ptr_nonnull(values);
    return values;
}

START_TEST(test_pi_is_the_nearest_double)
{
    ck_assert(acos(-1.0) == 0x1.921fb54442d18p+1);
}
END_TEST

START_TEST(test_matches_documented_formula)
{
    const uint64_t seeds[] = {0, 1, 42, UINT64_C(0x123456789ABCDEF0), UINT64_MAX};
    const int64_t indices[] = {0, 1, 2, 1000, INT64_C(0xFFFFFFFF), INT64_C(0x100000000),
                               INT64_C(123456789012345)};
    const fv_distribution distributions[] = {standard_normal, unit_uniform,
                                             {FV_DIST_NORMAL, -3.0, 0.25},
                                             {FV_DIST_CONSTANT, 2.5, 0.0}};
    const fv_dtype dtypes[] = {FV_F64, FV_F32, FV_BF16, FV_F16, FV_I32};
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
        for (size_t i = 0; i < sizeof indices / sizeof indices[0]; i++)
            for (size_t d = 0; d < sizeof distributions / sizeof distributions[0]; d++)
                for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
                    int position = (int)(s + i) % 5;
                    double got;
                    FV_ASSERT_OK(fv_gen_fill(seeds[s], position, &distributions[d], dtypes[t],
                                             indices[i], 1, &got));
                    double expected = documented_element(seeds[s], position, distributions[d],
                                                         dtypes[t], (uint64_t)indices[i]);
                    ck_assert_msg(same_bits(got, expected),
                                  "seed %llu index %lld dist %zu dtype %s: %a vs %a",
                                  (unsigned long long)seeds[s], (long long)indices[i], d,
                                  fv_dtype_name(dtypes[t]), got, expected);
                }
}
END_TEST

/* The worked examples of docs/input-generator.md.  For seed 0, input 0,
 * element 0, Philox(counter 0, key 0) is Random123's first known answer. */
START_TEST(test_worked_example)
{
    double value;
    FV_ASSERT_OK(fv_gen_fill(0, 0, &standard_normal, FV_F64, 0, 1, &value));
    ck_assert_msg(value == -0.090473048703204731, "normal element 0 = %.17g", value);
    FV_ASSERT_OK(fv_gen_fill(0, 0, &unit_uniform, FV_F64, 0, 1, &value));
    ck_assert_msg(value == 0.89904647231489565, "uniform element 0 = %.17g", value);
    FV_ASSERT_OK(fv_gen_fill(0, 0, &standard_normal, FV_BF16, 0, 1, &value));
    ck_assert_msg(value == -0.09033203125, "bf16 normal element 0 = %.17g", value);
    /* The second example: high words of seed and index in use. */
    const uint64_t seed = UINT64_C(0x10000002A);
    const int64_t index = INT64_C(0x100000007);
    FV_ASSERT_OK(fv_gen_fill(seed, 3, &standard_normal, FV_F64, index, 1, &value));
    ck_assert_msg(value == -2.2711517804481391, "normal = %.17g", value);
    FV_ASSERT_OK(fv_gen_fill(seed, 3, &standard_normal, FV_F16, index, 1, &value));
    ck_assert_msg(value == -2.271484375, "fp16 normal = %.17g", value);
    FV_ASSERT_OK(fv_gen_fill(seed, 3, &unit_uniform, FV_F64, index, 1, &value));
    ck_assert_msg(value == 1.426734830818428, "uniform = %.17g", value);
}
END_TEST

START_TEST(test_deterministic)
{
    enum { COUNT = 5000 };
    double *first = allocate_doubles(COUNT), *second = allocate_doubles(COUNT);
    FV_ASSERT_OK(fv_gen_fill(9, 3, &standard_normal, FV_F32, 100, COUNT, first));
    FV_ASSERT_OK(fv_gen_fill(9, 3, &standard_normal, FV_F32, 100, COUNT, second));
    ck_assert(memcmp(first, second, COUNT * sizeof(double)) == 0);
    /* A sub-range regenerates the same elements. */
    FV_ASSERT_OK(fv_gen_fill(9, 3, &standard_normal, FV_F32, 1100, 17, second));
    ck_assert(memcmp(first + 1000, second, 17 * sizeof(double)) == 0);
    free(first);
    free(second);
}
END_TEST

/* Number of positions where two streams of `count` values agree. */
static int64_t agreements(const double *a, const double *b, int64_t count)
{
    int64_t same = 0;
    for (int64_t k = 0; k < count; k++)
        same += same_bits(a[k], b[k]);
    return same;
}

START_TEST(test_streams_differ)
{
    enum { COUNT = 4096 };
    double *base = allocate_doubles(COUNT), *other = allocate_doubles(COUNT);
    FV_ASSERT_OK(fv_gen_fill(5, 0, &standard_normal, FV_F64, 0, COUNT, base));
    /* Within one stream, values are (practically) all distinct from their neighbours. */
    ck_assert_int_eq(agreements(base, base + 1, COUNT - 1), 0);
    const struct {
        uint64_t seed;
        int position;
        int64_t first_index;
    } variants[] = {
        {6, 0, 0},                                  /* other seed */
        {5 + (UINT64_C(1) << 32), 0, 0},           /* other high seed word only */
        {5, 1, 0},                                  /* other input position */
        {5, 0, COUNT},                              /* other elements */
        {5, 0, INT64_C(1) << 32},                   /* other high index word only */
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        FV_ASSERT_OK(fv_gen_fill(variants[v].seed, variants[v].position, &standard_normal,
                                 FV_F64, variants[v].first_index, COUNT, other));
        ck_assert_msg(agreements(base, other, COUNT) == 0, "variant %zu repeats the stream", v);
    }
    free(base);
    free(other);
}
END_TEST

START_TEST(test_fill_indices_matches_fill)
{
    enum { COUNT = 3000 };
    int64_t *indices = malloc(COUNT * sizeof(int64_t));
    ck_assert_ptr_nonnull(indices);
    double *scattered = allocate_doubles(COUNT);
    uint64_t state = 99;
    for (int k = 0; k < COUNT; k++) {
        state = state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        indices[k] = (int64_t)(state >> (k % 2 ? 30 : 45)); /* small and huge indices */
    }
    indices[0] = 0;
    indices[1] = INT64_MAX;
    const fv_dtype dtypes[] = {FV_BF16, FV_F64};
    for (size_t t = 0; t < 2; t++) {
        FV_ASSERT_OK(fv_gen_fill_indices(77, 2, &unit_uniform, dtypes[t], indices, COUNT,
                                         scattered));
        for (int k = 0; k < COUNT; k++) {
            double single;
            FV_ASSERT_OK(fv_gen_fill(77, 2, &unit_uniform, dtypes[t], indices[k], 1, &single));
            ck_assert_msg(same_bits(single, scattered[k]), "index %lld", (long long)indices[k]);
        }
    }
    /* A contiguous index list gives exactly fv_gen_fill's block. */
    double *block = allocate_doubles(COUNT);
    for (int k = 0; k < COUNT; k++)
        indices[k] = 500 + k;
    FV_ASSERT_OK(fv_gen_fill_indices(77, 2, &standard_normal, FV_F16, indices, COUNT, scattered));
    FV_ASSERT_OK(fv_gen_fill(77, 2, &standard_normal, FV_F16, 500, COUNT, block));
    ck_assert(memcmp(block, scattered, COUNT * sizeof(double)) == 0);
    free(block);
    free(indices);
    free(scattered);
}
END_TEST

START_TEST(test_raw_independent_of_threads)
{
    const int64_t count = 250007; /* prime: no thread count divides it */
    const int64_t first_index = (INT64_C(1) << 32) - 100000; /* crosses the high index word */
    const fv_dtype dtypes[] = {FV_BF16, FV_F32, FV_F64, FV_I32, FV_BOOL};
    const int thread_counts[] = {1, 2, 3, 7, 0, -4};
    double *values = allocate_doubles(count);
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        fv_dtype dtype = dtypes[t];
        size_t bytes = (size_t)count * fv_dtype_size(dtype);
        unsigned char *expected = malloc(bytes), *raw = malloc(bytes + 1);
        ck_assert(expected != NULL && raw != NULL);
        const fv_distribution *distribution = dtype == FV_BOOL ? &unit_uniform : &standard_normal;
        FV_ASSERT_OK(fv_gen_fill(3, 1, distribution, dtype, first_index, count, values));
        fv_store_elements(dtype, values, expected, count);
        for (size_t n = 0; n < sizeof thread_counts / sizeof thread_counts[0]; n++) {
            memset(raw, 0xEE, bytes + 1);
            FV_ASSERT_OK(fv_gen_fill_raw(3, 1, distribution, dtype, first_index, count, raw,
                                         thread_counts[n]));
            ck_assert_msg(memcmp(raw, expected, bytes) == 0, "%s with %d threads",
                          fv_dtype_name(dtype), thread_counts[n]);
            ck_assert_msg(raw[bytes] == 0xEE, "%s with %d threads wrote past the end",
                          fv_dtype_name(dtype), thread_counts[n]);
        }
        free(expected);
        free(raw);
    }
    free(values);
    /* Small counts, more threads than elements, and zero elements. */
    for (int64_t small = 0; small < 40; small++) {
        uint16_t raw[40], expected[40];
        double small_values[40];
        FV_ASSERT_OK(fv_gen_fill(8, 0, &standard_normal, FV_F16, 11, small, small_values));
        fv_store_elements(FV_F16, small_values, expected, small);
        FV_ASSERT_OK(fv_gen_fill_raw(8, 0, &standard_normal, FV_F16, 11, small, raw, 7));
        ck_assert(memcmp(raw, expected, (size_t)small * sizeof(uint16_t)) == 0);
    }
}
END_TEST

START_TEST(test_normal_statistics)
{
    enum { COUNT = 1000000 };
    double *values = allocate_doubles(COUNT);
    FV_ASSERT_OK(fv_gen_fill(2024, 0, &standard_normal, FV_F64, 0, COUNT, values));
    double sum = 0, sum_squares = 0;
    int64_t beyond_two = 0;
    for (int k = 0; k < COUNT; k++) {
        sum += values[k];
        beyond_two += fabs(values[k]) > 2.0;
    }
    double mean = sum / COUNT;
    for (int k = 0; k < COUNT; k++)
        sum_squares += (values[k] - mean) * (values[k] - mean);
    double deviation = sqrt(sum_squares / (COUNT - 1));
    ck_assert_msg(fabs(mean) < 0.01, "mean %g", mean);
    ck_assert_msg(fabs(deviation - 1.0) < 0.01, "std %g", deviation);
    /* P(|z| > 2) = 0.0455: the tails are there too. */
    ck_assert_msg(beyond_two > 0.043 * COUNT && beyond_two < 0.048 * COUNT, "tail %lld",
                  (long long)beyond_two);
    /* normal(mean, std) is mean + std * z of the same stream. */
    const fv_distribution shifted = {FV_DIST_NORMAL, 3.0, 2.0};
    double scaled[1000];
    FV_ASSERT_OK(fv_gen_fill(2024, 0, &shifted, FV_F64, 0, 1000, scaled));
    for (int k = 0; k < 1000; k++)
        ck_assert(scaled[k] == 3.0 + 2.0 * values[k]);
    free(values);
}
END_TEST

START_TEST(test_uniform_statistics)
{
    enum { COUNT = 1000000 };
    double *values = allocate_doubles(COUNT);
    FV_ASSERT_OK(fv_gen_fill(11, 4, &unit_uniform, FV_F64, 0, COUNT, values));
    double sum = 0, low = INFINITY, high = -INFINITY;
    for (int k = 0; k < COUNT; k++) {
        ck_assert_msg(values[k] >= 0.5 && values[k] < 1.5, "value %a out of range", values[k]);
        sum += values[k];
        low = fmin(low, values[k]);
        high = fmax(high, values[k]);
    }
    double mean = sum / COUNT;
    ck_assert_msg(fabs(mean - 1.0) < 0.01, "mean %g", mean);
    ck_assert_msg(low < 0.5001 && high > 1.4999, "range [%g, %g]", low, high);
    free(values);
}
END_TEST

START_TEST(test_dtype_rounding)
{
    enum { COUNT = 100000 };
    double *values = allocate_doubles(COUNT);
    FV_ASSERT_OK(fv_gen_fill(1, 0, &standard_normal, FV_BF16, 0, COUNT, values));
    for (int k = 0; k < COUNT; k++)
        ck_assert_msg(fv_bf16_to_double(fv_bf16_from_double(values[k])) == values[k],
                      "bf16 element %d = %a is not a bf16 number", k, values[k]);
    FV_ASSERT_OK(fv_gen_fill(1, 0, &standard_normal, FV_F16, 0, COUNT, values));
    for (int k = 0; k < COUNT; k++)
        ck_assert(fv_f16_to_double(fv_f16_from_double(values[k])) == values[k]);
    FV_ASSERT_OK(fv_gen_fill(1, 0, &standard_normal, FV_F32, 0, COUNT, values));
    for (int k = 0; k < COUNT; k++)
        ck_assert(values[k] == (double)(float)values[k]);
    const fv_distribution wide = {FV_DIST_UNIFORM, -100.0, 100.0};
    FV_ASSERT_OK(fv_gen_fill(1, 0, &wide, FV_I32, 0, COUNT, values));
    for (int k = 0; k < COUNT; k++)
        ck_assert(values[k] == trunc(values[k]) && fabs(values[k]) < 100);
    FV_ASSERT_OK(fv_gen_fill(1, 0, &standard_normal, FV_BOOL, 0, COUNT, values));
    for (int k = 0; k < COUNT; k++)
        ck_assert(values[k] == 0.0 || values[k] == 1.0);
    const fv_distribution tenth = {FV_DIST_CONSTANT, 0.1, 0.0};
    FV_ASSERT_OK(fv_gen_fill(1, 0, &tenth, FV_BF16, 0, 10, values));
    for (int k = 0; k < 10; k++)
        ck_assert(values[k] == fv_round_to_dtype(0.1, FV_BF16));
    free(values);
}
END_TEST

START_TEST(test_bad_arguments_rejected)
{
    const fv_distribution bad[] = {
        {FV_DIST_NORMAL, 0.0, -1.0},     {FV_DIST_NORMAL, NAN, 1.0},
        {FV_DIST_NORMAL, 0.0, INFINITY}, {FV_DIST_UNIFORM, 2.0, 1.0},
        {FV_DIST_UNIFORM, 0.0, NAN},     {FV_DIST_UNIFORM, -1e308, 1e308},
        {FV_DIST_CONSTANT, INFINITY, 0}, {(fv_distribution_kind)99, 0.0, 1.0},
    };
    double values[4] = {7, 7, 7, 7};
    uint16_t raw[4] = {7, 7, 7, 7};
    const int64_t indices[4] = {0, 1, -1, 3};
    for (size_t d = 0; d < sizeof bad / sizeof bad[0]; d++) {
        ck_assert_int_eq(fv_gen_fill(0, 0, &bad[d], FV_F32, 0, 4, values), FV_ERR_INPUT);
        ck_assert_int_eq(fv_gen_fill_indices(0, 0, &bad[d], FV_F32, indices, 2, values),
                         FV_ERR_INPUT);
        ck_assert_int_eq(fv_gen_fill_raw(0, 0, &bad[d], FV_BF16, 0, 4, raw, 2), FV_ERR_INPUT);
    }
    ck_assert_int_eq(fv_gen_fill(0, 0, NULL, FV_F32, 0, 4, values), FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, 0, &standard_normal, FV_DTYPE_NONE, 0, 4, values),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, 0, &standard_normal, (fv_dtype)42, 0, 4, values),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, -1, &standard_normal, FV_F32, 0, 4, values), FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, 0, &standard_normal, FV_F32, -1, 4, values), FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, 0, &standard_normal, FV_F32, 0, -4, values), FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, 0, &standard_normal, FV_F32, INT64_MAX, 2, values),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill(0, 0, &standard_normal, FV_F32, 0, 4, NULL), FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill_indices(0, 0, &standard_normal, FV_F32, indices, 4, values),
                     FV_ERR_INPUT); /* indices[2] is negative */
    ck_assert_int_eq(fv_gen_fill_indices(0, 0, &standard_normal, FV_F32, NULL, 4, values),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill_raw(0, 0, &standard_normal, FV_F16, 0, 4, NULL, 1),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_gen_fill_raw(0, 0, &standard_normal, FV_DTYPE_NONE, 0, 4, raw, 1),
                     FV_ERR_INPUT);
    for (int k = 0; k < 4; k++)
        ck_assert(values[k] == 7 && raw[k] == 7); /* nothing written on failure */
    ck_assert_str_ne(fv_error_message(), "");
    /* Empty requests are fine. */
    FV_ASSERT_OK(fv_gen_fill(0, 0, &standard_normal, FV_F32, 0, 0, NULL));
    FV_ASSERT_OK(fv_gen_fill_indices(0, 0, &standard_normal, FV_F32, NULL, 0, NULL));
    FV_ASSERT_OK(fv_gen_fill_raw(0, 0, &standard_normal, FV_F32, INT64_MAX, 0, NULL, 4));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("generator");
    TCase *definition = tcase_create("definition");
    tcase_add_test(definition, test_pi_is_the_nearest_double);
    tcase_add_test(definition, test_matches_documented_formula);
    tcase_add_test(definition, test_worked_example);
    tcase_add_test(definition, test_deterministic);
    tcase_add_test(definition, test_streams_differ);
    tcase_add_test(definition, test_fill_indices_matches_fill);
    tcase_add_test(definition, test_dtype_rounding);
    tcase_add_test(definition, test_bad_arguments_rejected);
    suite_add_tcase(suite, definition);

    TCase *bulk = tcase_create("bulk");
    tcase_add_test(bulk, test_raw_independent_of_threads);
    tcase_add_test(bulk, test_normal_statistics);
    tcase_add_test(bulk, test_uniform_statistics);
    tcase_set_timeout(bulk, 120);
    suite_add_tcase(suite, bulk);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
