/* run_coordinator.c: rank 0's loop.  Rank 0 hands out cases longest first
 * in shrinking chunks (service/queue.h) when a rank asks (WANT), runs its
 * own share on its GPU worker between messages, and records every outcome
 * as it arrives.  A rank that leaves with cases unfinished gives them back
 * to the queue.  On SIGINT/SIGTERM or a harness failure it stops its worker,
 * flushes the archive, tells the other ranks to STOP and records what they
 * still send until each has said BYE (or a grace period ends). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/queue.h"
#include "service/run_internal.h"
#include "service/signals.h"

#define STOP_GRACE_SECONDS 5.0

enum {
    WAIT_ALONE_MS = 200,   /* rank 0 alone: wait for its worker this long per step */
    WAIT_SHARED_MS = 2,    /* with other ranks: check messages at least this often */
    IDLE_SLEEP_MS = 2,
    NOT_GIVEN = -1,        /* owner of a case not handed out (or handed back) */
    RECORDED = -2,         /* owner of a recorded case */
};

typedef struct coordinator {
    fv_run_session *session;
    fv_run_executor *executor;
    fv_run_recorder *recorder;
    const fv_run_plan *plan;
    int32_t next;              /* next position in plan->order */
    double remaining_cost;     /* estimated cost of the cases not handed out */
    int32_t *returned;         /* cases handed back, handed out again first */
    int32_t returned_count;
    int *owner;                /* per case: rank it is with, NOT_GIVEN or RECORDED */
    bool *retired;             /* per rank: said BYE */
    int active_peers;          /* other ranks that have not said BYE */
    bool stopping;
    fv_outcome incoming;       /* outcome being read from a rank's message */
    fv_text message;           /* a message received */
} coordinator;

static int32_t cases_left(const coordinator *c)
{
    return c->plan->count - c->next + c->returned_count;
}

/* The case handed out next: one handed back, else the next in order. */
static int32_t next_case(const coordinator *c)
{
    if (c->returned_count > 0)
        return c->returned[c->returned_count - 1];
    return c->plan->order[c->next];
}

/* The next case, now held by `rank`. */
static void take_assignment(coordinator *c, int rank, fv_assignment *assignment)
{
    int32_t index = next_case(c);
    if (c->returned_count > 0)
        c->returned_count--;
    else
        c->next++;
    c->remaining_cost -= c->plan->costs[index];
    if (c->remaining_cost < 0 || cases_left(c) == 0)
        c->remaining_cost = 0;
    c->owner[index] = rank;
    fv_assignment_from_case(c->plan->cases[index], index, assignment);
}

/* Hands the next chunk (weighted guided self-scheduling, service/queue.h)
 * to `rank`: each case goes to `deliver`; *given cases.  Fails with what
 * `deliver` returns. */
static fv_status take_chunk(coordinator *c, int rank,
                            fv_status (*deliver)(void *context, const fv_assignment *),
                            void *context, int32_t *given)
{
    double target = fv_queue_chunk_target(c->remaining_cost, c->session->mpi.size);
    double chunk_cost = 0;
    for (*given = 0; cases_left(c) > 0; (*given)++) {
        double cost = c->plan->costs[next_case(c)];
        if (!fv_queue_chunk_takes(*given, chunk_cost, cost, target))
            break;
        chunk_cost += cost;
        fv_assignment assignment;
        take_assignment(c, rank, &assignment);
        FV_TRY(deliver(context, &assignment));
    }
    return FV_OK;
}

static fv_status put_frame(void *frames, const fv_assignment *assignment)
{
    fv_assignment_put(frames, assignment);
    return FV_OK;
}

static fv_status push_to_worker(void *executor, const fv_assignment *assignment)
{
    return fv_run_executor_push(executor, assignment);
}

/* Records an outcome from `rank` if that rank had the case. */
static fv_status accept(coordinator *c, const fv_outcome *outcome, int rank)
{
    int32_t index = outcome->index;
    if (index < 0 || index >= c->plan->count || c->owner[index] != rank) {
        fprintf(stderr, "fuservalidate: ignoring a result for case %d from rank %d, which "
                "does not have that case\n", (int)index, rank);
        return FV_OK;
    }
    c->owner[index] = RECORDED;
    FV_TRY(fv_run_record(c->recorder, outcome));
    return FV_OK;
}

/* A rank said BYE: cases it still had go back to the queue. */
static void retire(coordinator *c, int rank)
{
    if (rank <= 0 || rank >= c->session->mpi.size || c->retired[rank])
        return;
    c->retired[rank] = true;
    c->active_peers--;
    int32_t handed_back = 0;
    for (int32_t i = 0; i < c->plan->count; i++)
        if (c->owner[i] == rank) {
            c->owner[i] = NOT_GIVEN;
            c->returned[c->returned_count++] = i;
            c->remaining_cost += c->plan->costs[i];
            handed_back++;
        }
    if (handed_back > 0 && !c->stopping)
        fprintf(stderr, "fuservalidate: rank %d left with %d unfinished cases; they go to "
                "other ranks\n", rank, (int)handed_back);
}

static fv_status reply_with_cases(coordinator *c, int rank)
{
    fv_text frames = {0};
    int32_t given = 0;
    fv_status status = take_chunk(c, rank, put_frame, &frames, &given);
    if (status == FV_OK && given == 0)
        fv_wire_put(&frames, FV_WIRE_NONE, NULL, 0);
    if (status == FV_OK)
        status = fv_text_status(&frames);
    if (status == FV_OK)
        status = fv_mpi_send(&c->session->mpi, rank, &frames);
    fv_text_free(&frames);
    return status;
}

/* Handles every frame of a message from `rank`.  A FAIL in it is returned
 * after the other frames (a BYE usually follows it). */
static fv_status handle_message(coordinator *c, int rank)
{
    const uint8_t *data = (const uint8_t *)fv_text_str(&c->message);
    size_t offset = 0;
    fv_status failure = FV_OK;
    fv_outcome_free(&c->incoming);
    for (;;) {
        fv_wire_frame frame;
        bool complete = false;
        FV_TRY(fv_wire_next(data, c->message.length, &offset, &frame, &complete));
        if (!complete)
            break;
        if (fv_outcome_is_frame(&frame)) {
            bool done = false;
            FV_TRY(fv_outcome_take(&c->incoming, &frame, &done));
            if (done) {
                FV_TRY(accept(c, &c->incoming, rank));
                fv_outcome_free(&c->incoming);
            }
        } else if (fv_wire_is(&frame, FV_WIRE_WANT)) {
            if (!c->stopping)
                FV_TRY(reply_with_cases(c, rank));
        } else if (fv_wire_is(&frame, FV_WIRE_BYE)) {
            retire(c, rank);
        } else if (fv_wire_is(&frame, FV_WIRE_FAIL)) {
            char who[32];
            snprintf(who, sizeof who, "rank %d", rank);
            if (failure == FV_OK)
                failure = fv_wire_raise_failure(&frame, who);
        } else {
            FV_FAIL(FV_ERR_CORRUPT, "rank %d sent an unexpected %s message", rank, frame.tag);
        }
    }
    if (offset != c->message.length)
        FV_FAIL(FV_ERR_CORRUPT, "rank %d sent a message that ends inside a frame", rank);
    return failure;
}

/* Receives and handles every waiting message.  *busy if there was one. */
static fv_status serve_peers(coordinator *c, bool *busy)
{
    FV_TRY(fv_mpi_progress(&c->session->mpi, NULL));
    for (;;) {
        bool received = false;
        int rank = -1;
        FV_TRY(fv_mpi_poll(&c->session->mpi, -1, &c->message, &rank, &received));
        if (!received)
            return FV_OK;
        *busy = true;
        FV_TRY(handle_message(c, rank));
    }
}

/* Rank 0's own share: a chunk when its worker has nothing, then one step. */
static fv_status own_step(coordinator *c, bool *busy, bool *interrupted)
{
    fv_run_executor *executor = c->executor;
    if (fv_run_executor_idle(executor) && cases_left(c) > 0) {
        int32_t given = 0;
        FV_TRY(take_chunk(c, 0, push_to_worker, executor, &given));
    }
    if (fv_run_executor_idle(executor))
        return FV_OK;
    *busy = true;
    int wait_ms = c->session->mpi.size > 1 ? WAIT_SHARED_MS : WAIT_ALONE_MS;
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    fv_run_step step;
    fv_status status = fv_run_executor_step(executor, wait_ms, &outcome, &step);
    if (status == FV_OK && step == FV_RUN_FINISHED)
        status = accept(c, &outcome, 0);
    *interrupted = step == FV_RUN_INTERRUPTED;
    fv_outcome_free(&outcome);
    return status;
}

static bool finished(const coordinator *c)
{
    return cases_left(c) == 0 && fv_run_executor_idle(c->executor) && c->active_peers == 0;
}

/* Stops the run: the worker, a flush, STOP to every rank, then what they
 * still send until all said BYE or the grace period ends. */
static void stop_run(coordinator *c, int exit_code)
{
    c->stopping = true;
    fv_run_executor_stop(c->executor, false);
    if (fv_run_recorder_flush(c->recorder) != FV_OK)
        fprintf(stderr, "fuservalidate: flushing the archive: %s\n", fv_error_message());
    bool busy = false;
    if (serve_peers(c, &busy) != FV_OK)
        fprintf(stderr, "fuservalidate: while stopping: %s\n", fv_error_message());
    for (int rank = 1; rank < c->session->mpi.size; rank++) {
        if (c->retired[rank])
            continue;
        fv_text stop = {0};
        fv_wire_put_int(&stop, FV_WIRE_STOP, exit_code);
        fv_status status = fv_mpi_send(&c->session->mpi, rank, &stop);
        fv_text_free(&stop);
        if (status != FV_OK) {
            fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
            break;
        }
    }
    double deadline = fv_monotonic_seconds() + STOP_GRACE_SECONDS;
    while (c->active_peers > 0 && fv_monotonic_seconds() < deadline) {
        busy = false;
        if (serve_peers(c, &busy) != FV_OK) {
            fprintf(stderr, "fuservalidate: while stopping: %s\n", fv_error_message());
            break;
        }
        if (!busy)
            poll(NULL, 0, IDLE_SLEEP_MS);
    }
}

static int run_loop(coordinator *c)
{
    for (;;) {
        int signal_number = fv_signal_pending();
        if (signal_number != 0) {
            stop_run(c, fv_signal_exit_code(signal_number));
            return fv_signal_exit_code(signal_number);
        }
        bool busy = false, interrupted = false;
        fv_status status = own_step(c, &busy, &interrupted);
        if (status == FV_OK && !interrupted)
            status = serve_peers(c, &busy);
        if (status != FV_OK) {
            fprintf(stderr, "fuservalidate: stopping: %s\n", fv_error_message());
            stop_run(c, 2);
            return 2;
        }
        if (interrupted) {
            int code = fv_signal_stop_exit_code();
            fprintf(stderr, "fuservalidate: the GPU worker was stopped from outside; stopping\n");
            stop_run(c, code);
            return code;
        }
        fv_run_recorder_tick(c->recorder, false);
        if (finished(c))
            return fv_run_recorder_exit_status(c->recorder);
        if (!busy)
            poll(NULL, 0, IDLE_SLEEP_MS);
    }
}

int fv_run_coordinate(fv_run_session *session, fv_run_executor *executor,
                      fv_run_recorder *recorder, const fv_run_plan *plan, bool *peers_done)
{
    coordinator c = {.session = session, .executor = executor, .recorder = recorder,
                     .plan = plan, .active_peers = session->mpi.size - 1};
    fv_outcome_init(&c.incoming);
    c.returned = malloc(sizeof *c.returned * (size_t)(plan->count + 1));
    c.owner = malloc(sizeof *c.owner * (size_t)(plan->count + 1));
    c.retired = calloc((size_t)session->mpi.size, sizeof *c.retired);
    int exit_code = 2;
    if (c.returned == NULL || c.owner == NULL || c.retired == NULL) {
        fprintf(stderr, "fuservalidate: out of memory\n");
        fv_run_executor_stop(executor, false);
    } else {
        for (int32_t i = 0; i < plan->count; i++) {
            c.owner[i] = NOT_GIVEN;
            c.remaining_cost += plan->costs[i];
        }
        exit_code = run_loop(&c);
    }
    *peers_done = c.active_peers == 0;
    fv_outcome_free(&c.incoming);
    fv_text_free(&c.message);
    free(c.returned);
    free(c.owner);
    free(c.retired);
    return exit_code;
}
