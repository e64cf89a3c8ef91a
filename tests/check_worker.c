/* check_worker.c: the GPU worker process and a rank's handle on it
 * (service/worker.h), with the real `fuservalidate worker` in compile-only
 * mode: start-up, a case's outcome with its kernels, a case its file does
 * not define, and the faults FV_FAULT injects: abort and exit (crash), hang
 * (timeout), SIGTERM from outside (interrupted), a worker that died between
 * cases (replaced on the next case), a worker that cannot start. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/worker.h"
#include "test_support.h"

#define PROGRAM FV_BINARY_DIR "/fuservalidate"
#define SOFTMAX_ID "softmax_fwd/bf16/17x256/s0"
#define WAIT_LIMIT_MS 120000

static char kernel_cache_option[1200];

static fv_worker *start_worker(void)
{
    snprintf(kernel_cache_option, sizeof kernel_cache_option, "--kernel-cache=%s",
             fv_test_path("kernels"));
    char *arguments[] = {"fuservalidate", "worker", "--compile-only", "--arch=sm_90a",
                         kernel_cache_option, NULL};
    fv_worker *worker = NULL;
    FV_ASSERT_OK(fv_worker_start(PROGRAM, arguments, "test", 60, &worker));
    return worker;
}

static void softmax_assignment(fv_assignment *assignment, const char *case_id)
{
    memset(assignment, 0, sizeof *assignment);
    assignment->index = 3;
    snprintf(assignment->case_id, sizeof assignment->case_id, "%s", case_id);
    snprintf(assignment->source, sizeof assignment->source, "%s",
             fv_test_source_path("tests/cases/small_softmax.sweep"));
    snprintf(assignment->family, sizeof assignment->family, "softmax_fwd");
    snprintf(assignment->dtype, sizeof assignment->dtype, "bf16");
    snprintf(assignment->repro, sizeof assignment->repro, "fuservalidate run ... (test)");
}

/* Runs one case to its end and returns the event (FINISHED, LOST or
 * INTERRUPTED) with the outcome. */
static fv_worker_event run_one(fv_worker *worker, const char *case_id, double timeout_s,
                               fv_outcome *outcome)
{
    fv_assignment assignment;
    softmax_assignment(&assignment, case_id);
    FV_ASSERT_OK(fv_worker_submit(worker, &assignment, timeout_s));
    ck_assert(fv_worker_busy(worker));
    fv_worker_event event = FV_WORKER_RUNNING;
    for (int waited = 0; event == FV_WORKER_RUNNING && waited < WAIT_LIMIT_MS; waited += 50)
        FV_ASSERT_OK(fv_worker_wait(worker, 50, &event, outcome));
    ck_assert_int_ne(event, FV_WORKER_RUNNING);
    ck_assert(!fv_worker_busy(worker));
    if (event != FV_WORKER_INTERRUPTED)
        ck_assert_int_eq(outcome->index, 3);
    return event;
}

START_TEST(hello_and_a_compiled_case)
{
    fv_worker *worker = start_worker();
    const fv_worker_hello *hello = fv_worker_hello_info(worker);
    ck_assert_int_eq(hello->compile_only, 1);
    ck_assert_int_eq(hello->pid, fv_worker_pid(worker));
    ck_assert_int_eq(hello->ordinal, -1);
    ck_assert_str_ne(hello->device.gpu_name, "");
    ck_assert_str_ne(hello->device.host, "");
    ck_assert_str_ne(hello->nvrtc_version, "");

    fv_worker_event event;
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    FV_ASSERT_OK(fv_worker_wait(worker, 0, &event, &outcome));
    ck_assert_int_eq(event, FV_WORKER_IDLE);
    ck_assert_int_eq(run_one(worker, SOFTMAX_ID, 60, &outcome), FV_WORKER_FINISHED);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_COMPILED);
    ck_assert_str_eq(outcome.result.case_id, SOFTMAX_ID);
    ck_assert_str_eq(outcome.result.arch, "sm_90a");
    ck_assert_int_ge(outcome.kernel_count, 1);
    ck_assert_int_eq(outcome.kernel_count, outcome.result.segment_count);
    ck_assert(strstr(outcome.kernels[0].source, "__global__") != NULL);

    /* The same kernels again: the worker does not send their sources twice. */
    ck_assert_int_eq(run_one(worker, SOFTMAX_ID, 60, &outcome), FV_WORKER_FINISHED);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_COMPILED);
    ck_assert_int_eq(outcome.kernel_count, 0);

    /* A case its file does not define is an error row, not a crash. */
    ck_assert_int_eq(run_one(worker, "softmax_fwd/bf16/1x1/s9", 60, &outcome),
                     FV_WORKER_FINISHED);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_ERROR);
    ck_assert_str_eq(outcome.result.stage, "frontend");
    ck_assert(strstr(outcome.result.message, "is not defined by") != NULL);
    fv_outcome_free(&outcome);
    fv_worker_stop(worker, true);
}
END_TEST

/* A fault kills the worker; the handle reports it and a restart works. */
static void check_crash(const char *fault, const char *expected_message)
{
    char spec[128];
    snprintf(spec, sizeof spec, "%s:%s", fault, SOFTMAX_ID);
    ck_assert_int_eq(setenv("FV_FAULT", spec, 1), 0);
    fv_worker *worker = start_worker();
    int first_pid = fv_worker_pid(worker);
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    ck_assert_int_eq(run_one(worker, SOFTMAX_ID, 60, &outcome), FV_WORKER_LOST);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_CRASH);
    ck_assert_str_eq(outcome.result.case_id, SOFTMAX_ID);
    ck_assert_str_eq(outcome.result.family, "softmax_fwd");
    ck_assert_str_eq(outcome.result.stage, "compile");
    ck_assert_str_eq(outcome.result.repro, "fuservalidate run ... (test)");
    ck_assert_msg(strstr(outcome.result.message, expected_message) != NULL, "message: %s",
                  outcome.result.message);
    ck_assert_int_eq(fv_worker_pid(worker), 0);
    ck_assert_int_eq(unsetenv("FV_FAULT"), 0);
    FV_ASSERT_OK(fv_worker_restart(worker));
    ck_assert_int_ne(fv_worker_pid(worker), first_pid);
    ck_assert_int_eq(run_one(worker, SOFTMAX_ID, 60, &outcome), FV_WORKER_FINISHED);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_COMPILED);
    fv_outcome_free(&outcome);
    fv_worker_stop(worker, true);
}

START_TEST(abort_is_a_crash)
{
    check_crash("abort", "killed by signal 6");
}
END_TEST

START_TEST(exit_is_a_crash)
{
    check_crash("exit", "exited with status 3");
}
END_TEST

START_TEST(hang_is_a_timeout)
{
    ck_assert_int_eq(setenv("FV_FAULT", "hang:" SOFTMAX_ID, 1), 0);
    fv_worker *worker = start_worker();
    int pid = fv_worker_pid(worker);
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    ck_assert_int_eq(run_one(worker, SOFTMAX_ID, 0.5, &outcome), FV_WORKER_LOST);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_TIMEOUT);
    ck_assert_msg(strstr(outcome.result.message, "no result within 0.5 s (last stage: compile)")
                      != NULL, "message: %s", outcome.result.message);
    ck_assert_int_ne(kill(pid, 0), 0); /* killed and reaped */
    ck_assert_int_ge(outcome.result.wall_ms, 400);
    fv_outcome_free(&outcome);
    fv_worker_stop(worker, false);
}
END_TEST

START_TEST(sigterm_from_outside_is_an_interruption)
{
    ck_assert_int_eq(setenv("FV_FAULT", "hang:" SOFTMAX_ID, 1), 0);
    fv_worker *worker = start_worker();
    fv_assignment assignment;
    softmax_assignment(&assignment, SOFTMAX_ID);
    FV_ASSERT_OK(fv_worker_submit(worker, &assignment, 60));
    fv_worker_event event;
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    FV_ASSERT_OK(fv_worker_wait(worker, 200, &event, &outcome));
    ck_assert_int_eq(event, FV_WORKER_RUNNING);
    ck_assert_int_eq(kill(fv_worker_pid(worker), SIGTERM), 0);
    for (int waited = 0; event == FV_WORKER_RUNNING && waited < WAIT_LIMIT_MS; waited += 50)
        FV_ASSERT_OK(fv_worker_wait(worker, 50, &event, &outcome));
    ck_assert_int_eq(event, FV_WORKER_INTERRUPTED);
    fv_outcome_free(&outcome);
    fv_worker_stop(worker, false);
}
END_TEST

START_TEST(a_worker_lost_between_cases_is_replaced)
{
    fv_worker *worker = start_worker();
    int pid = fv_worker_pid(worker);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    usleep(100000);
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    ck_assert_int_eq(run_one(worker, SOFTMAX_ID, 60, &outcome), FV_WORKER_FINISHED);
    ck_assert_int_eq(outcome.result.status, FV_RESULT_COMPILED);
    ck_assert_int_ne(fv_worker_pid(worker), pid);
    fv_outcome_free(&outcome);
    fv_worker_stop(worker, true);
}
END_TEST

START_TEST(a_worker_that_cannot_start)
{
    char *bad_device[] = {"fuservalidate", "worker", "--compile-only", "--device=NOSUCH", NULL};
    fv_worker *worker = NULL;
    fv_status status = fv_worker_start(PROGRAM, bad_device, "test", 60, &worker);
    ck_assert_int_ne(status, FV_OK);
    ck_assert_ptr_null(worker);
    ck_assert_msg(strstr(fv_error_message(), "NOSUCH") != NULL, "message: %s",
                  fv_error_message());
    char *missing[] = {"nothing", NULL};
    status = fv_worker_start(FV_BINARY_DIR "/no-such-program", missing, "test", 5, &worker);
    ck_assert_int_ne(status, FV_OK);
    ck_assert_ptr_null(worker);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("worker");
    TCase *cases = tcase_create("cases");
    tcase_set_timeout(cases, 120);
    tcase_add_test(cases, hello_and_a_compiled_case);
    tcase_add_test(cases, a_worker_lost_between_cases_is_replaced);
    tcase_add_test(cases, a_worker_that_cannot_start);
    suite_add_tcase(suite, cases);
    TCase *faults = tcase_create("faults");
    tcase_set_timeout(faults, 120);
    tcase_add_test(faults, abort_is_a_crash);
    tcase_add_test(faults, exit_is_a_crash);
    tcase_add_test(faults, hang_is_a_timeout);
    tcase_add_test(faults, sigterm_from_outside_is_an_interruption);
    suite_add_tcase(suite, faults);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
