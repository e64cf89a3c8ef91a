/* compare.h: regressions between two runs (`fuservalidate compare OLD.h5
 * NEW.h5`, and `run --baseline OLD.h5`): cases that newly fail, cases whose
 * generated kernels changed, and performance regressions and improvements
 * decided by a statistical test over the timed repeats, with a geomean of
 * the median-time ratios per family.
 *
 * The performance rule.  A case is a regression when both hold:
 *   1. a two-sided Mann-Whitney U test of the OLD and NEW repeat times
 *      rejects "same distribution" at significance `alpha` (default 0.01);
 *   2. the NEW median is more than `threshold` slower: NEW/OLD median ratio
 *      > 1 + threshold (default 5%).
 * An improvement is the mirror image: significant and ratio < 1/(1 + threshold).
 * Significant changes smaller than the threshold, and large changes that are
 * not significant (noisy timings), are "unchanged".  With fewer than
 * FV_COMPARE_MIN_SAMPLES finite samples on either side the verdict is
 * "inconclusive", never a regression (with 4 and 4 samples the smallest
 * two-sided p-value is 2/70 = 0.029: the test cannot reject at 0.01).
 * The U test's p-value is exact (the null distribution counted with the
 * Gaussian binomial recurrence) when there are no ties and at most
 * FV_COMPARE_EXACT_LIMIT samples in all; otherwise it is the normal
 * approximation with the tie correction and a continuity correction.
 *
 * The statuses.  "Bad" statuses are fail, error, crash and timeout; "good"
 * ones are pass and compiled.  A case newly fails when its NEW status is bad
 * and its OLD status is not (or it has no OLD row), or when it was good and
 * is now unsupported.  A case that fails in both is not a new failure (the
 * run itself reports it).  Cases are matched by case_id; if an archive has
 * several rows with one case_id, its last row counts.
 */
#ifndef FV_SERVICE_COMPARE_H
#define FV_SERVICE_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/status.h"
#include "service/result.h"

#define FV_COMPARE_DEFAULT_THRESHOLD 0.05 /* 5% slower */
#define FV_COMPARE_DEFAULT_ALPHA 0.01
#define FV_COMPARE_MIN_SAMPLES 5          /* per side, for a verdict */
#define FV_COMPARE_EXACT_LIMIT 50         /* n + m up to which p is exact (no ties) */

/* ------------------------------------------------------ the U test */

typedef struct fv_compare_u_test {
    double u;        /* U of the second sample: pairs (x_i, y_j) with y_j > x_i, ties 1/2 */
    double z;        /* normal-approximation statistic (continuity-corrected); 0 when exact */
    double p_value;  /* two-sided, in [0, 1] */
    bool exact;      /* p from the exact null distribution */
} fv_compare_u_test;

/* Two-sided Mann-Whitney U test of samples x[n] and y[m] (any units; every
 * value must be finite).  All values equal gives p = 1.  Failures:
 * FV_ERR_INTERNAL for n or m < 1, NULL arrays, or a non-finite value;
 * FV_ERR_NOMEM.  *result is unchanged on failure. */
fv_status fv_compare_mann_whitney(const double *x, int n, const double *y, int m,
                                  fv_compare_u_test *result);

/* ------------------------------------------- one case's timings */

typedef enum fv_compare_perf {
    FV_COMPARE_NOT_TIMED = 0,  /* a side has no samples (compile-only, failed early) */
    FV_COMPARE_INCONCLUSIVE,   /* fewer than FV_COMPARE_MIN_SAMPLES on a side, or median <= 0 */
    FV_COMPARE_UNCHANGED,      /* not significant, or within the threshold */
    FV_COMPARE_REGRESSION,     /* significant and slower by more than the threshold */
    FV_COMPARE_IMPROVEMENT     /* significant and faster by more than the threshold */
} fv_compare_perf;

/* "not timed", "inconclusive", "unchanged", "regression", "improvement". */
const char *fv_compare_perf_name(fv_compare_perf perf);

typedef struct fv_compare_verdict {
    fv_compare_perf kind;
    int old_count, new_count;     /* finite samples used on each side */
    double old_median_ms;         /* NaN without samples */
    double new_median_ms;
    double ratio;                 /* new / old median; NaN unless both medians > 0 */
    double p_value;               /* two-sided U-test p; 1 when no test was made */
    double u;                     /* U of the NEW samples; 0 when no test was made */
    bool exact;                   /* p is exact */
} fv_compare_verdict;

/* Decides whether NEW is a regression of OLD (see the rule above).  old_ms
 * and new_ms hold old_count and new_count repeat times in ms (NULL allowed
 * with a count of 0); non-finite values are ignored.  `threshold` is a
 * fraction (0.05 = 5%) >= 0; `alpha` in (0, 1).  Failures: FV_ERR_INTERNAL
 * for negative counts, NULL arrays with positive counts, or a threshold or
 * alpha out of range; FV_ERR_NOMEM.  *verdict is unchanged on failure. */
fv_status fv_compare_samples(const double *old_ms, int old_count, const double *new_ms,
                             int new_count, double threshold, double alpha,
                             fv_compare_verdict *verdict);

/* ----------------------------------------------- one side of a comparison */

/* The results of one run with their timed repeats: loaded from an archive
 * by fv_compare_load, or filled in by a caller that holds them in memory
 * (run --baseline) and then owns the arrays itself. */
typedef struct fv_compare_side {
    char label[256];          /* the archive path, for messages */
    char mode[16];            /* "run", "compile-only", or "" if unknown */
    char l2_flush[16];        /* "memset" or "read" (fv_archive_provenance) */
    double elapsed_seconds;   /* from started_at to finished_at; -1 if unknown */
    fv_result *results;       /* count rows, in archive order */
    int64_t count;
    double *samples;          /* every repeat time, ms, row after row */
    int64_t *sample_start;    /* count + 1 offsets: row i's samples are
                                 samples[sample_start[i] .. sample_start[i + 1]) */
} fv_compare_side;

/* Reads every row and sample of the archive at `path` (fv_archive reader).
 * Failures: those of fv_archive_open_read (FV_ERR_NOT_FOUND, FV_ERR_CORRUPT,
 * FV_ERR_IO, FV_ERR_HDF5), FV_ERR_NOMEM; the message names the path.
 * *side is zeroed on failure (and fv_compare_side_free is still safe). */
fv_status fv_compare_load(const char *path, fv_compare_side *side);

/* Frees what fv_compare_load allocated and zeroes *side.  Not for a side
 * whose arrays the caller owns. */
void fv_compare_side_free(fv_compare_side *side);

/* ------------------------------------------------------- the report */

typedef struct fv_compare_options {
    double threshold;  /* slowdown fraction, default FV_COMPARE_DEFAULT_THRESHOLD */
    double alpha;      /* significance, default FV_COMPARE_DEFAULT_ALPHA */
} fv_compare_options;

/* The defaults above. */
fv_compare_options fv_compare_default_options(void);

/* One case id found in either run. */
typedef struct fv_compare_case {
    char case_id[192];
    char family[64];            /* NEW's family, or OLD's for a missing case */
    int64_t old_row, new_row;   /* index into the side's results; -1 if absent */
    int32_t old_status, new_status; /* fv_result_status; -1 if absent */
    bool new_failure;           /* see the status rule above */
    bool kernel_changed;        /* both have kernels and kernel_hashes differ */
    fv_compare_verdict perf;    /* FV_COMPARE_NOT_TIMED unless both rows exist */
} fv_compare_case;

/* The geomean of NEW/OLD median-time ratios over one family's cases that
 * have positive medians on both sides. */
typedef struct fv_compare_family {
    char family[64];
    int ratio_count;            /* cases in the geomean */
    double geomean_ratio;       /* NaN when ratio_count is 0 */
    int regressions, improvements;
} fv_compare_family;

typedef struct fv_compare_report {
    fv_compare_options options;
    const fv_compare_side *old_side, *new_side; /* what was compared */
    fv_compare_case *cases;     /* every case id of either side, sorted by case id */
    int64_t case_count;
    fv_compare_family *families; /* sorted by name */
    int family_count;
    int64_t new_failures, regressions, improvements, inconclusive, unchanged, not_timed,
        kernel_changes, new_cases, missing_cases;
    fv_compare_side loaded[2];  /* the sides fv_compare_archives loaded (owned) */
} fv_compare_report;

/* Compares two runs.  The report points at old_side and new_side, which
 * must outlive it.  Failures: FV_ERR_INTERNAL for NULL arguments or options
 * out of range (threshold < 0, alpha outside (0, 1)); FV_ERR_NOMEM.  On
 * failure *report is zeroed. */
fv_status fv_compare_sides(const fv_compare_side *old_side, const fv_compare_side *new_side,
                           const fv_compare_options *options, fv_compare_report *report);

/* Loads both archives and compares them; the report owns the loaded sides.
 * `options` NULL means the defaults.  Failures: those of fv_compare_load
 * (naming the archive) and of fv_compare_sides; *report is zeroed. */
fv_status fv_compare_archives(const char *old_path, const char *new_path,
                              const fv_compare_options *options, fv_compare_report *report);

/* Frees the report (and the sides it loaded) and zeroes it. */
void fv_compare_report_free(fv_compare_report *report);

/* Prints the report for people: a header with both runs, then new failures,
 * regressions, improvements, inconclusive cases, kernel changes, new and
 * missing cases, the geomean per family and a summary line. */
void fv_compare_print(const fv_compare_report *report, FILE *stream);

/* 1 if the report has a new failure or a regression, else 0. */
int fv_compare_exit_status(const fv_compare_report *report);

/* Writes a JUnit report (service/junit.h) of NEW's results, with the
 * regressions as failures, to `path` atomically.  Failures: those of
 * fv_junit_write; FV_ERR_NOMEM. */
fv_status fv_compare_write_junit(const fv_compare_report *report, const char *path);

#endif /* FV_SERVICE_COMPARE_H */
