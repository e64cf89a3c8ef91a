/* result.c: result status names and record helpers. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service/result.h"

static const char *const status_names[FV_RESULT_STATUS_COUNT] = {
    "pass", "fail", "error", "crash", "timeout", "unsupported", "skipped", "compiled",
};

const char *fv_result_status_name(fv_result_status status)
{
    return (unsigned)status < FV_RESULT_STATUS_COUNT ? status_names[status] : "unknown";
}

bool fv_result_status_parse(const char *name, fv_result_status *status)
{
    for (int i = 0; i < FV_RESULT_STATUS_COUNT; i++)
        if (strcmp(name, status_names[i]) == 0) {
            *status = (fv_result_status)i;
            return true;
        }
    return false;
}

bool fv_result_status_failed(int32_t status)
{
    return status == FV_RESULT_FAIL || status == FV_RESULT_ERROR || status == FV_RESULT_CRASH ||
           status == FV_RESULT_TIMEOUT;
}

bool fv_result_status_passed(int32_t status)
{
    return status == FV_RESULT_PASS || status == FV_RESULT_COMPILED;
}

void fv_result_stamp_here(fv_result *result)
{
    gethostname(result->host, sizeof result->host);
    result->host[sizeof result->host - 1] = '\0';
    result->finished_at = (double)time(NULL);
}

void fv_result_init(fv_result *result, const char *case_id, const char *family, const char *dtype,
                    const char *sizes, uint64_t seed, const char *source)
{
    memset(result, 0, sizeof *result);
    snprintf(result->case_id, sizeof result->case_id, "%s", case_id);
    snprintf(result->family, sizeof result->family, "%s", family);
    snprintf(result->dtype, sizeof result->dtype, "%s", dtype);
    snprintf(result->sizes, sizeof result->sizes, "%s", sizes);
    snprintf(result->source, sizeof result->source, "%s", source);
    snprintf(result->approach, sizeof result->approach, "auto");
    result->seed = seed;
    result->status = FV_RESULT_PASS;
    result->rank = 0;
}

void fv_result_fail(fv_result *result, fv_result_status status, const char *stage,
                    const char *message)
{
    result->status = status;
    snprintf(result->stage, sizeof result->stage, "%s", stage);
    snprintf(result->message, sizeof result->message, "%s", message);
}
