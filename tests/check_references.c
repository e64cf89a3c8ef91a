/* check_references.c: reference keys, building and caching store entries,
 * rebuilding corrupt ones, the size policy, and comparing outputs against
 * stored or on-demand references. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/round.h"
#include "norm_fusions.h"
#include "test_support.h"
#include "validate/references.h"

static fv_eval_options reference_options(void)
{
    fv_eval_options options = {.threads = 2, .mode = FV_EVAL_REFERENCE};
    return options;
}

START_TEST(key_depends_on_everything_that_changes_references)
{
    fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 64, 128, 0);
    ck_assert_ptr_nonnull(c);
    char base[65], again[65], other[65];
    FV_ASSERT_OK(fv_ref_key(c, base, NULL));
    FV_ASSERT_OK(fv_ref_key(c, again, NULL));
    ck_assert_str_eq(base, again);
    c->seed = 1;
    FV_ASSERT_OK(fv_ref_key(c, other, NULL));
    ck_assert_str_ne(base, other);
    c->seed = 0;
    c->distributions[0].b = 2;
    FV_ASSERT_OK(fv_ref_key(c, other, NULL));
    ck_assert_str_ne(base, other);
    fv_case_free(c);
    fv_case *wider = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 64, 129, 0);
    FV_ASSERT_OK(fv_ref_key(wider, other, NULL));
    ck_assert_str_ne(base, other);
    fv_case_free(wider);
    fv_case *half = norm_case(NORM_LAYER_BACKWARD, FV_F16, 64, 128, 0);
    FV_ASSERT_OK(fv_ref_key(half, other, NULL));
    ck_assert_str_ne(base, other);
    fv_case_free(half);
}
END_TEST

START_TEST(build_then_cached_then_rebuilt_when_corrupt)
{
    fv_store *store;
    FV_ASSERT_OK(fv_store_open(fv_test_path("refs"), FV_STORE_DEFAULT_MAX_BYTES, &store));
    fv_case *c = norm_case(NORM_RMS_BACKWARD, FV_BF16, 96, 200, 4);
    fv_eval_options options = reference_options();
    fv_ref_report report;
    FV_ASSERT_OK(fv_ref_ensure(store, c, &options, true, false, &report));
    ck_assert_int_eq(report.outcome, FV_REF_BUILT);
    ck_assert_int_eq(report.bytes, (96 * 200 + 200) * 16);
    FV_ASSERT_OK(fv_ref_ensure(store, c, &options, true, false, &report));
    ck_assert_int_eq(report.outcome, FV_REF_CACHED);
    /* Truncate the file: detected, reported, removed and rebuilt. */
    char path[1024];
    FV_ASSERT_OK(fv_store_entry_path(store, report.key, path, sizeof path));
    ck_assert_int_eq(truncate(path, 2000), 0);
    FV_ASSERT_OK(fv_ref_ensure(store, c, &options, true, false, &report));
    ck_assert_int_eq(report.outcome, FV_REF_REBUILT);
    ck_assert_msg(report.detail[0] != '\0', "the reason for the rebuild is reported");
    FV_ASSERT_OK(fv_ref_ensure(store, c, &options, true, false, &report));
    ck_assert_int_eq(report.outcome, FV_REF_CACHED);
    fv_case_free(c);
    fv_store_close(store);
}
END_TEST

START_TEST(cases_above_the_limit_stay_on_demand)
{
    fv_store *store;
    FV_ASSERT_OK(fv_store_open(fv_test_path("small-refs"), 1000, &store));
    fv_case *c = norm_case(NORM_SOFTMAX, FV_F32, 64, 64, 0);
    fv_eval_options options = reference_options();
    fv_ref_report report;
    FV_ASSERT_OK(fv_ref_ensure(store, c, &options, true, false, &report));
    ck_assert_int_eq(report.outcome, FV_REF_ON_DEMAND);
    char path[1024];
    FV_ASSERT_OK(fv_store_entry_path(store, report.key, path, sizeof path));
    ck_assert_int_ne(access(path, F_OK), 0);
    FV_ASSERT_OK(fv_ref_ensure(store, c, &options, true, true, &report));
    ck_assert_int_eq(report.outcome, FV_REF_EVALUATED);
    ck_assert_int_ne(access(path, F_OK), 0);
    fv_case_free(c);
    fv_store_close(store);
}
END_TEST

/* Raw outputs of a float32 emulation, stored in each output's dtype. */
static void **emulated_outputs(const fv_case *c)
{
    fv_eval_options emulate = {.threads = 1, .mode = FV_EVAL_EMULATE_F32,
                               .sum_order = FV_SUM_STRIDED, .sum_block = 128,
                               .no_streaming = true};
    double **values, **bounds;
    FV_ASSERT_OK(fv_eval_to_memory(c, &emulate, &values, &bounds));
    void **raw = calloc((size_t)c->fusion->output_count, sizeof(void *));
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        int32_t id = c->fusion->outputs[o];
        int64_t count = fv_case_numel(c, id);
        raw[o] = malloc((size_t)count * fv_dtype_size(c->fusion->values[id].dtype));
        fv_store_elements(c->fusion->values[id].dtype, values[o], raw[o], count);
        free(values[o]);
    }
    free(values);
    free(bounds);
    return raw;
}

START_TEST(compare_from_store_and_on_demand_agree)
{
    fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 130, 300, 9);
    void **actual = emulated_outputs(c);
    int32_t outputs = c->fusion->output_count;
    /* Plant one wrong element in dx: row 7, column 11. */
    uint16_t *dx = actual[0];
    double planted = fv_bf16_to_double(dx[7 * 300 + 11]) + 50.0;
    dx[7 * 300 + 11] = fv_bf16_from_double(planted);
    fv_eval_options options = reference_options();
    fv_store *store;
    FV_ASSERT_OK(fv_store_open(fv_test_path("compare-refs"), FV_STORE_DEFAULT_MAX_BYTES, &store));
    fv_comparison stored[3], again[3], computed[3];
    fv_ref_report report;
    FV_ASSERT_OK(fv_ref_compare(store, c, &options, FV_TOLERANCE_BOUND,
                                (const void *const *)actual, stored, &report));
    ck_assert_int_eq(report.outcome, FV_REF_BUILT);
    FV_ASSERT_OK(fv_ref_compare(store, c, &options, FV_TOLERANCE_BOUND,
                                (const void *const *)actual, again, &report));
    ck_assert_int_eq(report.outcome, FV_REF_CACHED);
    FV_ASSERT_OK(fv_ref_compare(NULL, c, &options, FV_TOLERANCE_BOUND,
                                (const void *const *)actual, computed, &report));
    ck_assert_int_eq(report.outcome, FV_REF_ON_DEMAND);
    /* Four threads in small blocks compare concurrently: the same verdicts. */
    fv_eval_options concurrent = options;
    concurrent.threads = 4;
    concurrent.memory_budget = 4096;
    fv_comparison threaded[3];
    FV_ASSERT_OK(fv_ref_compare(NULL, c, &concurrent, FV_TOLERANCE_BOUND,
                                (const void *const *)actual, threaded, &report));
    for (int32_t o = 0; o < outputs; o++) {
        ck_assert_int_eq(threaded[o].total, stored[o].total);
        ck_assert_int_eq(threaded[o].mismatches, stored[o].mismatches);
        ck_assert_int_eq(threaded[o].first_mismatch_index, stored[o].first_mismatch_index);
        ck_assert_double_eq(threaded[o].worst_ratio, stored[o].worst_ratio);
        ck_assert_double_eq(threaded[o].worst_absolute, stored[o].worst_absolute);
    }
    for (int32_t o = 0; o < outputs; o++) {
        ck_assert_int_eq(stored[o].mismatches, o == 0 ? 1 : 0);
        ck_assert_int_eq(again[o].mismatches, stored[o].mismatches);
        ck_assert_int_eq(computed[o].mismatches, stored[o].mismatches);
        ck_assert_double_eq(again[o].worst_ratio, stored[o].worst_ratio);
        ck_assert_double_eq(computed[o].worst_ratio, stored[o].worst_ratio);
    }
    ck_assert_int_eq(stored[0].first_mismatch_index, 7 * 300 + 11);
    for (int32_t o = 0; o < outputs; o++)
        free(actual[o]);
    free(actual);
    fv_case_free(c);
    fv_store_close(store);
}
END_TEST

static Suite *references_suite(void)
{
    Suite *suite = suite_create("references");
    TCase *tcase = tcase_create("references");
    tcase_set_timeout(tcase, 120);
    tcase_add_test(tcase, key_depends_on_everything_that_changes_references);
    tcase_add_test(tcase, build_then_cached_then_rebuilt_when_corrupt);
    tcase_add_test(tcase, cases_above_the_limit_stay_on_demand);
    tcase_add_test(tcase, compare_from_store_and_on_demand_agree);
    suite_add_tcase(suite, tcase);
    return suite;
}

int main(void) { return fv_test_run_suite(references_suite()); }
