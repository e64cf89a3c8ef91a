/* junit.h: JUnit XML reports of a run's results (and of the performance
 * regressions found against a baseline), the format CI systems read: Jenkins,
 * GitLab, GitHub test reporters.
 *
 * Layout written: what Ant's JUnit schema (also ReFrame's junit.xsd)
 * requires, plus per-testcase <properties>, an extension that Jenkins,
 * GitLab and pytest's reports use (strict validation against Ant's schema
 * rejects only that element):
 *
 *   <testsuites>
 *     <testsuite name tests failures errors skipped time timestamp hostname id package>
 *       <properties> generator </properties>
 *       <testcase classname=FAMILY name=CASE-ID time=WALL-SECONDS>
 *         <properties> bandwidth_gbs, percent_of_copy, percent_of_sized_copy
 *                      (when measured), median_ms, worst_ratio, mismatches,
 *                      elements, scheduler, status </properties>
 *         <failure message type>details</failure>   status fail, or a regression
 *         <error message type>details</error>       status error, crash, timeout
 *         <skipped message/>                        status unsupported, skipped
 *         <system-out>repro command</system-out>    when the case has one
 *       </testcase>
 *       <system-out/> <system-err/>
 *     </testsuite>
 *   </testsuites>
 *
 * Statuses pass and compiled are passing test cases.  A case that failed and
 * also regressed gets one <failure> that describes both; a crashed case that
 * "regressed" keeps its <error> with the regression added to its details.
 *
 * Every string from a result (case ids, messages, parameters...) is escaped:
 * & < > " ' become entities, tabs and newlines in attributes become character
 * references, and bytes that XML 1.0 cannot carry (control characters other
 * than tab, newline and carriage return, invalid UTF-8, U+FFFE and U+FFFF)
 * become U+FFFD, so the file is always well-formed UTF-8.
 */
#ifndef FV_SERVICE_JUNIT_H
#define FV_SERVICE_JUNIT_H

#include "common/status.h"
#include "service/result.h"

/* A performance regression of one case against a baseline (see
 * service/compare.h, which finds them). */
typedef struct fv_junit_regression {
    char case_id[192];          /* the fv_result.case_id it belongs to */
    char family[64];            /* classname if no result has this case id */
    double old_median_ms;       /* baseline median kernel time, ms */
    double new_median_ms;       /* this run's median kernel time, ms */
    double p_value;             /* two-sided Mann-Whitney U p-value */
    double alpha;               /* significance level the p-value was held to */
    double threshold;           /* slowdown threshold as a fraction (0.05 = 5%) */
    int old_samples, new_samples; /* timed repeats on each side */
} fv_junit_regression;

/* Writes the JUnit report of `count` results to `path`: one <testcase> per
 * result, in the given order, and one more for each regression whose
 * case_id matches no result.  `suite_name` names the testsuite (NULL:
 * "fuservalidate").  `regressions` may be NULL when regression_count is 0.
 * `total_seconds` is the suite's time attribute; a negative or non-finite
 * value means "the sum of the cases' wall times".  The timestamp is the
 * current UTC time, the hostname this machine's.
 *
 * The file is written to a temporary file in the same directory, fsync'ed
 * and renamed over `path`, so a reader sees either the old file or the whole
 * new one.  Failures: FV_ERR_INTERNAL for a NULL path, negative counts or
 * NULL arrays with positive counts; FV_ERR_IO naming the path and reason
 * (no temporary file is left behind); FV_ERR_NOMEM. */
fv_status fv_junit_write(const char *path, const char *suite_name, const fv_result *results,
                         int count, const fv_junit_regression *regressions,
                         int regression_count, double total_seconds);

#endif /* FV_SERVICE_JUNIT_H */
