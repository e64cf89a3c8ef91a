/* worker.c: a rank's handle on its GPU worker process: posix_spawn, pipes,
 * case submission, outcome collection, timeouts, crash detection, respawn. */
#include "service/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

extern char **environ;

enum {
    REAP_GRACE_MS = 2000,   /* a worker that closed its pipe gets this long to exit */
    LOWEST_PIPE_FD = 10,    /* pipe ends live above the worker's fds 0..3 */
    READ_CHUNK = 65536,
};

struct fv_worker {
    char **arguments;          /* argv, NULL-terminated, owned */
    char program[4096];        /* this executable */
    char label[64];            /* "rank 3" */
    double start_timeout_s;
    pid_t pid;                 /* 0 when no process runs */
    int to_worker;             /* write end of the worker's fd 0 */
    int from_worker;           /* read end of the worker's fd 3 (non-blocking) */
    fv_text input;             /* bytes read from the worker, from `consumed` on unparsed */
    size_t consumed;
    bool end_of_file;
    fv_worker_hello hello;
    bool busy;
    fv_assignment assignment;  /* the submitted case */
    double deadline;           /* monotonic seconds */
    double timeout_s;
    char stage[32];            /* last stage the worker reported for the case */
    fv_outcome pending;        /* frames of the case's outcome received so far */
};

/* ------------------------------------------------------------ processes */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void close_pipes(fv_worker *w)
{
    close_fd(&w->to_worker);
    close_fd(&w->from_worker);
    fv_text_reset(&w->input);
    w->consumed = 0;
    w->end_of_file = false;
}

/* Moves a pipe end above the fds the worker gets (0..3), close-on-exec. */
static fv_status raise_fd(int *fd)
{
    if (*fd >= LOWEST_PIPE_FD)
        return FV_OK;
    int moved = fcntl(*fd, F_DUPFD_CLOEXEC, LOWEST_PIPE_FD);
    if (moved < 0)
        FV_FAIL(FV_ERR_IO, "cannot move a pipe descriptor: %s", strerror(errno));
    close(*fd);
    *fd = moved;
    return FV_OK;
}

static fv_status make_pipe(int ends[2])
{
    if (pipe2(ends, O_CLOEXEC) != 0)
        FV_FAIL(FV_ERR_IO, "cannot create a pipe for the GPU worker: %s", strerror(errno));
    fv_status status = raise_fd(&ends[0]);
    if (status == FV_OK)
        status = raise_fd(&ends[1]);
    if (status != FV_OK) {
        close(ends[0]);
        close(ends[1]);
    }
    return status;
}

/* Signals the worker starts with at their default action, and none blocked:
 * the rank ignores SIGPIPE and SIGXFSZ and catches SIGINT and SIGTERM. */
static fv_status spawn_attributes(posix_spawnattr_t *attributes)
{
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGXFSZ);
    sigemptyset(&none);
    if (posix_spawnattr_init(attributes) != 0)
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (posix_spawnattr_setflags(attributes, flags) != 0 ||
        posix_spawnattr_setpgroup(attributes, 0) != 0 ||
        posix_spawnattr_setsigdefault(attributes, &defaults) != 0 ||
        posix_spawnattr_setsigmask(attributes, &none) != 0) {
        posix_spawnattr_destroy(attributes);
        FV_FAIL(FV_ERR_INTERNAL, "cannot set the GPU worker's spawn attributes");
    }
    return FV_OK;
}

/* fd 0: requests; fd 3: responses; stdout joins stderr. */
static fv_status spawn_actions(posix_spawn_file_actions_t *actions, int requests, int responses)
{
    if (posix_spawn_file_actions_init(actions) != 0)
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    if (posix_spawn_file_actions_adddup2(actions, requests, 0) != 0 ||
        posix_spawn_file_actions_adddup2(actions, responses, 3) != 0 ||
        posix_spawn_file_actions_adddup2(actions, STDERR_FILENO, STDOUT_FILENO) != 0) {
        posix_spawn_file_actions_destroy(actions);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    return FV_OK;
}

static fv_status spawn(fv_worker *w)
{
    int requests[2], responses[2];
    FV_TRY(make_pipe(requests));
    fv_status status = make_pipe(responses);
    if (status != FV_OK) {
        close(requests[0]);
        close(requests[1]);
        return status;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    bool have_actions = false, have_attributes = false;
    FV_TRY_GOTO(status, spawn_actions(&actions, requests[0], responses[1]), done);
    have_actions = true;
    FV_TRY_GOTO(status, spawn_attributes(&attributes), done);
    have_attributes = true;
    int spawned = posix_spawn(&w->pid, w->program, &actions, &attributes, w->arguments,
                              environ);
    if (spawned != 0) {
        w->pid = 0;
        status = fv_error_raise(FV_ERR_IO, __FILE__, __LINE__,
                                "%s: cannot start the GPU worker %s: %s", w->label, w->program,
                                strerror(spawned));
    }
done:
    if (have_actions)
        posix_spawn_file_actions_destroy(&actions);
    if (have_attributes)
        posix_spawnattr_destroy(&attributes);
    close(requests[0]);
    close(responses[1]);
    if (status != FV_OK) {
        close(requests[1]);
        close(responses[0]);
        return status;
    }
    w->to_worker = requests[1];
    w->from_worker = responses[0];
    int flags = fcntl(w->from_worker, F_GETFL);
    if (flags < 0 || fcntl(w->from_worker, F_SETFL, flags | O_NONBLOCK) < 0)
        FV_FAIL(FV_ERR_IO, "cannot make the GPU worker's pipe non-blocking: %s",
                strerror(errno));
    return FV_OK;
}

/* Describes how a waited-for worker ended in `how` ("was killed by signal 6
 * (Aborted)"), from waitpid's result `done` and its status; *interrupted:
 * it died of SIGINT, SIGTERM or SIGHUP (not ours). */
static void describe_end(pid_t done, int wait_status, char *how, size_t how_size,
                         bool *interrupted)
{
    *interrupted = false;
    if (done < 0)
        snprintf(how, how_size, "could not be waited for (%s)", strerror(errno));
    else if (WIFSIGNALED(wait_status)) {
        int signal_number = WTERMSIG(wait_status);
        snprintf(how, how_size, "was killed by signal %d (%s)", signal_number,
                 strsignal(signal_number));
        *interrupted = signal_number == SIGINT || signal_number == SIGTERM ||
                       signal_number == SIGHUP;
    } else if (WIFEXITED(wait_status)) {
        snprintf(how, how_size, "exited with status %d", WEXITSTATUS(wait_status));
    } else {
        snprintf(how, how_size, "ended (wait status %#x)", (unsigned)wait_status);
    }
}

/* Waits for the worker to exit (SIGKILL after grace_ms), closes the pipes,
 * and describes how it ended (describe_end). */
static void reap(fv_worker *w, int grace_ms, char *how, size_t how_size, bool *interrupted)
{
    *interrupted = false;
    if (w->pid <= 0) {
        snprintf(how, how_size, "is not running");
        close_pipes(w);
        return;
    }
    int wait_status = 0;
    pid_t done = 0;
    for (int waited = 0; done == 0; waited += 10) {
        done = waitpid(w->pid, &wait_status, waited < grace_ms ? WNOHANG : 0);
        if (done == 0 && waited < grace_ms) {
            poll(NULL, 0, 10);
        } else if (done == 0 || (done < 0 && errno == EINTR)) {
            kill(w->pid, SIGKILL);
            done = 0;
            grace_ms = 0;
        }
    }
    describe_end(done, wait_status, how, how_size, interrupted);
    w->pid = 0;
    close_pipes(w);
}

static void kill_and_reap(fv_worker *w)
{
    if (w->pid > 0)
        kill(w->pid, SIGKILL);
    char how[128];
    bool interrupted;
    reap(w, 0, how, sizeof how, &interrupted);
}

/* ---------------------------------------------------------------- input */

/* Reads what the worker has written, waiting up to wait_ms for the first
 * bytes.  Sets end_of_file when the worker closed its end. */
static fv_status read_available(fv_worker *w, int wait_ms)
{
    struct pollfd ready = {.fd = w->from_worker, .events = POLLIN};
    int polled = poll(&ready, 1, wait_ms);
    if (polled < 0 && errno != EINTR)
        FV_FAIL(FV_ERR_IO, "%s: waiting for the GPU worker: %s", w->label, strerror(errno));
    if (polled <= 0)
        return FV_OK;
    char chunk[READ_CHUNK];
    for (;;) {
        ssize_t got = read(w->from_worker, chunk, sizeof chunk);
        if (got > 0) {
            fv_text_append(&w->input, chunk, (size_t)got);
            FV_TRY(fv_text_status(&w->input));
            continue;
        }
        if (got == 0)
            w->end_of_file = true;
        else if (errno == EINTR)
            continue;
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
            w->end_of_file = true; /* a broken pipe: the worker is gone */
        return FV_OK;
    }
}

/* The next whole frame, if one has arrived.  FV_ERR_CORRUPT for garbage. */
static fv_status next_frame(fv_worker *w, fv_wire_frame *frame, bool *complete)
{
    FV_TRY(fv_wire_next((const uint8_t *)fv_text_str(&w->input), w->input.length, &w->consumed,
                        frame, complete));
    return FV_OK;
}

/* Drops the parsed bytes (call when no frame points into the buffer). */
static void compact_input(fv_worker *w)
{
    if (w->consumed == 0)
        return;
    size_t left = w->input.length - w->consumed;
    if (left > 0)
        memmove(w->input.data, w->input.data + w->consumed, left);
    w->input.length = left;
    if (w->input.data != NULL)
        w->input.data[left] = '\0';
    w->consumed = 0;
}

/* ---------------------------------------------------------------- start */

static fv_status worker_failure(fv_worker *w, const fv_wire_frame *frame)
{
    char who[96];
    snprintf(who, sizeof who, "%s: GPU worker", w->label);
    fv_status status = fv_wire_raise_failure(frame, who);
    char how[128];
    bool interrupted;
    reap(w, REAP_GRACE_MS, how, sizeof how, &interrupted);
    return status;
}

/* Reads frames until the HELO (FV_OK), a FAIL or the end of the worker. */
static fv_status await_hello(fv_worker *w)
{
    double deadline = fv_monotonic_seconds() + w->start_timeout_s;
    fv_status status = FV_OK;
    for (;;) {
        fv_wire_frame frame;
        bool complete = false;
        FV_TRY_GOTO(status, next_frame(w, &frame, &complete), failed);
        if (complete && fv_wire_is(&frame, FV_WIRE_HELLO) && frame.length == sizeof w->hello) {
            memcpy(&w->hello, frame.payload, sizeof w->hello);
            w->hello.no_gpu_reason[sizeof w->hello.no_gpu_reason - 1] = '\0';
            w->hello.driver_version[sizeof w->hello.driver_version - 1] = '\0';
            w->hello.nvrtc_version[sizeof w->hello.nvrtc_version - 1] = '\0';
            compact_input(w);
            return FV_OK;
        }
        if (complete && fv_wire_is(&frame, FV_WIRE_FAIL))
            return worker_failure(w, &frame);
        if (complete)
            continue; /* nothing else is expected before HELO; skip it */
        double left = deadline - fv_monotonic_seconds();
        if (w->end_of_file || left <= 0) {
            char how[128];
            bool interrupted;
            bool timed_out = !w->end_of_file;
            if (timed_out)
                kill(w->pid, SIGKILL);
            reap(w, REAP_GRACE_MS, how, sizeof how, &interrupted);
            FV_FAIL(FV_ERR_INTERNAL, "%s: the GPU worker %s%s", w->label,
                    timed_out ? "said nothing for " : "", timed_out ? "its start-up time" : how);
        }
        FV_TRY_GOTO(status, read_available(w, left > 1 ? 1000 : (int)(left * 1000) + 1),
                    failed);
    }
failed:
    kill_and_reap(w);
    return status;
}

static fv_status launch(fv_worker *w)
{
    FV_TRY(spawn(w));
    FV_TRY(await_hello(w));
    return FV_OK;
}

/* The worker's executable: `program`, or this program. */
static fv_status find_program(const char *program, char *path, size_t size)
{
    if (program != NULL) {
        if (strlen(program) >= size)
            FV_FAIL(FV_ERR_INTERNAL, "the GPU worker's path is too long: %.80s...", program);
        snprintf(path, size, "%s", program);
        return FV_OK;
    }
    ssize_t length = readlink("/proc/self/exe", path, size - 1);
    if (length <= 0 || (size_t)length >= size - 1)
        FV_FAIL(FV_ERR_IO, "cannot find this program (/proc/self/exe): %s",
                length < 0 ? strerror(errno) : "path too long");
    path[length] = '\0';
    return FV_OK;
}

fv_status fv_worker_start(const char *program, char *const *arguments, const char *label,
                          double start_timeout_s, fv_worker **out)
{
    fv_worker *w = calloc(1, sizeof *w);
    FV_CHECK_ALLOC(w);
    w->to_worker = w->from_worker = -1;
    w->start_timeout_s = start_timeout_s > 0 ? start_timeout_s : 60;
    snprintf(w->label, sizeof w->label, "%s", label ? label : "worker");
    fv_outcome_init(&w->pending);
    fv_status status = FV_OK;
    int count = 0;
    while (arguments[count] != NULL)
        count++;
    w->arguments = calloc((size_t)count + 1, sizeof(char *));
    if (w->arguments == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto failed;
    }
    for (int i = 0; i < count; i++) {
        w->arguments[i] = strdup(arguments[i]);
        if (w->arguments[i] == NULL) {
            status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
            goto failed;
        }
    }
    FV_TRY_GOTO(status, find_program(program, w->program, sizeof w->program), failed);
    FV_TRY_GOTO(status, launch(w), failed);
    *out = w;
    return FV_OK;
failed:
    fv_worker_stop(w, false);
    return status;
}

const fv_worker_hello *fv_worker_hello_info(const fv_worker *w) { return &w->hello; }

int fv_worker_pid(const fv_worker *w) { return (int)w->pid; }

bool fv_worker_busy(const fv_worker *w) { return w->busy; }

fv_status fv_worker_restart(fv_worker *w)
{
    kill_and_reap(w);
    w->busy = false;
    fv_outcome_free(&w->pending);
    memset(&w->hello, 0, sizeof w->hello);
    FV_TRY(launch(w));
    return FV_OK;
}

/* --------------------------------------------------------------- cases */

/* True if the worker process still runs (reaps it if it has ended). */
static bool still_running(fv_worker *w, char *how, size_t how_size)
{
    if (w->pid <= 0) {
        snprintf(how, how_size, "is not running");
        return false;
    }
    int wait_status = 0;
    pid_t done = waitpid(w->pid, &wait_status, WNOHANG);
    if (done == 0)
        return true;
    bool interrupted;
    describe_end(done, wait_status, how, how_size, &interrupted);
    w->pid = 0;
    close_pipes(w);
    return false;
}

static fv_status send_case(fv_worker *w, const fv_assignment *assignment)
{
    fv_text buffer = {0};
    fv_assignment_put(&buffer, assignment);
    fv_status status = fv_text_status(&buffer);
    if (status == FV_OK)
        status = fv_wire_write_all(w->to_worker, buffer.data, buffer.length);
    fv_text_free(&buffer);
    return status;
}

fv_status fv_worker_submit(fv_worker *w, const fv_assignment *assignment, double timeout_s)
{
    if (w->busy)
        FV_FAIL(FV_ERR_INTERNAL, "%s: a case was submitted to a busy GPU worker", w->label);
    char how[128];
    if (!still_running(w, how, sizeof how)) {
        fprintf(stderr, "%s: the GPU worker %s between cases; starting a new worker\n",
                w->label, how);
        FV_TRY(fv_worker_restart(w));
    }
    if (send_case(w, assignment) != FV_OK) {
        fprintf(stderr, "%s: the GPU worker (pid %d) does not take cases (%s); starting a new "
                "worker\n", w->label, (int)w->pid, fv_error_message());
        FV_TRY(fv_worker_restart(w));
        FV_TRY(send_case(w, assignment));
    }
    w->busy = true;
    w->assignment = *assignment;
    w->timeout_s = timeout_s;
    w->deadline = fv_monotonic_seconds() + timeout_s;
    snprintf(w->stage, sizeof w->stage, "start");
    fv_outcome_free(&w->pending);
    w->pending.index = assignment->index;
    return FV_OK;
}

/* Ends the case without an outcome of the worker's: the worker is reaped
 * and *outcome becomes a `status` row (what arrived so far is kept). */
static void lose_case(fv_worker *w, fv_result_status status, const char *message,
                      fv_outcome *outcome)
{
    fv_outcome_free(outcome);
    *outcome = w->pending;
    fv_outcome_init(&w->pending);
    outcome->index = w->assignment.index;
    fv_assignment_result(&w->assignment, status, w->stage, message, &outcome->result);
    snprintf(outcome->result.host, sizeof outcome->result.host, "%s", w->hello.device.host);
    snprintf(outcome->result.gpu_name, sizeof outcome->result.gpu_name, "%s",
             w->hello.device.gpu_name);
    snprintf(outcome->result.gpu_uuid, sizeof outcome->result.gpu_uuid, "%s",
             w->hello.device.gpu_uuid);
    outcome->result.wall_ms = 1e3 * (fv_monotonic_seconds() - (w->deadline - w->timeout_s));
    outcome->result.finished_at = (double)time(NULL);
    w->busy = false;
}

/* The worker broke the protocol: kill it and record a crash. */
static void lose_to_garbage(fv_worker *w, const char *what, fv_worker_event *event,
                            fv_outcome *outcome)
{
    int pid = (int)w->pid;
    kill_and_reap(w);
    char message[512];
    snprintf(message, sizeof message, "the GPU worker (pid %d) %s at stage %s; it was killed",
             pid, what, w->stage);
    lose_case(w, FV_RESULT_CRASH, message, outcome);
    *event = FV_WORKER_LOST;
}

/* Handles one frame of the running case.  *event becomes FINISHED or LOST
 * when the case is over. */
static fv_status take_frame(fv_worker *w, const fv_wire_frame *frame, fv_worker_event *event,
                            fv_outcome *outcome)
{
    if (fv_wire_is(frame, FV_WIRE_STAGE)) {
        fv_wire_text(frame, w->stage, sizeof w->stage);
        return FV_OK;
    }
    if (fv_wire_is(frame, FV_WIRE_FAIL))
        return worker_failure(w, frame);
    if (!fv_outcome_is_frame(frame)) {
        char what[64];
        snprintf(what, sizeof what, "sent an unexpected %s message", frame->tag);
        lose_to_garbage(w, what, event, outcome);
        return FV_OK;
    }
    bool complete = false;
    fv_status status = fv_outcome_take(&w->pending, frame, &complete);
    if (status == FV_ERR_NOMEM)
        return status;
    if (status != FV_OK || (complete && w->pending.index != w->assignment.index)) {
        lose_to_garbage(w, "sent a malformed result", event, outcome);
        return FV_OK;
    }
    if (complete) {
        fv_outcome_free(outcome);
        *outcome = w->pending;
        fv_outcome_init(&w->pending);
        w->busy = false;
        *event = FV_WORKER_FINISHED;
    }
    return FV_OK;
}

/* Handles every whole frame that has arrived. */
static fv_status take_frames(fv_worker *w, fv_worker_event *event, fv_outcome *outcome)
{
    while (*event == FV_WORKER_RUNNING && w->pid > 0) {
        fv_wire_frame frame;
        bool complete = false;
        if (next_frame(w, &frame, &complete) != FV_OK) {
            lose_to_garbage(w, "sent a malformed message", event, outcome);
            break;
        }
        if (!complete)
            break;
        FV_TRY(take_frame(w, &frame, event, outcome));
    }
    if (w->pid > 0)
        compact_input(w);
    return FV_OK;
}

/* The worker closed its pipe without a result: reap it and say why. */
static void lose_to_death(fv_worker *w, fv_worker_event *event, fv_outcome *outcome)
{
    int pid = (int)w->pid;
    char how[128];
    bool interrupted;
    reap(w, REAP_GRACE_MS, how, sizeof how, &interrupted);
    char message[512];
    snprintf(message, sizeof message, "the GPU worker (pid %d) %s at stage %s", pid, how,
             w->stage);
    lose_case(w, FV_RESULT_CRASH, message, outcome);
    *event = interrupted ? FV_WORKER_INTERRUPTED : FV_WORKER_LOST;
}

static void lose_to_timeout(fv_worker *w, fv_worker_event *event, fv_outcome *outcome)
{
    int pid = (int)w->pid;
    kill_and_reap(w);
    char message[512];
    snprintf(message, sizeof message, "no result within %g s (last stage: %s); the GPU worker "
             "(pid %d) was killed", w->timeout_s, w->stage, pid);
    lose_case(w, FV_RESULT_TIMEOUT, message, outcome);
    *event = FV_WORKER_LOST;
}

fv_status fv_worker_wait(fv_worker *w, int wait_ms, fv_worker_event *event,
                         fv_outcome *outcome)
{
    *event = w->busy ? FV_WORKER_RUNNING : FV_WORKER_IDLE;
    if (!w->busy)
        return FV_OK;
    FV_TRY(take_frames(w, event, outcome)); /* frames left from an earlier read */
    if (*event != FV_WORKER_RUNNING)
        return FV_OK;
    double left_ms = 1e3 * (w->deadline - fv_monotonic_seconds());
    int wait = left_ms < wait_ms ? (int)(left_ms > 0 ? left_ms : 0) : wait_ms;
    FV_TRY(read_available(w, wait));
    FV_TRY(take_frames(w, event, outcome));
    if (*event != FV_WORKER_RUNNING)
        return FV_OK;
    if (w->end_of_file)
        lose_to_death(w, event, outcome);
    else if (fv_monotonic_seconds() >= w->deadline)
        lose_to_timeout(w, event, outcome);
    return FV_OK;
}

void fv_worker_stop(fv_worker *w, bool graceful)
{
    if (w == NULL)
        return;
    if (w->pid > 0 && graceful && w->to_worker >= 0) {
        fv_text buffer = {0};
        fv_wire_put(&buffer, FV_WIRE_QUIT, NULL, 0);
        if (fv_text_status(&buffer) == FV_OK)
            fv_wire_write_all(w->to_worker, buffer.data, buffer.length);
        fv_text_free(&buffer);
        close_fd(&w->to_worker);
        char how[128];
        bool interrupted;
        reap(w, REAP_GRACE_MS, how, sizeof how, &interrupted);
    }
    kill_and_reap(w);
    for (int i = 0; w->arguments != NULL && w->arguments[i] != NULL; i++)
        free(w->arguments[i]);
    free(w->arguments);
    fv_outcome_free(&w->pending);
    fv_text_free(&w->input);
    free(w);
}
