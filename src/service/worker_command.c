/* worker_command.c: `fuservalidate worker`, the GPU worker process that an
 * MPI rank starts (service/worker.h has the protocol).  It owns the CUDA
 * context and the pipeline (kernel cache, reference store), reads CASE
 * frames on fd 0, and answers on fd 3 with the stages it reaches and each
 * case's outcome.  FV_FAULT makes it fail on purpose, for the tests:
 *   FV_FAULT=ACTION:CASE_GLOB[,ACTION:CASE_GLOB...]
 *   ACTION: abort (SIGABRT), segv (SIGSEGV), exit (exit status 3), hang
 *   (never answers), sleep=SECONDS (then runs the case normally). */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "runtime/nvrtc.h"
#include "service/commands.h"
#include "service/outcome.h"
#include "service/pipeline.h"
#include "service/worker.h"

enum {
    REQUEST_FD = 0,
    RESPONSE_FD = 3,
    SOURCE_CACHE_SLOTS = 4,   /* case files kept parsed */
    READ_CHUNK = 16384,
};

/* A collected case file, kept for the next cases from it. */
typedef struct source_entry {
    char path[512];
    fv_case_list list;
    uint64_t last_use;        /* 0: empty slot */
} source_entry;

typedef struct worker_state {
    const fv_options *options;
    fv_rt_driver *driver;
    fv_rt_cache *kernel_cache;
    fv_store *store;
    fv_pipeline *pipeline;
    bool compile_only;
    char no_gpu_reason[256];
    fv_device table_device;
    int ordinal, device_count;
    source_entry sources[SOURCE_CACHE_SLOTS];
    uint64_t use_clock;
    char (*sent_kernels)[FV_ARCHIVE_HASH_CAPACITY]; /* hashes already sent to the rank */
    int32_t sent_count, sent_capacity;
} worker_state;

/* ------------------------------------------------------------- sending */

static fv_status send_frames(fv_text *frames)
{
    fv_status status = fv_text_status(frames);
    if (status == FV_OK)
        status = fv_wire_write_all(RESPONSE_FD, frames->data, frames->length);
    fv_text_free(frames);
    return status;
}

static fv_status send_stage(const char *stage)
{
    fv_text frames = {0};
    fv_wire_put_text(&frames, FV_WIRE_STAGE, stage);
    return send_frames(&frames);
}

static void send_failure(fv_status status, const char *message)
{
    fv_text frames = {0};
    fv_wire_put_failure(&frames, status, message);
    send_frames(&frames);
}

/* ------------------------------------------------------------- set-up */

/* The built-in device for compile-only work: --device, else the --arch's
 * family (sm_100a: B200), else H100. */
static fv_status choose_table_device(const fv_options *options, fv_device *device)
{
    const char *name = options->device;
    int major = 9, minor = 0;
    if (name == NULL && options->arch != NULL && fv_sched_parse_arch(options->arch, &major, &minor))
        name = major >= 10 ? "B200" : "H100";
    FV_TRY(fv_sched_device_from_table(name ? name : "H100", device));
    if (options->arch != NULL)
        snprintf(device->arch, sizeof device->arch, "%s", options->arch);
    return FV_OK;
}

static fv_status open_gpu(worker_state *w)
{
    w->compile_only = w->options->compile_only;
    w->ordinal = -1;
    if (w->compile_only)
        return FV_OK;
    fv_status status = fv_rt_driver_open(&w->driver);
    if (status != FV_OK) {
        if (w->options->require_gpu)
            return status;
        snprintf(w->no_gpu_reason, sizeof w->no_gpu_reason, "%s", fv_error_message());
        fv_error_clear();
        w->compile_only = true;
        return FV_OK;
    }
    w->device_count = fv_rt_driver_device_count(w->driver);
    w->ordinal = w->options->local_rank % w->device_count;
    return FV_OK;
}

static fv_status open_worker(worker_state *w)
{
    FV_TRY(open_gpu(w));
    FV_TRY(choose_table_device(w->options, &w->table_device));
    if (!w->options->no_kernel_cache)
        FV_TRY(fv_rt_cache_open(w->options->kernel_cache, &w->kernel_cache));
    if (!w->compile_only)
        FV_TRY(fv_store_open(w->options->refs_dir, w->options->max_ref_bytes, &w->store));
    fv_pipeline_options pipeline_options = {
        .compile_only = w->compile_only, .arch = w->options->arch, .warmup = w->options->warmup,
        .repeats = w->options->repeats, .flush = w->options->flush,
        .tolerance = w->options->tolerance, .store = w->store,
        .kernel_cache = w->kernel_cache, .threads = w->options->threads,
        .check_outputs = !w->options->no_check,
        .sized_copy = !w->options->no_sized_copy,
        .memory_budget = w->options->memory_budget};
    FV_TRY(fv_pipeline_open(&pipeline_options, w->compile_only ? NULL : w->driver,
                            w->ordinal < 0 ? 0 : w->ordinal, &w->table_device, &w->pipeline));
    return FV_OK;
}

static void close_worker(worker_state *w)
{
    for (int i = 0; i < SOURCE_CACHE_SLOTS; i++)
        fv_case_list_free(&w->sources[i].list);
    free(w->sent_kernels);
    fv_pipeline_close(w->pipeline);
    fv_store_close(w->store);
    fv_rt_cache_close(w->kernel_cache);
    fv_rt_driver_close(w->driver);
}

static void describe_device(const worker_state *w, fv_archive_device *device)
{
    memset(device, 0, sizeof *device);
    gethostname(device->host, sizeof device->host);
    device->host[sizeof device->host - 1] = '\0';
    const fv_rt_device_info *gpu = fv_pipeline_gpu(w->pipeline);
    if (gpu != NULL) {
        snprintf(device->gpu_name, sizeof device->gpu_name, "%s", gpu->name);
        snprintf(device->gpu_uuid, sizeof device->gpu_uuid, "%s", gpu->uuid);
        snprintf(device->pci_bus_id, sizeof device->pci_bus_id, "%s", gpu->pci_bus_id);
        device->compute_major = gpu->compute_major;
        device->compute_minor = gpu->compute_minor;
        device->sm_count = gpu->sm_count;
        device->memory_bytes = (int64_t)gpu->total_memory;
        device->copy_bandwidth_gbs = fv_pipeline_copy_bandwidth(w->pipeline);
    } else {
        const fv_device *table = fv_pipeline_device(w->pipeline);
        snprintf(device->gpu_name, sizeof device->gpu_name, "%s", table->name);
        device->compute_major = table->major;
        device->compute_minor = table->minor;
        device->sm_count = table->sm_count;
    }
}

static fv_status send_hello(const worker_state *w)
{
    fv_worker_hello hello;
    memset(&hello, 0, sizeof hello);
    hello.pid = (int32_t)getpid();
    hello.compile_only = w->compile_only;
    snprintf(hello.no_gpu_reason, sizeof hello.no_gpu_reason, "%s", w->no_gpu_reason);
    hello.ordinal = w->compile_only ? -1 : w->ordinal;
    hello.device_count = w->device_count;
    int major = 0, minor = 0;
    if (fv_rt_nvrtc_version(&major, &minor) == FV_OK)
        snprintf(hello.nvrtc_version, sizeof hello.nvrtc_version, "%d.%d", major, minor);
    if (w->driver != NULL) {
        int version = fv_rt_driver_version(w->driver);
        snprintf(hello.driver_version, sizeof hello.driver_version, "%d.%d", version / 1000,
                 (version % 1000) / 10);
    }
    describe_device(w, &hello.device);
    fv_text frames = {0};
    fv_wire_put(&frames, FV_WIRE_HELLO, &hello, sizeof hello);
    FV_TRY(send_frames(&frames));
    return FV_OK;
}

/* ---------------------------------------------------------- test faults */

static void sleep_seconds(double seconds)
{
    struct timespec time = {.tv_sec = (time_t)seconds,
                            .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&time, &time) != 0 && errno == EINTR) {
    }
}

/* Applies the FV_FAULT entries whose glob matches `case_id`. */
static void inject_fault(const char *case_id)
{
    const char *spec = getenv("FV_FAULT");
    if (spec == NULL || spec[0] == '\0')
        return;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", spec);
    char *save = NULL;
    for (char *entry = strtok_r(copy, ",", &save); entry; entry = strtok_r(NULL, ",", &save)) {
        char *pattern = strchr(entry, ':');
        if (pattern == NULL)
            continue;
        *pattern++ = '\0';
        if (fnmatch(pattern, case_id, 0) != 0)
            continue;
        fprintf(stderr, "fuservalidate worker %d: FV_FAULT %s on %s\n", (int)getpid(), entry,
                case_id);
        if (strcmp(entry, "abort") == 0)
            abort();
        if (strcmp(entry, "segv") == 0)
            raise(SIGSEGV);
        if (strcmp(entry, "exit") == 0)
            _exit(3);
        if (strcmp(entry, "hang") == 0)
            for (;;)
                pause();
        if (strncmp(entry, "sleep=", 6) == 0)
            sleep_seconds(atof(entry + 6));
    }
}

/* --------------------------------------------------------------- cases */

static bool kernel_was_sent(const worker_state *w, const char *hash)
{
    for (int32_t i = 0; i < w->sent_count; i++)
        if (strcmp(w->sent_kernels[i], hash) == 0)
            return true;
    return false;
}

static fv_status remember_kernel(worker_state *w, const char *hash)
{
    if (w->sent_count == w->sent_capacity) {
        int32_t capacity = w->sent_capacity ? 2 * w->sent_capacity : 64;
        void *grown = realloc(w->sent_kernels, sizeof *w->sent_kernels * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        w->sent_kernels = grown;
        w->sent_capacity = capacity;
    }
    snprintf(w->sent_kernels[w->sent_count++], FV_ARCHIVE_HASH_CAPACITY, "%s", hash);
    return FV_OK;
}

/* What the kernel sink needs while one case runs. */
typedef struct case_context {
    worker_state *worker;
    fv_outcome *outcome;
    fv_status status;                   /* first failure inside the sink */
} case_context;

/* The pipeline calls this once per kernel of the case, after compiling it;
 * each kernel's source goes to the rank once per worker.  Once the plan is
 * final (kernel NULL, index -1; not in compile-only mode) the GPU stages
 * begin: a kernel compiled again after another spilled is still "compile". */
static void collect_kernel(void *context, const fv_kernel_plan *kernel,
                           const fv_rt_kernel_resources *resources, const char *arch,
                           int32_t index, int32_t count)
{
    case_context *c = context;
    (void)count;
    if (kernel == NULL) {
        if (c->status == FV_OK && index < 0)
            c->status = send_stage("launch");
        return;
    }
    if (c->status == FV_OK && !kernel_was_sent(c->worker, kernel->hash)) {
        c->status = fv_outcome_add_kernel(
            c->outcome, kernel->hash, kernel->source, arch, kernel->segment->scheduler->name,
            resources->registers, resources->spill_store_bytes + resources->spill_load_bytes,
            resources->static_shared_bytes + (int32_t)kernel->launch.dynamic_shared_bytes);
        if (c->status == FV_OK)
            c->status = remember_kernel(c->worker, kernel->hash);
    }
}

/* The case `assignment` names, from its source file (parsed once and kept),
 * and the approach its id forces ("...@ws"; FV_APPROACH_AUTO without a
 * suffix).  *found is NULL with a message in `why` if the file no longer
 * defines it. */
static fv_status find_case(worker_state *w, const fv_assignment *assignment,
                           const fv_case **found, fv_case_approach *approach, char *why,
                           size_t why_size)
{
    *found = NULL;
    source_entry *entry = NULL, *oldest = &w->sources[0];
    for (int i = 0; i < SOURCE_CACHE_SLOTS && entry == NULL; i++) {
        if (w->sources[i].last_use > 0 && strcmp(w->sources[i].path, assignment->source) == 0)
            entry = &w->sources[i];
        else if (w->sources[i].last_use < oldest->last_use)
            oldest = &w->sources[i];
    }
    if (entry == NULL) {
        entry = oldest;
        fv_case_list_free(&entry->list);
        entry->last_use = 0;
        const char *paths[1] = {assignment->source};
        fv_status status = fv_frontend_collect(paths, 1, &entry->list);
        if (status == FV_ERR_NOMEM)
            return status;
        if (status != FV_OK) {
            snprintf(why, why_size, "%s", fv_error_message());
            fv_case_list_free(&entry->list);
            return FV_OK;
        }
        snprintf(entry->path, sizeof entry->path, "%s", assignment->source);
    }
    entry->last_use = ++w->use_clock;
    char base[FV_CASE_ID_CAPACITY];
    fv_case_split_approach(assignment->case_id, base, sizeof base, approach);
    for (int32_t i = 0; i < entry->list.count; i++)
        if (strcmp(entry->list.cases[i]->id, base) == 0) {
            *found = entry->list.cases[i];
            return FV_OK;
        }
    if (entry->list.error_count > 0)
        snprintf(why, why_size, "%s", entry->list.errors[0].message);
    else
        snprintf(why, why_size, "case %s is not defined by %s (did the file change during the "
                 "run?)", assignment->case_id, assignment->source);
    return FV_OK;
}

static fv_status run_case(worker_state *w, const fv_assignment *assignment)
{
    fv_outcome outcome;
    fv_outcome_init(&outcome);
    outcome.index = assignment->index;
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, send_stage("frontend"), done);
    const fv_case *c = NULL;
    fv_case_approach approach = FV_APPROACH_AUTO;
    char why[1024] = "";
    FV_TRY_GOTO(status, find_case(w, assignment, &c, &approach, why, sizeof why), done);
    if (c == NULL) {
        fv_assignment_result(assignment, FV_RESULT_ERROR, "frontend", why, &outcome.result);
        fv_result_stamp_here(&outcome.result);
    } else {
        /* the case as assigned: "...@ws" forces the approach */
        fv_case assigned = *c;
        fv_case_with_approach(&assigned, approach);
        c = &assigned;
        case_context context = {.worker = w, .outcome = &outcome};
        FV_TRY_GOTO(status, send_stage("compile"), done);
        inject_fault(assignment->case_id);
        int sample_count = 0;
        FV_TRY_GOTO(status, fv_pipeline_run(w->pipeline, c, &outcome.result, outcome.samples,
                                            &sample_count, &outcome.report, collect_kernel,
                                            &context), done);
        FV_TRY_GOTO(status, context.status, done);
        outcome.sample_count = sample_count;
    }
    fv_text frames = {0};
    fv_outcome_put(&frames, &outcome);
    status = send_frames(&frames);
done:
    fv_outcome_free(&outcome);
    return status;
}

/* ------------------------------------------------------------- serving */

/* Handles the whole frames in `input` from *offset on.  *quit on QUIT. */
static fv_status take_requests(worker_state *w, const fv_text *input, size_t *offset, bool *quit)
{
    for (;;) {
        fv_wire_frame frame;
        bool complete = false;
        FV_TRY(fv_wire_next((const uint8_t *)fv_text_str(input), input->length, offset, &frame,
                            &complete));
        if (!complete)
            return FV_OK;
        if (fv_wire_is(&frame, FV_WIRE_QUIT)) {
            *quit = true;
            return FV_OK;
        }
        if (!fv_wire_is(&frame, FV_WIRE_CASE))
            FV_FAIL(FV_ERR_CORRUPT, "the worker got an unexpected %s message", frame.tag);
        fv_assignment assignment;
        FV_TRY(fv_assignment_take(&frame, &assignment));
        FV_TRY(run_case(w, &assignment));
    }
}

/* Reads requests until QUIT or the end of fd 0. */
static fv_status serve(worker_state *w)
{
    fv_text input = {0};
    size_t offset = 0;
    bool quit = false;
    fv_status status = FV_OK;
    char chunk[READ_CHUNK];
    while (!quit && status == FV_OK) {
        ssize_t got = read(REQUEST_FD, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            status = fv_error_raise(FV_ERR_IO, __FILE__, __LINE__, "reading requests: %s",
                                    strerror(errno));
            break;
        }
        if (got == 0)
            break;
        fv_text_append(&input, chunk, (size_t)got);
        status = fv_text_status(&input);
        if (status == FV_OK)
            status = take_requests(w, &input, &offset, &quit);
        if (offset == input.length) {
            fv_text_reset(&input);
            offset = 0;
        }
    }
    fv_text_free(&input);
    return status;
}

/* Dies with the rank: a worker must not outlive the process that reads it. */
static bool watch_parent(long parent_pid)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    return parent_pid <= 0 || (long)getppid() == parent_pid;
}

int fv_command_worker(const fv_options *options)
{
    if (fcntl(RESPONSE_FD, F_GETFD) < 0) {
        fprintf(stderr, "fuservalidate worker: this process is started by `fuservalidate run`, "
                "which sends it cases on fd 0 and reads its answers on fd 3\n");
        return 2;
    }
    if (!watch_parent(options->parent_pid))
        return 2;
    close_range(RESPONSE_FD + 1, ~0U, 0); /* nothing of the rank's (MPI's sockets...) */
    worker_state w = {.options = options};
    fv_status status = open_worker(&w);
    if (status == FV_OK)
        status = send_hello(&w);
    else
        send_failure(status, fv_error_message());
    if (status == FV_OK) {
        status = serve(&w);
        if (status != FV_OK)
            send_failure(status, fv_error_message());
    }
    close_worker(&w);
    return fv_status_exit_code(status);
}
