/* approaches.h: the side-by-side comparison of `run --approach all`: per
 * shape, the kernel time of each approach (multi-wave and warp-specialized),
 * which was fastest, what the automatic rule takes on this GPU and its
 * regret (its time over the fastest).  Built from a run's rows; printed
 * after the summary and stored as /approaches in the archive
 * (docs/archive-format.md). */
#ifndef FV_SERVICE_APPROACHES_H
#define FV_SERVICE_APPROACHES_H

#include <stdint.h>
#include <stdio.h>

#include "common/status.h"
#include "service/result.h"

typedef struct fv_approach_row {
    char shape[192];         /* the case id without "@approach" */
    char family[64];
    char dtype[8];
    char sizes[64];
    double multiwave_ms;     /* median kernel time of the @multiwave row; NaN if none was timed */
    double ws_ms;            /* of the @ws row; NaN if none was timed */
    int32_t ws_taken;        /* 1 if the @ws row ran the warp-specialized kernel, 0 if that
                                kernel could not be used and it ran multi-wave */
    char fastest[16];        /* "multiwave" or "ws" ("multiwave" when ws_taken is 0); ""
                                without both times */
    char auto_approach[16];  /* what --approach auto takes for the shape on this GPU */
    double auto_regret;      /* auto's time / the fastest time - 1 (0 when auto is the
                                fastest); NaN without both times or when ws_taken is 0 */
} fv_approach_row;

/* Pairs the rows of `results` forced to an approach ("...@multiwave",
 * "...@ws") by shape, in the order each shape first appears, into a new
 * array in *rows (free it) of *count entries; rows with approach "auto" are
 * ignored.  NULL and 0 unless rows of both approaches are there (a run with
 * one approach forced compares nothing).  A time counts when the row was
 * timed (pass, or skipped by --no-check, with a positive median); a later
 * row of the same case (a rerun) replaces an earlier one.  FV_ERR_NOMEM. */
fv_status fv_approaches_compare(const fv_result *results, int32_t result_count,
                                fv_approach_row **rows, int32_t *count);

/* The geometric mean of (1 + regret) - 1 over the rows with both times, and
 * how many rows that is (NaN and 0 if none). */
double fv_approaches_geomean_regret(const fv_approach_row *rows, int32_t count,
                                    int32_t *compared);

/* Prints the table: shape, each approach's time, the fastest, auto's choice
 * and regret, then the geometric-mean regret and the shapes whose @ws row
 * could not run the warp-specialized kernel. */
void fv_approaches_print(const fv_approach_row *rows, int32_t count, FILE *out);

#endif /* FV_SERVICE_APPROACHES_H */
