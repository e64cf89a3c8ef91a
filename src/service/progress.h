/* progress.h: the progress of a run as one line: cases done of the total,
 * passes, failures, rate and time left.  Rank 0 redraws it in place on a
 * terminal and prints it as a plain line now and then otherwise. */
#ifndef FV_SERVICE_PROGRESS_H
#define FV_SERVICE_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct fv_progress {
    int64_t total;       /* cases of the run, earlier sessions' included */
    int64_t earlier;     /* of those, finished before this session (--resume) */
    int64_t done;        /* finished, earlier ones included */
    int64_t passed;      /* pass or compiled */
    int64_t failed;      /* fail, error, crash, timeout */
    double started;      /* when this session started (seconds, any clock) */
} fv_progress;

/* Starts counting `total` cases of which `earlier` finished before. */
void fv_progress_start(fv_progress *progress, int64_t total, int64_t earlier, double now);

/* Counts one finished case with status `status` (an fv_result_status).
 * Cases of earlier sessions are counted too, before this session's. */
void fv_progress_count(fv_progress *progress, int status);

/* "12/40 done, 10 passed, 2 failed, 3.1 cases/s, 0:08 left" (the rate and
 * time left over this session's cases; "-" until one has finished). */
void fv_progress_format(const fv_progress *progress, double now, char *line, size_t size);

#endif
