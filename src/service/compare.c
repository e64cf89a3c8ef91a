/* compare.c: two runs side by side: the Mann-Whitney U test, the per-case
 * performance verdict, loading an archive's rows and samples, matching cases
 * by id, the geomean per family, the printed report and its JUnit file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/stats.h"
#include "service/archive.h"
#include "service/compare.h"
#include "service/junit.h"

/* ------------------------------------------------------------ helpers */

/* Copies the finite values of `values` into `kept` (sorted); returns how many. */
static int keep_finite_sorted(const double *values, int count, double *kept)
{
    int kept_count = 0;
    for (int i = 0; i < count; i++)
        if (isfinite(values[i]))
            kept[kept_count++] = values[i];
    fv_sort_doubles(kept, (size_t)kept_count);
    return kept_count;
}

static const char *status_name(int32_t status)
{
    return status < 0 ? "absent" : fv_result_status_name((fv_result_status)status);
}

/* ------------------------------------------------------- the U test */

/* A value of the pooled sample and which sample it came from. */
typedef struct pooled_value {
    double value;
    bool second;
} pooled_value;

static int compare_pooled(const void *a, const void *b)
{
    return fv_compare_doubles(&((const pooled_value *)a)->value, &((const pooled_value *)b)->value);
}

/* P(U <= u) and P(U >= u) under the null hypothesis for samples of n and m
 * values without ties, by counting: the number of arrangements with U = k is
 * the coefficient of q^k in the Gaussian binomial [n + m choose n]_q =
 * prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i).  Coefficients stay below
 * C(50, 25) < 2^53 for n + m <= FV_COMPARE_EXACT_LIMIT, so doubles are exact. */
static fv_status exact_tails(int n, int m, double u, double *lower, double *upper)
{
    int degree = n * m;
    double *counts = calloc((size_t)(degree + n + 1), sizeof(double));
    FV_CHECK_ALLOC(counts);
    counts[0] = 1;
    for (int i = 1; i <= n; i++) {
        int current = (i - 1) * m; /* degree of [m+i-1 choose i-1]_q */
        for (int k = current + m + i; k >= m + i; k--)
            counts[k] -= counts[k - (m + i)];
        for (int k = i; k <= current + m + i; k++)
            counts[k] += counts[k - i];
    }
    double total = 0, below = 0, above = 0;
    for (int k = 0; k <= degree; k++) {
        total += counts[k];
        if (k <= u)
            below += counts[k];
        if (k >= u)
            above += counts[k];
    }
    free(counts);
    *lower = below / total;
    *upper = above / total;
    return FV_OK;
}

fv_status fv_compare_mann_whitney(const double *x, int n, const double *y, int m,
                                  fv_compare_u_test *result)
{
    if (x == NULL || y == NULL || result == NULL || n < 1 || m < 1)
        FV_FAIL(FV_ERR_INTERNAL, "Mann-Whitney U test: bad arguments");
    int total = n + m;
    pooled_value *pooled = malloc(sizeof *pooled * (size_t)total);
    FV_CHECK_ALLOC(pooled);
    for (int i = 0; i < total; i++) {
        pooled[i].second = i >= n;
        pooled[i].value = i < n ? x[i] : y[i - n];
        if (!isfinite(pooled[i].value)) {
            free(pooled);
            FV_FAIL(FV_ERR_INTERNAL, "Mann-Whitney U test: a sample is not finite");
        }
    }
    qsort(pooled, (size_t)total, sizeof *pooled, compare_pooled);
    /* Midranks: the rank sum of y gives U_y = R_y - m(m+1)/2.  The tie term
     * sum(t^3 - t) over groups of equal values corrects the variance. */
    double rank_sum = 0, tie_term = 0;
    for (int start = 0; start < total;) {
        int end = start + 1;
        while (end < total && pooled[end].value == pooled[start].value)
            end++;
        double t = end - start, midrank = 0.5 * (start + 1 + end);
        for (int i = start; i < end; i++)
            if (pooled[i].second)
                rank_sum += midrank;
        tie_term += t * t * t - t;
        start = end;
    }
    free(pooled);
    double u = rank_sum - 0.5 * m * (m + 1.0);
    fv_compare_u_test test = {.u = u, .p_value = 1};
    if (tie_term == 0 && total <= FV_COMPARE_EXACT_LIMIT) {
        double lower = 1, upper = 1;
        FV_TRY(exact_tails(n, m, u, &lower, &upper));
        test.exact = true;
        test.p_value = fmin(1.0, 2 * fmin(lower, upper));
    } else {
        double mean = 0.5 * n * m;
        double variance = n * (double)m / 12.0 *
                          ((total + 1.0) - tie_term / ((double)total * (total - 1.0)));
        if (variance > 0) {
            test.z = fmax(0.0, fabs(u - mean) - 0.5) / sqrt(variance);
            test.p_value = fmin(1.0, erfc(test.z / sqrt(2.0)));
        }
    }
    *result = test;
    return FV_OK;
}

/* --------------------------------------------- one case's timings */

const char *fv_compare_perf_name(fv_compare_perf perf)
{
    switch (perf) {
    case FV_COMPARE_NOT_TIMED: return "not timed";
    case FV_COMPARE_INCONCLUSIVE: return "inconclusive";
    case FV_COMPARE_UNCHANGED: return "unchanged";
    case FV_COMPARE_REGRESSION: return "regression";
    case FV_COMPARE_IMPROVEMENT: return "improvement";
    }
    return "unknown";
}

/* The verdict once both sides have medians: the test and the threshold. */
static fv_status decide(const double *old_sorted, const double *new_sorted, double threshold,
                        double alpha, fv_compare_verdict *v)
{
    if (v->old_count < FV_COMPARE_MIN_SAMPLES || v->new_count < FV_COMPARE_MIN_SAMPLES ||
        !(v->old_median_ms > 0) || !(v->new_median_ms > 0)) {
        v->kind = FV_COMPARE_INCONCLUSIVE;
        return FV_OK;
    }
    fv_compare_u_test test;
    FV_TRY(fv_compare_mann_whitney(old_sorted, v->old_count, new_sorted, v->new_count, &test));
    v->p_value = test.p_value;
    v->u = test.u;
    v->exact = test.exact;
    v->kind = FV_COMPARE_UNCHANGED;
    if (test.p_value < alpha && v->ratio > 1 + threshold)
        v->kind = FV_COMPARE_REGRESSION;
    else if (test.p_value < alpha && v->ratio < 1 / (1 + threshold))
        v->kind = FV_COMPARE_IMPROVEMENT;
    return FV_OK;
}

fv_status fv_compare_samples(const double *old_ms, int old_count, const double *new_ms,
                             int new_count, double threshold, double alpha,
                             fv_compare_verdict *verdict)
{
    if (verdict == NULL || old_count < 0 || new_count < 0 || (old_ms == NULL && old_count > 0) ||
        (new_ms == NULL && new_count > 0) || !(threshold >= 0) || !isfinite(threshold) ||
        !(alpha > 0 && alpha < 1))
        FV_FAIL(FV_ERR_INTERNAL, "fv_compare_samples: bad arguments");
    double *old_sorted = malloc(sizeof(double) * (size_t)(old_count + 1));
    double *new_sorted = malloc(sizeof(double) * (size_t)(new_count + 1));
    if (old_sorted == NULL || new_sorted == NULL) {
        free(old_sorted);
        free(new_sorted);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    fv_compare_verdict v = {.kind = FV_COMPARE_NOT_TIMED, .old_median_ms = NAN,
                            .new_median_ms = NAN, .ratio = NAN, .p_value = 1};
    v.old_count = keep_finite_sorted(old_ms, old_count, old_sorted);
    v.new_count = keep_finite_sorted(new_ms, new_count, new_sorted);
    if (v.old_count > 0)
        v.old_median_ms = fv_sorted_median(old_sorted, (size_t)v.old_count);
    if (v.new_count > 0)
        v.new_median_ms = fv_sorted_median(new_sorted, (size_t)v.new_count);
    if (v.old_median_ms > 0 && v.new_median_ms > 0)
        v.ratio = v.new_median_ms / v.old_median_ms;
    fv_status status = FV_OK;
    if (v.old_count > 0 && v.new_count > 0)
        status = decide(old_sorted, new_sorted, threshold, alpha, &v);
    free(old_sorted);
    free(new_sorted);
    FV_TRY(status);
    *verdict = v;
    return FV_OK;
}

/* ------------------------------------------------------- loading */

/* Seconds between two ISO 8601 UTC stamps ("2024-05-01T12:34:56Z"), or -1. */
static double elapsed_between(const char *start, const char *end)
{
    struct tm start_tm = {0}, end_tm = {0};
    if (start == NULL || end == NULL)
        return -1;
    const char *start_rest = strptime(start, "%Y-%m-%dT%H:%M:%SZ", &start_tm);
    const char *end_rest = strptime(end, "%Y-%m-%dT%H:%M:%SZ", &end_tm);
    if (start_rest == NULL || end_rest == NULL || *start_rest || *end_rest)
        return -1;
    double seconds = difftime(timegm(&end_tm), timegm(&start_tm));
    return seconds >= 0 ? seconds : -1;
}

static fv_status load_samples(fv_archive_reader *reader, fv_compare_side *side)
{
    double buffer[FV_RESULT_MAX_SAMPLES];
    int64_t capacity = 0, used = 0;
    side->sample_start = calloc((size_t)side->count + 1, sizeof(int64_t));
    FV_CHECK_ALLOC(side->sample_start);
    for (int64_t row = 0; row < side->count; row++) {
        int count = 0;
        FV_TRY(fv_archive_read_samples(reader, row, buffer, FV_RESULT_MAX_SAMPLES, &count));
        if (used + count > capacity) {
            int64_t grown_capacity = capacity ? 2 * capacity : 1024;
            while (grown_capacity < used + count)
                grown_capacity *= 2;
            double *grown = realloc(side->samples, sizeof(double) * (size_t)grown_capacity);
            FV_CHECK_ALLOC(grown);
            side->samples = grown;
            capacity = grown_capacity;
        }
        if (count > 0)
            memcpy(side->samples + used, buffer, sizeof(double) * (size_t)count);
        used += count;
        side->sample_start[row + 1] = used;
    }
    return FV_OK;
}

static fv_status load_from(fv_archive_reader *reader, fv_compare_side *side)
{
    fv_archive_provenance provenance;
    fv_archive_read_provenance(reader, &provenance);
    snprintf(side->mode, sizeof side->mode, "%s", provenance.mode ? provenance.mode : "");
    snprintf(side->l2_flush, sizeof side->l2_flush, "%s",
             provenance.l2_flush ? provenance.l2_flush : "");
    side->elapsed_seconds = elapsed_between(provenance.started_at, provenance.finished_at);
    side->count = fv_archive_row_count(reader);
    side->results = calloc((size_t)side->count + 1, sizeof(fv_result));
    FV_CHECK_ALLOC(side->results);
    if (side->count > 0)
        FV_TRY(fv_archive_read_rows(reader, 0, side->count, side->results));
    return load_samples(reader, side);
}

fv_status fv_compare_load(const char *path, fv_compare_side *side)
{
    memset(side, 0, sizeof *side);
    if (path == NULL)
        FV_FAIL(FV_ERR_INTERNAL, "fv_compare_load: no path");
    fv_archive_reader *reader = NULL;
    fv_status status = fv_archive_open_read(path, &reader);
    if (status == FV_OK) {
        snprintf(side->label, sizeof side->label, "%s", path);
        status = load_from(reader, side);
        if (status != FV_OK)
            fv_error_prefix("reading %s", path);
        fv_archive_close_read(reader);
    }
    if (status != FV_OK) {
        fv_error_trace(__FILE__, __LINE__);
        fv_compare_side_free(side);
    }
    return status;
}

void fv_compare_side_free(fv_compare_side *side)
{
    if (side == NULL)
        return;
    free(side->results);
    free(side->samples);
    free(side->sample_start);
    memset(side, 0, sizeof *side);
}

/* ------------------------------------------------------- matching */

typedef struct indexed_row {
    const char *case_id;
    int64_t row;
} indexed_row;

static int compare_indexed_rows(const void *a, const void *b)
{
    const indexed_row *x = a, *y = b;
    int order = strncmp(x->case_id, y->case_id, sizeof(((fv_result *)0)->case_id));
    return order ? order : (x->row > y->row) - (x->row < y->row);
}

/* The side's rows sorted by case id, one per id (the last row of an id);
 * *count receives how many. */
static fv_status unique_rows(const fv_compare_side *side, indexed_row **rows, int64_t *count)
{
    *rows = calloc((size_t)side->count + 1, sizeof(indexed_row));
    FV_CHECK_ALLOC(*rows);
    for (int64_t i = 0; i < side->count; i++)
        (*rows)[i] = (indexed_row){side->results[i].case_id, i};
    qsort(*rows, (size_t)side->count, sizeof(indexed_row), compare_indexed_rows);
    int64_t kept = 0;
    for (int64_t i = 0; i < side->count; i++) {
        bool last_of_id = i + 1 == side->count ||
                          strncmp((*rows)[i].case_id, (*rows)[i + 1].case_id,
                                  sizeof(((fv_result *)0)->case_id)) != 0;
        if (last_of_id)
            (*rows)[kept++] = (*rows)[i];
    }
    *count = kept;
    return FV_OK;
}

static bool is_new_failure(int32_t old_status, int32_t new_status)
{
    if (fv_result_status_failed(new_status))
        return !fv_result_status_failed(old_status);
    return fv_result_status_passed(old_status) && new_status == FV_RESULT_UNSUPPORTED;
}

static fv_status compare_timings(const fv_compare_side *old_side, const fv_compare_side *new_side,
                                 const fv_compare_options *options, fv_compare_case *c)
{
    const int64_t *old_start = old_side->sample_start, *new_start = new_side->sample_start;
    int old_count = (int)(old_start[c->old_row + 1] - old_start[c->old_row]);
    int new_count = (int)(new_start[c->new_row + 1] - new_start[c->new_row]);
    return fv_compare_samples(old_side->samples + old_start[c->old_row], old_count,
                              new_side->samples + new_start[c->new_row], new_count,
                              options->threshold, options->alpha, &c->perf);
}

/* Fills in a case from its rows (either may be -1). */
static fv_status fill_case(const fv_compare_side *old_side, const fv_compare_side *new_side,
                           const fv_compare_options *options, int64_t old_row, int64_t new_row,
                           fv_compare_case *c)
{
    const fv_result *old_result = old_row >= 0 ? &old_side->results[old_row] : NULL;
    const fv_result *new_result = new_row >= 0 ? &new_side->results[new_row] : NULL;
    const fv_result *named = new_result ? new_result : old_result;
    memset(c, 0, sizeof *c);
    snprintf(c->case_id, sizeof c->case_id, "%.*s", (int)sizeof named->case_id - 1,
             named->case_id);
    snprintf(c->family, sizeof c->family, "%.*s", (int)sizeof named->family - 1, named->family);
    c->old_row = old_row;
    c->new_row = new_row;
    c->old_status = old_result ? old_result->status : -1;
    c->new_status = new_result ? new_result->status : -1;
    c->perf = (fv_compare_verdict){.kind = FV_COMPARE_NOT_TIMED, .old_median_ms = NAN,
                                   .new_median_ms = NAN, .ratio = NAN, .p_value = 1};
    if (new_result != NULL)
        c->new_failure = is_new_failure(c->old_status, c->new_status);
    if (old_result == NULL || new_result == NULL)
        return FV_OK;
    size_t hashes = sizeof old_result->kernel_hashes;
    c->kernel_changed = old_result->kernel_hashes[0] && new_result->kernel_hashes[0] &&
                        strncmp(old_result->kernel_hashes, new_result->kernel_hashes, hashes);
    return compare_timings(old_side, new_side, options, c);
}

static void count_case(fv_compare_report *report, const fv_compare_case *c)
{
    report->new_failures += c->new_failure;
    report->kernel_changes += c->kernel_changed;
    report->new_cases += c->old_row < 0;
    report->missing_cases += c->new_row < 0;
    if (c->old_row < 0 || c->new_row < 0)
        return;
    switch (c->perf.kind) {
    case FV_COMPARE_NOT_TIMED: report->not_timed++; break;
    case FV_COMPARE_INCONCLUSIVE: report->inconclusive++; break;
    case FV_COMPARE_UNCHANGED: report->unchanged++; break;
    case FV_COMPARE_REGRESSION: report->regressions++; break;
    case FV_COMPARE_IMPROVEMENT: report->improvements++; break;
    }
}

/* Merges the two sorted id lists into report->cases. */
static fv_status match_cases(const fv_compare_side *old_side, const fv_compare_side *new_side,
                             const indexed_row *old_rows, int64_t old_count,
                             const indexed_row *new_rows, int64_t new_count,
                             fv_compare_report *report)
{
    report->cases = calloc((size_t)(old_count + new_count) + 1, sizeof(fv_compare_case));
    FV_CHECK_ALLOC(report->cases);
    int64_t i = 0, j = 0;
    while (i < old_count || j < new_count) {
        int order = i == old_count   ? 1
                    : j == new_count ? -1
                                     : strncmp(old_rows[i].case_id, new_rows[j].case_id,
                                               sizeof(((fv_result *)0)->case_id));
        int64_t old_row = order <= 0 ? old_rows[i++].row : -1;
        int64_t new_row = order >= 0 ? new_rows[j++].row : -1;
        fv_compare_case *c = &report->cases[report->case_count++];
        FV_TRY(fill_case(old_side, new_side, &report->options, old_row, new_row, c));
        count_case(report, c);
    }
    return FV_OK;
}

/* ------------------------------------------------------- families */

static int compare_family_names(const void *a, const void *b)
{
    return strncmp(((const fv_compare_family *)a)->family, ((const fv_compare_family *)b)->family,
                   sizeof(((fv_compare_family *)0)->family));
}

static fv_status summarize_families(fv_compare_report *report)
{
    report->families = calloc((size_t)report->case_count + 1, sizeof(fv_compare_family));
    FV_CHECK_ALLOC(report->families);
    fv_compare_family *families = report->families;
    for (int64_t i = 0; i < report->case_count; i++)
        memcpy(families[i].family, report->cases[i].family, sizeof families[i].family);
    qsort(families, (size_t)report->case_count, sizeof *families, compare_family_names);
    int count = 0;
    for (int64_t i = 0; i < report->case_count; i++)
        if (count == 0 || compare_family_names(&families[count - 1], &families[i]) != 0)
            families[count++] = families[i];
    report->family_count = count;
    double *log_sums = calloc((size_t)count + 1, sizeof(double));
    FV_CHECK_ALLOC(log_sums);
    for (int64_t i = 0; i < report->case_count; i++) {
        const fv_compare_case *c = &report->cases[i];
        fv_compare_family key = {0};
        memcpy(key.family, c->family, sizeof key.family);
        fv_compare_family *family =
            bsearch(&key, families, (size_t)count, sizeof key, compare_family_names);
        if (family == NULL)
            continue;
        family->regressions += c->perf.kind == FV_COMPARE_REGRESSION;
        family->improvements += c->perf.kind == FV_COMPARE_IMPROVEMENT;
        if (isfinite(c->perf.ratio) && c->perf.ratio > 0) {
            log_sums[family - families] += log(c->perf.ratio);
            family->ratio_count++;
        }
    }
    for (int f = 0; f < count; f++)
        families[f].geomean_ratio = families[f].ratio_count > 0
                                        ? exp(log_sums[f] / families[f].ratio_count)
                                        : NAN;
    free(log_sums);
    return FV_OK;
}

/* ------------------------------------------------------- the report */

fv_compare_options fv_compare_default_options(void)
{
    return (fv_compare_options){.threshold = FV_COMPARE_DEFAULT_THRESHOLD,
                                .alpha = FV_COMPARE_DEFAULT_ALPHA};
}

fv_status fv_compare_sides(const fv_compare_side *old_side, const fv_compare_side *new_side,
                           const fv_compare_options *options, fv_compare_report *report)
{
    if (report == NULL)
        FV_FAIL(FV_ERR_INTERNAL, "fv_compare_sides: no report");
    memset(report, 0, sizeof *report);
    if (old_side == NULL || new_side == NULL || options == NULL || old_side->count < 0 ||
        new_side->count < 0 ||
        (old_side->count > 0 && (old_side->results == NULL || old_side->sample_start == NULL)) ||
        (new_side->count > 0 && (new_side->results == NULL || new_side->sample_start == NULL)) ||
        !(options->threshold >= 0) || !isfinite(options->threshold) ||
        !(options->alpha > 0 && options->alpha < 1))
        FV_FAIL(FV_ERR_INTERNAL, "fv_compare_sides: bad arguments");
    report->options = *options;
    report->old_side = old_side;
    report->new_side = new_side;
    indexed_row *old_rows = NULL, *new_rows = NULL;
    int64_t old_count = 0, new_count = 0;
    fv_status status;
    FV_TRY_GOTO(status, unique_rows(old_side, &old_rows, &old_count), done);
    FV_TRY_GOTO(status, unique_rows(new_side, &new_rows, &new_count), done);
    FV_TRY_GOTO(status, match_cases(old_side, new_side, old_rows, old_count, new_rows,
                                    new_count, report), done);
    FV_TRY_GOTO(status, summarize_families(report), done);
done:
    free(old_rows);
    free(new_rows);
    if (status != FV_OK)
        fv_compare_report_free(report);
    return status;
}

fv_status fv_compare_archives(const char *old_path, const char *new_path,
                              const fv_compare_options *options, fv_compare_report *report)
{
    if (report == NULL)
        FV_FAIL(FV_ERR_INTERNAL, "fv_compare_archives: no report");
    memset(report, 0, sizeof *report);
    fv_compare_options defaults = fv_compare_default_options();
    fv_compare_side sides[2];
    FV_TRY(fv_compare_load(old_path, &sides[0]));
    fv_status status = fv_compare_load(new_path, &sides[1]);
    if (status != FV_OK) {
        fv_compare_side_free(&sides[0]);
        FV_TRY(status);
    }
    /* The report is zeroed by fv_compare_sides: keep the sides aside until then. */
    fv_compare_report compared;
    status = fv_compare_sides(&sides[0], &sides[1], options ? options : &defaults, &compared);
    if (status != FV_OK) {
        fv_compare_side_free(&sides[0]);
        fv_compare_side_free(&sides[1]);
        FV_TRY(status);
    }
    *report = compared;
    report->loaded[0] = sides[0];
    report->loaded[1] = sides[1];
    report->old_side = &report->loaded[0];
    report->new_side = &report->loaded[1];
    return FV_OK;
}

void fv_compare_report_free(fv_compare_report *report)
{
    if (report == NULL)
        return;
    free(report->cases);
    free(report->families);
    fv_compare_side_free(&report->loaded[0]);
    fv_compare_side_free(&report->loaded[1]);
    memset(report, 0, sizeof *report);
}

int fv_compare_exit_status(const fv_compare_report *report)
{
    return report->new_failures > 0 || report->regressions > 0 ? 1 : 0;
}

/* ------------------------------------------------------- printing */

/* A field printed on one line: control characters become spaces. */
static void print_flat(FILE *stream, const char *text, size_t size)
{
    for (size_t i = 0; i < size && text[i]; i++)
        fputc((unsigned char)text[i] < 0x20 ? ' ' : text[i], stream);
}

static const char *plural(int64_t count, const char *singular, const char *plural_form)
{
    return count == 1 ? singular : plural_form;
}

static void print_timing(FILE *stream, const fv_compare_case *c)
{
    const fv_compare_verdict *v = &c->perf;
    fprintf(stream, "  %-52s %10.4f ms -> %10.4f ms  %+7.1f%%", c->case_id, v->old_median_ms,
            v->new_median_ms, (v->ratio - 1) * 100);
    if (v->kind != FV_COMPARE_INCONCLUSIVE)
        fprintf(stream, "  p=%.2g%s", v->p_value, v->exact ? " (exact)" : "");
    fprintf(stream, "  %d/%d samples\n", v->old_count, v->new_count);
}

static void print_new_failures(FILE *stream, const fv_compare_report *report)
{
    if (report->new_failures == 0)
        return;
    fprintf(stream, "\nnew failures (%lld):\n", (long long)report->new_failures);
    for (int64_t i = 0; i < report->case_count; i++) {
        const fv_compare_case *c = &report->cases[i];
        if (!c->new_failure)
            continue;
        const fv_result *r = &report->new_side->results[c->new_row];
        fprintf(stream, "  %-11s %-52s was %s", status_name(c->new_status), c->case_id,
                c->old_row < 0 ? "not in OLD" : status_name(c->old_status));
        if (r->stage[0] || r->message[0]) {
            fprintf(stream, "\n              ");
            print_flat(stream, r->stage, sizeof r->stage);
            fprintf(stream, ": ");
            print_flat(stream, r->message, sizeof r->message);
        }
        if (r->repro[0]) {
            fprintf(stream, "\n              repro: ");
            print_flat(stream, r->repro, sizeof r->repro);
        }
        fprintf(stream, "\n");
    }
}

static void print_timings(FILE *stream, const fv_compare_report *report, fv_compare_perf kind,
                          int64_t count, const char *title)
{
    if (count == 0)
        return;
    fprintf(stream, "\n%s (%lld):\n", title, (long long)count);
    for (int64_t i = 0; i < report->case_count; i++)
        if (report->cases[i].old_row >= 0 && report->cases[i].new_row >= 0 &&
            report->cases[i].perf.kind == kind)
            print_timing(stream, &report->cases[i]);
}

static void print_kernel_changes(FILE *stream, const fv_compare_report *report)
{
    if (report->kernel_changes == 0)
        return;
    fprintf(stream, "\nkernel changes (%lld): generated CUDA differs; "
                    "h5dump -d /kernels/HASH ARCHIVE prints a kernel\n",
            (long long)report->kernel_changes);
    for (int64_t i = 0; i < report->case_count; i++) {
        const fv_compare_case *c = &report->cases[i];
        if (!c->kernel_changed)
            continue;
        const fv_result *old_result = &report->old_side->results[c->old_row];
        const fv_result *new_result = &report->new_side->results[c->new_row];
        fprintf(stream, "  %-52s ", c->case_id);
        print_flat(stream, old_result->kernel_hashes, sizeof old_result->kernel_hashes);
        fprintf(stream, " -> ");
        print_flat(stream, new_result->kernel_hashes, sizeof new_result->kernel_hashes);
        fprintf(stream, "\n");
    }
}

static void print_presence(FILE *stream, const fv_compare_report *report)
{
    if (report->new_cases > 0) {
        fprintf(stream, "\nnew cases (%lld): in NEW, not in OLD\n", (long long)report->new_cases);
        for (int64_t i = 0; i < report->case_count; i++)
            if (report->cases[i].old_row < 0)
                fprintf(stream, "  %-52s %s\n", report->cases[i].case_id,
                        status_name(report->cases[i].new_status));
    }
    if (report->missing_cases > 0) {
        fprintf(stream, "\nmissing cases (%lld): in OLD, not in NEW\n",
                (long long)report->missing_cases);
        for (int64_t i = 0; i < report->case_count; i++)
            if (report->cases[i].new_row < 0)
                fprintf(stream, "  %-52s was %s\n", report->cases[i].case_id,
                        status_name(report->cases[i].old_status));
    }
}

static void print_families(FILE *stream, const fv_compare_report *report)
{
    if (report->family_count == 0)
        return;
    fprintf(stream, "\ngeomean of NEW/OLD median kernel time per family (below 1 is faster):\n");
    for (int f = 0; f < report->family_count; f++) {
        const fv_compare_family *family = &report->families[f];
        fprintf(stream, "  %-28s ", family->family[0] ? family->family : "(none)");
        if (family->ratio_count == 0) {
            fprintf(stream, "%8s            no case timed in both runs\n", "-");
            continue;
        }
        fprintf(stream, "%8.4f  (%+6.1f%%)  %d %s, %d %s, %d %s\n", family->geomean_ratio,
                (family->geomean_ratio - 1) * 100, family->ratio_count,
                plural(family->ratio_count, "case", "cases"), family->regressions,
                plural(family->regressions, "regression", "regressions"), family->improvements,
                plural(family->improvements, "improvement", "improvements"));
    }
}

static void print_header(FILE *stream, const fv_compare_report *report)
{
    const fv_compare_side *old_side = report->old_side, *new_side = report->new_side;
    fprintf(stream, "OLD %s (%s, %lld rows)\nNEW %s (%s, %lld rows)\n", old_side->label,
            old_side->mode[0] ? old_side->mode : "mode unknown", (long long)old_side->count,
            new_side->label, new_side->mode[0] ? new_side->mode : "mode unknown",
            (long long)new_side->count);
    fprintf(stream,
            "regression: two-sided Mann-Whitney U p < %g and median slower by more than %g%%, "
            "with at least %d samples per side\n",
            report->options.alpha, report->options.threshold * 100, FV_COMPARE_MIN_SAMPLES);
    if (old_side->mode[0] && new_side->mode[0] && strcmp(old_side->mode, new_side->mode) != 0)
        fprintf(stream, "note: the runs' modes differ (%s, %s): only cases timed in both "
                        "are compared for performance\n",
                old_side->mode, new_side->mode);
    if (old_side->l2_flush[0] && new_side->l2_flush[0] &&
        strcmp(old_side->l2_flush, new_side->l2_flush) != 0)
        fprintf(stream, "note: the runs emptied the L2 differently before each timed run "
                        "(OLD --flush %s, NEW --flush %s): their times differ by the flush as "
                        "well as the kernels\n",
                old_side->l2_flush, new_side->l2_flush);
}

void fv_compare_print(const fv_compare_report *report, FILE *stream)
{
    print_header(stream, report);
    print_new_failures(stream, report);
    print_timings(stream, report, FV_COMPARE_REGRESSION, report->regressions, "regressions");
    print_timings(stream, report, FV_COMPARE_IMPROVEMENT, report->improvements, "improvements");
    char title[96];
    snprintf(title, sizeof title, "inconclusive: fewer than %d samples on a side",
             FV_COMPARE_MIN_SAMPLES);
    print_timings(stream, report, FV_COMPARE_INCONCLUSIVE, report->inconclusive, title);
    print_kernel_changes(stream, report);
    print_presence(stream, report);
    print_families(stream, report);
    fprintf(stream,
            "\nsummary: %lld new %s, %lld %s, %lld %s, %lld inconclusive, %lld kernel %s, "
            "%lld new %s, %lld missing; %lld unchanged, %lld not timed\n",
            (long long)report->new_failures, plural(report->new_failures, "failure", "failures"),
            (long long)report->regressions,
            plural(report->regressions, "regression", "regressions"),
            (long long)report->improvements,
            plural(report->improvements, "improvement", "improvements"),
            (long long)report->inconclusive, (long long)report->kernel_changes,
            plural(report->kernel_changes, "change", "changes"), (long long)report->new_cases,
            plural(report->new_cases, "case", "cases"), (long long)report->missing_cases,
            (long long)report->unchanged, (long long)report->not_timed);
}

/* ------------------------------------------------------- JUnit */

fv_status fv_compare_write_junit(const fv_compare_report *report, const char *path)
{
    int64_t present = report->case_count - report->missing_cases;
    if (present > INT32_MAX || report->regressions > INT32_MAX)
        FV_FAIL(FV_ERR_INTERNAL, "too many cases for a JUnit report");
    fv_result *results = calloc((size_t)present + 1, sizeof(fv_result));
    fv_junit_regression *regressions =
        calloc((size_t)report->regressions + 1, sizeof(fv_junit_regression));
    if (results == NULL || regressions == NULL) {
        free(results);
        free(regressions);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    int result_count = 0, regression_count = 0;
    for (int64_t i = 0; i < report->case_count; i++) {
        const fv_compare_case *c = &report->cases[i];
        if (c->new_row < 0)
            continue;
        results[result_count++] = report->new_side->results[c->new_row];
        if (c->perf.kind != FV_COMPARE_REGRESSION || c->old_row < 0)
            continue;
        fv_junit_regression *g = &regressions[regression_count++];
        snprintf(g->case_id, sizeof g->case_id, "%s", c->case_id);
        snprintf(g->family, sizeof g->family, "%s", c->family);
        g->old_median_ms = c->perf.old_median_ms;
        g->new_median_ms = c->perf.new_median_ms;
        g->p_value = c->perf.p_value;
        g->alpha = report->options.alpha;
        g->threshold = report->options.threshold;
        g->old_samples = c->perf.old_count;
        g->new_samples = c->perf.new_count;
    }
    fv_status status = fv_junit_write(path, "fuservalidate", results, result_count, regressions,
                                      regression_count, report->new_side->elapsed_seconds);
    free(results);
    free(regressions);
    FV_TRY(status);
    return FV_OK;
}
