/* queue.h: the order in which rank 0 hands out cases and how many at a time.
 *
 * Longest first: cases whose duration an earlier archive recorded
 * (--baseline, --resume) are ordered by that duration; cases without one go
 * before them (an unknown case may be long), ordered by the bytes they move.
 * Chunks shrink toward the end (weighted guided self-scheduling): a request
 * gets the next cases in order up to 1 / (2 x ranks) of the estimated cost
 * still to hand out, and always at least one case.  Weighing by cost, not
 * count, matters because the order is longest first: the first chunks hold
 * the heaviest cases, and a chunk of 1 / (2 x ranks) of the *cases* there
 * would hold far more than its share of the work. */
#ifndef FV_SERVICE_QUEUE_H
#define FV_SERVICE_QUEUE_H

#include <stdbool.h>
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

/* costs[i] = the estimated cost of case i, in one unit for all cases: its
 * duration in ms where known (durations[i] >= 0); otherwise its bytes times
 * the known cases' total ms per byte, or its bytes alone when no case has a
 * duration.  durations may be NULL (none known).  Every cost is >= 0. */
void fv_queue_costs(const double *durations, const double *bytes, int32_t count,
                    double *costs);

/* The cost a chunk may reach: remaining_cost / (2 x ranks), where
 * remaining_cost is the cost of every case not handed out yet.  A rank
 * count below 1 counts as one. */
double fv_queue_chunk_target(double remaining_cost, int ranks);

/* Whether a chunk that holds `taken` cases costing `chunk_cost` takes the
 * next case, costing `next_cost`: always when it is empty, else while the
 * sum stays within `target`. */
bool fv_queue_chunk_takes(int32_t taken, double chunk_cost, double next_cost, double target);

#endif
