/* run_recorder.c: what rank 0 does with every finished case: one line on
 * stdout (and the failure report), a row in the archive, the progress line;
 * at the end the summary table and the failures with their repro commands. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "service/approaches.h"
#include "service/run_internal.h"

enum {
    FLUSH_ROWS = 32,
};

#define FLUSH_SECONDS 2.0
#define TERMINAL_PROGRESS_SECONDS 0.5
#define PLAIN_PROGRESS_SECONDS 30.0

void fv_run_recorder_start(fv_run_recorder *recorder, int64_t total, int64_t earlier)
{
    double now = fv_monotonic_seconds();
    fv_progress_start(&recorder->progress, total, earlier, now);
    for (int32_t i = 0; i < recorder->result_count; i++)
        fv_progress_count(&recorder->progress, recorder->results[i].status);
    recorder->last_flush = now;
    recorder->last_progress = now;
}

fv_status fv_run_recorder_keep(fv_run_recorder *recorder, const fv_result *result)
{
    if (recorder->result_count == recorder->result_capacity) {
        int32_t capacity = recorder->result_capacity ? 2 * recorder->result_capacity : 64;
        fv_result *grown = realloc(recorder->results, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        recorder->results = grown;
        recorder->result_capacity = capacity;
    }
    recorder->results[recorder->result_count++] = *result;
    return FV_OK;
}

/* ------------------------------------------------------------- printing */

/* Takes the progress line off the terminal before other output. */
static void clear_progress(fv_run_recorder *recorder)
{
    if (recorder->progress_shown) {
        fputs("\r\033[K", stdout);
        recorder->progress_shown = false;
    }
}

/* A timed case's time, bandwidth and resources. */
static void print_timing(const fv_result *r)
{
    printf("  %8.4f ms  %5.2f TB/s  %5.1f%% of copy", r->time_median_ms, r->bandwidth_gbs / 1000,
           r->percent_of_copy);
    if (r->percent_of_sized_copy > 0)
        printf(" (%5.1f%% of one this size)", r->percent_of_sized_copy);
    printf("  worst %.2f of allowed  %d regs %d spills", r->worst_ratio, (int)r->registers,
           (int)r->spill_bytes);
}

static void print_result(const fv_result *r)
{
    printf("%-11s %-46s %d kernel%s", fv_result_status_name((fv_result_status)r->status),
           r->case_id, (int)r->segment_count, r->segment_count == 1 ? " " : "s");
    bool timed = r->status == FV_RESULT_PASS ||
                 ((r->status == FV_RESULT_FAIL || r->status == FV_RESULT_SKIPPED) && r->repeats > 0);
    if (timed)
        print_timing(r);
    else if (r->status == FV_RESULT_COMPILED)
        printf("  %d registers, %d spill bytes, %d cached of %d", (int)r->registers,
               (int)r->spill_bytes, (int)r->cache_hits, (int)r->kernels);
    if (r->message[0])
        printf("\n            %s: %s", r->stage, r->message);
    printf("\n");
}

void fv_run_recorder_tick(fv_run_recorder *recorder, bool final)
{
    double now = fv_monotonic_seconds();
    double interval = recorder->terminal ? TERMINAL_PROGRESS_SECONDS : PLAIN_PROGRESS_SECONDS;
    if (!final && now - recorder->last_progress < interval)
        return;
    char line[256];
    fv_progress_format(&recorder->progress, now, line, sizeof line);
    if (recorder->terminal && !final) {
        printf("\r\033[K%s", line);
        recorder->progress_shown = true;
    } else {
        clear_progress(recorder);
        printf("progress: %s\n", line);
    }
    fflush(stdout);
    recorder->last_progress = now;
}

/* --------------------------------------------------------------- rows */

static void store_kernels(fv_run_recorder *recorder, const fv_outcome *outcome)
{
    for (int32_t i = 0; i < outcome->kernel_count; i++) {
        const fv_outcome_kernel *kernel = &outcome->kernels[i];
        fv_status status = fv_archive_add_kernel(recorder->archive, kernel->hash,
                                                 kernel->source, kernel->arch,
                                                 kernel->registers, kernel->spill_bytes,
                                                 kernel->shared_bytes, kernel->family);
        if (status != FV_OK)
            fprintf(stderr, "fuservalidate: could not store kernel %s: %s\n", kernel->hash,
                    fv_error_message());
    }
}

fv_status fv_run_recorder_flush(fv_run_recorder *recorder)
{
    FV_TRY(fv_archive_flush(recorder->archive));
    recorder->unflushed_rows = 0;
    recorder->last_flush = fv_monotonic_seconds();
    return FV_OK;
}

fv_status fv_run_record(fv_run_recorder *recorder, const fv_outcome *outcome)
{
    const fv_result *result = &outcome->result;
    clear_progress(recorder);
    print_result(result);
    if (outcome->report.length > 0)
        printf("%s            repro: %s\n", fv_text_str(&outcome->report), result->repro);
    fflush(stdout);
    FV_TRY(fv_run_recorder_keep(recorder, result));
    fv_progress_count(&recorder->progress, result->status);
    store_kernels(recorder, outcome);
    FV_TRY(fv_archive_append(recorder->archive, result, outcome->samples,
                             outcome->sample_count));
    if (++recorder->unflushed_rows >= FLUSH_ROWS ||
        fv_monotonic_seconds() - recorder->last_flush > FLUSH_SECONDS)
        FV_TRY(fv_run_recorder_flush(recorder));
    fv_run_recorder_tick(recorder, false);
    return FV_OK;
}

/* ------------------------------------------------------------ summary */

/* The median of values[0 .. count-1] (sorted in place) as text; "-" for none. */
static void format_median(double *values, int count, char *text, size_t size)
{
    fv_sort_doubles(values, (size_t)count);
    if (count > 0)
        snprintf(text, size, "%.1f", values[count / 2]);
    else
        snprintf(text, size, "-");
}

/* One line per family and dtype: counts, median % of copy and of a copy of
 * each case's size, worst ratio. */
static void print_groups(const fv_run_recorder *recorder)
{
    const fv_result *results = recorder->results;
    int32_t count = recorder->result_count;
    printf("\n%-28s %-5s %6s %6s %6s %9s %12s %12s %14s\n", "family", "dtype", "cases",
           "passed", "failed", "other", "median %copy", "median %size", "worst/allowed");
    bool *done = calloc((size_t)count + 1, sizeof(bool));
    double *percents = malloc(sizeof(double) * (size_t)(count + 1));
    double *sized_percents = malloc(sizeof(double) * (size_t)(count + 1));
    if (done == NULL || percents == NULL || sized_percents == NULL) {
        free(done);
        free(percents);
        free(sized_percents);
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        if (done[i])
            continue;
        const fv_result *first = &results[i];
        int cases = 0, passed = 0, failed = 0, percent_count = 0, sized_count = 0;
        double worst = 0;
        for (int32_t j = i; j < count; j++) {
            const fv_result *r = &results[j];
            if (done[j] || strcmp(r->family, first->family) || strcmp(r->dtype, first->dtype))
                continue;
            done[j] = true;
            cases++;
            passed += fv_result_status_passed(r->status);
            failed += fv_result_status_failed(r->status);
            worst = fmax(worst, r->worst_ratio);
            if (r->percent_of_copy > 0)
                percents[percent_count++] = r->percent_of_copy;
            if (r->percent_of_sized_copy > 0)
                sized_percents[sized_count++] = r->percent_of_sized_copy;
        }
        char median[16], sized_median[16];
        format_median(percents, percent_count, median, sizeof median);
        format_median(sized_percents, sized_count, sized_median, sizeof sized_median);
        printf("%-28s %-5s %6d %6d %6d %9d %12s %12s %14.3g\n", first->family, first->dtype,
               cases, passed, failed, cases - passed - failed, median, sized_median, worst);
    }
    free(done);
    free(percents);
    free(sized_percents);
}

void fv_run_recorder_summary(fv_run_recorder *recorder)
{
    clear_progress(recorder);
    print_groups(recorder);
    int failures = 0;
    for (int32_t i = 0; i < recorder->result_count; i++) {
        const fv_result *r = &recorder->results[i];
        if (!fv_result_status_failed(r->status))
            continue;
        if (failures++ == 0)
            printf("\nfailures:\n");
        printf("  %-11s %s\n      %s\n", fv_result_status_name((fv_result_status)r->status),
               r->case_id, r->repro);
    }
    fflush(stdout);
}

fv_status fv_run_recorder_compare_approaches(fv_run_recorder *recorder)
{
    fv_approach_row *rows;
    int32_t count;
    FV_TRY(fv_approaches_compare(recorder->results, recorder->result_count, &rows, &count));
    if (count == 0)
        return FV_OK;
    fv_approaches_print(rows, count, stdout);
    fflush(stdout);
    fv_status status = FV_OK;
    if (recorder->archive != NULL)
        status = fv_archive_write_approaches(recorder->archive, rows, count);
    free(rows);
    return status;
}

int fv_run_recorder_exit_status(const fv_run_recorder *recorder)
{
    for (int32_t i = 0; i < recorder->result_count; i++)
        if (fv_result_status_failed(recorder->results[i].status))
            return 1;
    return 0;
}

void fv_run_recorder_free(fv_run_recorder *recorder)
{
    free(recorder->results);
    recorder->results = NULL;
    recorder->result_count = recorder->result_capacity = 0;
}
