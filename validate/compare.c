/* compare.c: element-wise comparison under the bound policy or nvFuser's
 * tolerance tables, and its report. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "validate/compare.h"

bool fv_tolerance_parse(const char *text, fv_tolerance_policy *policy)
{
    if (strcmp(text, "bound") == 0) {
        *policy = FV_TOLERANCE_BOUND;
        return true;
    }
    if (strcmp(text, "nvfuser") == 0) {
        *policy = FV_TOLERANCE_NVFUSER;
        return true;
    }
    return false;
}

const char *fv_tolerance_name(fv_tolerance_policy policy)
{
    return policy == FV_TOLERANCE_BOUND ? "bound" : "nvfuser";
}

/* nvFuser's tables (csrc/validator_utils.cpp), keyed by reduction size. */
enum { TABLE_SIZE = 20 };
static const int64_t table_keys[TABLE_SIZE] = {
    4, 8, 16, 32, 64, 128, 256, 512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10,
    64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20};
static const double table_f32[TABLE_SIZE] = {
    1.68e-06, 2.24e-06, 2.96e-06, 4.48e-06, 6.75e-06, 8.58e-06, 1.31e-05,
    2.19e-05, 3.35e-05, 5.78e-05, 1.08e-04, 1.22e-04, 1.37e-04, 2.49e-04,
    4.08e-04, 5.01e-04, 9.23e-04, 1.57e-03, 2.23e-03, 3.43e-03};
static const double table_f16[TABLE_SIZE] = {
    0.0039, 0.0078, 0.0078, 0.0155, 0.0156, 0.0312, 0.0313, 0.0620, 0.0625, 0.1247,
    0.1250, 0.2495, 0.2500, 0.4989, 0.5001, 0.9851, 1.0001, 1.9923, 2.0003, 3.9907};

void fv_tolerance_nvfuser(fv_dtype dtype, int64_t reduction_size, double *absolute,
                          double *relative)
{
    const double *table = (dtype == FV_F16 || dtype == FV_BF16) ? table_f16 : table_f32;
    double scale = dtype == FV_BF16 ? 10.0 : 1.0;
    if (reduction_size <= 1) {
        *absolute = table[0] * scale;
        *relative = table[1] * scale;
        return;
    }
    int key = 0;
    while (key < TABLE_SIZE && table_keys[key] < reduction_size)
        key++;
    double value = key + 1 < TABLE_SIZE ? table[key + 1] : 2 * table[TABLE_SIZE - 1];
    *absolute = value * scale;
    *relative = 0.01 * value * scale;
}

void fv_comparison_init(fv_comparison *comparison, fv_tolerance_policy policy,
                        const fv_eval_output *output)
{
    memset(comparison, 0, sizeof *comparison);
    comparison->policy = policy;
    comparison->worst_absolute_index = comparison->worst_relative_index = -1;
    comparison->worst_ratio_index = comparison->first_mismatch_index = -1;
    if (policy == FV_TOLERANCE_NVFUSER) {
        fv_tolerance_nvfuser(output->dtype, output->reduction_size, &comparison->absolute,
                             &comparison->relative);
        snprintf(comparison->rule, sizeof comparison->rule,
                 "nvfuser-table (%s, reduction size %lld): |a-e| <= %.3g + %.3g |e|",
                 fv_dtype_name(output->dtype), (long long)output->reduction_size,
                 comparison->absolute, comparison->relative);
    } else {
        snprintf(comparison->rule, sizeof comparison->rule,
                 "%s: |a-e| <= per-element bound (first-order f32 error analysis, lambda 5)",
                 FV_BOUND_POLICY_NAME);
    }
}

/* Allowed error of one element; expected is finite. */
static double allowed_error(const fv_comparison *comparison, double expected, const double *bounds,
                            int64_t i)
{
    if (comparison->policy == FV_TOLERANCE_NVFUSER)
        return comparison->absolute + comparison->relative * fabs(expected);
    return bounds[i];
}

static void note_mismatch(fv_comparison *comparison, int64_t index)
{
    comparison->mismatches++;
    if (comparison->first_mismatch_index < 0)
        comparison->first_mismatch_index = index;
}

void fv_comparison_add(fv_comparison *comparison, const double *actual, const double *expected,
                       const double *bounds, int64_t first, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        double a = actual[i], e = expected[i];
        int64_t index = first + i;
        comparison->total++;
        if (isnan(e) || isnan(a)) {
            if (isnan(e) != isnan(a)) {
                comparison->nan_mismatches++;
                note_mismatch(comparison, index);
                if (comparison->worst_ratio != INFINITY) {
                    comparison->worst_ratio = INFINITY;
                    comparison->worst_ratio_index = index;
                }
            }
            continue;
        }
        if (isinf(e) || isinf(a)) {
            if (a != e) {
                note_mismatch(comparison, index);
                comparison->worst_ratio = INFINITY;
                comparison->worst_ratio_index = index;
            }
            continue;
        }
        double error = fabs(a - e);
        double allowed = allowed_error(comparison, e, bounds, i);
        /* a NaN bound (one the evaluator could not make: an operand's error
         * came out infinite times zero) passes an exact match only */
        double ratio = error == 0 ? 0 : (allowed > 0 ? error / allowed : INFINITY);
        if (error != 0 && !(error <= allowed))
            note_mismatch(comparison, index);
        if (error > comparison->worst_absolute || comparison->worst_absolute_index < 0) {
            comparison->worst_absolute = error;
            comparison->worst_absolute_index = index;
            comparison->worst_absolute_actual = a;
            comparison->worst_absolute_expected = e;
            comparison->worst_absolute_allowed = allowed;
        }
        if (e != 0 && error / fabs(e) > comparison->worst_relative) {
            comparison->worst_relative = error / fabs(e);
            comparison->worst_relative_index = index;
        }
        if (ratio > comparison->worst_ratio || comparison->worst_ratio_index < 0) {
            comparison->worst_ratio = ratio;
            comparison->worst_ratio_index = index;
            comparison->worst_ratio_allowed = allowed;
        }
    }
}

void fv_comparison_merge(fv_comparison *total, const fv_comparison *part)
{
    total->total += part->total;
    total->mismatches += part->mismatches;
    total->nan_mismatches += part->nan_mismatches;
    if (part->first_mismatch_index >= 0 &&
        (total->first_mismatch_index < 0 || part->first_mismatch_index < total->first_mismatch_index))
        total->first_mismatch_index = part->first_mismatch_index;
    if (part->worst_absolute_index >= 0 &&
        (total->worst_absolute_index < 0 || part->worst_absolute > total->worst_absolute)) {
        total->worst_absolute = part->worst_absolute;
        total->worst_absolute_index = part->worst_absolute_index;
        total->worst_absolute_actual = part->worst_absolute_actual;
        total->worst_absolute_expected = part->worst_absolute_expected;
        total->worst_absolute_allowed = part->worst_absolute_allowed;
    }
    if (part->worst_relative_index >= 0 && part->worst_relative > total->worst_relative) {
        total->worst_relative = part->worst_relative;
        total->worst_relative_index = part->worst_relative_index;
    }
    if (part->worst_ratio_index >= 0 &&
        (total->worst_ratio_index < 0 || part->worst_ratio > total->worst_ratio)) {
        total->worst_ratio = part->worst_ratio;
        total->worst_ratio_index = part->worst_ratio_index;
        total->worst_ratio_allowed = part->worst_ratio_allowed;
    }
}

bool fv_comparison_passed(const fv_comparison *comparison) { return comparison->mismatches == 0; }

/* "(i, j)" for a flat index of an output of these extents. */
static void format_index(const fv_eval_output *output, int64_t flat, char *buffer, size_t size)
{
    int64_t index[FV_MAX_RANK] = {0};
    for (int d = output->rank - 1; d >= 0; d--) {
        index[d] = output->extents[d] > 0 ? flat % output->extents[d] : 0;
        flat = output->extents[d] > 0 ? flat / output->extents[d] : 0;
    }
    size_t used = (size_t)snprintf(buffer, size, "(");
    for (int d = 0; d < output->rank && used < size; d++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)index[d]);
    if (used < size)
        snprintf(buffer + used, size - used, ")");
}

void fv_comparison_format(const fv_comparison *comparison, const fv_case *c, int index,
                          const fv_eval_output *output, fv_text *text)
{
    char where[96], name[40];
    fv_ir_value_label(c->fusion, output->value, name);
    fv_text_printf(text, "output %d (%s, %s [", index, name, fv_dtype_name(output->dtype));
    for (int d = 0; d < output->rank; d++)
        fv_text_printf(text, "%s%lld", d ? ", " : "", (long long)output->extents[d]);
    fv_text_printf(text, "]): %s\n", fv_comparison_passed(comparison) ? "ok" : "MISMATCH");
    fv_text_printf(text, "  rule: %s\n", comparison->rule);
    double percent = comparison->total ? 100.0 * (double)comparison->mismatches /
                                             (double)comparison->total
                                       : 0;
    fv_text_printf(text, "  mismatched elements: %lld / %lld (%.4g%%)", (long long)comparison->mismatches,
                   (long long)comparison->total, percent);
    if (comparison->nan_mismatches)
        fv_text_printf(text, ", %lld NaN on one side only", (long long)comparison->nan_mismatches);
    fv_text_printf(text, "\n");
    if (comparison->worst_absolute_index >= 0) {
        format_index(output, comparison->worst_absolute_index, where, sizeof where);
        fv_text_printf(text,
                       "  greatest absolute difference: %.6g at index %s (actual %.9g, expected "
                       "%.9g, allowed %.3g)\n",
                       comparison->worst_absolute, where, comparison->worst_absolute_actual,
                       comparison->worst_absolute_expected, comparison->worst_absolute_allowed);
    }
    if (comparison->worst_relative_index >= 0) {
        format_index(output, comparison->worst_relative_index, where, sizeof where);
        fv_text_printf(text, "  greatest relative difference: %.6g at index %s\n",
                       comparison->worst_relative, where);
    }
    if (comparison->worst_ratio_index >= 0) {
        format_index(output, comparison->worst_ratio_index, where, sizeof where);
        fv_text_printf(text, "  worst error/allowed: %.4g at index %s (allowed %.3g)\n",
                       comparison->worst_ratio, where, comparison->worst_ratio_allowed);
    }
}

void fv_repro_command(const fv_case *c, fv_text *text)
{
    fv_text_printf(text, "fuservalidate run %s --filter '%s'", c->source_path[0] ? c->source_path : ".",
                   c->id);
}
