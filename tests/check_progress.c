/* check_progress.c: the progress line (service/progress.h): counts by
 * status, rate and time left over this session's cases only (not the cases
 * an earlier session finished), and the line before any case finished. */
#include <string.h>

#include "service/progress.h"
#include "service/result.h"
#include "test_support.h"

START_TEST(counts_and_rate)
{
    fv_progress progress;
    fv_progress_start(&progress, 40, 0, 100.0);
    char line[256];
    fv_progress_format(&progress, 100.0, line, sizeof line);
    ck_assert_str_eq(line, "0/40 done, 0 passed, 0 failed, - cases/s, - left");
    for (int i = 0; i < 8; i++)
        fv_progress_count(&progress, FV_RESULT_PASS);
    fv_progress_count(&progress, FV_RESULT_COMPILED);
    fv_progress_count(&progress, FV_RESULT_CRASH);
    fv_progress_count(&progress, FV_RESULT_TIMEOUT);
    fv_progress_count(&progress, FV_RESULT_SKIPPED); /* neither passed nor failed */
    fv_progress_format(&progress, 104.0, line, sizeof line);
    ck_assert_str_eq(line, "12/40 done, 9 passed, 2 failed, 3.0 cases/s, 0:09 left");
    fv_progress_format(&progress, 100.0 + 12 * 3600, line, sizeof line);
    ck_assert_str_eq(line, "12/40 done, 9 passed, 2 failed, 0.0 cases/s, 28:00:00 left");
}
END_TEST

START_TEST(earlier_sessions_do_not_count_in_the_rate)
{
    fv_progress progress;
    fv_progress_start(&progress, 100, 60, 0.0);
    for (int i = 0; i < 60; i++)
        fv_progress_count(&progress, i < 50 ? FV_RESULT_PASS : FV_RESULT_FAIL);
    char line[256];
    fv_progress_format(&progress, 10.0, line, sizeof line);
    ck_assert_str_eq(line, "60/100 done, 50 passed, 10 failed, - cases/s, - left");
    for (int i = 0; i < 20; i++)
        fv_progress_count(&progress, FV_RESULT_PASS);
    fv_progress_format(&progress, 10.0, line, sizeof line);
    ck_assert_str_eq(line, "80/100 done, 70 passed, 10 failed, 2.0 cases/s, 0:10 left");
    char tiny[16];
    fv_progress_format(&progress, 10.0, tiny, sizeof tiny); /* truncated, terminated */
    ck_assert_uint_eq(strlen(tiny), sizeof tiny - 1);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("progress");
    TCase *line = tcase_create("line");
    tcase_add_test(line, counts_and_rate);
    tcase_add_test(line, earlier_sessions_do_not_count_in_the_rate);
    suite_add_tcase(suite, line);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
