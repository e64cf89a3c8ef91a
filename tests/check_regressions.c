/* check_regressions.c: tests of service/compare.h: the Mann-Whitney U test
 * against published values (R's wilcox.test example from Hollander & Wolfe,
 * tables of critical values) and values worked by hand (ties, normal
 * approximation), the per-case performance verdict (regression, improvement,
 * within threshold, not significant, inconclusive), and `compare` over two
 * crafted archives that flags exactly the planted new failures, regressions
 * and kernel changes.
 *
 * `check_regressions --write-fixtures DIR` writes the two crafted archives
 * (DIR/old.h5, DIR/new.h5) and exits; tests/test_slurm.sh uses them to
 * exercise jobs/ci-gate.sh. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/archive.h"
#include "service/commands.h"
#include "service/compare.h"
#include "test_support.h"

/* ------------------------------------------------------ the U test */

static void run_u_test(const double *x, int n, const double *y, int m, fv_compare_u_test *test)
{
    FV_ASSERT_OK(fv_compare_mann_whitney(x, n, y, m, test));
}

START_TEST(u_test_exact_small_samples)
{
    /* Complete separation, 5 and 5: U = 25, p = 2 / C(10, 5) = 2/252. */
    const double x[] = {1, 2, 3, 4, 5}, y[] = {6, 7, 8, 9, 10};
    fv_compare_u_test test;
    run_u_test(x, 5, y, 5, &test);
    ck_assert(test.exact);
    ck_assert_double_eq(test.u, 25);
    ck_assert_double_eq_tol(test.p_value, 2.0 / 252, 1e-15);
    run_u_test(y, 5, x, 5, &test); /* two-sided: symmetric */
    ck_assert_double_eq(test.u, 0);
    ck_assert_double_eq_tol(test.p_value, 2.0 / 252, 1e-15);
    /* R's wilcox.test example (Hollander & Wolfe 1973, p. 69): W = 35 pairs
     * with x > y, one-sided p = 0.1272, so two-sided 0.2544. */
    const double hw_x[] = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
    const double hw_y[] = {1.15, 0.88, 0.90, 0.74, 1.21};
    run_u_test(hw_x, 10, hw_y, 5, &test);
    ck_assert(test.exact);
    ck_assert_double_eq(test.u, 50 - 35);
    ck_assert_double_eq_tol(test.p_value, 2 * 0.1272061272, 1e-9);
}
END_TEST

/* Builds samples of n and n values whose U (of y) is exactly `u`, no ties:
 * y_j is placed just above the first u_j values of x. */
static void samples_with_u(int n, int u, double *x, double *y)
{
    for (int i = 0; i < n; i++)
        x[i] = i + 1;
    for (int j = 0; j < n; j++) {
        int below = u / n + (j < u % n); /* x values below y_j, summing to u */
        y[j] = below + 0.5 + 1e-3 * j;
    }
}

/* Published two-sided critical values of U (reject when U <= value):
 * p(U = critical) <= alpha < p(U = critical + 1). */
START_TEST(u_test_matches_critical_value_tables)
{
    static const struct { int n; double alpha; int critical; } table[] = {
        {5, 0.05, 2}, {8, 0.05, 13}, {8, 0.01, 7}, {10, 0.05, 23},
        {10, 0.01, 16}, {20, 0.05, 127}, {20, 0.01, 105},
    };
    double x[20], y[20];
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        int n = table[i].n;
        fv_compare_u_test at, above;
        samples_with_u(n, table[i].critical, x, y);
        run_u_test(x, n, y, n, &at);
        samples_with_u(n, table[i].critical + 1, x, y);
        run_u_test(x, n, y, n, &above);
        ck_assert(at.exact);
        ck_assert_double_eq(at.u, table[i].critical);
        ck_assert_msg(at.p_value <= table[i].alpha && above.p_value > table[i].alpha,
                      "n = %d: p(U=%d) = %g, p(U=%d) = %g around alpha %g", n,
                      table[i].critical, at.p_value, table[i].critical + 1, above.p_value,
                      table[i].alpha);
    }
}
END_TEST

START_TEST(u_test_normal_approximation_with_ties)
{
    /* Worked by hand.  x = {1,1,2,2}, y = {2,2,3,3}: pooled midranks
     * 1:1.5  2:4.5  3:7.5, so R_y = 2*4.5 + 2*7.5 = 24 and U_y = 24 - 10 = 14.
     * Ties of sizes 2, 4, 2 give sum(t^3 - t) = 72; variance =
     * nm/12 * ((N+1) - 72/(N(N-1))) = 16/12 * (9 - 72/56) = 72/7.
     * z = (|14 - 8| - 0.5) / sqrt(72/7), p = erfc(z / sqrt 2) = 0.086359. */
    const double x[] = {1, 1, 2, 2}, y[] = {2, 2, 3, 3};
    fv_compare_u_test test;
    run_u_test(x, 4, y, 4, &test);
    ck_assert(!test.exact);
    ck_assert_double_eq(test.u, 14);
    ck_assert_double_eq_tol(test.z, 5.5 / sqrt(72.0 / 7), 1e-12);
    ck_assert_double_eq_tol(test.p_value, 0.0863587396, 1e-9);
    /* No ties but too many values for the exact count: 30 and 30 separated,
     * U = 900, mean 450, variance 900 * 61 / 12. */
    double big_x[30], big_y[30];
    for (int i = 0; i < 30; i++) {
        big_x[i] = i;
        big_y[i] = 30 + i;
    }
    run_u_test(big_x, 30, big_y, 30, &test);
    ck_assert(!test.exact);
    ck_assert_double_eq(test.u, 900);
    ck_assert_double_eq_tol(test.p_value, 3.01985936e-11, 1e-17);
    /* All values equal: nothing to test. */
    const double same[] = {2, 2, 2, 2, 2, 2};
    run_u_test(same, 3, same + 3, 3, &test);
    ck_assert_double_eq(test.p_value, 1);
    /* Bad input. */
    const double with_nan[] = {1, NAN};
    ck_assert_int_eq(fv_compare_mann_whitney(with_nan, 2, x, 4, &test), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_compare_mann_whitney(x, 0, y, 4, &test), FV_ERR_INTERNAL);
}
END_TEST

/* ------------------------------------------------ per-case verdicts */

/* A deterministic jitter in [-spread, spread]. */
static double jitter(int index, int salt, double spread)
{
    unsigned state = (unsigned)(index * 2654435761u) ^ (unsigned)(salt * 40503u + 17u);
    state ^= state >> 13;
    state *= 0x5bd1e995u;
    state ^= state >> 15;
    return spread * (2.0 * (state % 100001u) / 100000.0 - 1.0);
}

/* count repeat times around `median`, +-spread relative. */
static void timings(double *samples, int count, double median, double spread, int salt)
{
    for (int i = 0; i < count; i++)
        samples[i] = median * (1 + jitter(i, salt, spread));
}

static fv_compare_verdict verdict_of(const double *old_ms, int old_count, const double *new_ms,
                                     int new_count)
{
    fv_compare_verdict verdict;
    FV_ASSERT_OK(fv_compare_samples(old_ms, old_count, new_ms, new_count,
                                    FV_COMPARE_DEFAULT_THRESHOLD, FV_COMPARE_DEFAULT_ALPHA,
                                    &verdict));
    return verdict;
}

START_TEST(verdicts_follow_the_rule)
{
    double old_ms[20], new_ms[20];
    timings(old_ms, 20, 1.0, 0.01, 1);
    timings(new_ms, 20, 1.2, 0.01, 2);
    fv_compare_verdict v = verdict_of(old_ms, 20, new_ms, 20);
    ck_assert_int_eq(v.kind, FV_COMPARE_REGRESSION);
    ck_assert_double_eq_tol(v.ratio, v.new_median_ms / v.old_median_ms, 1e-15);
    ck_assert(v.ratio > 1.15 && v.ratio < 1.25);
    ck_assert(v.p_value < 1e-6);
    ck_assert(v.u == 400); /* every new repeat slower than every old one */
    v = verdict_of(new_ms, 20, old_ms, 20);
    ck_assert_int_eq(v.kind, FV_COMPARE_IMPROVEMENT);
    /* Significant, but only 2% slower: within the threshold. */
    timings(new_ms, 20, 1.02, 0.001, 3);
    timings(old_ms, 20, 1.0, 0.001, 4);
    v = verdict_of(old_ms, 20, new_ms, 20);
    ck_assert(v.p_value < 1e-6);
    ck_assert_int_eq(v.kind, FV_COMPARE_UNCHANGED);
    /* 8% slower by the median, but noise that wide is not significant. */
    for (int i = 0; i < 20; i++) {
        old_ms[i] = 0.5 + i / 19.0;
        new_ms[i] = old_ms[i] + 0.08;
    }
    v = verdict_of(old_ms, 20, new_ms, 20);
    ck_assert(v.ratio > 1.05);
    ck_assert(v.p_value > 0.01);
    ck_assert_int_eq(v.kind, FV_COMPARE_UNCHANGED);
}
END_TEST

START_TEST(few_samples_are_inconclusive)
{
    /* 4 and 4 repeats, 50% slower: the U test cannot reach 0.01. */
    const double old_ms[] = {1.0, 1.01, 0.99, 1.0}, new_ms[] = {1.5, 1.51, 1.49, 1.5};
    fv_compare_verdict v = verdict_of(old_ms, 4, new_ms, 4);
    ck_assert_int_eq(v.kind, FV_COMPARE_INCONCLUSIVE);
    ck_assert_double_eq_tol(v.ratio, 1.5, 1e-12);
    ck_assert_double_eq(v.p_value, 1);
    /* Five finite values on each side are enough; NaNs do not count. */
    const double five_old[] = {1.0, 1.01, 0.99, 1.005, 1.02, NAN};
    const double five_new[] = {1.5, 1.51, 1.49, 1.505, 1.52, INFINITY};
    v = verdict_of(five_old, 6, five_new, 6);
    ck_assert_int_eq(v.old_count, 5);
    ck_assert_int_eq(v.new_count, 5);
    ck_assert_int_eq(v.kind, FV_COMPARE_REGRESSION);
    ck_assert_double_eq_tol(v.p_value, 2.0 / 252, 1e-15);
    v = verdict_of(five_old, 4, five_new, 6);
    ck_assert_int_eq(v.kind, FV_COMPARE_INCONCLUSIVE);
    /* No samples: not timed.  Zero medians: inconclusive. */
    v = verdict_of(NULL, 0, five_new, 5);
    ck_assert_int_eq(v.kind, FV_COMPARE_NOT_TIMED);
    ck_assert(isnan(v.old_median_ms));
    const double zeros[] = {0, 0, 0, 0, 0};
    v = verdict_of(zeros, 5, five_new, 5);
    ck_assert_int_eq(v.kind, FV_COMPARE_INCONCLUSIVE);
    fv_compare_verdict unused;
    ck_assert_int_eq(fv_compare_samples(old_ms, 4, new_ms, 4, -0.1, 0.01, &unused),
                     FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_compare_samples(old_ms, 4, new_ms, 4, 0.05, 1.0, &unused),
                     FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_compare_samples(NULL, 3, new_ms, 4, 0.05, 0.01, &unused),
                     FV_ERR_INTERNAL);
}
END_TEST

/* --------------------------------------------------- crafted archives */

typedef struct planted_case {
    const char *case_id;
    const char *family;
    fv_result_status old_status, new_status; /* -1: absent on that side */
    const char *old_hashes, *new_hashes;
    double old_median, new_median;           /* 0: not timed */
    int samples;                             /* repeats per side */
    double spread;                           /* relative noise */
} planted_case;

#define ABSENT ((fv_result_status)-1)
#define H1 "0123456789abcdef,fedcba9876543210"
#define H2 "0123456789abcdef,00000000deadbeef"

static const planted_case planted[] = {
    {"a/steady", "a", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 1.0, 1.0, 20, 0.01},
    {"a/slower", "a", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 1.0, 1.2, 20, 0.01},
    {"a/faster", "a", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 1.0, 0.8, 20, 0.01},
    {"a/slightly_slower", "a", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 1.0, 1.02, 20, 0.001},
    {"a/noisy", "a", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 1.0, 1.08, 20, -1},
    {"a/newly_fails", "a", FV_RESULT_PASS, FV_RESULT_FAIL, H1, H1, 0, 0, 0, 0},
    {"a/still_fails", "a", FV_RESULT_FAIL, FV_RESULT_FAIL, H1, H1, 0, 0, 0, 0},
    {"b/kernel_changed", "b", FV_RESULT_PASS, FV_RESULT_PASS, H1, H2, 0, 0, 0, 0},
    {"b/few_samples", "b", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 1.0, 1.5, 4, 0.01},
    {"b/crashes", "b", FV_RESULT_PASS, FV_RESULT_CRASH, H1, "", 0, 0, 0, 0},
    {"b/now_unsupported", "b", FV_RESULT_PASS, FV_RESULT_UNSUPPORTED, H1, "", 0, 0, 0, 0},
    {"b/new_case", "b", ABSENT, FV_RESULT_PASS, "", H1, 0, 0, 0, 0},
    {"b/new_failing_case", "b", ABSENT, FV_RESULT_FAIL, "", H1, 0, 0, 0, 0},
    {"b/missing_case", "b", FV_RESULT_PASS, ABSENT, H1, "", 0, 0, 0, 0},
    {"c/compiled", "c", FV_RESULT_COMPILED, FV_RESULT_COMPILED, H1, H1, 0, 0, 0, 0},
    {"c/fixed", "c", FV_RESULT_FAIL, FV_RESULT_PASS, H1, H1, 0, 0, 0, 0},
    /* NEW has this case twice (a resumed run): its last row, pass, counts. */
    {"c/resumed", "c", FV_RESULT_PASS, FV_RESULT_PASS, H1, H1, 0, 0, 0, 0},
};

enum { PLANTED_COUNT = sizeof planted / sizeof planted[0] };

static void planted_samples(const planted_case *p, bool new_side, double *samples)
{
    double median = new_side ? p->new_median : p->old_median;
    if (p->spread < 0) /* wide, evenly spread: +-50% */
        for (int i = 0; i < p->samples; i++)
            samples[i] = median - 0.5 + i / (double)(p->samples - 1);
    else
        timings(samples, p->samples, median, p->spread, (int)(p - planted) * 2 + new_side);
}

static fv_status append_planted(fv_archive *archive, const planted_case *p, bool new_side)
{
    fv_result r;
    fv_result_init(&r, p->case_id, p->family, "bf16", "64x256", 0, "crafted");
    r.status = new_side ? p->new_status : p->old_status;
    snprintf(r.kernel_hashes, sizeof r.kernel_hashes, "%s",
             new_side ? p->new_hashes : p->old_hashes);
    snprintf(r.repro, sizeof r.repro, "fuservalidate run crafted --filter '%s'", p->case_id);
    if (r.status == FV_RESULT_FAIL) {
        r.elements = 1000;
        r.mismatches = 7;
        r.worst_ratio = 2.5;
        snprintf(r.stage, sizeof r.stage, "compare");
        snprintf(r.message, sizeof r.message, "7 of 1000 elements outside their bound");
    }
    double samples[FV_RESULT_MAX_SAMPLES];
    int count = 0;
    double median = new_side ? p->new_median : p->old_median;
    if (median > 0) {
        count = p->samples;
        planted_samples(p, new_side, samples);
        r.repeats = count;
        r.time_median_ms = median;
    }
    r.wall_ms = 100;
    return fv_archive_append(archive, &r, samples, count);
}

static fv_status write_planted_archive(const char *path, bool new_side)
{
    fv_archive_provenance provenance = {.tool_version = "test", .mode = "run", .mpi_size = 1,
                                        .l2_flush = new_side ? "read" : "memset",
                                        .replace_existing = true};
    fv_archive *archive = NULL;
    FV_TRY(fv_archive_create(path, &provenance, &archive));
    fv_status status = FV_OK;
    if (new_side) { /* the interrupted first attempt of c/resumed */
        fv_result r;
        fv_result_init(&r, "c/resumed", "c", "bf16", "64x256", 0, "crafted");
        fv_result_fail(&r, FV_RESULT_CRASH, "launch", "killed");
        status = fv_archive_append(archive, &r, NULL, 0);
    }
    for (int i = 0; i < PLANTED_COUNT && status == FV_OK; i++) {
        fv_result_status side_status = new_side ? planted[i].new_status : planted[i].old_status;
        if (side_status != ABSENT)
            status = append_planted(archive, &planted[i], new_side);
    }
    fv_status closed = fv_archive_close(archive, 1);
    FV_TRY(status);
    return closed;
}

static fv_status write_fixtures(const char *directory, char *old_path, char *new_path,
                                size_t size)
{
    snprintf(old_path, size, "%s/old.h5", directory);
    snprintf(new_path, size, "%s/new.h5", directory);
    FV_TRY(write_planted_archive(old_path, false));
    return write_planted_archive(new_path, true);
}

static const fv_compare_case *find_case(const fv_compare_report *report, const char *case_id)
{
    for (int64_t i = 0; i < report->case_count; i++)
        if (strcmp(report->cases[i].case_id, case_id) == 0)
            return &report->cases[i];
    ck_abort_msg("case %s not in the report", case_id);
    return NULL;
}

/* The case ids of the report that satisfy `predicate`, ","-joined. */
static void ids_where(const fv_compare_report *report, bool (*predicate)(const fv_compare_case *),
                      char *out, size_t size)
{
    out[0] = '\0';
    for (int64_t i = 0; i < report->case_count; i++)
        if (predicate(&report->cases[i])) {
            size_t used = strlen(out);
            snprintf(out + used, size - used, "%s%s", used ? "," : "", report->cases[i].case_id);
        }
}

static bool is_new_failure(const fv_compare_case *c)
{
    return c->new_failure;
}

static bool is_regression(const fv_compare_case *c)
{
    return c->perf.kind == FV_COMPARE_REGRESSION;
}

static bool is_improvement(const fv_compare_case *c)
{
    return c->perf.kind == FV_COMPARE_IMPROVEMENT;
}

static bool is_inconclusive(const fv_compare_case *c)
{
    return c->perf.kind == FV_COMPARE_INCONCLUSIVE;
}

static bool is_unchanged(const fv_compare_case *c)
{
    return c->perf.kind == FV_COMPARE_UNCHANGED;
}

static bool is_kernel_change(const fv_compare_case *c)
{
    return c->kernel_changed;
}

static bool is_new_case(const fv_compare_case *c)
{
    return c->old_row < 0;
}

static bool is_missing(const fv_compare_case *c)
{
    return c->new_row < 0;
}

START_TEST(compare_flags_exactly_the_planted_changes)
{
    char old_path[1024], new_path[1024], ids[2048];
    FV_ASSERT_OK(write_fixtures(fv_test_scratch_dir(), old_path, new_path, sizeof old_path));
    fv_compare_report report;
    FV_ASSERT_OK(fv_compare_archives(old_path, new_path, NULL, &report));
    ck_assert_int_eq(report.case_count, PLANTED_COUNT);
    ids_where(&report, is_new_failure, ids, sizeof ids);
    ck_assert_str_eq(ids, "a/newly_fails,b/crashes,b/new_failing_case,b/now_unsupported");
    ids_where(&report, is_regression, ids, sizeof ids);
    ck_assert_str_eq(ids, "a/slower");
    ids_where(&report, is_improvement, ids, sizeof ids);
    ck_assert_str_eq(ids, "a/faster");
    ids_where(&report, is_inconclusive, ids, sizeof ids);
    ck_assert_str_eq(ids, "b/few_samples");
    ids_where(&report, is_kernel_change, ids, sizeof ids);
    ck_assert_str_eq(ids, "b/kernel_changed");
    ids_where(&report, is_new_case, ids, sizeof ids);
    ck_assert_str_eq(ids, "b/new_case,b/new_failing_case");
    ids_where(&report, is_missing, ids, sizeof ids);
    ck_assert_str_eq(ids, "b/missing_case");
    ids_where(&report, is_unchanged, ids, sizeof ids);
    ck_assert_str_eq(ids, "a/noisy,a/slightly_slower,a/steady");
    ck_assert_int_eq(report.new_failures, 4);
    ck_assert_int_eq(report.regressions, 1);
    ck_assert_int_eq(report.improvements, 1);
    ck_assert_int_eq(report.inconclusive, 1);
    ck_assert_int_eq(report.kernel_changes, 1);
    ck_assert_int_eq(report.new_cases, 2);
    ck_assert_int_eq(report.missing_cases, 1);
    ck_assert_int_eq(fv_compare_exit_status(&report), 1);
    /* The last row of a repeated case id counts. */
    const fv_compare_case *resumed = find_case(&report, "c/resumed");
    ck_assert_int_eq(resumed->new_status, FV_RESULT_PASS);
    ck_assert_int_eq(resumed->new_row, 16); /* the crash row 0, then 16 planted rows */
    const fv_compare_case *slower = find_case(&report, "a/slower");
    ck_assert_int_eq(slower->perf.old_count, 20);
    ck_assert(slower->perf.exact);
    fv_compare_report_free(&report);
}
END_TEST

START_TEST(compare_geomean_per_family)
{
    char old_path[1024], new_path[1024];
    FV_ASSERT_OK(write_fixtures(fv_test_scratch_dir(), old_path, new_path, sizeof old_path));
    fv_compare_report report;
    FV_ASSERT_OK(fv_compare_archives(old_path, new_path, NULL, &report));
    ck_assert_int_eq(report.family_count, 3);
    const fv_compare_family *a = &report.families[0], *b = &report.families[1];
    const fv_compare_family *c = &report.families[2];
    ck_assert_str_eq(a->family, "a");
    ck_assert_str_eq(c->family, "c");
    double log_sum = 0;
    static const char *const timed[] = {"a/steady", "a/slower", "a/faster", "a/slightly_slower",
                                        "a/noisy"};
    for (int i = 0; i < 5; i++)
        log_sum += log(find_case(&report, timed[i])->perf.ratio);
    ck_assert_int_eq(a->ratio_count, 5);
    ck_assert_double_eq_tol(a->geomean_ratio, exp(log_sum / 5), 1e-12);
    ck_assert(fabs(a->geomean_ratio - pow(1.2 * 0.8 * 1.02 * 1.08, 0.2)) < 0.01);
    ck_assert_int_eq(a->regressions, 1);
    ck_assert_int_eq(a->improvements, 1);
    ck_assert_int_eq(b->ratio_count, 1); /* the inconclusive case still has medians */
    ck_assert_double_eq_tol(b->geomean_ratio, find_case(&report, "b/few_samples")->perf.ratio,
                            1e-12);
    ck_assert_int_eq(c->ratio_count, 0);
    ck_assert(isnan(c->geomean_ratio));
    fv_compare_report_free(&report);
}
END_TEST

START_TEST(compare_report_and_junit)
{
    char old_path[1024], new_path[1024];
    FV_ASSERT_OK(write_fixtures(fv_test_scratch_dir(), old_path, new_path, sizeof old_path));
    fv_compare_report report;
    FV_ASSERT_OK(fv_compare_archives(old_path, new_path, NULL, &report));
    char *printed = NULL;
    size_t printed_size = 0;
    FILE *stream = open_memstream(&printed, &printed_size);
    ck_assert_ptr_nonnull(stream);
    fv_compare_print(&report, stream);
    ck_assert_int_eq(fclose(stream), 0);
    ck_assert_ptr_nonnull(strstr(printed, "new failures (4):"));
    ck_assert_ptr_nonnull(strstr(printed, "note: the runs emptied the L2 differently before "
                                          "each timed run (OLD --flush memset, NEW --flush "
                                          "read)"));
    ck_assert_ptr_nonnull(strstr(printed, "regressions (1):\n  a/slower"));
    ck_assert_ptr_nonnull(strstr(printed, "kernel changes (1):"));
    ck_assert_ptr_nonnull(strstr(printed, H1 " -> " H2));
    ck_assert_ptr_nonnull(strstr(printed, "missing cases (1): in OLD, not in NEW\n"
                                          "  b/missing_case"));
    ck_assert_ptr_nonnull(strstr(printed, "summary: 4 new failures, 1 regression, "
                                          "1 improvement, 1 inconclusive, 1 kernel change, "
                                          "2 new cases, 1 missing; 3 unchanged, "));
    free(printed);
    const char *junit = fv_test_path("compare.xml");
    FV_ASSERT_OK(fv_compare_write_junit(&report, junit));
    char *xml = fv_test_read_file(junit, NULL);
    ck_assert_ptr_nonnull(xml);
    /* NEW has 16 case ids: failures are the 3 failing cases and the regression,
     * the crash is an error and the unsupported case skipped. */
    ck_assert_ptr_nonnull(strstr(xml, "tests=\"16\" failures=\"4\" errors=\"1\" skipped=\"1\""));
    ck_assert_ptr_nonnull(strstr(xml, "type=\"performance_regression\""));
    int testcases = 0;
    for (const char *at = xml; (at = strstr(at, "<testcase ")) != NULL; at++)
        testcases++;
    ck_assert_int_eq(testcases, 16);
    free(xml);
    fv_compare_report_free(&report);
}
END_TEST

START_TEST(compare_identical_archives_is_clean)
{
    char old_path[1024], new_path[1024];
    FV_ASSERT_OK(write_fixtures(fv_test_scratch_dir(), old_path, new_path, sizeof old_path));
    fv_compare_report report;
    FV_ASSERT_OK(fv_compare_archives(new_path, new_path, NULL, &report));
    ck_assert_int_eq(report.new_failures + report.regressions + report.improvements +
                         report.kernel_changes + report.new_cases + report.missing_cases,
                     0);
    ck_assert_int_eq(fv_compare_exit_status(&report), 0);
    fv_compare_report_free(&report);
    /* A threshold of 30% makes the 20% slowdown acceptable. */
    fv_compare_options lenient = {.threshold = 0.30, .alpha = 0.01};
    FV_ASSERT_OK(fv_compare_archives(old_path, new_path, &lenient, &report));
    ck_assert_int_eq(report.regressions, 0);
    ck_assert_int_eq(find_case(&report, "a/slower")->perf.kind, FV_COMPARE_UNCHANGED);
    fv_compare_report_free(&report);
    ck_assert_int_eq(fv_compare_archives(fv_test_path("none.h5"), new_path, NULL, &report),
                     FV_ERR_NOT_FOUND);
    ck_assert_int_eq(fv_test_write_file(fv_test_path("junk.h5"), "not hdf5"), 0);
    ck_assert_int_eq(fv_compare_archives(old_path, fv_test_path("junk.h5"), NULL, &report),
                     FV_ERR_CORRUPT);
    ck_assert_ptr_eq(report.cases, NULL);
}
END_TEST

/* The command line: exit statuses and option errors.  Its output goes to
 * /dev/null. */
static int run_compare(const char *a, const char *b, const char *c, const char *d,
                       const char *e)
{
    char *argv[7] = {"compare", (char *)a, (char *)b, (char *)c, (char *)d, (char *)e, NULL};
    int argc = 1;
    while (argc < 6 && argv[argc] != NULL)
        argc++;
    fflush(stdout);
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    return fv_command_compare(argc, argv);
}

START_TEST(compare_command_exit_statuses)
{
    char old_path[1024], new_path[1024];
    FV_ASSERT_OK(write_fixtures(fv_test_scratch_dir(), old_path, new_path, sizeof old_path));
    ck_assert_int_eq(run_compare(old_path, new_path, NULL, NULL, NULL), 1);
    ck_assert_int_eq(run_compare(new_path, new_path, NULL, NULL, NULL), 0);
    char junit[1100];
    snprintf(junit, sizeof junit, "%s", fv_test_path("cli.xml"));
    ck_assert_int_eq(run_compare(old_path, new_path, "--junit", junit, NULL), 1);
    char *written = fv_test_read_file(junit, NULL);
    ck_assert_ptr_nonnull(written);
    ck_assert_ptr_nonnull(strstr(written, "<testsuite "));
    free(written);
    ck_assert_int_eq(run_compare(old_path, new_path, "--threshold", "abc", NULL), 2);
    ck_assert_int_eq(run_compare(old_path, new_path, "--alpha", "1.5", NULL), 2);
    ck_assert_int_eq(run_compare(old_path, NULL, NULL, NULL, NULL), 2);
    ck_assert_int_eq(run_compare(old_path, new_path, "--bogus", NULL, NULL), 2);
    ck_assert_int_eq(run_compare(old_path, "/no/such/archive.h5", NULL, NULL, NULL), 2);
    ck_assert_int_eq(run_compare(old_path, new_path, "--junit", "/no/such/dir/j.xml", NULL), 2);
    ck_assert_int_eq(run_compare("--help", NULL, NULL, NULL, NULL), 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("regressions");
    TCase *u_test = tcase_create("mann_whitney");
    tcase_add_test(u_test, u_test_exact_small_samples);
    tcase_add_test(u_test, u_test_matches_critical_value_tables);
    tcase_add_test(u_test, u_test_normal_approximation_with_ties);
    suite_add_tcase(suite, u_test);
    TCase *verdicts = tcase_create("verdicts");
    tcase_add_test(verdicts, verdicts_follow_the_rule);
    tcase_add_test(verdicts, few_samples_are_inconclusive);
    suite_add_tcase(suite, verdicts);
    TCase *archives = tcase_create("archives");
    tcase_set_timeout(archives, 60);
    tcase_add_test(archives, compare_flags_exactly_the_planted_changes);
    tcase_add_test(archives, compare_geomean_per_family);
    tcase_add_test(archives, compare_report_and_junit);
    tcase_add_test(archives, compare_identical_archives_is_clean);
    tcase_add_test(archives, compare_command_exit_statuses);
    suite_add_tcase(suite, archives);
    return suite;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-fixtures") == 0) {
        char old_path[1024], new_path[1024];
        if (write_fixtures(argv[2], old_path, new_path, sizeof old_path) != FV_OK) {
            fprintf(stderr, "check_regressions: %s\n", fv_error_message());
            return 2;
        }
        printf("%s\n%s\n", old_path, new_path);
        return 0;
    }
    return fv_test_run_suite(make_suite());
}
