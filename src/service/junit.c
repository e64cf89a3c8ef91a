/* junit.c: the JUnit XML report: one testcase per result, failures, errors
 * and skips by status, performance regressions as failures, XML escaping of
 * every string, and an atomic write (temporary file, fsync, rename). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/file.h"
#include "common/text.h"
#include "service/junit.h"

/* What a test case holds besides its properties. */
typedef enum outcome { OUTCOME_PASS, OUTCOME_FAILURE, OUTCOME_ERROR, OUTCOME_SKIPPED } outcome;

typedef struct suite_counts {
    int tests, failures, errors, skipped;
    double seconds; /* sum of the cases' wall times */
} suite_counts;

/* ----------------------------------------------------------- escaping */

/* Length of the valid UTF-8 sequence at `bytes` (at most `available` bytes
 * long) encoding a character XML 1.0 allows, or 0 if there is none. */
static size_t valid_xml_sequence(const unsigned char *bytes, size_t available)
{
    unsigned char lead = bytes[0];
    if (lead < 0x80)
        return lead >= 0x20 || lead == '\t' || lead == '\n' || lead == '\r' ? 1 : 0;
    size_t length;
    unsigned char low = 0x80, high = 0xBF; /* allowed range of the second byte */
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0)
            low = 0xA0; /* no overlong forms */
        if (lead == 0xED)
            high = 0x9F; /* no surrogates */
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0)
            low = 0x90;
        if (lead == 0xF4)
            high = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (available < length || bytes[1] < low || bytes[1] > high)
        return 0;
    for (size_t i = 2; i < length; i++)
        if (bytes[i] < 0x80 || bytes[i] > 0xBF)
            return 0;
    /* U+FFFE and U+FFFF (EF BF BE, EF BF BF) are not XML characters. */
    if (length == 3 && lead == 0xEF && bytes[1] == 0xBF && bytes[2] >= 0xBE)
        return 0;
    return length;
}

/* Appends the first `size` bytes of `text` (or up to its NUL) escaped for an
 * attribute value (`in_attribute`) or element content. */
static void append_escaped(fv_text *out, const char *text, size_t size, bool in_attribute)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    const unsigned char *bytes = (const unsigned char *)text;
    size_t length = strnlen(text, size);
    size_t i = 0;
    while (i < length) {
        switch (bytes[i]) {
        case '&': fv_text_printf(out, "&amp;"); i++; continue;
        case '<': fv_text_printf(out, "&lt;"); i++; continue;
        case '>': fv_text_printf(out, "&gt;"); i++; continue;
        case '"': fv_text_printf(out, "&quot;"); i++; continue;
        case '\'': fv_text_printf(out, "&apos;"); i++; continue;
        /* Character references survive attribute-value normalization and
         * line-end normalization; tabs and newlines in content need none. */
        case '\r': fv_text_printf(out, "&#13;"); i++; continue;
        case '\t':
        case '\n':
            if (in_attribute) {
                fv_text_printf(out, "&#%d;", bytes[i]);
                i++;
                continue;
            }
            break;
        default: break;
        }
        size_t sequence = valid_xml_sequence(bytes + i, length - i);
        if (sequence == 0) {
            fv_text_append(out, replacement, 3);
            i++;
        } else {
            fv_text_append(out, text + i, sequence);
            i += sequence;
        }
    }
}

/* Appends ` name="escaped value"`. */
static void append_attribute(fv_text *out, const char *name, const char *value, size_t size)
{
    fv_text_printf(out, " %s=\"", name);
    append_escaped(out, value, size, true);
    fv_text_printf(out, "\"");
}

/* Appends a formatted attribute value (numbers and other ASCII we made). */
static void append_formatted_attribute(fv_text *out, const char *name, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void append_vattribute(fv_text *out, const char *name, const char *format, va_list args)
{
    fv_text value = {0};
    fv_text_vprintf(&value, format, args);
    if (value.failed)
        out->failed = true;
    append_attribute(out, name, fv_text_str(&value), value.length + 1);
    fv_text_free(&value);
}

static void append_formatted_attribute(fv_text *out, const char *name, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    append_vattribute(out, name, format, args);
    va_end(args);
}

/* A time attribute: seconds with millisecond resolution, 0 if not finite. */
static void append_seconds(fv_text *out, const char *name, double seconds)
{
    append_formatted_attribute(out, name, "%.3f", isfinite(seconds) && seconds > 0 ? seconds : 0);
}

/* ------------------------------------------------------------- cases */

static outcome outcome_of(int32_t status)
{
    switch (status) {
    case FV_RESULT_PASS:
    case FV_RESULT_COMPILED: return OUTCOME_PASS;
    case FV_RESULT_FAIL: return OUTCOME_FAILURE;
    case FV_RESULT_UNSUPPORTED:
    case FV_RESULT_SKIPPED: return OUTCOME_SKIPPED;
    default: return OUTCOME_ERROR; /* error, crash, timeout, unknown */
    }
}

static const fv_junit_regression *find_regression(const char *case_id,
                                                  const fv_junit_regression *regressions,
                                                  int regression_count)
{
    for (int i = 0; i < regression_count; i++)
        if (strncmp(regressions[i].case_id, case_id, sizeof regressions[i].case_id) == 0)
            return &regressions[i];
    return NULL;
}

static bool result_has_case(const char *case_id, const fv_result *results, int count)
{
    for (int i = 0; i < count; i++)
        if (strncmp(results[i].case_id, case_id, sizeof results[i].case_id) == 0)
            return true;
    return false;
}

static void append_property(fv_text *out, const char *name, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void append_property(fv_text *out, const char *name, const char *format, ...)
{
    fv_text_printf(out, "        <property name=\"%s\"", name);
    va_list args;
    va_start(args, format);
    append_vattribute(out, "value", format, args);
    va_end(args);
    fv_text_printf(out, "/>\n");
}

static void append_properties(fv_text *out, const fv_result *r,
                              const fv_junit_regression *regression)
{
    fv_text_printf(out, "      <properties>\n");
    append_property(out, "status", "%s", fv_result_status_name((fv_result_status)r->status));
    append_property(out, "bandwidth_gbs", "%.6g", r->bandwidth_gbs);
    append_property(out, "percent_of_copy", "%.6g", r->percent_of_copy);
    if (r->percent_of_sized_copy > 0)
        append_property(out, "percent_of_sized_copy", "%.6g", r->percent_of_sized_copy);
    append_property(out, "median_ms", "%.6g", r->time_median_ms);
    append_property(out, "worst_ratio", "%.6g", r->worst_ratio);
    append_property(out, "mismatches", "%lld", (long long)r->mismatches);
    append_property(out, "elements", "%lld", (long long)r->elements);
    append_property(out, "scheduler", "%.*s", (int)sizeof r->schedulers, r->schedulers);
    if (regression != NULL) {
        append_property(out, "baseline_median_ms", "%.6g", regression->old_median_ms);
        append_property(out, "p_value", "%.3g", regression->p_value);
    }
    fv_text_printf(out, "      </properties>\n");
}

/* One line on a regression: the medians, the change, the test. */
static void describe_regression(fv_text *text, const fv_junit_regression *g)
{
    double change = g->old_median_ms > 0 ? (g->new_median_ms / g->old_median_ms - 1) * 100 : 0;
    fv_text_printf(text,
                   "performance regression: median %.6g ms -> %.6g ms (%+.1f%%, threshold "
                   "%.3g%%), p = %.3g < alpha %.3g (two-sided Mann-Whitney U, %d and %d samples)",
                   g->old_median_ms, g->new_median_ms, change, g->threshold * 100, g->p_value,
                   g->alpha, g->old_samples, g->new_samples);
}

/* The short message attribute of a failure or error. */
static void describe_briefly(fv_text *text, const fv_result *r,
                             const fv_junit_regression *regression)
{
    if (r != NULL && r->status != FV_RESULT_PASS && r->status != FV_RESULT_COMPILED) {
        fv_text_printf(text, "%s", fv_result_status_name((fv_result_status)r->status));
        if (r->stage[0])
            fv_text_printf(text, " at %.*s", (int)sizeof r->stage, r->stage);
        if (r->status == FV_RESULT_FAIL && r->elements > 0)
            fv_text_printf(text, ": %lld of %lld elements mismatched, worst %.3g of allowed",
                           (long long)r->mismatches, (long long)r->elements, r->worst_ratio);
        if (r->message[0])
            fv_text_printf(text, ": %.*s", (int)sizeof r->message, r->message);
        if (regression != NULL)
            fv_text_printf(text, "; ");
    }
    if (regression != NULL)
        describe_regression(text, regression);
}

/* The multi-line body of a failure or error. */
static void describe_fully(fv_text *text, const fv_result *r,
                           const fv_junit_regression *regression)
{
    if (r != NULL) {
        fv_text_printf(text, "status: %s", fv_result_status_name((fv_result_status)r->status));
        if (r->stage[0])
            fv_text_printf(text, " (stage %.*s)", (int)sizeof r->stage, r->stage);
        fv_text_printf(text, "\n");
        if (r->message[0])
            fv_text_printf(text, "message: %.*s\n", (int)sizeof r->message, r->message);
        if (r->elements > 0)
            fv_text_printf(text,
                           "mismatches: %lld of %lld elements\n"
                           "worst error / allowed: %.6g (absolute %.6g, relative %.6g, "
                           "tolerance %.*s)\n",
                           (long long)r->mismatches, (long long)r->elements, r->worst_ratio,
                           r->worst_absolute, r->worst_relative, (int)sizeof r->tolerance,
                           r->tolerance);
        if (r->schedulers[0])
            fv_text_printf(text, "schedulers: %.*s\n", (int)sizeof r->schedulers, r->schedulers);
    }
    if (regression != NULL) {
        describe_regression(text, regression);
        fv_text_printf(text, "\n");
    }
    if (r != NULL && r->repro[0])
        fv_text_printf(text, "repro: %.*s\n", (int)sizeof r->repro, r->repro);
}

/* <failure>, <error> or <skipped> for a case (nothing for a pass). */
static void append_outcome(fv_text *out, outcome kind, const fv_result *r,
                           const fv_junit_regression *regression)
{
    fv_text brief = {0}, full = {0};
    describe_briefly(&brief, r, regression);
    if (kind == OUTCOME_SKIPPED) {
        fv_text_printf(out, "      <skipped");
        append_attribute(out, "message", fv_text_str(&brief), brief.length + 1);
        fv_text_printf(out, "/>\n");
    } else if (kind != OUTCOME_PASS) {
        const char *element = kind == OUTCOME_FAILURE ? "failure" : "error";
        const char *type = r != NULL && r->status != FV_RESULT_PASS &&
                                   r->status != FV_RESULT_COMPILED
                               ? fv_result_status_name((fv_result_status)r->status)
                               : "performance_regression";
        describe_fully(&full, r, regression);
        fv_text_printf(out, "      <%s", element);
        append_attribute(out, "message", fv_text_str(&brief), brief.length + 1);
        append_attribute(out, "type", type, strlen(type) + 1);
        fv_text_printf(out, ">");
        append_escaped(out, fv_text_str(&full), full.length + 1, false);
        fv_text_printf(out, "</%s>\n", element);
    }
    if (brief.failed || full.failed)
        out->failed = true;
    fv_text_free(&brief);
    fv_text_free(&full);
}

static void append_case(fv_text *out, const fv_result *r, const fv_junit_regression *regression,
                        suite_counts *counts)
{
    outcome kind = outcome_of(r->status);
    if (regression != NULL && kind == OUTCOME_PASS)
        kind = OUTCOME_FAILURE;
    const char *classname = r->family[0] ? r->family : "fuservalidate";
    fv_text_printf(out, "    <testcase");
    append_attribute(out, "classname", classname, sizeof r->family);
    append_attribute(out, "name", r->case_id, sizeof r->case_id);
    double seconds = r->wall_ms / 1000;
    append_seconds(out, "time", seconds);
    fv_text_printf(out, ">\n");
    append_properties(out, r, regression);
    append_outcome(out, kind, r, regression);
    if (r->repro[0]) {
        fv_text_printf(out, "      <system-out>");
        append_escaped(out, r->repro, sizeof r->repro, false);
        fv_text_printf(out, "</system-out>\n");
    }
    fv_text_printf(out, "    </testcase>\n");
    counts->tests++;
    counts->failures += kind == OUTCOME_FAILURE;
    counts->errors += kind == OUTCOME_ERROR;
    counts->skipped += kind == OUTCOME_SKIPPED;
    if (isfinite(seconds) && seconds > 0)
        counts->seconds += seconds;
}

/* A regression of a case that has no result: a failing test case of its own. */
static void append_lone_regression(fv_text *out, const fv_junit_regression *regression,
                                   suite_counts *counts)
{
    const char *classname = regression->family[0] ? regression->family : "fuservalidate";
    fv_text_printf(out, "    <testcase");
    append_attribute(out, "classname", classname, sizeof regression->family);
    append_attribute(out, "name", regression->case_id, sizeof regression->case_id);
    append_seconds(out, "time", 0);
    fv_text_printf(out, ">\n");
    append_outcome(out, OUTCOME_FAILURE, NULL, regression);
    fv_text_printf(out, "    </testcase>\n");
    counts->tests++;
    counts->failures++;
}

/* ------------------------------------------------------------- suite */

static void append_counts(fv_text *out, const suite_counts *counts, double seconds)
{
    append_formatted_attribute(out, "tests", "%d", counts->tests);
    append_formatted_attribute(out, "failures", "%d", counts->failures);
    append_formatted_attribute(out, "errors", "%d", counts->errors);
    append_formatted_attribute(out, "skipped", "%d", counts->skipped);
    append_seconds(out, "time", seconds);
}

static void append_suite(fv_text *out, const char *suite_name, const fv_text *cases,
                         const suite_counts *counts, double total_seconds)
{
    char timestamp[32] = "1970-01-01T00:00:00";
    char host[256] = "localhost";
    time_t now = time(NULL);
    struct tm utc;
    if (now != (time_t)-1 && gmtime_r(&now, &utc) != NULL)
        strftime(timestamp, sizeof timestamp, "%Y-%m-%dT%H:%M:%S", &utc);
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    double seconds = isfinite(total_seconds) && total_seconds >= 0 ? total_seconds
                                                                   : counts->seconds;
    /* Ant's schema gives <testsuites> no attributes. */
    fv_text_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite");
    append_attribute(out, "name", suite_name, strlen(suite_name) + 1);
    append_counts(out, counts, seconds);
    append_attribute(out, "timestamp", timestamp, sizeof timestamp);
    append_attribute(out, "hostname", host, sizeof host);
    fv_text_printf(out, " id=\"0\" package=\"fuservalidate\">\n"
                        "    <properties>\n"
                        "      <property name=\"generator\" value=\"fuservalidate %s (%s)\"/>\n"
                        "    </properties>\n",
                   FV_VERSION, FV_GIT_REVISION);
    fv_text_append(out, fv_text_str(cases), cases->length);
    fv_text_printf(out, "    <system-out/>\n    <system-err/>\n  </testsuite>\n</testsuites>\n");
}

/* ------------------------------------------------------------ writing */

fv_status fv_junit_write(const char *path, const char *suite_name, const fv_result *results,
                         int count, const fv_junit_regression *regressions,
                         int regression_count, double total_seconds)
{
    if (path == NULL || path[0] == '\0' || count < 0 || regression_count < 0 ||
        (results == NULL && count > 0) || (regressions == NULL && regression_count > 0))
        FV_FAIL(FV_ERR_INTERNAL, "fv_junit_write: bad arguments");
    if (suite_name == NULL)
        suite_name = "fuservalidate";
    suite_counts counts = {0};
    fv_text cases = {0}, document = {0};
    for (int i = 0; i < count; i++)
        append_case(&cases, &results[i],
                    find_regression(results[i].case_id, regressions, regression_count), &counts);
    for (int i = 0; i < regression_count; i++)
        if (!result_has_case(regressions[i].case_id, results, count))
            append_lone_regression(&cases, &regressions[i], &counts);
    append_suite(&document, suite_name, &cases, &counts, total_seconds);
    fv_status status = fv_text_status(&cases);
    if (status == FV_OK)
        status = fv_text_status(&document);
    if (status != FV_OK)
        fv_error_raise(status, __FILE__, __LINE__, "out of memory writing %s", path);
    else
        status = fv_file_write_atomic(path, fv_text_str(&document), document.length);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    fv_text_free(&cases);
    fv_text_free(&document);
    return status;
}
