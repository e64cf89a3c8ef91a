/* queue.h: the order in which rank 0 hands out cases and how many at a time.
 *
 * Longest first: cases whose duration an earlier archive recorded
 * (--baseline, --resume) are ordered by that duration; cases without one go
 * before them (an unknown case may be long), ordered by the bytes they move.
 * Chunks shrink toward the end (guided self-scheduling): a request gets
 * ceil(remaining / (2 x ranks)) cases, so early chunks save messages and the
 * last ones balance the ranks. */
#ifndef FV_SERVICE_QUEUE_H
#define FV_SERVICE_QUEUE_H

#include <stdint.h>

#include "common/status.h"
#include "ir/case.h"

/* Durations of cases in earlier runs, by case id. */
typedef struct fv_queue_entry {
    char case_id[FV_CASE_ID_CAPACITY];
    double wall_ms;
} fv_queue_entry;

typedef struct fv_queue_history {
    fv_queue_entry *entries;
    int32_t count, capacity;
    int sorted;                  /* entries are sorted by id (set by lookups) */
} fv_queue_history;

/* Adds (or, for an id already there, replaces) a case's duration.
 * FV_ERR_NOMEM. */
fv_status fv_queue_history_add(fv_queue_history *history, const char *case_id, double wall_ms);

/* The recorded duration of `case_id` in ms, or -1 if none.  Sorts the
 * history on first use after an add. */
double fv_queue_history_find(fv_queue_history *history, const char *case_id);

void fv_queue_history_free(fv_queue_history *history);

/* Fills order[0 .. count) with 0 .. count-1, longest first: cases with
 * durations[i] < 0 (unknown) first by bytes[i], largest first, then the
 * others by durations[i], longest first; ties keep index order. */
fv_status fv_queue_order(const double *durations, const double *bytes, int32_t count,
                         int32_t *order);

/* Cases in the next chunk: ceil(remaining / (2 x ranks)), at least 1 while
 * any remain, 0 when none do. */
int32_t fv_queue_chunk(int32_t remaining, int ranks);

#endif
