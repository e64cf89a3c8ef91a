/* check_evaluator.c: the reference evaluator against closed-form layer-norm,
 * RMS-norm and softmax (forward and backward) written here independently in
 * long double, at several shapes including odd ones; and its streaming,
 * threading and memory-budget invariance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "norm_fusions.h"
#include "test_support.h"
#include "validate/evaluator.h"
#include "validate/generator.h"

typedef struct shape {
    int64_t rows, hidden;
} shape;

static const shape shapes[] = {{1, 1}, {7, 13}, {64, 1023}, {216, 768}, {33, 2049}, {3, 4096}};
enum { SHAPE_COUNT = sizeof shapes / sizeof shapes[0] };

/* Input `position` of case c, as doubles (regenerated from the seed). */
static double *input_values(const fv_case *c, int position)
{
    int32_t id = c->fusion->inputs[position];
    int64_t count = fv_case_numel(c, id);
    double *values = malloc(sizeof(double) * (size_t)count);
    ck_assert_ptr_nonnull(values);
    FV_ASSERT_OK(fv_gen_fill(c->seed, position, &c->distributions[position],
                             c->fusion->values[id].dtype, 0, count, values));
    return values;
}

/* |a - b| relative to max(|b|, mean |b| over the output). */
static void assert_close(const char *what, const double *actual, const long double *expected,
                         int64_t count, double tolerance)
{
    long double scale = 0;
    for (int64_t i = 0; i < count; i++)
        scale += fabsl(expected[i]);
    scale = count > 0 ? scale / count : 1;
    for (int64_t i = 0; i < count; i++) {
        long double reference = fabsl(expected[i]) > scale ? fabsl(expected[i]) : scale;
        long double difference = fabsl((long double)actual[i] - expected[i]);
        ck_assert_msg(reference == 0 || difference / reference <= tolerance,
                      "%s[%lld]: evaluator %.17g, closed form %.17Lg (relative %Lg)", what,
                      (long long)i, actual[i], expected[i], difference / reference);
    }
}

static void evaluate(const fv_case *c, bool streaming, double ***values, double ***bounds)
{
    fv_eval_options options = {.threads = 2, .mode = FV_EVAL_REFERENCE,
                               .no_streaming = !streaming};
    FV_ASSERT_OK(fv_eval_to_memory(c, &options, values, bounds));
}

static void free_outputs(const fv_case *c, double **values, double **bounds)
{
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        free(values[o]);
        if (bounds)
            free(bounds[o]);
    }
    free(values);
    free(bounds);
}

/* ------------------------------------------------ closed forms */

static void layer_norm_backward_closed(const fv_case *c, long double **out)
{
    int64_t n = shapes[0].rows, h = 0;
    int64_t extents[FV_MAX_RANK];
    fv_case_shape(c, c->fusion->inputs[0], extents);
    n = extents[0];
    h = extents[1];
    double *x = input_values(c, 0), *dy = input_values(c, 1), *w = input_values(c, 2);
    double *mean = input_values(c, 3), *invstd = input_values(c, 4);
    for (int64_t j = 0; j < h; j++)
        out[1][j] = out[2][j] = 0;
    for (int64_t i = 0; i < n; i++) {
        long double sum_g = 0, sum_g_xhat = 0;
        for (int64_t j = 0; j < h; j++) {
            long double xhat = ((long double)x[i * h + j] - mean[i]) * invstd[i];
            long double g = (long double)dy[i * h + j] * w[j];
            sum_g += g;
            sum_g_xhat += g * xhat;
        }
        for (int64_t j = 0; j < h; j++) {
            long double xhat = ((long double)x[i * h + j] - mean[i]) * invstd[i];
            long double g = (long double)dy[i * h + j] * w[j];
            out[0][i * h + j] = invstd[i] * (g - sum_g / h - xhat * (sum_g_xhat / h));
            out[1][j] += (long double)dy[i * h + j] * xhat;
            out[2][j] += dy[i * h + j];
        }
    }
    free(x), free(dy), free(w), free(mean), free(invstd);
}

static void rms_norm_backward_closed(const fv_case *c, long double **out)
{
    int64_t extents[FV_MAX_RANK];
    fv_case_shape(c, c->fusion->inputs[0], extents);
    int64_t n = extents[0], h = extents[1];
    double *x = input_values(c, 0), *rms = input_values(c, 1), *dy = input_values(c, 2);
    double *w = input_values(c, 3);
    for (int64_t j = 0; j < h; j++)
        out[1][j] = 0;
    for (int64_t i = 0; i < n; i++) {
        long double r = rms[i], s = 0;
        for (int64_t j = 0; j < h; j++)
            s -= (long double)dy[i * h + j] * w[j] * x[i * h + j] / (r * r);
        for (int64_t j = 0; j < h; j++) {
            long double g = (long double)dy[i * h + j] * w[j];
            out[0][i * h + j] = g / r + s * x[i * h + j] / (r * h);
            out[1][j] += (long double)dy[i * h + j] * x[i * h + j] / r;
        }
    }
    free(x), free(rms), free(dy), free(w);
}

static void layer_norm_forward_closed(const fv_case *c, long double **out)
{
    int64_t extents[FV_MAX_RANK];
    fv_case_shape(c, c->fusion->inputs[0], extents);
    int64_t n = extents[0], h = extents[1];
    double *x = input_values(c, 0), *w = input_values(c, 1), *b = input_values(c, 2);
    for (int64_t i = 0; i < n; i++) {
        long double mean = 0, var = 0;
        for (int64_t j = 0; j < h; j++)
            mean += x[i * h + j];
        mean /= h;
        for (int64_t j = 0; j < h; j++)
            var += (x[i * h + j] - mean) * (x[i * h + j] - mean);
        var /= h;
        long double invstd = 1 / sqrtl(var + 1e-5L);
        for (int64_t j = 0; j < h; j++)
            out[0][i * h + j] = (x[i * h + j] - mean) * invstd * w[j] + b[j];
        out[1][i] = mean;
        out[2][i] = invstd;
    }
    free(x), free(w), free(b);
}

static void rms_norm_forward_closed(const fv_case *c, long double **out)
{
    int64_t extents[FV_MAX_RANK];
    fv_case_shape(c, c->fusion->inputs[0], extents);
    int64_t n = extents[0], h = extents[1];
    double *x = input_values(c, 0), *w = input_values(c, 1);
    for (int64_t i = 0; i < n; i++) {
        long double squares = 0;
        for (int64_t j = 0; j < h; j++)
            squares += (long double)x[i * h + j] * x[i * h + j];
        long double invrms = 1 / sqrtl(squares / h + 1e-6L);
        for (int64_t j = 0; j < h; j++)
            out[0][i * h + j] = x[i * h + j] * invrms * w[j];
        out[1][i] = invrms;
    }
    free(x), free(w);
}

static void softmax_closed(const fv_case *c, long double **out)
{
    int64_t extents[FV_MAX_RANK];
    fv_case_shape(c, c->fusion->inputs[0], extents);
    int64_t n = extents[0], h = extents[1];
    double *x = input_values(c, 0);
    for (int64_t i = 0; i < n; i++) {
        long double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < h; j++)
            top = x[i * h + j] > top ? x[i * h + j] : top;
        for (int64_t j = 0; j < h; j++)
            sum += expl(x[i * h + j] - top);
        for (int64_t j = 0; j < h; j++)
            out[0][i * h + j] = expl(x[i * h + j] - top) / sum;
    }
    free(x);
}

typedef void (*closed_form)(const fv_case *c, long double **out);

static void check_against_closed_form(norm_kind kind, closed_form reference, int shape_index)
{
    shape s = shapes[shape_index];
    fv_case *c = norm_case(kind, FV_F32, s.rows, s.hidden, 3 + (uint64_t)shape_index);
    ck_assert_msg(c != NULL, "building the case failed: %s", fv_error_message());
    int32_t outputs = c->fusion->output_count;
    long double **expected = calloc((size_t)outputs, sizeof(long double *));
    for (int32_t o = 0; o < outputs; o++)
        expected[o] = calloc((size_t)fv_case_numel(c, c->fusion->outputs[o]), sizeof(long double));
    reference(c, expected);
    for (int streaming = 0; streaming <= 1; streaming++) {
        double **values, **bounds;
        evaluate(c, streaming, &values, &bounds);
        for (int32_t o = 0; o < outputs; o++) {
            char what[64];
            snprintf(what, sizeof what, "%s output %d (%s)", c->id, o,
                     streaming ? "streamed" : "one block");
            assert_close(what, values[o], expected[o], fv_case_numel(c, c->fusion->outputs[o]),
                         1e-12);
        }
        free_outputs(c, values, bounds);
    }
    for (int32_t o = 0; o < outputs; o++)
        free(expected[o]);
    free(expected);
    fv_case_free(c);
}

START_TEST(layer_norm_backward_matches_closed_form)
{
    check_against_closed_form(NORM_LAYER_BACKWARD, layer_norm_backward_closed, _i);
}
END_TEST

START_TEST(rms_norm_backward_matches_closed_form)
{
    check_against_closed_form(NORM_RMS_BACKWARD, rms_norm_backward_closed, _i);
}
END_TEST

START_TEST(layer_norm_forward_matches_closed_form)
{
    check_against_closed_form(NORM_LAYER_FORWARD, layer_norm_forward_closed, _i);
}
END_TEST

START_TEST(rms_norm_forward_matches_closed_form)
{
    check_against_closed_form(NORM_RMS_FORWARD, rms_norm_forward_closed, _i);
}
END_TEST

START_TEST(softmax_matches_closed_form)
{
    check_against_closed_form(NORM_SOFTMAX, softmax_closed, _i);
}
END_TEST

/* ------------------------------------------------- invariances */

/* Results are bit-identical for any thread count and block size. */
START_TEST(results_do_not_depend_on_threads_or_blocks)
{
    fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 300, 333, 11);
    ck_assert_ptr_nonnull(c);
    fv_eval_options base = {.threads = 1, .mode = FV_EVAL_REFERENCE};
    double **values0, **bounds0;
    FV_ASSERT_OK(fv_eval_to_memory(c, &base, &values0, &bounds0));
    const fv_eval_options variants[] = {
        {.threads = 3, .mode = FV_EVAL_REFERENCE},
        {.threads = 2, .mode = FV_EVAL_REFERENCE, .memory_budget = 1},
        {.threads = 5, .mode = FV_EVAL_REFERENCE, .memory_budget = 200000},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        double **values, **bounds;
        FV_ASSERT_OK(fv_eval_to_memory(c, &variants[v], &values, &bounds));
        for (int32_t o = 0; o < c->fusion->output_count; o++) {
            size_t bytes = sizeof(double) * (size_t)fv_case_numel(c, c->fusion->outputs[o]);
            ck_assert_msg(memcmp(values[o], values0[o], bytes) == 0, "variant %zu output %d values",
                          v, o);
            ck_assert_msg(memcmp(bounds[o], bounds0[o], bytes) == 0, "variant %zu output %d bounds",
                          v, o);
        }
        free_outputs(c, values, bounds);
    }
    free_outputs(c, values0, bounds0);
    fv_case_free(c);
}
END_TEST

/* Inputs generated once as raw elements (as the pipeline uploads them) and
 * handed to the evaluator give bit-identical values and bounds; a given
 * input shorter than the case needs is an internal error, not a read past
 * its end. */
START_TEST(given_inputs_match_generated_ones)
{
    fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 130, 257, 4);
    ck_assert_ptr_nonnull(c);
    fv_eval_options generated = {.threads = 2, .mode = FV_EVAL_REFERENCE, .memory_budget = 8192};
    double **values0, **bounds0;
    FV_ASSERT_OK(fv_eval_to_memory(c, &generated, &values0, &bounds0));
    int32_t input_count = c->fusion->input_count;
    fv_eval_given_input *given = calloc((size_t)input_count, sizeof *given);
    ck_assert_ptr_nonnull(given);
    for (int32_t i = 0; i < input_count; i++) {
        int32_t id = c->fusion->inputs[i];
        if (c->fusion->values[id].kind != FV_VALUE_TENSOR || i == 2)
            continue; /* the weight stays generated: a mix must work too */
        int64_t count = fv_case_numel(c, id);
        void *raw = malloc((size_t)count * fv_dtype_size(c->fusion->values[id].dtype));
        ck_assert_ptr_nonnull(raw);
        FV_ASSERT_OK(fv_gen_fill_raw(c->seed, i, &c->distributions[i],
                                     c->fusion->values[id].dtype, 0, count, raw, 2));
        given[i] = (fv_eval_given_input){.elements = raw, .count = count};
    }
    fv_eval_options reused = generated;
    reused.given_inputs = given;
    double **values, **bounds;
    FV_ASSERT_OK(fv_eval_to_memory(c, &reused, &values, &bounds));
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        size_t bytes = sizeof(double) * (size_t)fv_case_numel(c, c->fusion->outputs[o]);
        ck_assert_msg(memcmp(values[o], values0[o], bytes) == 0, "output %d values", o);
        ck_assert_msg(memcmp(bounds[o], bounds0[o], bytes) == 0, "output %d bounds", o);
    }
    free_outputs(c, values, bounds);
    given[0].count -= 1;
    ck_assert_int_eq(fv_eval_to_memory(c, &reused, &values, &bounds), FV_ERR_INTERNAL);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "given input 0"));
    for (int32_t i = 0; i < input_count; i++)
        free((void *)given[i].elements);
    free(given);
    free_outputs(c, values0, bounds0);
    fv_case_free(c);
}
END_TEST

/* Outputs of a bf16 fusion are bf16 numbers: the final cast rounds. */
START_TEST(explicit_casts_round_to_the_target)
{
    fv_case *c = norm_case(NORM_RMS_FORWARD, FV_BF16, 5, 100, 2);
    ck_assert_ptr_nonnull(c);
    double **values, **bounds;
    evaluate(c, true, &values, &bounds);
    for (int64_t i = 0; i < 500; i++) {
        float as_float = (float)values[0][i];
        uint32_t bits;
        memcpy(&bits, &as_float, sizeof bits);
        ck_assert_msg((double)as_float == values[0][i] && (bits & 0xffff) == 0,
                      "y[%lld] = %.17g is not a bf16 number", (long long)i, values[0][i]);
        ck_assert(bounds[0][i] > 0);
    }
    /* invrms stays an exact f32-typed value: not rounded. */
    ck_assert(values[1][0] != (double)(float)values[1][0] || values[1][1] != (double)(float)values[1][1]);
    free_outputs(c, values, bounds);
    fv_case_free(c);
}
END_TEST

/* Softmax with a 16-bit output bounds its exp as fv_exp_fast: an output
 * under 2^-126 may come back flushed to zero, so its bound covers the whole
 * value; with an fp32 output (expf) such values keep a relative bound.  At
 * normal(0, 30) inputs about a third of the elements are that small. */
START_TEST(fast_exp_bound_covers_flushed_outputs)
{
    int64_t flushed_counted[2] = {0, 0};
    const fv_dtype dtypes[2] = {FV_BF16, FV_F32};
    for (int k = 0; k < 2; k++) {
        fv_case *c = norm_case(NORM_SOFTMAX, dtypes[k], 8, 512, 5);
        ck_assert_ptr_nonnull(c);
        c->distributions[0] = (fv_distribution){FV_DIST_NORMAL, 0, 30};
        double **values, **bounds;
        evaluate(c, true, &values, &bounds);
        for (int64_t i = 0; i < 8 * 512; i++) {
            double v = values[0][i];
            if (v == 0 || v >= 0x1p-127)
                continue;
            flushed_counted[k]++;
            if (dtypes[k] == FV_BF16)
                ck_assert_msg(bounds[0][i] >= v, "y[%lld] = %g: bound %g", (long long)i, v,
                              bounds[0][i]);
            else
                ck_assert_msg(bounds[0][i] < 0.01 * v, "y[%lld] = %g: bound %g", (long long)i, v,
                              bounds[0][i]);
        }
        free_outputs(c, values, bounds);
        fv_case_free(c);
    }
    ck_assert_int_gt(flushed_counted[0], 100);
    ck_assert_int_gt(flushed_counted[1], 100);
}
END_TEST

static fv_status failing_sink(void *context, int output_index, int64_t first_row,
                              int64_t row_count, const double *values, const double *bounds)
{
    int *calls = context;
    (*calls)++;
    FV_FAIL(FV_ERR_IO, "disk full (test)");
}

START_TEST(sink_failure_stops_the_evaluation)
{
    fv_case *c = norm_case(NORM_SOFTMAX, FV_F32, 500, 64, 1);
    ck_assert_ptr_nonnull(c);
    int calls = 0;
    fv_eval_options options = {.threads = 2, .mode = FV_EVAL_REFERENCE, .memory_budget = 4096};
    fv_status status = fv_eval_run(c, &options, failing_sink, &calls);
    ck_assert_int_eq(status, FV_ERR_IO);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "disk full"));
    ck_assert_int_lt(calls, 10);
    fv_case_free(c);
}
END_TEST

START_TEST(unbound_case_is_an_input_error)
{
    fv_case *c = norm_case(NORM_SOFTMAX, FV_F32, 4, 4, 1);
    ck_assert_ptr_nonnull(c);
    c->symbol_extents[fv_ir_symbol_root(c->fusion, c->fusion->values[c->fusion->inputs[0]].dims[1].symbol)] = -1;
    double **values, **bounds;
    fv_eval_options options = {.mode = FV_EVAL_REFERENCE};
    ck_assert_int_eq(fv_eval_to_memory(c, &options, &values, &bounds), FV_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "not bound"));
    fv_case_free(c);
}
END_TEST

static Suite *evaluator_suite(void)
{
    Suite *suite = suite_create("evaluator");
    TCase *closed = tcase_create("closed-form");
    tcase_set_timeout(closed, 120);
    tcase_add_loop_test(closed, layer_norm_backward_matches_closed_form, 0, SHAPE_COUNT);
    tcase_add_loop_test(closed, rms_norm_backward_matches_closed_form, 0, SHAPE_COUNT);
    tcase_add_loop_test(closed, layer_norm_forward_matches_closed_form, 0, SHAPE_COUNT);
    tcase_add_loop_test(closed, rms_norm_forward_matches_closed_form, 0, SHAPE_COUNT);
    tcase_add_loop_test(closed, softmax_matches_closed_form, 0, SHAPE_COUNT);
    suite_add_tcase(suite, closed);
    TCase *behaviour = tcase_create("behaviour");
    tcase_set_timeout(behaviour, 120);
    tcase_add_test(behaviour, results_do_not_depend_on_threads_or_blocks);
    tcase_add_test(behaviour, given_inputs_match_generated_ones);
    tcase_add_test(behaviour, explicit_casts_round_to_the_target);
    tcase_add_test(behaviour, fast_exp_bound_covers_flushed_outputs);
    tcase_add_test(behaviour, sink_failure_stops_the_evaluation);
    tcase_add_test(behaviour, unbound_case_is_an_input_error);
    suite_add_tcase(suite, behaviour);
    return suite;
}

int main(void) { return fv_test_run_suite(evaluator_suite()); }
