/* run_command.c: `fuservalidate [run] PATH...`, which every rank of an MPI
 * job runs (or one process alone, without a launcher).  Rank 0 collects the
 * cases, creates the archive (or reopens it with --resume) before any case
 * runs, and orders the cases longest first; every rank starts its GPU worker
 * and reports it to rank 0, which records the devices; then rank 0
 * coordinates (run_coordinator.c) and the others follow (run_follower.c).
 * No rank initializes CUDA: the workers do.  Exit status: 0 every case
 * passed, 1 some case failed, crashed or timed out, 2 the harness failed,
 * 130 / 143 stopped by SIGINT / SIGTERM (the archive keeps every finished
 * case; --resume completes it). */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service/commands.h"
#include "service/pipeline.h"
#include "service/queue.h"
#include "service/run_internal.h"
#include "service/signals.h"

enum { MAX_WORKER_ARGUMENTS = 40 };

#define MIN_START_TIMEOUT_SECONDS 60.0
#define MPI_CLOSE_WAIT_SECONDS 10.0


/* What a rank reports after starting its worker (gathered on rank 0). */
typedef struct startup_report {
    int32_t ok;
    char message[512];         /* why the worker did not start */
    fv_worker_hello hello;
} startup_report;

typedef struct run_state {
    fv_run_session session;
    fv_run_executor executor;
    fv_run_reports reports;
    /* rank 0 only */
    fv_run_recorder recorder;
    char archive_path[1024];
    fv_case_list list;          /* every collected case and file error */
    fv_case **selected;         /* cases that pass the filter */
    int32_t selected_count;
    fv_case **pending;          /* of those, the ones this session runs */
    int32_t pending_count;
    int32_t *order;             /* indices into pending, longest first */
    double *costs;              /* per pending case: estimated cost (chunks) */
    fv_queue_history finished;  /* case ids with a row already (--resume) */
    fv_queue_history durations; /* from --baseline and --resume rows */
    bool archive_created;       /* fv_archive_create made the file (not --resume) */
} run_state;

/* ------------------------------------------------------------ archives */

static void default_archive_path(char *path, size_t size)
{
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
    snprintf(path, size, "fuservalidate-%s-%d.h5", stamp, (int)getpid());
}

static char *joined_command_line(int argc, char **argv)
{
    fv_text text = {0};
    for (int i = 0; i < argc; i++)
        fv_text_printf(&text, "%s%s", i ? " " : "", argv[i]);
    return fv_text_take(&text);
}

/* Reads every row of an archive: for --resume (the rows already there) and
 * --baseline (their durations).  *rows is a new array. */
static fv_status read_rows(const char *path, fv_result **rows, int64_t *count)
{
    fv_archive_reader *reader = NULL;
    FV_TRY(fv_archive_open_read(path, &reader));
    int64_t total = fv_archive_row_count(reader);
    fv_result *read = malloc(sizeof *read * (size_t)(total > 0 ? total : 1));
    fv_status status = FV_OK;
    if (read == NULL)
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
    else if (total > 0)
        status = fv_archive_read_rows(reader, 0, total, read);
    fv_archive_close_read(reader);
    if (status != FV_OK) {
        free(read);
        fv_error_prefix("reading %s", path);
        return status;
    }
    *rows = read;
    *count = total;
    return FV_OK;
}

/* --resume: the rows already there are the finished cases.  Every row is
 * final: a stopped run writes no row for a case it did not finish. */
static fv_status load_resumed_rows(run_state *s, const char *path)
{
    fv_result *rows = NULL;
    int64_t count = 0;
    FV_TRY(read_rows(path, &rows, &count));
    fv_status status = FV_OK;
    for (int64_t i = 0; i < count && status == FV_OK; i++) {
        status = fv_queue_history_add(&s->finished, rows[i].case_id, 0);
        if (status == FV_OK)
            status = fv_queue_history_add(&s->durations, rows[i].case_id, rows[i].wall_ms);
        if (status == FV_OK)
            status = fv_run_recorder_keep(&s->recorder, &rows[i]);
    }
    free(rows);
    return status;
}

static fv_status load_baseline_durations(run_state *s, const char *path)
{
    fv_result *rows = NULL;
    int64_t count = 0;
    FV_TRY(read_rows(path, &rows, &count));
    fv_status status = FV_OK;
    for (int64_t i = 0; i < count && status == FV_OK; i++)
        if (fv_queue_history_find(&s->durations, rows[i].case_id) < 0)
            status = fv_queue_history_add(&s->durations, rows[i].case_id, rows[i].wall_ms);
    free(rows);
    return status;
}

static fv_status open_archive(run_state *s, int argc, char **argv)
{
    const fv_options *options = s->session.options;
    if (options->resume != NULL) {
        FV_TRY(fv_archive_open_append(s->archive_path, &s->recorder.archive));
        return FV_OK;
    }
    char host[64] = "";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    char *command = joined_command_line(argc, argv);
    fv_archive_provenance provenance = {
        .tool_version = FV_VERSION, .git_revision = FV_GIT_REVISION,
        .command_line = command ? command : "", .mpi_size = s->session.mpi.size,
        .hosts = host, .tolerance_policy = fv_tolerance_name(options->tolerance),
        .mode = options->compile_only ? "compile-only" : "run",
        .l2_flush = fv_rt_flush_name(options->flush)};
    fv_status status = fv_archive_create(s->archive_path, &provenance, &s->recorder.archive);
    free(command);
    FV_TRY(status);
    s->archive_created = true;
    return FV_OK;
}

/* ------------------------------------------------------ rank 0: cases */

static bool already_finished(run_state *s, const char *case_id)
{
    return fv_queue_history_find(&s->finished, case_id) >= 0;
}

/* The cases without a row yet, longest first. */
static fv_status plan_cases(run_state *s)
{
    int32_t count = s->selected_count;
    s->pending = calloc((size_t)count + 1, sizeof *s->pending);
    s->order = calloc((size_t)count + 1, sizeof *s->order);
    s->costs = calloc((size_t)count + 1, sizeof *s->costs);
    double *durations = calloc((size_t)count + 1, sizeof *durations);
    double *bytes = calloc((size_t)count + 1, sizeof *bytes);
    fv_status status = FV_OK;
    if (s->pending == NULL || s->order == NULL || s->costs == NULL || durations == NULL ||
        bytes == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < count; i++) {
        fv_case *c = s->selected[i];
        if (already_finished(s, c->id))
            continue;
        durations[s->pending_count] = fv_queue_history_find(&s->durations, c->id);
        bytes[s->pending_count] = fv_pipeline_io_bytes(c);
        s->pending[s->pending_count++] = c;
    }
    status = fv_queue_order(durations, bytes, s->pending_count, s->order);
    fv_queue_costs(durations, bytes, s->pending_count, s->costs);
done:
    free(durations);
    free(bytes);
    return status;
}

/* Everything rank 0 does before any worker starts; a failure here ends the
 * run with status 2 before any case runs. */
static fv_status prepare_rank0(run_state *s, int argc, char **argv)
{
    const fv_options *options = s->session.options;
    if (options->resume != NULL && options->output != NULL &&
        strcmp(options->resume, options->output) != 0)
        FV_FAIL(FV_ERR_USAGE, "-o %s and --resume %s name different archives: --resume "
                "appends to the archive it names", options->output, options->resume);
    if (options->resume != NULL)
        snprintf(s->archive_path, sizeof s->archive_path, "%s", options->resume);
    else if (options->output != NULL)
        snprintf(s->archive_path, sizeof s->archive_path, "%s", options->output);
    else
        default_archive_path(s->archive_path, sizeof s->archive_path);
    s->reports = (fv_run_reports){.junit_path = options->junit,
                                  .baseline_path = options->baseline,
                                  .archive_path = s->archive_path,
                                  .threshold = options->regression_threshold,
                                  .alpha = options->regression_alpha};
    if (options->resume != NULL)
        FV_TRY(load_resumed_rows(s, options->resume));
    if (options->baseline != NULL)
        FV_TRY(load_baseline_durations(s, options->baseline));
    FV_TRY(fv_options_select_cases(options, &s->list, &s->selected, &s->selected_count));
    fv_device planning_device;
    FV_TRY(fv_options_planning_device(options, &planning_device));
    FV_TRY(fv_options_apply_approach(options, &planning_device, &s->list, &s->selected,
                                     &s->selected_count));
    FV_TRY(plan_cases(s));
    FV_TRY(open_archive(s, argc, argv));
    return FV_OK;
}

/* ------------------------------------------------------------ workers */

static fv_status add_argument(char **arguments, int *count, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static fv_status add_argument(char **arguments, int *count, const char *format, ...)
{
    if (*count >= MAX_WORKER_ARGUMENTS)
        FV_FAIL(FV_ERR_INTERNAL, "too many worker arguments");
    fv_text text = {0};
    va_list list;
    va_start(list, format);
    fv_text_vprintf(&text, format, list);
    va_end(list);
    char *argument = fv_text_take(&text);
    FV_CHECK_ALLOC(argument);
    arguments[(*count)++] = argument;
    return FV_OK;
}

/* Cores this process may run on (its affinity mask, which the launcher may
 * have narrowed), or `fallback` when the mask cannot be read. */
static long usable_cores(long fallback)
{
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0)
        return fallback;
    long count = CPU_COUNT(&mask);
    return count > 0 ? count : fallback;
}

/* Host threads per worker (input generation and references): -j, else the
 * node's cores shared by its ranks, but never more than the cores this rank
 * is bound to.  A launcher that binds each rank to one core (Open MPI does
 * for two ranks or fewer) would leave the references on one core: say so
 * once, with the way out. */
static int worker_threads(fv_run_session *session)
{
    if (session->options->threads > 0)
        return session->options->threads;
    if (session->host_threads > 0)
        return session->host_threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores <= 0)
        cores = 1;
    long share = session->mpi.local_size > 1 ? cores / session->mpi.local_size : cores;
    if (share < 1)
        share = 1;
    long usable = usable_cores(cores);
    if (usable < share)
        fprintf(stderr,
                "%s: bound to %ld of the node's %ld cores by the launcher: host references "
                "use %ld thread%s instead of %ld (mpirun --bind-to none, or srun "
                "--cpus-per-task=%ld, gives each rank its share)\n",
                session->label, usable, cores, usable, usable == 1 ? "" : "s", share, share);
    session->host_threads = (int)(usable < share ? usable : share);
    return session->host_threads;
}

/* `fuservalidate worker` with the options the pipeline needs. */
static fv_status build_worker_arguments(fv_run_session *session)
{
    const fv_options *o = session->options;
    char **arguments = calloc(MAX_WORKER_ARGUMENTS + 1, sizeof(char *));
    FV_CHECK_ALLOC(arguments);
    session->worker_arguments = arguments;
    int n = 0;
    FV_TRY(add_argument(arguments, &n, "fuservalidate"));
    FV_TRY(add_argument(arguments, &n, "worker"));
    FV_TRY(add_argument(arguments, &n, "--local-rank=%d", session->mpi.local_rank));
    FV_TRY(add_argument(arguments, &n, "--parent-pid=%d", (int)getpid()));
    FV_TRY(add_argument(arguments, &n, "--refs=%s", o->refs_dir));
    FV_TRY(add_argument(arguments, &n, "--max-ref-bytes=%lld", (long long)o->max_ref_bytes));
    FV_TRY(add_argument(arguments, &n, "--memory-budget=%lld", (long long)o->memory_budget));
    FV_TRY(add_argument(arguments, &n, "--jobs=%d", worker_threads(session)));
    FV_TRY(add_argument(arguments, &n, "--tolerance=%s", fv_tolerance_name(o->tolerance)));
    FV_TRY(add_argument(arguments, &n, "--repeats=%d", o->repeats));
    FV_TRY(add_argument(arguments, &n, "--warmup=%d", o->warmup));
    FV_TRY(add_argument(arguments, &n, "--flush=%s", fv_rt_flush_name(o->flush)));
    if (o->compile_only)
        FV_TRY(add_argument(arguments, &n, "--compile-only"));
    if (o->no_check)
        FV_TRY(add_argument(arguments, &n, "--no-check"));
    if (o->no_sized_copy)
        FV_TRY(add_argument(arguments, &n, "--no-sized-copy"));
    if (o->require_gpu)
        FV_TRY(add_argument(arguments, &n, "--require-gpu"));
    if (o->device != NULL)
        FV_TRY(add_argument(arguments, &n, "--device=%s", o->device));
    if (o->arch != NULL)
        FV_TRY(add_argument(arguments, &n, "--arch=%s", o->arch));
    if (o->no_kernel_cache)
        FV_TRY(add_argument(arguments, &n, "--no-kernel-cache"));
    else if (o->kernel_cache != NULL)
        FV_TRY(add_argument(arguments, &n, "--kernel-cache=%s", o->kernel_cache));
    return FV_OK;
}

static void free_worker_arguments(fv_run_session *session)
{
    for (int i = 0; session->worker_arguments && session->worker_arguments[i]; i++)
        free(session->worker_arguments[i]);
    free(session->worker_arguments);
    session->worker_arguments = NULL;
}

static void start_worker(run_state *s, startup_report *report)
{
    memset(report, 0, sizeof *report);
    double timeout = s->session.options->timeout_s;
    if (timeout < MIN_START_TIMEOUT_SECONDS)
        timeout = MIN_START_TIMEOUT_SECONDS;
    fv_status status = build_worker_arguments(&s->session);
    if (status == FV_OK)
        status = fv_run_executor_start(&s->executor, &s->session, timeout);
    if (status != FV_OK) {
        snprintf(report->message, sizeof report->message, "%s", fv_error_message());
        return;
    }
    report->ok = 1;
    report->hello = *fv_worker_hello_info(s->executor.worker);
    report->hello.device.rank = s->session.mpi.rank;
}

/* ------------------------------------------------- rank 0: the devices */

static void print_rank(int rank, const fv_worker_hello *hello)
{
    const fv_archive_device *device = &hello->device;
    printf("rank %d: %s, ", rank, device->host);
    if (hello->compile_only)
        printf("%s (compute %d.%d, %d SMs), compile only", device->gpu_name, device->compute_major,
               device->compute_minor, device->sm_count);
    else
        printf("GPU %d %s %s, bus %s, copy bandwidth %.2f TB/s", hello->ordinal,
               device->gpu_name, device->gpu_uuid, device->pci_bus_id,
               device->copy_bandwidth_gbs / 1000);
    printf(", worker pid %d\n", hello->pid);
}

/* Adds `host` to a ","-joined list unless it is there. */
static void add_host(fv_text *hosts, const char *host)
{
    const char *list = fv_text_str(hosts);
    size_t length = strlen(host);
    for (const char *at = list; (at = strstr(at, host)) != NULL; at += length)
        if ((at == list || at[-1] == ',') && (at[length] == ',' || at[length] == '\0'))
            return;
    fv_text_printf(hosts, "%s%s", hosts->length ? "," : "", host);
}

/* Prints the run's first lines and records the devices and provenance. */
static fv_status record_devices(run_state *s, const startup_report *reports)
{
    int size = s->session.mpi.size;
    bool all_compile_only = true;
    for (int r = 0; r < size; r++)
        if (reports[r].hello.no_gpu_reason[0] != '\0') {
            printf("no GPU: %s; running as --compile-only\n", reports[r].hello.no_gpu_reason);
            break;
        }
    fv_text hosts = {0};
    for (int r = 0; r < size; r++) {
        all_compile_only = all_compile_only && reports[r].hello.compile_only;
        add_host(&hosts, reports[r].hello.device.host);
    }
    printf("fuservalidate %s: %d rank%s%s\n", FV_VERSION, size, size == 1 ? "" : "s",
           all_compile_only ? ", compile only" : "");
    fv_status status = fv_text_status(&hosts);
    for (int r = 0; r < size && status == FV_OK; r++) {
        print_rank(r, &reports[r].hello);
        status = fv_archive_add_device(s->recorder.archive, &reports[r].hello.device);
    }
    if (status == FV_OK && s->archive_created) {
        fv_archive_provenance update = {
            .mpi_size = size, .hosts = fv_text_str(&hosts),
            .driver_version = reports[0].hello.driver_version,
            .nvrtc_version = reports[0].hello.nvrtc_version,
            .mode = all_compile_only ? "compile-only" : "run"};
        status = fv_archive_update_provenance(s->recorder.archive, &update);
    }
    fv_text_free(&hosts);
    FV_TRY(status);
    printf("archive %s\n", s->archive_path);
    if (!all_compile_only)
        printf("timing: median of %d runs after %d warm-up, the L2 emptied by a %s before "
               "each (--flush)\n",
               s->session.options->repeats, s->session.options->warmup,
               fv_rt_flush_name(s->session.options->flush));
    fflush(stdout);
    return FV_OK;
}

/* Gathers every rank's startup report; rank 0 decides whether to go on.
 * Returns false (on every rank) when some worker did not start. */
static fv_status gather_startup(run_state *s, const startup_report *mine, bool *go)
{
    const fv_mpi *mpi = &s->session.mpi;
    startup_report *reports = NULL;
    if (mpi->rank == 0) {
        reports = calloc((size_t)mpi->size, sizeof *reports);
        FV_CHECK_ALLOC(reports);
    }
    fv_status status = fv_mpi_gather(mpi, mine, sizeof *mine, reports);
    int decision = 0;
    if (status == FV_OK && mpi->rank == 0) {
        decision = 1;
        for (int r = 0; r < mpi->size; r++)
            if (!reports[r].ok) {
                fprintf(stderr, "fuservalidate: rank %d: %s\n", r, reports[r].message);
                decision = 0;
            }
        if (decision && record_devices(s, reports) != FV_OK) {
            fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
            decision = 0;
        }
    }
    free(reports);
    FV_TRY(status);
    FV_TRY(fv_mpi_broadcast(mpi, &decision));
    *go = decision != 0;
    return FV_OK;
}

/* ------------------------------------------------- rank 0: the run */

/* Malformed or unreadable case files become `error` rows (once: not again
 * after --resume). */
static fv_status record_file_errors(run_state *s)
{
    for (int32_t i = 0; i < s->list.error_count; i++) {
        const fv_case_error *error = &s->list.errors[i];
        char id[192];
        snprintf(id, sizeof id, "%s/error", error->family);
        if (already_finished(s, id))
            continue;
        fv_outcome outcome;
        fv_outcome_init(&outcome);
        fv_result_init(&outcome.result, id, error->family, "", "", 0, error->path);
        fv_result_fail(&outcome.result, error->status == FV_ERR_UNSUPPORTED
                                            ? FV_RESULT_UNSUPPORTED : FV_RESULT_ERROR,
                       "frontend", error->message);
        fv_result_stamp_here(&outcome.result);
        FV_TRY(fv_run_record(&s->recorder, &outcome));
        FV_TRY(fv_queue_history_add(&s->finished, id, 0));
    }
    return FV_OK;
}

static int32_t new_file_errors(run_state *s)
{
    int32_t count = 0;
    for (int32_t i = 0; i < s->list.error_count; i++) {
        char id[192];
        snprintf(id, sizeof id, "%s/error", s->list.errors[i].family);
        count += !already_finished(s, id);
    }
    return count;
}

static void print_stop_note(const run_state *s, int exit_code)
{
    int64_t done = s->recorder.progress.done, total = s->recorder.progress.total;
    printf("\nstopped by signal %d after %lld of %lld cases; every finished case is in %s.\n"
           "Finish the run with the same command and --resume %s\n", exit_code - 128,
           (long long)done, (long long)total, s->archive_path, s->archive_path);
}

/* Whether to redraw the progress line in place: FV_PROGRESS=terminal or
 * plain decides; by default only on a terminal outside MPI (mpirun gives its
 * ranks a pseudo-terminal even when its own output goes to a file). */
static bool progress_on_terminal(void)
{
    const char *choice = getenv("FV_PROGRESS");
    if (choice != NULL && strcmp(choice, "terminal") == 0)
        return true;
    if (choice != NULL && strcmp(choice, "plain") == 0)
        return false;
    return isatty(STDOUT_FILENO) == 1 && !fv_mpi_launched();
}

/* Rank 0 after start-up: the cases, the summary, the CI outputs. */
static int coordinate(run_state *s, bool *peers_done)
{
    s->recorder.terminal = progress_on_terminal();
    int64_t earlier = s->recorder.result_count;
    fv_run_recorder_start(&s->recorder, earlier + new_file_errors(s) + s->pending_count,
                          earlier);
    if (earlier > 0)
        printf("resuming: %lld cases already finished, %d to run\n", (long long)earlier,
               (int)s->pending_count);
    if (record_file_errors(s) != FV_OK) {
        fprintf(stderr, "fuservalidate: stopping: %s\n", fv_error_message());
        *peers_done = false;
        return 2;
    }
    fv_run_plan plan = {.cases = s->pending, .count = s->pending_count, .order = s->order,
                        .costs = s->costs};
    int exit_code = fv_run_coordinate(&s->session, &s->executor, &s->recorder, &plan,
                                      peers_done);
    if (exit_code == 2)
        return exit_code;
    fv_run_recorder_tick(&s->recorder, true);
    fv_run_recorder_summary(&s->recorder);
    if (fv_run_recorder_compare_approaches(&s->recorder) != FV_OK) {
        fprintf(stderr, "fuservalidate: comparing the approaches: %s\n", fv_error_message());
        exit_code = 2;
    }
    if (exit_code > 128)
        print_stop_note(s, exit_code);
    if (fv_run_write_reports(&s->reports, s->recorder.archive, s->recorder.results,
                             s->recorder.result_count, &exit_code) != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        exit_code = 2;
    }
    return exit_code;
}

/* ------------------------------------------------------------- command */

static void free_state(run_state *s)
{
    fv_run_executor_stop(&s->executor, false);
    free_worker_arguments(&s->session);
    fv_run_recorder_free(&s->recorder);
    fv_queue_history_free(&s->finished);
    fv_queue_history_free(&s->durations);
    free(s->selected);
    free(s->pending);
    free(s->order);
    free(s->costs);
    fv_case_list_free(&s->list);
}

/* Closes the archive (rank 0) with the final status.  A failure to close it
 * makes the run a harness failure. */
static int close_archive(run_state *s, int exit_code)
{
    if (s->recorder.archive == NULL)
        return exit_code;
    fv_status status = fv_archive_close(s->recorder.archive, exit_code);
    s->recorder.archive = NULL;
    if (status != FV_OK) {
        fprintf(stderr, "fuservalidate: closing the archive: %s\n", fv_error_message());
        return 2;
    }
    return exit_code;
}

/* Every rank: start-up, then rank 0 coordinates and the others follow. */
static int run_rank(run_state *s, int argc, char **argv, bool *abort_job)
{
    fv_run_session *session = &s->session;
    int prepared = 1;
    if (session->mpi.rank == 0 && prepare_rank0(s, argc, argv) != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        prepared = 0;
    }
    if (fv_mpi_broadcast(&session->mpi, &prepared) != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        *abort_job = true;
        return 2;
    }
    if (!prepared)
        return 2;
    startup_report report;
    start_worker(s, &report);
    bool go = false;
    if (gather_startup(s, &report, &go) != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        *abort_job = true;
        return 2;
    }
    if (!go)
        return 2;
    if (session->mpi.rank != 0)
        return fv_run_follow(session, &s->executor, abort_job);
    bool peers_done = true;
    int exit_code = coordinate(s, &peers_done);
    *abort_job = !peers_done;
    return exit_code;
}

int fv_command_run(const fv_options *options, int argc, char **argv)
{
    run_state s;
    memset(&s, 0, sizeof s);
    s.session.options = options;
    int mpi_argc = argc;
    char **mpi_argv = argv;
    if (fv_mpi_open(&mpi_argc, &mpi_argv, &s.session.mpi) != FV_OK ||
        fv_signal_install() != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        return 2;
    }
    snprintf(s.session.label, sizeof s.session.label, "rank %d", s.session.mpi.rank);
    bool abort_job = false;
    int exit_code = run_rank(&s, argc, argv, &abort_job);
    fv_run_executor_stop(&s.executor, exit_code == 0 || exit_code == 1);
    exit_code = close_archive(&s, exit_code);
    free_state(&s);
    if (abort_job) {
        fv_mpi_abort(&s.session.mpi, exit_code);
        return exit_code;
    }
    fv_status closed = fv_mpi_close(&s.session.mpi, MPI_CLOSE_WAIT_SECONDS);
    if (closed != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        if (closed == FV_ERR_IO) /* undelivered messages: finalizing could hang */
            fv_mpi_abort(&s.session.mpi, exit_code);
        return closed == FV_ERR_IO ? exit_code : 2;
    }
    return exit_code;
}
