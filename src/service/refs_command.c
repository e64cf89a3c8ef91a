/* refs_command.c: `fuservalidate refs PATH...` builds the reference store for
 * the selected cases, or verifies what is there (rebuilding corrupt entries),
 * and reports time and size per case. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "service/commands.h"
#include "validate/references.h"

void fv_command_print_case_errors(const fv_case_list *list)
{
    for (int32_t i = 0; i < list->error_count; i++)
        fprintf(stderr, "error: %s\n", list->errors[i].message);
}

int64_t fv_command_peak_memory(void)
{
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0)
        return -1;
    return (int64_t)usage.ru_maxrss * 1024;
}

static double elapsed_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + 1e-9 * (double)(now.tv_nsec - start->tv_nsec);
}

typedef struct refs_tally {
    int outcomes[FV_REF_EVALUATED + 1];
    int failed;
} refs_tally;

/* Harness-level failures end the command; a case that cannot be evaluated
 * is reported and the others go on. */
static bool is_harness_failure(fv_status status)
{
    return status == FV_ERR_IO || status == FV_ERR_HDF5 || status == FV_ERR_NOMEM;
}

static fv_status refs_one(fv_store *store, const fv_case *c, const fv_options *options,
                          int index, int count, refs_tally *tally)
{
    fv_eval_options eval = {.threads = options->threads, .mode = FV_EVAL_REFERENCE,
                            .memory_budget = options->memory_budget};
    fv_ref_report report;
    fv_status status = fv_ref_ensure(store, c, &eval, options->verify, options->include_large,
                                     &report);
    if (status != FV_OK) {
        printf("[%*d/%d] %-10s %s: %s\n", count >= 100 ? 3 : 2, index + 1, count, "error", c->id,
               fv_error_message());
        tally->failed++;
        return is_harness_failure(status) ? status : FV_OK;
    }
    tally->outcomes[report.outcome]++;
    printf("[%*d/%d] %-10s %-48s %8.2f s %10.1f MiB\n", count >= 100 ? 3 : 2, index + 1, count,
           fv_ref_outcome_name(report.outcome), c->id, report.seconds,
           (double)report.bytes / (1 << 20));
    if (report.outcome == FV_REF_REBUILT)
        printf("           the stored entry was corrupt: %s\n", report.detail);
    fflush(stdout);
    return FV_OK;
}

int fv_command_refs(const fv_options *options)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    fv_store *store = NULL;
    if (fv_store_open(options->refs_dir, options->max_ref_bytes, &store) != FV_OK) {
        fprintf(stderr, "fuservalidate refs: %s\n", fv_error_message());
        return 2;
    }
    fv_case_list list = {0};
    fv_case **cases = NULL;
    int32_t count = 0;
    int exit_code = 0;
    if (fv_options_select_cases(options, &list, &cases, &count) != FV_OK) {
        fprintf(stderr, "fuservalidate refs: %s\n", fv_error_message());
        exit_code = 2;
        goto done;
    }
    fv_command_print_case_errors(&list);
    printf("reference store %s (keeps cases up to %.1f GiB), %d cases\n", options->refs_dir,
           (double)options->max_ref_bytes / (1 << 30), (int)count);
    refs_tally tally = {0};
    for (int32_t i = 0; i < count; i++) {
        if (refs_one(store, cases[i], options, (int)i, (int)count, &tally) != FV_OK) {
            fprintf(stderr, "fuservalidate refs: stopping: %s\n", fv_error_message());
            exit_code = 2;
            goto done;
        }
    }
    printf("%d built, %d rebuilt, %d cached, %d on demand, %d evaluated, %d failed, %d unreadable "
           "files; %.1f s, peak memory %.1f MiB\n",
           tally.outcomes[FV_REF_BUILT], tally.outcomes[FV_REF_REBUILT],
           tally.outcomes[FV_REF_CACHED], tally.outcomes[FV_REF_ON_DEMAND],
           tally.outcomes[FV_REF_EVALUATED], tally.failed, (int)list.error_count,
           elapsed_since(&start), (double)fv_command_peak_memory() / (1 << 20));
    exit_code = (tally.failed > 0 || list.error_count > 0) ? 1 : 0;
done:
    free(cases);
    fv_case_list_free(&list);
    fv_store_close(store);
    return exit_code;
}
