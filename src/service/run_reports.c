/* run_reports.c: what `run` writes for CI once its cases are over (rank 0):
 * the comparison with --baseline OLD.h5, printed like `fuservalidate
 * compare` (a new failure or a performance regression makes the exit status
 * 1), and the JUnit report of --junit FILE (with the baseline's
 * regressions as failures when there is a baseline). */
#include <stdio.h>

#include "service/compare.h"
#include "service/junit.h"
#include "service/run_internal.h"

/* The baseline comparison reads this run's rows and samples back from its
 * archive (flushed first), so resumed sessions' rows count too. */
static fv_status compare_with_baseline(const fv_run_reports *reports, fv_archive *archive,
                                       int *exit_status)
{
    FV_TRY(fv_archive_flush(archive));
    fv_compare_options options = fv_compare_default_options();
    if (reports->threshold >= 0)
        options.threshold = reports->threshold;
    if (reports->alpha > 0)
        options.alpha = reports->alpha;
    fv_compare_report report;
    FV_TRY(fv_compare_archives(reports->baseline_path, reports->archive_path, &options, &report));
    printf("\nagainst the baseline %s:\n", reports->baseline_path);
    fv_compare_print(&report, stdout);
    fflush(stdout);
    if (fv_compare_exit_status(&report) != 0 && *exit_status == 0)
        *exit_status = 1;
    fv_status status = FV_OK;
    if (reports->junit_path != NULL)
        status = fv_compare_write_junit(&report, reports->junit_path);
    fv_compare_report_free(&report);
    return status;
}

fv_status fv_run_write_reports(const fv_run_reports *reports, fv_archive *archive,
                               const fv_result *results, int32_t count, int *exit_status)
{
    if (reports->baseline_path != NULL && archive != NULL)
        FV_TRY(compare_with_baseline(reports, archive, exit_status));
    else if (reports->junit_path != NULL)
        FV_TRY(fv_junit_write(reports->junit_path, "fuservalidate", results, (int)count, NULL, 0,
                              -1.0));
    if (reports->junit_path != NULL)
        printf("JUnit report: %s\n", reports->junit_path);
    return FV_OK;
}
