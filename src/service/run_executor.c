/* run_executor.c: feeds a rank's GPU worker from the rank's queue of cases,
 * and replaces the worker after a crash or a timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/run_internal.h"

fv_status fv_run_executor_start(fv_run_executor *executor, const fv_run_session *session,
                                double start_timeout_s)
{
    executor->timeout_s = session->options->timeout_s;
    executor->rank = session->mpi.rank;
    snprintf(executor->label, sizeof executor->label, "%s", session->label);
    FV_TRY(fv_worker_start(NULL, session->worker_arguments, session->label, start_timeout_s,
                           &executor->worker));
    return FV_OK;
}

fv_status fv_run_executor_push(fv_run_executor *executor, const fv_assignment *assignment)
{
    if (executor->head > 0 && executor->head == executor->count)
        executor->head = executor->count = 0;
    if (executor->count == executor->capacity) {
        int32_t capacity = executor->capacity ? 2 * executor->capacity : 16;
        fv_assignment *grown = realloc(executor->queue, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        executor->queue = grown;
        executor->capacity = capacity;
    }
    executor->queue[executor->count++] = *assignment;
    return FV_OK;
}

int32_t fv_run_executor_queued(const fv_run_executor *executor)
{
    return executor->count - executor->head;
}

bool fv_run_executor_idle(const fv_run_executor *executor)
{
    return fv_run_executor_queued(executor) == 0 &&
           (executor->worker == NULL || !fv_worker_busy(executor->worker));
}

static fv_status restart_worker(fv_run_executor *executor)
{
    FV_TRY(fv_worker_restart(executor->worker));
    fprintf(stderr, "%s: started a new GPU worker (pid %d)\n", executor->label,
            fv_worker_pid(executor->worker));
    return FV_OK;
}

/* After a finished case: a crash (worker lost, or a CUDA fault the pipeline
 * reported) means a new worker; a timeout already killed the old one. */
static fv_status after_case(fv_run_executor *executor, fv_worker_event event,
                            const fv_result *result)
{
    bool lost = event == FV_WORKER_LOST;
    bool poisoned = event == FV_WORKER_FINISHED && result->status == FV_RESULT_CRASH;
    if (!lost && !poisoned)
        return FV_OK;
    fprintf(stderr, "%s: %s %s: %s\n", executor->label, result->case_id,
            fv_result_status_name((fv_result_status)result->status), result->message);
    FV_TRY(restart_worker(executor));
    return FV_OK;
}

fv_status fv_run_executor_step(fv_run_executor *executor, int wait_ms, fv_outcome *outcome,
                               fv_run_step *step)
{
    *step = FV_RUN_NOTHING;
    if (!fv_worker_busy(executor->worker) && fv_run_executor_queued(executor) > 0) {
        FV_TRY(fv_worker_submit(executor->worker, &executor->queue[executor->head],
                                executor->timeout_s));
        executor->head++;
    }
    if (!fv_worker_busy(executor->worker))
        return FV_OK;
    fv_worker_event event;
    FV_TRY(fv_worker_wait(executor->worker, wait_ms, &event, outcome));
    if (event == FV_WORKER_INTERRUPTED) {
        *step = FV_RUN_INTERRUPTED;
        return FV_OK;
    }
    if (event != FV_WORKER_FINISHED && event != FV_WORKER_LOST)
        return FV_OK;
    outcome->result.rank = executor->rank;
    *step = FV_RUN_FINISHED;
    FV_TRY(after_case(executor, event, &outcome->result));
    return FV_OK;
}

void fv_run_executor_stop(fv_run_executor *executor, bool graceful)
{
    fv_worker_stop(executor->worker, graceful);
    executor->worker = NULL;
    free(executor->queue);
    executor->queue = NULL;
    executor->head = executor->count = executor->capacity = 0;
}
