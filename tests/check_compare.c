/* check_compare.c: nvFuser's tolerance tables, element-wise comparison rules
 * (NaN, infinities, worst indices, ratios), merging and the report. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "validate/compare.h"

static fv_eval_output matrix_output(fv_dtype dtype, int64_t rows, int64_t columns,
                                    int64_t reduction_size)
{
    fv_eval_output output = {.value = 0, .rank = 2, .extents = {rows, columns},
                             .rows = rows, .row_elements = columns, .dtype = dtype,
                             .reduction_size = reduction_size};
    return output;
}

START_TEST(nvfuser_tables_follow_the_lookup_rule)
{
    double absolute, relative;
    /* Layer-norm dx at H = 4096: the entry after 4K is 8K's. */
    fv_tolerance_nvfuser(FV_F32, 4096, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 1.22e-4, 1e-12);
    ck_assert_double_eq_tol(relative, 1.22e-6, 1e-14);
    fv_tolerance_nvfuser(FV_BF16, 4096, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 2.495, 1e-12);
    fv_tolerance_nvfuser(FV_F16, 4096, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 0.2495, 1e-12);
    /* Between keys: 3000 -> first key >= is 4K -> 8K's value. */
    fv_tolerance_nvfuser(FV_F32, 3000, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 1.22e-4, 1e-12);
    /* r <= 1: first entry absolute, second relative. */
    fv_tolerance_nvfuser(FV_F32, 1, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 1.68e-6, 1e-15);
    ck_assert_double_eq_tol(relative, 2.24e-6, 1e-15);
    /* Past the end of the table: twice the last value. */
    fv_tolerance_nvfuser(FV_F32, 16 << 20, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 2 * 3.43e-3, 1e-12);
    /* The last key itself uses "the next entry": past the end too. */
    fv_tolerance_nvfuser(FV_F32, 2 << 20, &absolute, &relative);
    ck_assert_double_eq_tol(absolute, 2 * 3.43e-3, 1e-12);
}
END_TEST

START_TEST(bound_policy_counts_and_locates_mismatches)
{
    fv_eval_output output = matrix_output(FV_F32, 2, 5, 5);
    double expected[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    double actual[10] = {1, 2.05, 3, 4, 5, 6, 7, 7.5, 9, 10.001};
    double bounds[10] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
    fv_comparison comparison;
    fv_comparison_init(&comparison, FV_TOLERANCE_BOUND, &output);
    fv_comparison_add(&comparison, actual, expected, bounds, 0, 10);
    ck_assert_int_eq(comparison.total, 10);
    ck_assert_int_eq(comparison.mismatches, 1);
    ck_assert_int_eq(comparison.first_mismatch_index, 7);
    ck_assert_int_eq(comparison.worst_absolute_index, 7);
    ck_assert_double_eq_tol(comparison.worst_absolute, 0.5, 1e-12);
    ck_assert_double_eq_tol(comparison.worst_ratio, 5.0, 1e-9);
    ck_assert_int_eq(comparison.worst_relative_index, 7);
    ck_assert(!fv_comparison_passed(&comparison));
}
END_TEST

START_TEST(nan_and_infinity_rules)
{
    fv_eval_output output = matrix_output(FV_F32, 1, 6, 1);
    double expected[6] = {NAN, NAN, 1, INFINITY, INFINITY, 2};
    double actual[6] = {NAN, 0, NAN, INFINITY, -INFINITY, 2};
    double bounds[6] = {1, 1, 1, 1, 1, 0};
    fv_comparison comparison;
    fv_comparison_init(&comparison, FV_TOLERANCE_BOUND, &output);
    fv_comparison_add(&comparison, actual, expected, bounds, 0, 6);
    ck_assert_int_eq(comparison.mismatches, 3);    /* NaN vs 0, 1 vs NaN, inf vs -inf */
    ck_assert_int_eq(comparison.nan_mismatches, 2);
    ck_assert(isinf(comparison.worst_ratio));
    /* exact equality passes even with a zero bound */
    double equal_expected[1] = {2}, equal_actual[1] = {2}, zero[1] = {0};
    fv_comparison exact;
    fv_comparison_init(&exact, FV_TOLERANCE_BOUND, &output);
    fv_comparison_add(&exact, equal_actual, equal_expected, zero, 0, 1);
    ck_assert(fv_comparison_passed(&exact));
    /* a NaN bound (none could be made) passes an exact match only */
    double nan_bound_expected[2] = {3, 3}, nan_bound_actual[2] = {3, 3.5}, nan_bounds[2] = {NAN, NAN};
    fv_comparison unbounded;
    fv_comparison_init(&unbounded, FV_TOLERANCE_BOUND, &output);
    fv_comparison_add(&unbounded, nan_bound_actual, nan_bound_expected, nan_bounds, 0, 2);
    ck_assert_int_eq(unbounded.mismatches, 1);
    ck_assert_int_eq(unbounded.first_mismatch_index, 1);
    ck_assert(isinf(unbounded.worst_ratio));
}
END_TEST

START_TEST(nvfuser_policy_uses_atol_plus_rtol)
{
    fv_eval_output output = matrix_output(FV_F32, 1, 3, 4096); /* atol 1.22e-4, rtol 1.22e-6 */
    double expected[3] = {0, 1000, 1000};
    double actual[3] = {1.2e-4, 1000 + 1.3e-3, 1000 + 1.4e-3};
    fv_comparison comparison;
    fv_comparison_init(&comparison, FV_TOLERANCE_NVFUSER, &output);
    fv_comparison_add(&comparison, actual, expected, NULL, 0, 3);
    /* allowed at 1000: 1.22e-4 + 1.22e-3 = 1.342e-3 */
    ck_assert_int_eq(comparison.mismatches, 1);
    ck_assert_int_eq(comparison.first_mismatch_index, 2);
    ck_assert_ptr_nonnull(strstr(comparison.rule, "nvfuser-table"));
}
END_TEST

START_TEST(merging_parts_equals_one_pass)
{
    fv_eval_output output = matrix_output(FV_F32, 10, 10, 10);
    double expected[100], actual[100], bounds[100];
    for (int i = 0; i < 100; i++) {
        expected[i] = sin(i);
        actual[i] = expected[i] + 1e-3 * cos(3 * i);
        bounds[i] = 5e-4;
    }
    fv_comparison whole, total, part;
    fv_comparison_init(&whole, FV_TOLERANCE_BOUND, &output);
    fv_comparison_add(&whole, actual, expected, bounds, 0, 100);
    fv_comparison_init(&total, FV_TOLERANCE_BOUND, &output);
    for (int start = 60; start >= 0; start -= 30) { /* out of order, uneven */
        int count = start == 60 ? 40 : 30;
        fv_comparison_init(&part, FV_TOLERANCE_BOUND, &output);
        fv_comparison_add(&part, actual + start, expected + start, bounds + start, start, count);
        fv_comparison_merge(&total, &part);
    }
    ck_assert_int_eq(total.total, whole.total);
    ck_assert_int_eq(total.mismatches, whole.mismatches);
    ck_assert_int_eq(total.first_mismatch_index, whole.first_mismatch_index);
    ck_assert_int_eq(total.worst_absolute_index, whole.worst_absolute_index);
    ck_assert_double_eq(total.worst_ratio, whole.worst_ratio);
}
END_TEST

START_TEST(report_names_rule_count_and_index)
{
    fv_fusion *fusion;
    FV_ASSERT_OK(fv_ir_fusion_create(&fusion));
    int64_t shape[2] = {3, 4};
    int32_t x, y;
    FV_ASSERT_OK(fv_ir_define_tensor(fusion, 2, shape, NULL, FV_F32, NULL, &x));
    FV_ASSERT_OK(fv_ir_unary(fusion, FV_OP_NEG, x, &y));
    FV_ASSERT_OK(fv_ir_add_output(fusion, y, NULL));
    fv_case *c;
    FV_ASSERT_OK(fv_case_create(fusion, &c));
    fv_ir_fusion_release(fusion);
    snprintf(c->family, sizeof c->family, "negate");
    snprintf(c->source_path, sizeof c->source_path, "cases/negate.py");
    fv_case_make_id(c);
    fv_eval_output output;
    FV_ASSERT_OK(fv_eval_describe_output(c, 0, &output));
    double expected[12] = {0}, actual[12] = {0}, bounds[12];
    for (int i = 0; i < 12; i++)
        bounds[i] = 1e-6;
    actual[6] = 1e-3; /* row 1, column 2 */
    fv_comparison comparison;
    fv_comparison_init(&comparison, FV_TOLERANCE_BOUND, &output);
    fv_comparison_add(&comparison, actual, expected, bounds, 0, 12);
    fv_text text = {0};
    fv_comparison_format(&comparison, c, 0, &output, &text);
    fv_repro_command(c, &text);
    const char *report = fv_text_str(&text);
    ck_assert_ptr_nonnull(strstr(report, "mismatched elements: 1 / 12"));
    ck_assert_ptr_nonnull(strstr(report, "at index (1, 2)"));
    ck_assert_ptr_nonnull(strstr(report, "rule: fv-bound-v2"));
    ck_assert_ptr_nonnull(strstr(report, "MISMATCH"));
    ck_assert_ptr_nonnull(strstr(report, "fuservalidate run cases/negate.py --filter 'negate/fp32/3x4/s0'"));
    fv_text_free(&text);
    fv_case_free(c);
}
END_TEST

static Suite *compare_suite(void)
{
    Suite *suite = suite_create("compare");
    TCase *tcase = tcase_create("compare");
    tcase_add_test(tcase, nvfuser_tables_follow_the_lookup_rule);
    tcase_add_test(tcase, bound_policy_counts_and_locates_mismatches);
    tcase_add_test(tcase, nan_and_infinity_rules);
    tcase_add_test(tcase, nvfuser_policy_uses_atol_plus_rtol);
    tcase_add_test(tcase, merging_parts_equals_one_pass);
    tcase_add_test(tcase, report_names_rule_count_and_index);
    suite_add_tcase(suite, tcase);
    return suite;
}

int main(void) { return fv_test_run_suite(compare_suite()); }
