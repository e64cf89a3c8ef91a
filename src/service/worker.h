/* worker.h: the GPU worker process as an MPI rank sees it.
 *
 * A rank never initializes CUDA (a kernel fault poisons a CUDA context for
 * good, and CUDA is not fork-safe).  It starts `fuservalidate worker` with
 * posix_spawn, in a process group of its own, and talks to it over two pipes:
 * the worker reads frames (service/wire.h) on its fd 0 and writes frames on
 * its fd 3; its stdout and stderr go to the rank's stderr.  The worker owns
 * the CUDA context and the pipeline (kernel cache, reference store).
 * docs/service.md describes the protocol:
 *
 *   worker -> rank   HELO fv_worker_hello              once, when ready
 *                    FAIL status + text                 could not start; exits 2
 *   rank -> worker   CASE fv_assignment                 run this case
 *   worker -> rank   STAG text ...                      stages as it goes
 *                    KERN ... RPRT ... RSLT             the outcome (RSLT ends it)
 *                    FAIL status + text                 harness failure; exits 2
 *   rank -> worker   QUIT (or end of file)              exit 0
 *
 * A worker that dies, or that sends no result within the case's timeout, is
 * killed (SIGKILL) and reaped, and its case becomes a `crash` or `timeout`
 * row with what the rank knows: the signal or exit status, and the last stage
 * the worker reported.
 */
#ifndef FV_SERVICE_WORKER_H
#define FV_SERVICE_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "service/archive.h"
#include "service/outcome.h"

/* What a worker says when it is ready (the HELO payload). */
typedef struct fv_worker_hello {
    int32_t pid;
    int32_t compile_only;          /* 1: runs nothing on a GPU */
    char no_gpu_reason[256];       /* why it fell back to compile-only, or "" */
    int32_t ordinal;               /* CUDA device ordinal it uses, -1 without a GPU */
    int32_t device_count;          /* devices it sees (0 without a GPU) */
    char driver_version[32];       /* "12.4", or "" */
    char nvrtc_version[32];        /* "12.4" */
    fv_archive_device device;      /* host, GPU (or built-in table device), bus id... */
} fv_worker_hello;

typedef struct fv_worker fv_worker;

/* What fv_worker_wait saw. */
typedef enum fv_worker_event {
    FV_WORKER_IDLE,        /* no case submitted */
    FV_WORKER_RUNNING,     /* the case is still running */
    FV_WORKER_FINISHED,    /* the case's outcome arrived (*outcome) */
    FV_WORKER_LOST,        /* the worker died, misbehaved or timed out: *outcome is a
                              `crash` or `timeout` row; the process is reaped, restart it */
    FV_WORKER_INTERRUPTED  /* the worker was killed by SIGINT, SIGTERM or SIGHUP that the
                              rank did not send: the job is being stopped; no outcome */
} fv_worker_event;

/* Starts a worker: the executable `program` (NULL: this program, from
 * /proc/self/exe) with `arguments` as its argv (argv[0] first,
 * NULL-terminated; copied).  `label` ("rank 3") starts the lines the worker
 * handle writes to stderr.  Waits up to
 * start_timeout_s for its HELO.  Failures: FV_ERR_IO (pipes, spawn), the
 * worker's own FAIL status and message, FV_ERR_INTERNAL if it dies or says
 * nothing in time; nothing is left running. */
fv_status fv_worker_start(const char *program, char *const *arguments, const char *label,
                          double start_timeout_s, fv_worker **worker);

/* The worker's HELO. */
const fv_worker_hello *fv_worker_hello_info(const fv_worker *worker);

/* The worker's process id (0 while it is not running). */
int fv_worker_pid(const fv_worker *worker);

/* True while a case is submitted and its outcome has not been collected. */
bool fv_worker_busy(const fv_worker *worker);

/* Sends a case; the worker must not be busy.  The case times out
 * timeout_s seconds from now.  If the worker has died since its last case,
 * this restarts it first (and says so on stderr).  Failures: FV_ERR_INTERNAL
 * when busy, those of fv_worker_restart. */
fv_status fv_worker_submit(fv_worker *worker, const fv_assignment *assignment,
                           double timeout_s);

/* Waits up to wait_ms milliseconds (0: just looks) for the submitted case.
 * On FV_WORKER_FINISHED and FV_WORKER_LOST *outcome (initialized by the
 * caller, freed and refilled here) holds the case's outcome.  Returns a
 * failure only for a harness failure: the worker's FAIL (its status and
 * message; the worker is then reaped) or FV_ERR_NOMEM. */
fv_status fv_worker_wait(fv_worker *worker, int wait_ms, fv_worker_event *event,
                         fv_outcome *outcome);

/* Kills the worker if it still runs, reaps it and starts a new one with the
 * same arguments (as fv_worker_start).  A busy case is dropped. */
fv_status fv_worker_restart(fv_worker *worker);

/* Ends the worker and frees the handle.  graceful: sends QUIT and gives it
 * two seconds to exit; otherwise (or after that) SIGKILL.  NULL is ok. */
void fv_worker_stop(fv_worker *worker, bool graceful);

#endif
