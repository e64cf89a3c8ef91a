/* check_approaches.c: tests of the approach comparison of `run --approach
 * all` (service/approaches.h): rows paired by shape, the fastest approach,
 * auto's regret whichever approach it takes, shapes whose @ws row could not
 * run the warp-specialized kernel, untimed rows, reruns, the geometric mean,
 * the printed table, and the /approaches table of the archive (written,
 * replaced on resume, read back). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/approaches.h"
#include "service/archive.h"
#include "test_support.h"

/* A timed row of shape `shape` forced to `approach` ("multiwave", "ws" or
 * "auto" for an unforced row). */
static fv_result row(const char *shape, const char *approach, double ms, const char *taken,
                     const char *automatic)
{
    fv_result r;
    char id[192];
    if (strcmp(approach, "auto") == 0)
        snprintf(id, sizeof id, "%s", shape);
    else
        snprintf(id, sizeof id, "%s@%s", shape, approach);
    fv_result_init(&r, id, "rms_norm_bwd", "bf16", "16384x4096", 0, "bench/rms.sweep");
    snprintf(r.approach, sizeof r.approach, "%s", approach);
    snprintf(r.taken_approach, sizeof r.taken_approach, "%s", taken);
    snprintf(r.auto_approach, sizeof r.auto_approach, "%s", automatic);
    r.status = FV_RESULT_SKIPPED;  /* --no-check: timed, not compared */
    r.time_median_ms = ms;
    return r;
}

static const fv_approach_row *find(const fv_approach_row *rows, int32_t count, const char *shape)
{
    for (int32_t i = 0; i < count; i++)
        if (strcmp(rows[i].shape, shape) == 0)
            return &rows[i];
    ck_abort_msg("no row for %s", shape);
    return NULL;
}

START_TEST(pairs_rows_and_computes_regret)
{
    fv_result results[] = {
        row("a/bf16/16384x1024/s0", "multiwave", 2.0, "multiwave", "multiwave"),
        row("b/bf16/16384x2048/s0", "ws", 3.0, "ws", "multiwave"),
        row("a/bf16/16384x1024/s0", "ws", 1.0, "ws", "multiwave"),
        row("c/bf16/16384x4096/s0", "auto", 5.0, "multiwave", "multiwave"),
        row("b/bf16/16384x2048/s0", "multiwave", 4.0, "multiwave", "multiwave"),
        row("d/bf16/16384x8192/s0", "multiwave", 2.0, "multiwave", "ws"),
        row("d/bf16/16384x8192/s0", "ws", 1.6, "ws", "ws"),
    };
    fv_approach_row *rows;
    int32_t count;
    FV_ASSERT_OK(fv_approaches_compare(results, 7, &rows, &count));
    ck_assert_int_eq(count, 3);  /* the unforced row is not compared */
    ck_assert_str_eq(rows[0].shape, "a/bf16/16384x1024/s0");  /* first appearance order */
    ck_assert_str_eq(rows[1].shape, "b/bf16/16384x2048/s0");
    const fv_approach_row *a = find(rows, count, "a/bf16/16384x1024/s0");
    ck_assert_double_eq(a->multiwave_ms, 2.0);
    ck_assert_double_eq(a->ws_ms, 1.0);
    ck_assert_int_eq(a->ws_taken, 1);
    ck_assert_str_eq(a->fastest, "ws");
    ck_assert_str_eq(a->auto_approach, "multiwave");
    ck_assert_double_eq_tol(a->auto_regret, 1.0, 1e-12);  /* 2.0 / 1.0 - 1 */
    const fv_approach_row *b = find(rows, count, "b/bf16/16384x2048/s0");
    ck_assert_str_eq(b->fastest, "ws");
    ck_assert_double_eq_tol(b->auto_regret, 4.0 / 3.0 - 1.0, 1e-12);
    const fv_approach_row *d = find(rows, count, "d/bf16/16384x8192/s0");
    ck_assert_str_eq(d->auto_approach, "ws");
    ck_assert_str_eq(d->fastest, "ws");
    ck_assert_double_eq(d->auto_regret, 0.0);  /* auto took the fastest */
    int32_t compared;
    double regret = fv_approaches_geomean_regret(rows, count, &compared);
    ck_assert_int_eq(compared, 3);
    ck_assert_double_eq_tol(regret, cbrt(2.0 * (4.0 / 3.0) * 1.0) - 1.0, 1e-12);
    free(rows);
}
END_TEST

START_TEST(multiwave_fastest_gives_no_regret_to_multiwave_auto)
{
    fv_result results[] = {
        row("a/fp32/16384x1024/s0", "multiwave", 1.0, "multiwave", "multiwave"),
        row("a/fp32/16384x1024/s0", "ws", 1.25, "ws", "multiwave"),
    };
    fv_approach_row *rows;
    int32_t count;
    FV_ASSERT_OK(fv_approaches_compare(results, 2, &rows, &count));
    ck_assert_int_eq(count, 1);
    ck_assert_str_eq(rows[0].fastest, "multiwave");
    ck_assert_double_eq(rows[0].auto_regret, 0.0);
    free(rows);
}
END_TEST

/* A @ws row that ran the multi-wave kernel (its WS kernel spilled, or rows
 * are not multiples of 16 bytes) leaves one approach: no regret counted. */
START_TEST(fallen_back_ws_rows_are_not_compared)
{
    fv_result results[] = {
        row("a/bf16/16384x1023/s0", "multiwave", 1.0, "multiwave", "multiwave"),
        row("a/bf16/16384x1023/s0", "ws", 0.99, "multiwave", "multiwave"),
    };
    fv_approach_row *rows;
    int32_t count;
    FV_ASSERT_OK(fv_approaches_compare(results, 2, &rows, &count));
    ck_assert_int_eq(rows[0].ws_taken, 0);
    ck_assert_str_eq(rows[0].fastest, "multiwave");
    ck_assert(isnan(rows[0].auto_regret));
    int32_t compared;
    ck_assert(isnan(fv_approaches_geomean_regret(rows, count, &compared)));
    ck_assert_int_eq(compared, 0);
    free(rows);
}
END_TEST

START_TEST(untimed_rows_leave_gaps_and_reruns_replace)
{
    fv_result results[] = {
        row("a/bf16/2048x1024/s0", "multiwave", 1.0, "multiwave", "multiwave"),
        row("a/bf16/2048x1024/s0", "ws", 0.5, "ws", "multiwave"),
        row("a/bf16/2048x1024/s0", "ws", 0.8, "ws", "multiwave"),  /* a rerun */
        row("b/bf16/2048x2048/s0", "multiwave", 1.0, "multiwave", "multiwave"),
        row("b/bf16/2048x2048/s0", "ws", 0.0, "ws", "multiwave"),
    };
    results[4].status = FV_RESULT_CRASH;
    fv_approach_row *rows;
    int32_t count;
    FV_ASSERT_OK(fv_approaches_compare(results, 5, &rows, &count));
    ck_assert_int_eq(count, 2);
    ck_assert_double_eq(rows[0].ws_ms, 0.8);
    ck_assert_double_eq_tol(rows[0].auto_regret, 1.0 / 0.8 - 1.0, 1e-12);
    ck_assert(isnan(rows[1].ws_ms));
    ck_assert_str_eq(rows[1].fastest, "");
    ck_assert(isnan(rows[1].auto_regret));
    free(rows);
}
END_TEST

START_TEST(no_forced_rows_no_table)
{
    fv_result results[] = {row("a/bf16/2048x1024/s0", "auto", 1.0, "multiwave", "multiwave")};
    fv_approach_row *rows = (fv_approach_row *)results;
    int32_t count = -1;
    FV_ASSERT_OK(fv_approaches_compare(results, 1, &rows, &count));
    ck_assert_ptr_null(rows);
    ck_assert_int_eq(count, 0);
}
END_TEST

START_TEST(one_forced_approach_no_table)
{
    fv_result results[] = {
        row("a/bf16/2048x1024/s0", "ws", 1.0, "ws", "multiwave"),
        row("b/bf16/2048x2048/s0", "ws", 1.0, "multiwave", "multiwave"),
    };
    fv_approach_row *rows = (fv_approach_row *)results;
    int32_t count = -1;
    FV_ASSERT_OK(fv_approaches_compare(results, 2, &rows, &count));
    ck_assert_ptr_null(rows);
    ck_assert_int_eq(count, 0);
}
END_TEST

START_TEST(prints_table_and_geomean)
{
    fv_result results[] = {
        row("a/bf16/16384x1024/s0", "multiwave", 2.0, "multiwave", "multiwave"),
        row("a/bf16/16384x1024/s0", "ws", 1.0, "ws", "multiwave"),
        row("e/bf16/16384x1023/s0", "multiwave", 1.0, "multiwave", "multiwave"),
        row("e/bf16/16384x1023/s0", "ws", 1.0, "multiwave", "multiwave"),
    };
    fv_approach_row *rows;
    int32_t count;
    FV_ASSERT_OK(fv_approaches_compare(results, 4, &rows, &count));
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ck_assert_ptr_nonnull(out);
    fv_approaches_print(rows, count, out);
    fclose(out);
    ck_assert_msg(strstr(text, "a/bf16/16384x1024/s0") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "100.0%") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "regret over 1 shapes: 100.00%") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "1 shape could not use the warp-specialized kernel") != NULL,
                  "%s", text);
    free(text);
    free(rows);
}
END_TEST

static fv_archive *new_archive(const char *path)
{
    fv_archive_provenance provenance = {.tool_version = "test", .mode = "run",
                                        .replace_existing = true};
    fv_archive *archive = NULL;
    FV_ASSERT_OK(fv_archive_create(path, &provenance, &archive));
    return archive;
}

START_TEST(archive_stores_and_replaces_the_table)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("approaches.h5"));
    fv_archive *archive = new_archive(path);
    fv_result results[] = {
        row("a/bf16/16384x1024/s0", "multiwave", 2.0, "multiwave", "multiwave"),
        row("a/bf16/16384x1024/s0", "ws", 1.0, "ws", "multiwave"),
        row("b/bf16/16384x2048/s0", "multiwave", 1.0, "multiwave", "multiwave"),
        row("b/bf16/16384x2048/s0", "ws", 1.5, "ws", "multiwave"),
    };
    fv_approach_row *rows;
    int32_t count;
    FV_ASSERT_OK(fv_approaches_compare(results, 4, &rows, &count));
    FV_ASSERT_OK(fv_archive_write_approaches(archive, rows, count));
    FV_ASSERT_OK(fv_archive_write_approaches(archive, rows, 1));  /* replaced */
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    fv_archive_reader *reader = NULL;
    FV_ASSERT_OK(fv_archive_open_read(path, &reader));
    fv_approach_row *read;
    int32_t read_count;
    FV_ASSERT_OK(fv_archive_read_approaches(reader, &read, &read_count));
    ck_assert_int_eq(read_count, 1);
    ck_assert_str_eq(read[0].shape, "a/bf16/16384x1024/s0");
    ck_assert_str_eq(read[0].fastest, "ws");
    ck_assert_str_eq(read[0].auto_approach, "multiwave");
    ck_assert_double_eq(read[0].multiwave_ms, 2.0);
    ck_assert_double_eq(read[0].ws_ms, 1.0);
    ck_assert_int_eq(read[0].ws_taken, 1);
    ck_assert_double_eq_tol(read[0].auto_regret, 1.0, 1e-12);
    free(read);
    fv_archive_close_read(reader);
    free(rows);
}
END_TEST

START_TEST(archive_without_table_reads_empty)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("plain.h5"));
    FV_ASSERT_OK(fv_archive_close(new_archive(path), 0));
    fv_archive_reader *reader = NULL;
    FV_ASSERT_OK(fv_archive_open_read(path, &reader));
    fv_approach_row *rows = (fv_approach_row *)reader;
    int32_t count = -1;
    FV_ASSERT_OK(fv_archive_read_approaches(reader, &rows, &count));
    ck_assert_ptr_null(rows);
    ck_assert_int_eq(count, 0);
    fv_archive_close_read(reader);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("approaches");
    TCase *compare = tcase_create("compare");
    tcase_add_test(compare, pairs_rows_and_computes_regret);
    tcase_add_test(compare, multiwave_fastest_gives_no_regret_to_multiwave_auto);
    tcase_add_test(compare, fallen_back_ws_rows_are_not_compared);
    tcase_add_test(compare, untimed_rows_leave_gaps_and_reruns_replace);
    tcase_add_test(compare, no_forced_rows_no_table);
    tcase_add_test(compare, one_forced_approach_no_table);
    tcase_add_test(compare, prints_table_and_geomean);
    suite_add_tcase(suite, compare);
    TCase *archive = tcase_create("archive");
    tcase_add_test(archive, archive_stores_and_replaces_the_table);
    tcase_add_test(archive, archive_without_table_reads_empty);
    suite_add_tcase(suite, archive);
    return suite;
}

int main(void)
{
    return fv_test_run_suite(make_suite());
}
