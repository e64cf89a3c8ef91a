/* run_command.c: `fuservalidate [run] PATH...` in one process: every case
 * through the pipeline, one line per case, every result in the archive, and
 * a summary per family and dtype.  Without a GPU the first line says so and
 * the run proceeds as --compile-only (unless --require-gpu). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/nvrtc.h"
#include "service/archive.h"
#include "service/commands.h"
#include "service/pipeline.h"

enum { FLUSH_ROWS = 32 };

typedef struct run_state {
    const fv_options *options;
    fv_rt_driver *driver;
    fv_rt_cache *kernel_cache;
    fv_store *store;
    fv_pipeline *pipeline;
    fv_archive *archive;
    bool compile_only;
    fv_device table_device;
    fv_result *results;          /* kept for the summary */
    int32_t result_count, result_capacity;
    int64_t pending_rows;
    double last_flush;
} run_state;

static double wall_seconds(void)
{
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + 1e-9 * (double)time.tv_nsec;
}

/* ------------------------------------------------------------ set-up */

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

static fv_status open_archive(run_state *s, const char *path, int argc, char **argv)
{
    char nvrtc[32] = "", driver[32] = "", host[64] = "";
    int major = 0, minor = 0;
    if (fv_rt_nvrtc_version(&major, &minor) == FV_OK)
        snprintf(nvrtc, sizeof nvrtc, "%d.%d", major, minor);
    if (s->driver != NULL) {
        int version = fv_rt_driver_version(s->driver);
        snprintf(driver, sizeof driver, "%d.%d", version / 1000, (version % 1000) / 10);
    }
    gethostname(host, sizeof host);
    char *command = joined_command_line(argc, argv);
    fv_archive_provenance provenance = {
        .tool_version = FV_VERSION, .git_revision = FV_GIT_REVISION,
        .command_line = command ? command : "", .mpi_size = 1, .hosts = host,
        .driver_version = driver, .nvrtc_version = nvrtc,
        .tolerance_policy = fv_tolerance_name(s->options->tolerance),
        .mode = s->compile_only ? "compile-only" : "run"};
    fv_status status = fv_archive_create(path, &provenance, &s->archive);
    free(command);
    return status;
}

static fv_status record_device(run_state *s)
{
    const fv_rt_device_info *gpu = fv_pipeline_gpu(s->pipeline);
    fv_archive_device device = {0};
    gethostname(device.host, sizeof device.host);
    if (gpu != NULL) {
        snprintf(device.gpu_name, sizeof device.gpu_name, "%s", gpu->name);
        snprintf(device.gpu_uuid, sizeof device.gpu_uuid, "%s", gpu->uuid);
        snprintf(device.pci_bus_id, sizeof device.pci_bus_id, "%s", gpu->pci_bus_id);
        device.compute_major = gpu->compute_major;
        device.compute_minor = gpu->compute_minor;
        device.sm_count = gpu->sm_count;
        device.memory_bytes = (int64_t)gpu->total_memory;
        device.copy_bandwidth_gbs = fv_pipeline_copy_bandwidth(s->pipeline);
    } else {
        const fv_device *table = fv_pipeline_device(s->pipeline);
        snprintf(device.gpu_name, sizeof device.gpu_name, "%s", table->name);
        device.compute_major = table->major;
        device.compute_minor = table->minor;
        device.sm_count = table->sm_count;
    }
    return fv_archive_add_device(s->archive, &device);
}

/* -------------------------------------------------------------- cases */

static void store_kernel(void *context, const fv_kernel_plan *kernel,
                         const fv_rt_kernel_resources *resources, const char *arch)
{
    run_state *s = context;
    fv_status status = fv_archive_add_kernel(
        s->archive, kernel->hash, kernel->source, arch, resources->registers,
        resources->spill_store_bytes + resources->spill_load_bytes,
        resources->static_shared_bytes + kernel->launch.dynamic_shared_bytes,
        kernel->segment->scheduler->name);
    if (status != FV_OK)
        fprintf(stderr, "fuservalidate: could not store kernel %s: %s\n", kernel->name,
                fv_error_message());
}

static void print_result(const fv_result *r)
{
    printf("%-11s %-46s %d kernel%s", fv_result_status_name((fv_result_status)r->status),
           r->case_id, (int)r->segment_count, r->segment_count == 1 ? " " : "s");
    if (r->status == FV_RESULT_PASS || (r->status == FV_RESULT_FAIL && r->repeats > 0))
        printf("  %8.4f ms  %5.2f TB/s  %5.1f%% of copy  worst %.2f of allowed  %d regs %d spills",
               r->time_median_ms, r->bandwidth_gbs / 1000, r->percent_of_copy, r->worst_ratio,
               (int)r->registers, (int)r->spill_bytes);
    else if (r->status == FV_RESULT_COMPILED)
        printf("  %d registers, %d spill bytes, %d cached of %d", (int)r->registers,
               (int)r->spill_bytes, (int)r->cache_hits, (int)r->kernels);
    if (r->message[0])
        printf("\n            %s: %s", r->stage, r->message);
    printf("\n");
    fflush(stdout);
}

static fv_status keep_result(run_state *s, const fv_result *result)
{
    if (s->result_count == s->result_capacity) {
        int32_t capacity = s->result_capacity ? 2 * s->result_capacity : 64;
        fv_result *grown = realloc(s->results, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        s->results = grown;
        s->result_capacity = capacity;
    }
    s->results[s->result_count++] = *result;
    return FV_OK;
}

static fv_status record(run_state *s, const fv_result *result, const double *samples, int count)
{
    print_result(result);
    FV_TRY(keep_result(s, result));
    FV_TRY(fv_archive_append(s->archive, result, samples, count));
    if (++s->pending_rows >= FLUSH_ROWS || wall_seconds() - s->last_flush > 2.0) {
        FV_TRY(fv_archive_flush(s->archive));
        s->pending_rows = 0;
        s->last_flush = wall_seconds();
    }
    return FV_OK;
}

static fv_status record_file_errors(run_state *s, const fv_case_list *list)
{
    for (int32_t i = 0; i < list->error_count; i++) {
        const fv_case_error *error = &list->errors[i];
        char id[192];
        snprintf(id, sizeof id, "%s/error", error->family);
        fv_result result;
        fv_result_init(&result, id, error->family, "", "", 0, error->path);
        fv_result_fail(&result, error->status == FV_ERR_UNSUPPORTED ? FV_RESULT_UNSUPPORTED
                                                                   : FV_RESULT_ERROR,
                       "frontend", error->message);
        gethostname(result.host, sizeof result.host);
        result.finished_at = (double)time(NULL);
        FV_TRY(record(s, &result, NULL, 0));
    }
    return FV_OK;
}

static fv_status run_cases(run_state *s, fv_case **cases, int32_t count)
{
    double *samples = malloc(sizeof(double) * FV_RESULT_MAX_SAMPLES);
    FV_CHECK_ALLOC(samples);
    fv_status status = FV_OK;
    for (int32_t i = 0; i < count && status == FV_OK; i++) {
        fv_result result;
        int sample_count = 0;
        fv_text report = {0};
        status = fv_pipeline_run(s->pipeline, cases[i], &result, samples, &sample_count, &report,
                                 store_kernel, s);
        if (status == FV_OK)
            status = record(s, &result, samples, sample_count);
        if (report.length > 0)
            printf("%s            repro: %s\n", fv_text_str(&report), result.repro);
        fv_text_free(&report);
    }
    free(samples);
    return status;
}

/* ------------------------------------------------------------ summary */

static bool is_failure(int status)
{
    return status == FV_RESULT_FAIL || status == FV_RESULT_ERROR || status == FV_RESULT_CRASH ||
           status == FV_RESULT_TIMEOUT;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One line per family and dtype: counts, median % of copy, worst ratio. */
static void print_summary(const run_state *s)
{
    printf("\n%-28s %-5s %6s %6s %6s %9s %12s %14s\n", "family", "dtype", "cases", "passed",
           "failed", "other", "median %copy", "worst/allowed");
    bool *done = calloc((size_t)s->result_count + 1, sizeof(bool));
    double *percents = malloc(sizeof(double) * (size_t)(s->result_count + 1));
    if (done == NULL || percents == NULL) {
        free(done);
        free(percents);
        return;
    }
    for (int32_t i = 0; i < s->result_count; i++) {
        if (done[i])
            continue;
        const fv_result *first = &s->results[i];
        int cases = 0, passed = 0, failed = 0, percent_count = 0;
        double worst = 0;
        for (int32_t j = i; j < s->result_count; j++) {
            const fv_result *r = &s->results[j];
            if (done[j] || strcmp(r->family, first->family) || strcmp(r->dtype, first->dtype))
                continue;
            done[j] = true;
            cases++;
            passed += r->status == FV_RESULT_PASS || r->status == FV_RESULT_COMPILED;
            failed += is_failure(r->status);
            worst = fmax(worst, r->worst_ratio);
            if (r->percent_of_copy > 0)
                percents[percent_count++] = r->percent_of_copy;
        }
        qsort(percents, (size_t)percent_count, sizeof(double), compare_doubles);
        char median[16] = "-";
        if (percent_count > 0)
            snprintf(median, sizeof median, "%.1f", percents[percent_count / 2]);
        printf("%-28s %-5s %6d %6d %6d %9d %12s %14.3g\n", first->family, first->dtype, cases,
               passed, failed, cases - passed - failed, median, worst);
    }
    free(done);
    free(percents);
    int failures = 0;
    for (int32_t i = 0; i < s->result_count; i++)
        if (is_failure(s->results[i].status)) {
            if (failures++ == 0)
                printf("\nfailures:\n");
            printf("  %-11s %s\n      %s\n", fv_result_status_name((fv_result_status)s->results[i].status),
                   s->results[i].case_id, s->results[i].repro);
        }
}

static int exit_status(const run_state *s)
{
    for (int32_t i = 0; i < s->result_count; i++)
        if (is_failure(s->results[i].status))
            return 1;
    return 0;
}

/* --------------------------------------------------------------- run */

static fv_status open_gpu(run_state *s)
{
    s->compile_only = s->options->compile_only;
    if (s->compile_only)
        return FV_OK;
    fv_status status = fv_rt_driver_open(&s->driver);
    if (status == FV_OK)
        return FV_OK;
    if (s->options->require_gpu)
        return status;
    printf("no GPU: %s; running as --compile-only\n", fv_error_message());
    fv_error_clear();
    s->compile_only = true;
    return FV_OK;
}

static fv_status prepare(run_state *s, const char *archive_path, int argc, char **argv)
{
    FV_TRY(open_gpu(s));
    FV_TRY(choose_table_device(s->options, &s->table_device));
    if (!s->options->no_kernel_cache)
        FV_TRY(fv_rt_cache_open(s->options->kernel_cache, &s->kernel_cache));
    if (!s->compile_only)
        FV_TRY(fv_store_open(s->options->refs_dir, s->options->max_ref_bytes, &s->store));
    FV_TRY(open_archive(s, archive_path, argc, argv));
    fv_pipeline_options pipeline_options = {
        .compile_only = s->compile_only, .arch = s->options->arch, .warmup = s->options->warmup,
        .repeats = s->options->repeats, .tolerance = s->options->tolerance, .store = s->store,
        .kernel_cache = s->kernel_cache, .threads = s->options->threads,
        .memory_budget = s->options->memory_budget};
    FV_TRY(fv_pipeline_open(&pipeline_options, s->driver, 0, &s->table_device, &s->pipeline));
    FV_TRY(record_device(s));
    const fv_device *device = fv_pipeline_device(s->pipeline);
    printf("fuservalidate %s: %s (%s, %d SMs)%s", FV_VERSION, device->name, device->arch,
           device->sm_count, s->compile_only ? ", compile only" : "");
    if (fv_pipeline_copy_bandwidth(s->pipeline) > 0)
        printf(", copy bandwidth %.2f TB/s", fv_pipeline_copy_bandwidth(s->pipeline) / 1000);
    printf("\narchive %s\n", archive_path);
    return FV_OK;
}

static void finish(run_state *s, int exit_code)
{
    if (s->archive != NULL && fv_archive_close(s->archive, exit_code) != FV_OK)
        fprintf(stderr, "fuservalidate: closing the archive: %s\n", fv_error_message());
    fv_pipeline_close(s->pipeline);
    fv_store_close(s->store);
    fv_rt_cache_close(s->kernel_cache);
    fv_rt_driver_close(s->driver);
    free(s->results);
}

int fv_command_run(const fv_options *options, int argc, char **argv)
{
    run_state s = {.options = options, .last_flush = wall_seconds()};
    char archive_path[1024];
    if (options->output != NULL)
        snprintf(archive_path, sizeof archive_path, "%s", options->output);
    else
        default_archive_path(archive_path, sizeof archive_path);
    fv_case_list list = {0};
    fv_case **cases = NULL;
    int32_t count = 0;
    int exit_code = 2;
    if (fv_options_select_cases(options, &list, &cases, &count) != FV_OK ||
        prepare(&s, archive_path, argc, argv) != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        goto done;
    }
    if (record_file_errors(&s, &list) != FV_OK || run_cases(&s, cases, count) != FV_OK) {
        fprintf(stderr, "fuservalidate: stopping: %s\n", fv_error_message());
        goto done;
    }
    print_summary(&s);
    exit_code = exit_status(&s);
done:
    finish(&s, exit_code);
    free(cases);
    fv_case_list_free(&list);
    return exit_code;
}
