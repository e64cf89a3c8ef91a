/* progress.c: counting finished cases and formatting the progress line. */
#include "service/progress.h"

#include <stdio.h>
#include <string.h>

#include "service/result.h"

void fv_progress_start(fv_progress *progress, int64_t total, int64_t earlier, double now)
{
    memset(progress, 0, sizeof *progress);
    progress->total = total;
    progress->earlier = earlier;
    progress->started = now;
}

void fv_progress_count(fv_progress *progress, int status)
{
    progress->done++;
    if (fv_result_status_passed(status))
        progress->passed++;
    else if (fv_result_status_failed(status))
        progress->failed++;
}

/* "1:02:03" or "2:03". */
static void format_duration(double seconds, char *text, size_t size)
{
    long whole = seconds < 0 ? 0 : seconds > 359999999.0 ? 359999999 : (long)(seconds + 0.5);
    if (whole >= 3600)
        snprintf(text, size, "%ld:%02ld:%02ld", whole / 3600, whole / 60 % 60, whole % 60);
    else
        snprintf(text, size, "%ld:%02ld", whole / 60, whole % 60);
}

void fv_progress_format(const fv_progress *progress, double now, char *line, size_t size)
{
    int64_t this_session = progress->done - progress->earlier;
    double elapsed = now - progress->started;
    char rate[32] = "- cases/s", left[32] = "- left";
    if (this_session > 0 && elapsed > 0) {
        double per_second = (double)this_session / elapsed;
        snprintf(rate, sizeof rate, "%.*f cases/s", per_second < 10 ? 1 : 0, per_second);
        char duration[24];
        int64_t remaining = progress->total - progress->done;
        format_duration((double)(remaining > 0 ? remaining : 0) / per_second, duration,
                        sizeof duration);
        snprintf(left, sizeof left, "%s left", duration);
    }
    snprintf(line, size, "%lld/%lld done, %lld passed, %lld failed, %s, %s",
             (long long)progress->done, (long long)progress->total,
             (long long)progress->passed, (long long)progress->failed, rate, left);
}
