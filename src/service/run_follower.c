/* run_follower.c: the loop of every rank but 0.  It asks rank 0 for cases
 * (WANT), runs them on its GPU worker, and sends each outcome to rank 0 as
 * soon as the case ends; it asks for the next chunk when its last queued
 * case starts, so the reply arrives while the worker is busy.  It says BYE
 * when rank 0 has no more cases (NONE) and its own are done, or when told to
 * STOP, or on SIGINT/SIGTERM (its worker is killed first). */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "service/run_internal.h"
#include "service/signals.h"

enum {
    WAIT_MS = 2,           /* wait for the worker this long between message checks */
    IDLE_SLEEP_MS = 2,
    RUNNING = -1,          /* exit status while the loop runs */
};

typedef struct follower {
    fv_run_session *session;
    fv_run_executor *executor;
    fv_text outgoing;      /* frames for rank 0 */
    fv_text incoming;      /* a message from rank 0 */
    bool requested;        /* a WANT is unanswered */
    bool no_more;          /* rank 0 said NONE */
    bool mpi_failed;
    int exit_code;
} follower;

static fv_status send_outgoing(follower *f)
{
    if (f->outgoing.length == 0)
        return FV_OK;
    FV_TRY(fv_text_status(&f->outgoing));
    fv_status status = fv_mpi_send(&f->session->mpi, 0, &f->outgoing);
    if (status != FV_OK)
        f->mpi_failed = true;
    return status;
}

static void ask_for_cases(follower *f)
{
    if (f->requested || f->no_more || fv_run_executor_queued(f->executor) > 0)
        return;
    fv_wire_put(&f->outgoing, FV_WIRE_WANT, NULL, 0);
    f->requested = true;
}

/* Takes a message from rank 0: cases, NONE or STOP. */
static fv_status take_message(follower *f)
{
    const uint8_t *data = (const uint8_t *)fv_text_str(&f->incoming);
    size_t offset = 0;
    for (;;) {
        fv_wire_frame frame;
        bool complete = false;
        FV_TRY(fv_wire_next(data, f->incoming.length, &offset, &frame, &complete));
        if (!complete)
            break;
        if (fv_wire_is(&frame, FV_WIRE_CASE)) {
            fv_assignment assignment;
            FV_TRY(fv_assignment_take(&frame, &assignment));
            FV_TRY(fv_run_executor_push(f->executor, &assignment));
            f->requested = false;
        } else if (fv_wire_is(&frame, FV_WIRE_NONE)) {
            f->no_more = true;
            f->requested = false;
        } else if (fv_wire_is(&frame, FV_WIRE_STOP)) {
            int32_t code = 2;
            FV_TRY(fv_wire_int(&frame, &code));
            f->exit_code = code;
            return FV_OK;
        } else {
            FV_FAIL(FV_ERR_CORRUPT, "rank 0 sent an unexpected %s message", frame.tag);
        }
    }
    if (offset != f->incoming.length)
        FV_FAIL(FV_ERR_CORRUPT, "rank 0 sent a message that ends inside a frame");
    return FV_OK;
}

/* One turn: the worker, then messages.  *busy if anything happened. */
static fv_status turn(follower *f, bool *busy)
{
    bool was_idle = fv_run_executor_idle(f->executor);
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    fv_run_step step = FV_RUN_NOTHING;
    fv_status status = fv_run_executor_step(f->executor, was_idle ? 0 : WAIT_MS, &outcome,
                                            &step);
    if (status == FV_OK && step == FV_RUN_FINISHED) {
        fv_outcome_put(&f->outgoing, &outcome);
        *busy = true;
    }
    fv_outcome_free(&outcome);
    FV_TRY(status);
    if (step == FV_RUN_INTERRUPTED) {
        f->exit_code = fv_signal_stop_exit_code();
        return FV_OK;
    }
    *busy = *busy || !was_idle;
    ask_for_cases(f);
    FV_TRY(send_outgoing(f));
    if (fv_mpi_progress(&f->session->mpi, NULL) != FV_OK) {
        f->mpi_failed = true;
        return fv_error_status();
    }
    bool received = false;
    int from = 0;
    fv_status polled = fv_mpi_poll(&f->session->mpi, 0, &f->incoming, &from, &received);
    if (polled != FV_OK) {
        f->mpi_failed = true;
        return polled;
    }
    if (received) {
        *busy = true;
        FV_TRY(take_message(f));
    }
    return FV_OK;
}

/* The last message to rank 0: a FAIL for a harness failure, then BYE. */
static void say_goodbye(follower *f, fv_status failure)
{
    if (f->mpi_failed)
        return;
    if (failure != FV_OK)
        fv_wire_put_failure(&f->outgoing, failure, fv_error_message());
    fv_wire_put_int(&f->outgoing, FV_WIRE_BYE, f->exit_code);
    if (send_outgoing(f) != FV_OK)
        fprintf(stderr, "%s: %s\n", f->session->label, fv_error_message());
}

int fv_run_follow(fv_run_session *session, fv_run_executor *executor, bool *abort_job)
{
    follower f = {.session = session, .executor = executor, .exit_code = RUNNING};
    fv_status failure = FV_OK;
    while (f.exit_code == RUNNING) {
        int signal_number = fv_signal_pending();
        if (signal_number != 0) {
            f.exit_code = fv_signal_exit_code(signal_number);
            break;
        }
        bool busy = false;
        failure = turn(&f, &busy);
        if (failure != FV_OK) {
            fprintf(stderr, "%s: stopping: %s\n", session->label, fv_error_message());
            f.exit_code = 2;
            break;
        }
        if (f.exit_code == RUNNING && f.no_more && fv_run_executor_idle(executor))
            f.exit_code = 0;
        else if (!busy)
            poll(NULL, 0, IDLE_SLEEP_MS);
    }
    fv_run_executor_stop(executor, f.exit_code == 0);
    say_goodbye(&f, failure);
    *abort_job = f.mpi_failed;
    fv_text_free(&f.outgoing);
    fv_text_free(&f.incoming);
    return f.exit_code;
}
