/* run_internal.h: the parts of `fuservalidate run` that its files share
 * (run_command.c sets up, run_coordinator.c is rank 0's loop,
 * run_follower.c the other ranks' loop, run_executor.c feeds a rank's GPU
 * worker, run_recorder.c writes what rank 0 receives).  docs/service.md
 * describes the process model and the messages. */
#ifndef FV_SERVICE_RUN_INTERNAL_H
#define FV_SERVICE_RUN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "service/archive.h"
#include "service/mpi_session.h"
#include "service/options.h"
#include "service/outcome.h"
#include "service/progress.h"
#include "service/worker.h"

/* One rank of a run. */
typedef struct fv_run_session {
    const fv_options *options;
    fv_mpi mpi;
    char label[32];            /* "rank 3", for log lines */
    char **worker_arguments;   /* argv of this rank's GPU worker, NULL-terminated */
    int host_threads;          /* the worker's --jobs; 0 until first decided */
} fv_run_session;

/* ------------------------------------------------------------- executor */

/* A rank's GPU worker with the cases assigned to this rank and not yet
 * submitted to it.  Zero-initialize, then fv_run_executor_start. */
typedef struct fv_run_executor {
    fv_worker *worker;
    fv_assignment *queue;        /* [head, count) are waiting */
    int32_t head, count, capacity;
    double timeout_s;            /* per case */
    int rank;
    char label[32];
} fv_run_executor;

/* What one step of the executor brought. */
typedef enum fv_run_step {
    FV_RUN_NOTHING,      /* no case finished */
    FV_RUN_FINISHED,     /* *outcome holds a finished case (crash and timeout included) */
    FV_RUN_INTERRUPTED   /* the worker was killed by SIGINT/SIGTERM/SIGHUP from outside */
} fv_run_step;

/* Starts the rank's worker (session->worker_arguments), waiting up to
 * start_timeout_s for it.  Failures: those of fv_worker_start. */
fv_status fv_run_executor_start(fv_run_executor *executor, const fv_run_session *session,
                                double start_timeout_s);

/* Queues a case.  FV_ERR_NOMEM. */
fv_status fv_run_executor_push(fv_run_executor *executor, const fv_assignment *assignment);

/* Cases queued and not yet given to the worker. */
int32_t fv_run_executor_queued(const fv_run_executor *executor);

/* True when nothing is queued or running. */
bool fv_run_executor_idle(const fv_run_executor *executor);

/* Gives the worker the next queued case if it is free, then waits up to
 * wait_ms for the running case.  A finished case fills *outcome (with this
 * rank in result.rank).  After a crash (the worker died, or the pipeline
 * reported a CUDA fault, which poisons the context) or a timeout it logs
 * what happened and starts a new worker.  Failures (harness): the worker's
 * FAIL, a worker that cannot be restarted, FV_ERR_NOMEM. */
fv_status fv_run_executor_step(fv_run_executor *executor, int wait_ms, fv_outcome *outcome,
                               fv_run_step *step);

/* Ends the worker (see fv_worker_stop) and forgets the queue. */
void fv_run_executor_stop(fv_run_executor *executor, bool graceful);

/* ------------------------------------------------------------- recorder */

/* Rank 0's record of the run: the archive, the rows for the summary, the
 * progress line.  Zero-initialize and set the first two fields. */
typedef struct fv_run_recorder {
    fv_archive *archive;
    bool terminal;               /* stdout is a terminal: redraw progress in place */
    fv_result *results;          /* every row of the run, earlier sessions' too */
    int32_t result_count, result_capacity;
    int64_t unflushed_rows;
    double last_flush;           /* monotonic seconds */
    fv_progress progress;
    double last_progress;        /* when the progress line was last printed */
    bool progress_shown;         /* a progress line is on the terminal now */
} fv_run_recorder;

/* Starts the progress count: `total` cases, `earlier` of them already in
 * the results (fv_run_recorder_keep). */
void fv_run_recorder_start(fv_run_recorder *recorder, int64_t total, int64_t earlier);

/* Keeps a row of an earlier session (--resume) for the summary; it is
 * already in the archive.  FV_ERR_NOMEM. */
fv_status fv_run_recorder_keep(fv_run_recorder *recorder, const fv_result *result);

/* Prints a finished case (with its report and repro line if it failed),
 * stores its kernels, appends its row and samples to the archive, flushes
 * every 32 rows or 2 s, and counts it.  Failures: the archive's. */
fv_status fv_run_record(fv_run_recorder *recorder, const fv_outcome *outcome);

/* Prints the progress line if it is due (always with `final`). */
void fv_run_recorder_tick(fv_run_recorder *recorder, bool final);

/* Flushes the archive.  Failures: fv_archive_flush's. */
fv_status fv_run_recorder_flush(fv_run_recorder *recorder);

/* Prints the table per family and dtype, then every failure with its
 * one-line repro command. */
void fv_run_recorder_summary(fv_run_recorder *recorder);

/* With rows forced to an approach (--approach all, or runs resumed with
 * them): prints the per-shape comparison of the approaches and the regret of
 * the automatic rule (service/approaches.h) and stores it as /approaches in
 * the archive.  Nothing without such rows.  Failures: the archive's,
 * FV_ERR_NOMEM. */
fv_status fv_run_recorder_compare_approaches(fv_run_recorder *recorder);

/* 1 if any row failed, errored, crashed or timed out, else 0. */
int fv_run_recorder_exit_status(const fv_run_recorder *recorder);

/* Frees the rows (the archive is closed by the caller). */
void fv_run_recorder_free(fv_run_recorder *recorder);

/* ---------------------------------------------------------------- loops */

/* The cases rank 0 hands out in this session, longest first. */
typedef struct fv_run_plan {
    fv_case *const *cases;
    int32_t count;
    const int32_t *order;        /* indices into cases, in hand-out order */
    const double *costs;         /* per case: estimated cost (fv_queue_costs) */
} fv_run_plan;

/* Rank 0: hands cases out on request, runs its own share, records every
 * outcome.  Returns the run's exit status: 0 or 1 when every case ran,
 * 128 + the signal after SIGINT/SIGTERM, 2 after a harness failure (its
 * message printed).  *peers_done: every other rank has finished (if not,
 * the caller ends the job with fv_mpi_abort). */
int fv_run_coordinate(fv_run_session *session, fv_run_executor *executor,
                      fv_run_recorder *recorder, const fv_run_plan *plan, bool *peers_done);

/* Any other rank: asks rank 0 for cases, runs them, sends back outcomes.
 * Returns this rank's exit status (0; 2 after a harness failure; the status
 * rank 0 stopped it with; 128 + the signal).  *abort_job: MPI failed, the
 * caller should end the job with fv_mpi_abort. */
int fv_run_follow(fv_run_session *session, fv_run_executor *executor, bool *abort_job);

/* ------------------------------------------------------------ reports */

/* What a run writes for CI at the end (run_reports.c). */
typedef struct fv_run_reports {
    const char *junit_path;      /* --junit FILE, or NULL */
    const char *baseline_path;   /* --baseline OLD.h5, or NULL */
    const char *archive_path;    /* this run's archive */
    double threshold;            /* --threshold as a fraction; < 0: the default (5%) */
    double alpha;                /* --alpha; <= 0: the default (0.01) */
} fv_run_reports;

/* Rank 0, once the cases are over and before the archive is closed, with
 * every row of the run (after --resume, the earlier sessions' too): with a
 * baseline, flushes the archive, compares it with the baseline, prints the
 * comparison and raises *exit_status from 0 to 1 on a new failure or
 * regression; writes the JUnit report (atomically) when asked.  Failures:
 * those of fv_archive_flush, fv_compare_archives (naming the archive) and
 * fv_junit_write; the run then exits 2. */
fv_status fv_run_write_reports(const fv_run_reports *reports, fv_archive *archive,
                               const fv_result *results, int32_t count, int *exit_status);

#endif
