/* pipeline.c: one case from plan to timed, validated kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <time.h>

#include "common/clock.h"
#include "common/stats.h"
#include "ir/round.h"
#include "runtime/launch.h"
#include "service/pipeline.h"
#include "validate/generator.h"
#include "validate/references.h"

enum { MAX_KERNEL_ARGUMENTS = 96, MAX_SCALARS = 32 };

typedef struct loaded_kernel {
    char hash[65];
    fv_rt_module *module;
    fv_rt_function *function;
    fv_rt_kernel_resources resources;
} loaded_kernel;

/* A copy timed for a case's traffic, kept for later cases of the same size
 * (every approach of a case under --approach all, repeated shapes). */
typedef struct sized_copy {
    uint64_t bytes;                /* each way */
    double median_ms;
} sized_copy;

#define SIZED_COPIES_KEPT 64

struct fv_pipeline {
    fv_pipeline_options options;
    fv_rt_driver *driver;
    fv_rt_context *context;        /* NULL in compile-only mode */
    fv_device device;
    fv_rt_device_info gpu;
    double copy_bandwidth;
    char arch[16];
    loaded_kernel *loaded;
    int loaded_count, loaded_capacity;
    sized_copy sized_copies[SIZED_COPIES_KEPT]; /* ring: the oldest is replaced */
    int sized_copies_kept;         /* entries filled, at most SIZED_COPIES_KEPT */
    int next_sized_copy;           /* the entry the next one replaces */
    bool poisoned;                 /* a kernel fault destroyed the context */
    char poison_reason[384];
};

static double now_ms(void)
{
    return 1e3 * fv_monotonic_seconds();
}

/* ------------------------------------------------------------ set-up */

static void device_from_gpu(const fv_rt_device_info *gpu, fv_device *device)
{
    memset(device, 0, sizeof *device);
    snprintf(device->name, sizeof device->name, "%s", gpu->name);
    device->major = gpu->compute_major;
    device->minor = gpu->compute_minor;
    fv_sched_arch_for(gpu->compute_major, gpu->compute_minor, device->arch, sizeof device->arch);
    device->sm_count = gpu->sm_count;
    device->max_threads_per_block = gpu->max_threads_per_block;
    device->max_threads_per_sm = gpu->max_threads_per_sm;
    device->registers_per_sm = gpu->registers_per_sm;
    device->registers_per_block = gpu->registers_per_block;
    device->shared_per_sm = gpu->shared_memory_per_sm;
    device->shared_per_block_optin = gpu->shared_memory_per_block_optin;
    device->l2_bytes = gpu->l2_size;
    device->peak_bandwidth_gbs = fv_rt_device_peak_bandwidth(gpu);
    device->from_driver = true;
}

fv_status fv_pipeline_open(const fv_pipeline_options *options, fv_rt_driver *driver, int ordinal,
                           const fv_device *table_device, fv_pipeline **out)
{
    fv_pipeline *p = calloc(1, sizeof *p);
    FV_CHECK_ALLOC(p);
    p->options = *options;
    p->driver = driver;
    fv_status status = FV_OK;
    if (driver != NULL && !options->compile_only) {
        FV_TRY_GOTO(status, fv_rt_context_open(driver, ordinal, &p->context), failed);
        p->gpu = *fv_rt_context_device(p->context);
        device_from_gpu(&p->gpu, &p->device);
        fv_rt_copy_bandwidth_result bandwidth;
        FV_TRY_GOTO(status, fv_rt_copy_bandwidth(p->context, options->kernel_cache, &bandwidth),
                    failed);
        p->copy_bandwidth = bandwidth.gigabytes_per_second;
    } else {
        p->device = *table_device;
    }
    snprintf(p->arch, sizeof p->arch, "%s", options->arch ? options->arch : p->device.arch);
    *out = p;
    return FV_OK;
failed:
    fv_pipeline_close(p);
    return status;
}

void fv_pipeline_close(fv_pipeline *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->loaded_count; i++)
        if (!p->poisoned)
            fv_rt_module_unload(p->loaded[i].module);
    free(p->loaded);
    if (p->context != NULL)
        fv_rt_context_close(p->context);
    free(p);
}

const fv_device *fv_pipeline_device(const fv_pipeline *p) { return &p->device; }

const fv_rt_device_info *fv_pipeline_gpu(const fv_pipeline *p)
{
    return p->context ? &p->gpu : NULL;
}

double fv_pipeline_copy_bandwidth(const fv_pipeline *p) { return p->copy_bandwidth; }

double fv_pipeline_io_bytes(const fv_case *c)
{
    const fv_fusion *fusion = c->fusion;
    double bytes = 0;
    bool *counted = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (counted == NULL)
        return 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t count = pass == 0 ? fusion->input_count : fusion->output_count;
        const int32_t *ids = pass == 0 ? fusion->inputs : fusion->outputs;
        for (int32_t i = 0; i < count; i++) {
            int32_t v = ids[i];
            if (counted[v] || fusion->values[v].kind != FV_VALUE_TENSOR)
                continue;
            counted[v] = true;
            bytes += (double)fv_case_stored_numel(c, v) * (double)fv_dtype_size(fusion->values[v].dtype);
        }
    }
    free(counted);
    return bytes;
}

/* ------------------------------------------------------------ kernels */

static void note_resources(fv_result *result, const fv_rt_kernel_resources *resources,
                           int dynamic_shared)
{
    if (resources->registers > result->registers)
        result->registers = resources->registers;
    result->spill_bytes += resources->spill_store_bytes + resources->spill_load_bytes;
    int shared = resources->static_shared_bytes + dynamic_shared;
    if (shared > result->shared_bytes)
        result->shared_bytes = shared;
    if (resources->local_bytes > result->local_bytes)
        result->local_bytes = resources->local_bytes;
}

static int find_loaded(const fv_pipeline *p, const char *hash)
{
    for (int i = 0; i < p->loaded_count; i++)
        if (strcmp(p->loaded[i].hash, hash) == 0)
            return i;
    return -1;
}

/* Compiles (through the cache) and, with a GPU, loads a kernel once. */
/* *out is an index into p->loaded (which may move as it grows), or -1
 * without a GPU. */
static fv_status prepare_kernel(fv_pipeline *p, const fv_kernel_plan *kernel, fv_result *result,
                                int *out, fv_rt_kernel_resources *resources_out)
{
    int existing = p->context ? find_loaded(p, kernel->hash) : -1;
    if (existing >= 0) {
        result->kernels++;
        result->cache_hits++;
        note_resources(result, &p->loaded[existing].resources, kernel->launch.dynamic_shared_bytes);
        *resources_out = p->loaded[existing].resources;
        *out = existing;
        return FV_OK;
    }
    const char *names[1] = {kernel->name};
    fv_rt_compile_request request = {.source = kernel->source, .program_name = kernel->name,
                                     .kernel_names = names, .kernel_count = 1, .arch = p->arch,
                                     .cache = p->options.kernel_cache};
    fv_rt_compiled compiled;
    fv_status compile_status = fv_rt_compile(&request, &compiled);
    if (compile_status != FV_OK) {
        fv_rt_compiled_free(&compiled);  /* the log, which a failed compile leaves to us */
        fv_error_trace(__FILE__, __LINE__);
        return compile_status;
    }
    const fv_rt_kernel_resources *resources = fv_rt_compiled_kernel(&compiled, kernel->name);
    fv_rt_kernel_resources copy = resources ? *resources : (fv_rt_kernel_resources){0};
    result->kernels++;
    result->cache_hits += compiled.cache_hit;
    if (!compiled.cache_hit)
        result->compile_ms += compiled.nvrtc_ms;
    note_resources(result, &copy, kernel->launch.dynamic_shared_bytes);
    *resources_out = copy;
    *out = -1;
    if (p->context == NULL) {
        fv_rt_compiled_free(&compiled);
        return FV_OK;
    }
    if (p->loaded_count == p->loaded_capacity) {
        int capacity = p->loaded_capacity ? 2 * p->loaded_capacity : 16;
        loaded_kernel *grown = realloc(p->loaded, sizeof *grown * (size_t)capacity);
        if (grown == NULL) {
            fv_rt_compiled_free(&compiled);
            FV_FAIL(FV_ERR_NOMEM, "out of memory");
        }
        p->loaded = grown;
        p->loaded_capacity = capacity;
    }
    loaded_kernel *entry = &p->loaded[p->loaded_count];
    memset(entry, 0, sizeof *entry);
    snprintf(entry->hash, sizeof entry->hash, "%s", kernel->hash);
    entry->resources = copy;
    fv_status status = fv_rt_module_load(p->context, compiled.cubin, compiled.cubin_size,
                                         &entry->module);
    if (status == FV_OK)
        status = fv_rt_module_function(entry->module, kernel->name, &entry->function);
    fv_rt_compiled_free(&compiled);
    if (status != FV_OK)
        return status;
    *out = p->loaded_count++;
    return FV_OK;
}

/* ------------------------------------------------------------ buffers */

typedef struct device_buffers {
    fv_rt_device_pointer *of_value;   /* per value id (aliases resolved) */
    fv_rt_device_pointer *workspace;  /* per kernel */
    fv_rt_device_pointer *semaphores; /* per kernel */
    int32_t value_count, kernel_count;
} device_buffers;

static int32_t resolve_alias(const fv_case_plan *plan, int32_t v)
{
    while (plan->segmentation.alias_of[v] >= 0)
        v = plan->segmentation.alias_of[v];
    return v;
}

static fv_status allocate_value(fv_pipeline *p, const fv_case *c, const fv_case_plan *plan,
                                device_buffers *b, int32_t v)
{
    v = resolve_alias(plan, v);
    if (b->of_value[v] != 0)
        return FV_OK;
    size_t bytes = (size_t)fv_case_stored_numel(c, v) * fv_dtype_size(c->fusion->values[v].dtype);
    return fv_rt_alloc(p->context, bytes > 0 ? bytes : 16, &b->of_value[v]);
}

static fv_status allocate_buffers(fv_pipeline *p, const fv_case *c, const fv_case_plan *plan,
                                  device_buffers *b)
{
    b->value_count = c->fusion->value_count;
    b->kernel_count = plan->kernel_count;
    b->of_value = calloc((size_t)b->value_count + 1, sizeof *b->of_value);
    b->workspace = calloc((size_t)b->kernel_count + 1, sizeof *b->workspace);
    b->semaphores = calloc((size_t)b->kernel_count + 1, sizeof *b->semaphores);
    FV_CHECK_ALLOC(b->of_value);
    FV_CHECK_ALLOC(b->workspace);
    FV_CHECK_ALLOC(b->semaphores);
    for (int32_t k = 0; k < plan->kernel_count; k++) {
        const fv_fusion *sf = plan->kernels[k].segment->fusion;
        for (int32_t i = 0; i < sf->input_count; i++)
            if (sf->values[sf->inputs[i]].kind == FV_VALUE_TENSOR)
                FV_TRY(allocate_value(p, c, plan, b, sf->inputs[i]));
        for (int32_t o = 0; o < sf->output_count; o++)
            FV_TRY(allocate_value(p, c, plan, b, sf->outputs[o]));
        const fv_launch_shape *shape = &plan->kernels[k].launch;
        if (shape->workspace_bytes > 0)
            FV_TRY(fv_rt_alloc(p->context, (size_t)shape->workspace_bytes, &b->workspace[k]));
        if (shape->semaphore_count > 0) {
            size_t bytes = sizeof(unsigned) * (size_t)shape->semaphore_count;
            FV_TRY(fv_rt_alloc(p->context, bytes, &b->semaphores[k]));
            FV_TRY(fv_rt_memset(p->context, b->semaphores[k], 0, bytes));
        }
    }
    return FV_OK;
}

static void free_buffers(fv_pipeline *p, device_buffers *b)
{
    if (p->context != NULL && !p->poisoned) {
        for (int32_t v = 0; v < b->value_count && b->of_value; v++)
            if (b->of_value[v] != 0)
                fv_rt_free(p->context, b->of_value[v]);
        for (int32_t k = 0; k < b->kernel_count; k++) {
            if (b->workspace && b->workspace[k])
                fv_rt_free(p->context, b->workspace[k]);
            if (b->semaphores && b->semaphores[k])
                fv_rt_free(p->context, b->semaphores[k]);
        }
    }
    free(b->of_value);
    free(b->workspace);
    free(b->semaphores);
}

/* Host threads for input generation: the -j count, or every online core. */
static int generator_threads(const fv_pipeline *p)
{
    if (p->options.threads > 0)
        return p->options.threads;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

/* Generates every tensor input a kernel reads on the host and copies it to
 * the device.  given[i] (one per fusion input) keeps input i's host copy for
 * the reference evaluator when `keep` (the caller frees given[i].elements),
 * so the inputs are generated once per case; otherwise it is freed here. */
static fv_status upload_inputs(fv_pipeline *p, const fv_case *c, device_buffers *b,
                               bool keep, fv_eval_given_input *given)
{
    const fv_fusion *fusion = c->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t v = fusion->inputs[i];
        if (fusion->values[v].kind != FV_VALUE_TENSOR || b->of_value[v] == 0)
            continue;
        int64_t count = fv_case_stored_numel(c, v);
        size_t bytes = (size_t)count * fv_dtype_size(fusion->values[v].dtype);
        void *host = malloc(bytes > 0 ? bytes : 1);
        FV_CHECK_ALLOC(host);
        fv_status status = fv_gen_fill_raw(c->seed, (int)i, &c->distributions[i],
                                           fusion->values[v].dtype, 0, count, host,
                                           generator_threads(p));
        if (status == FV_OK)
            status = fv_rt_copy_to_device(p->context, b->of_value[v], host, bytes);
        bool logical_layout = count == fv_case_numel(c, v);
        if (status == FV_OK && keep && logical_layout) {
            given[i].elements = host;
            given[i].count = count;
        } else {
            free(host);
        }
        FV_TRY(status);
    }
    return FV_OK;
}

/* ------------------------------------------------------------ launches */

typedef struct launch_sequence {
    fv_pipeline *pipeline;
    const fv_case_plan *plan;
    const int *kernels;            /* per kernel: index into pipeline->loaded */
    device_buffers *buffers;
    double scalars[16][MAX_SCALARS];
    unsigned grid_x[16];            /* per kernel: blocks on x (cooperative or resident:
                                       clamped) */
} launch_sequence;

/* Blocks of a cooperative kernel that can be resident at once: occupancy
 * x SMs, or for a kernel in clusters the clusters that fit x their size
 * (some SMs may stay idle: a cluster needs its blocks in one GPC). */
static fv_status resident_blocks(launch_sequence *s, int32_t k, unsigned *resident)
{
    const fv_launch_shape *shape = &s->plan->kernels[k].launch;
    fv_rt_function *function = s->pipeline->loaded[s->kernels[k]].function;
    int threads = shape->block[0] * shape->block[1] * shape->block[2];
    if (shape->cluster > 1) {
        int clusters = 0;
        FV_TRY(fv_rt_occupancy_clusters(function, threads, (size_t)shape->dynamic_shared_bytes,
                                        shape->cluster, &clusters));
        *resident = (unsigned)(clusters * shape->cluster);
    } else {
        int blocks_per_sm = 0;
        FV_TRY(fv_rt_occupancy(function, threads, (size_t)shape->dynamic_shared_bytes,
                               &blocks_per_sm));
        *resident = (unsigned)(blocks_per_sm * s->pipeline->device.sm_count);
    }
    if (*resident == 0)
        FV_FAIL(FV_ERR_UNSUPPORTED, "kernel %s cannot keep one %s resident",
                s->plan->kernels[k].name, shape->cluster > 1 ? "cluster" : "block per SM");
    return FV_OK;
}

/* A cooperative kernel's blocks must all be resident at once, and a
 * kernel marked `resident` should be: clamp its grid to what the compiled
 * kernel's occupancy allows (fv_sched_launch_blocks; its rows are
 * grid-strided, so fewer blocks stay correct; a clustered grid stays a
 * whole number of clusters). */
static fv_status fit_grids(launch_sequence *s)
{
    for (int32_t k = 0; k < s->plan->kernel_count; k++) {
        const fv_launch_shape *shape = &s->plan->kernels[k].launch;
        s->grid_x[k] = (unsigned)shape->grid[0];
        if (!shape->cooperative && !shape->resident)
            continue;
        unsigned resident = 0;
        FV_TRY(resident_blocks(s, k, &resident));
        s->grid_x[k] = (unsigned)fv_sched_launch_blocks(shape, (int)resident);
    }
    return FV_OK;
}

static fv_status launch_kernel(launch_sequence *s, int32_t k)
{
    const fv_kernel_plan *kernel = &s->plan->kernels[k];
    const fv_fusion *sf = kernel->segment->fusion;
    fv_rt_device_pointer pointers[MAX_KERNEL_ARGUMENTS];
    long long extents[2];
    void *arguments[MAX_KERNEL_ARGUMENTS + MAX_SCALARS + 4];
    int count = 0, pointer_count = 0;
    for (int32_t i = 0; i < sf->input_count; i++)
        if (sf->values[sf->inputs[i]].kind == FV_VALUE_TENSOR && pointer_count < MAX_KERNEL_ARGUMENTS)
            pointers[pointer_count++] = s->buffers->of_value[resolve_alias(s->plan, sf->inputs[i])];
    for (int32_t o = 0; o < sf->output_count && pointer_count < MAX_KERNEL_ARGUMENTS; o++)
        pointers[pointer_count++] = s->buffers->of_value[resolve_alias(s->plan, sf->outputs[o])];
    for (int i = 0; i < pointer_count; i++)
        arguments[count++] = &pointers[i];
    int scalar_count = 0;
    FV_TRY(fv_plan_scalar_arguments(kernel, s->scalars[k], MAX_SCALARS, &scalar_count));
    for (int i = 0; i < scalar_count; i++)
        arguments[count++] = &s->scalars[k][i];
    int64_t outer, inner;
    fv_sched_canonical_extents(&kernel->segment->view, &kernel->segment_case, &outer, &inner);
    extents[0] = outer;
    extents[1] = inner;
    arguments[count++] = &extents[0];
    arguments[count++] = &extents[1];
    arguments[count++] = &s->buffers->workspace[k];
    arguments[count++] = &s->buffers->semaphores[k];
    const fv_launch_shape *shape = &kernel->launch;
    fv_rt_launch_config config = {
        .grid = {s->grid_x[k], (unsigned)shape->grid[1], (unsigned)shape->grid[2]},
        .block = {(unsigned)shape->block[0], (unsigned)shape->block[1], (unsigned)shape->block[2]},
        .dynamic_shared_bytes = (unsigned)shape->dynamic_shared_bytes,
        .cooperative = shape->cooperative,
        .cluster = (unsigned)shape->cluster};
    fv_status status = fv_rt_launch(s->pipeline->loaded[s->kernels[k]].function, &config,
                                    arguments);
    if (status != FV_OK)
        fv_error_prefix("kernel %s", kernel->name);
    return status;
}

static fv_status run_sequence(fv_rt_context *context, void *user_data)
{
    launch_sequence *s = user_data;
    for (int32_t k = 0; k < s->plan->kernel_count; k++)
        FV_TRY(launch_kernel(s, k));
    (void)context;
    return FV_OK;
}

/* ------------------------------------------------------------ outputs */

/* Bytes of output `o` as the host sees it (its elements, not its storage). */
static size_t output_bytes(const fv_case *c, int32_t o)
{
    int32_t v = c->fusion->outputs[o];
    return (size_t)fv_case_numel(c, v) * fv_dtype_size(c->fusion->values[v].dtype);
}

/* The device buffer of output `o` (of the value it aliases, if any). */
static fv_rt_device_pointer output_buffer(const fv_case *c, const fv_case_plan *plan,
                                          const device_buffers *b, int32_t o)
{
    return b->of_value[resolve_alias(plan, c->fusion->outputs[o])];
}

static fv_status download_outputs(fv_pipeline *p, const fv_case *c, const fv_case_plan *plan,
                                  const device_buffers *b, void **host)
{
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        size_t bytes = output_bytes(c, o);
        host[o] = malloc(bytes > 0 ? bytes : 1);
        FV_CHECK_ALLOC(host[o]);
        FV_TRY(fv_rt_copy_to_host(p->context, host[o], output_buffer(c, plan, b, o), bytes));
    }
    return FV_OK;
}

/* Poisons the outputs (all bits set: NaN in every float type) so that a
 * kernel that skips an element cannot pass on stale data. */
static fv_status poison_outputs(fv_pipeline *p, const fv_case *c, const fv_case_plan *plan,
                                const device_buffers *b)
{
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        int32_t v = c->fusion->outputs[o];
        size_t bytes = (size_t)fv_case_stored_numel(c, v) * fv_dtype_size(c->fusion->values[v].dtype);
        FV_TRY(fv_rt_memset(p->context, output_buffer(c, plan, b, o), 0xff, bytes));
    }
    return FV_OK;
}

enum { REPEAT_CHUNK_BYTES = 64 << 20 }; /* check_repeat_launch downloads this much at a time */

/* Compares `bytes` bytes of output `o` as downloaded after a later launch
 * (`later`, from byte `offset` of the output) with the first launch's
 * (`first`); on the first difference, fails `result` naming the output and
 * the element, and returns false. */
static bool same_as_first(const fv_case *c, int32_t o, const unsigned char *first,
                          const unsigned char *later, size_t offset, size_t bytes,
                          fv_result *result)
{
    if (memcmp(first + offset, later, bytes) == 0)
        return true;
    int32_t v = c->fusion->outputs[o];
    size_t element_bytes = fv_dtype_size(c->fusion->values[v].dtype);
    size_t at = 0;
    while (at < bytes && first[offset + at] == later[at])
        at++;
    char label[40], message[256];
    fv_ir_value_label(c->fusion, v, label);
    snprintf(message, sizeof message,
             "a later launch wrote different outputs: %s differs from the first launch's at "
             "element %zu (kernels must write the same bits on every launch)",
             label, (offset + at) / element_bytes);
    fv_result_fail(result, FV_RESULT_FAIL, "repeat", message);
    return false;
}

/* Downloads output `o` as a later launch wrote it, REPEAT_CHUNK_BYTES at a
 * time into `chunk`, and compares it with the first launch's (`first`);
 * *same turns false at the first difference (same_as_first fails `result`).
 * Failure: FV_ERR_CUDA. */
static fv_status compare_later_output(fv_pipeline *p, const fv_case *c, int32_t o,
                                      fv_rt_device_pointer source, const unsigned char *first,
                                      unsigned char *chunk, fv_result *result, bool *same)
{
    size_t bytes = output_bytes(c, o);
    for (size_t offset = 0; *same && offset < bytes; offset += REPEAT_CHUNK_BYTES) {
        size_t length = bytes - offset < REPEAT_CHUNK_BYTES ? bytes - offset : REPEAT_CHUNK_BYTES;
        FV_TRY(fv_rt_copy_to_host(p->context, chunk, source + offset, length));
        *same = same_as_first(c, o, first, chunk, offset, length, result);
    }
    return FV_OK;
}

/* After the timed launches: poisons the outputs, launches the case once
 * more and compares its outputs bit for bit with the first launch's
 * (`first`, downloaded before the timing).  A kernel that does not set its
 * counters back for the next launch, or whose outputs depend on timing (a
 * race, a sum in an order that changes), fails the case at stage "repeat".
 * Failure: FV_ERR_CUDA, FV_ERR_NOMEM. */
static fv_status check_repeat_launch(fv_pipeline *p, const fv_case *c, launch_sequence *sequence,
                                     void *const *first, fv_result *result)
{
    FV_TRY(poison_outputs(p, c, sequence->plan, sequence->buffers));
    FV_TRY(run_sequence(p->context, sequence));
    FV_TRY(fv_rt_synchronize(p->context));
    unsigned char *chunk = malloc(REPEAT_CHUNK_BYTES);
    FV_CHECK_ALLOC(chunk);
    fv_status status = FV_OK;
    bool same = true;
    for (int32_t o = 0; same && status == FV_OK && o < c->fusion->output_count; o++) {
        fv_rt_device_pointer source = output_buffer(c, sequence->plan, sequence->buffers, o);
        status = compare_later_output(p, c, o, source, first[o], chunk, result, &same);
    }
    free(chunk);
    return status;
}

static void summarize_comparisons(const fv_case *c, const fv_comparison *comparisons,
                                  fv_result *result, fv_text *report)
{
    int worst = -1;
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        const fv_comparison *cmp = &comparisons[o];
        result->elements += cmp->total;
        result->mismatches += cmp->mismatches;
        if (cmp->worst_ratio > result->worst_ratio || worst < 0) {
            result->worst_ratio = cmp->worst_ratio;
            worst = (int)o;
        }
        result->worst_absolute = fmax(result->worst_absolute, cmp->worst_absolute);
        result->worst_relative = fmax(result->worst_relative, cmp->worst_relative);
        if (!fv_comparison_passed(cmp) && report != NULL) {
            fv_eval_output output;
            if (fv_eval_describe_output(c, (int)o, &output) == FV_OK)
                fv_comparison_format(cmp, c, (int)o, &output, report);
        }
    }
    if (result->mismatches > 0) {
        char message[512];
        snprintf(message, sizeof message,
                 "%lld of %lld output elements exceed the allowed error (worst %.3g times the "
                 "allowed error, output %d)",
                 (long long)result->mismatches, (long long)result->elements, result->worst_ratio,
                 worst);
        fv_result_fail(result, FV_RESULT_FAIL, "compare", message);
    }
}

/* How every case (and its sized copy) is timed. */
static fv_rt_timing case_timing(const fv_pipeline *p)
{
    int repeats = p->options.repeats > 0 ? p->options.repeats : 1;
    if (repeats > FV_RESULT_MAX_SAMPLES)
        repeats = FV_RESULT_MAX_SAMPLES;
    return (fv_rt_timing){.warmup = p->options.warmup, .repeats = repeats,
                          .flush = p->options.flush};
}

/* The timed samples of fv_rt_time (milliseconds) as doubles, sorted. */
static void sort_samples(const float *measured, int repeats, double *sorted)
{
    for (int i = 0; i < repeats; i++)
        sorted[i] = measured[i];
    fv_sort_doubles(sorted, (size_t)repeats);
}

/* Each way of a copy with a case's traffic: half its bytes, in whole
 * 16-byte vectors (at least one). */
static uint64_t sized_copy_bytes(double io_bytes)
{
    double half_bytes = io_bytes / 2;
    if (!(half_bytes >= 16))
        return 16;
    if (half_bytes > 0x1p62)
        half_bytes = 0x1p62;
    uint64_t half = (uint64_t)half_bytes;
    return half - half % 16;
}

static bool recall_sized_copy(const fv_pipeline *p, uint64_t bytes, double *median_ms)
{
    for (int i = 0; i < p->sized_copies_kept; i++)
        if (p->sized_copies[i].bytes == bytes) {
            *median_ms = p->sized_copies[i].median_ms;
            return true;
        }
    return false;
}

/* The median of a copy of `bytes` each way, timed now or recalled; 0 when
 * the device lacks the memory for its buffers. */
static fv_status sized_copy_median(fv_pipeline *p, uint64_t bytes, double *median_ms)
{
    if (recall_sized_copy(p, bytes, median_ms))
        return FV_OK;
    fv_rt_timing timing = case_timing(p);
    float measured[FV_RESULT_MAX_SAMPLES];
    fv_status status = fv_rt_time_copy(p->context, bytes, &timing, measured);
    if (status == FV_ERR_UNSUPPORTED) {
        fv_error_clear();
        *median_ms = 0;
        return FV_OK;
    }
    FV_TRY(status);
    double sorted[FV_RESULT_MAX_SAMPLES];
    sort_samples(measured, timing.repeats, sorted);
    *median_ms = fv_sorted_median(sorted, (size_t)timing.repeats);
    p->sized_copies[p->next_sized_copy] = (sized_copy){.bytes = bytes, .median_ms = *median_ms};
    p->next_sized_copy = (p->next_sized_copy + 1) % SIZED_COPIES_KEPT;
    if (p->sized_copies_kept < SIZED_COPIES_KEPT)
        p->sized_copies_kept++;
    return FV_OK;
}

/* sized_copy_gbs and percent_of_sized_copy of a timed case (left 0 when
 * not asked for or not measurable). */
static fv_status compare_with_sized_copy(fv_pipeline *p, fv_result *result)
{
    if (!p->options.sized_copy || !(result->time_median_ms > 0))
        return FV_OK;
    uint64_t bytes = sized_copy_bytes(result->io_bytes);
    double median_ms = 0;
    FV_TRY(sized_copy_median(p, bytes, &median_ms));
    if (!(median_ms > 0))
        return FV_OK;
    result->sized_copy_gbs = 2.0 * (double)bytes / (median_ms * 1e-3) / 1e9;
    result->percent_of_sized_copy = 100.0 * result->bandwidth_gbs / result->sized_copy_gbs;
    return FV_OK;
}

static fv_status time_case(fv_pipeline *p, const fv_case *c, launch_sequence *sequence,
                           fv_result *result, double *samples, int *sample_count)
{
    fv_rt_timing timing = case_timing(p);
    int repeats = timing.repeats;
    float measured[FV_RESULT_MAX_SAMPLES];
    double started = now_ms();
    FV_TRY(fv_rt_time(p->context, run_sequence, sequence, &timing, measured));
    result->timing_ms = now_ms() - started;
    for (int i = 0; i < repeats; i++)
        samples[i] = measured[i];
    *sample_count = repeats;
    double sorted[FV_RESULT_MAX_SAMPLES];
    sort_samples(measured, repeats, sorted);
    result->repeats = repeats;
    result->time_min_ms = sorted[0];
    result->time_max_ms = sorted[repeats - 1];
    result->time_median_ms = fv_sorted_median(sorted, (size_t)repeats);
    result->io_bytes = fv_pipeline_io_bytes(c);
    if (result->time_median_ms > 0)
        result->bandwidth_gbs = result->io_bytes / (result->time_median_ms * 1e-3) / 1e9;
    result->copy_bandwidth_gbs = p->copy_bandwidth;
    if (p->copy_bandwidth > 0)
        result->percent_of_copy = 100.0 * result->bandwidth_gbs / p->copy_bandwidth;
    return FV_OK;
}

/* ------------------------------------------------------------------ run */

static void clear_resources(fv_result *result)
{
    result->registers = result->spill_bytes = result->shared_bytes = result->local_bytes = 0;
    result->kernels = result->cache_hits = 0;
    result->schedulers[0] = result->parameters[0] = result->kernel_hashes[0] = '\0';
}

static void describe_plan(const fv_case_plan *plan, fv_result *result)
{
    size_t used_schedulers = 0, used_parameters = 0, used_hashes = 0;
    result->segment_count = plan->kernel_count;
    if (plan->fallback[0])
        used_parameters += (size_t)snprintf(result->parameters, sizeof result->parameters,
                                            "fallback (%s); ", plan->fallback);
    for (int32_t k = 0; k < plan->kernel_count; k++) {
        const fv_kernel_plan *kernel = &plan->kernels[k];
        used_schedulers += (size_t)snprintf(result->schedulers + used_schedulers,
                                            used_schedulers < sizeof result->schedulers
                                                ? sizeof result->schedulers - used_schedulers : 0,
                                            "%s%s", k ? "+" : "", kernel->segment->scheduler->name);
        used_parameters += (size_t)snprintf(result->parameters + used_parameters,
                                            used_parameters < sizeof result->parameters
                                                ? sizeof result->parameters - used_parameters : 0,
                                            "%s[%d] %s%s%s", k ? "; " : "", (int)k,
                                            kernel->relief_note,
                                            kernel->relief_note[0] ? "; " : "",
                                            kernel->params.description);
        used_hashes += (size_t)snprintf(result->kernel_hashes + used_hashes,
                                        used_hashes < sizeof result->kernel_hashes
                                            ? sizeof result->kernel_hashes - used_hashes : 0,
                                        "%s%.16s", k ? "," : "", kernel->hash);
    }
}

/* Everything that needs the GPU: inputs, launch, compare, time. */
static fv_status run_on_gpu(fv_pipeline *p, const fv_case *c, const fv_case_plan *plan,
                            const int *kernels, fv_result *result, double *samples,
                            int *sample_count, fv_text *report)
{
    device_buffers buffers = {0};
    launch_sequence sequence = {.pipeline = p, .plan = plan, .kernels = kernels,
                                .buffers = &buffers};
    void **host = calloc((size_t)c->fusion->output_count + 1, sizeof(void *));
    /* per fusion input: its host copy, reused by the reference evaluator */
    fv_eval_given_input *given = calloc((size_t)c->fusion->input_count + 1, sizeof *given);
    fv_comparison *comparisons = calloc((size_t)c->fusion->output_count + 1, sizeof *comparisons);
    fv_status status = FV_OK;
    const char *stage = "inputs";
    if (plan->kernel_count > 16) {
        fv_result_fail(result, FV_RESULT_UNSUPPORTED, "launch", "more than 16 kernels in one case");
        goto done;
    }
    if (host == NULL || given == NULL || comparisons == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    double stage_started = now_ms();
    FV_TRY_GOTO(status, allocate_buffers(p, c, plan, &buffers), done);
    FV_TRY_GOTO(status, upload_inputs(p, c, &buffers, p->options.check_outputs, given), done);
    FV_TRY_GOTO(status, poison_outputs(p, c, plan, &buffers), done);
    result->inputs_ms = now_ms() - stage_started;
    stage = "launch";
    FV_TRY_GOTO(status, fit_grids(&sequence), done);
    FV_TRY_GOTO(status, run_sequence(p->context, &sequence), done);
    FV_TRY_GOTO(status, fv_rt_synchronize(p->context), done);
    if (!p->options.check_outputs) {
        fv_result_fail(result, FV_RESULT_SKIPPED, "reference",
                       "outputs not checked (--no-check): timing only");
        stage = "timing";
        FV_TRY_GOTO(status, time_case(p, c, &sequence, result, samples, sample_count), done);
        stage = "sized copy";
        FV_TRY_GOTO(status, compare_with_sized_copy(p, result), done);
        stage = "done";
        goto done;
    }
    stage_started = now_ms();
    FV_TRY_GOTO(status, download_outputs(p, c, plan, &buffers, host), done);
    result->outputs_ms = now_ms() - stage_started;
    stage = "reference";
    fv_eval_options eval = {.threads = p->options.threads, .mode = FV_EVAL_REFERENCE,
                            .memory_budget = p->options.memory_budget, .given_inputs = given};
    fv_ref_report reference;
    double started = now_ms();
    status = fv_ref_compare(p->options.store, c, &eval, p->options.tolerance,
                            (const void *const *)host, comparisons, &reference);
    if (status != FV_OK)
        goto done;
    result->reference_ms = now_ms() - started;
    snprintf(result->reference_source, sizeof result->reference_source, "%s",
             fv_ref_outcome_name(reference.outcome));
    summarize_comparisons(c, comparisons, result, report);
    stage = "timing";
    FV_TRY_GOTO(status, time_case(p, c, &sequence, result, samples, sample_count), done);
    stage = "repeat";
    if (result->status == FV_RESULT_PASS) /* a failed comparison keeps its message */
        FV_TRY_GOTO(status, check_repeat_launch(p, c, &sequence, host, result), done);
    stage = "sized copy";
    FV_TRY_GOTO(status, compare_with_sized_copy(p, result), done);
    stage = "done";
done:
    if (status != FV_OK) {
        bool fault = status == FV_ERR_CUDA && strcmp(stage, "reference") != 0;
        fv_result_fail(result, fault ? FV_RESULT_CRASH : FV_RESULT_ERROR, stage,
                       fv_error_message());
        if (fault) {
            /* A kernel fault poisons the context for good (issue 5 moves GPU
             * work into a worker process that can be restarted). */
            p->poisoned = true;
            snprintf(p->poison_reason, sizeof p->poison_reason,
                     "the GPU context was lost in case %s: %s", c->id, fv_error_message());
        }
        status = (status == FV_ERR_NOMEM || status == FV_ERR_IO || status == FV_ERR_HDF5)
                     ? status : FV_OK;
    } else if (result->status == FV_RESULT_PASS) {
        snprintf(result->stage, sizeof result->stage, "done");
    }
    for (int32_t o = 0; host && o < c->fusion->output_count; o++)
        free(host[o]);
    free(host);
    for (int32_t i = 0; given && i < c->fusion->input_count; i++)
        free((void *)given[i].elements);
    free(given);
    free(comparisons);
    free_buffers(p, &buffers);
    return status;
}

static const char *approach_label(fv_case_approach approach)
{
    return approach == FV_APPROACH_AUTO ? "" : fv_case_approach_name(approach);
}

/* The approach the automatic rule takes for a case forced to one, on this
 * device (planned without the forced approach; kernels are not compiled,
 * so a warp-specialized kernel that would spill counts as taken).  Written
 * once per case; an unforced case's is the approach its own plan takes. */
static void record_auto_approach(const fv_pipeline *p, const fv_case *c, fv_result *result)
{
    fv_case unforced = *c;
    unforced.approach = FV_APPROACH_AUTO;
    fv_case_plan auto_plan;
    fv_case_approach automatic = FV_APPROACH_AUTO;
    if (fv_plan_case(&unforced, &p->device, &auto_plan) == FV_OK) {
        automatic = fv_plan_approach(&auto_plan);
        fv_plan_free(&auto_plan);
    } else {
        fv_error_clear();
    }
    snprintf(result->auto_approach, sizeof result->auto_approach, "%s",
             approach_label(automatic));
}

/* The approach the plan took (and, unforced, the automatic one). */
static void record_taken_approach(const fv_case *c, const fv_case_plan *plan, fv_result *result)
{
    const char *taken = approach_label(fv_plan_approach(plan));
    snprintf(result->taken_approach, sizeof result->taken_approach, "%s", taken);
    if (c->approach == FV_APPROACH_AUTO)
        snprintf(result->auto_approach, sizeof result->auto_approach, "%s", taken);
}

/* Compile-only: a kernel needs more shared memory than a block can have. */
static void fail_shared_memory(const fv_pipeline *p, fv_result *result)
{
    char message[160];
    snprintf(message, sizeof message,
             "a kernel needs %d bytes of shared memory; a block can have %lld on %s",
             result->shared_bytes, (long long)p->device.shared_per_block_optin, p->device.name);
    fv_result_fail(result, FV_RESULT_FAIL, "compile", message);
}

static void fill_identity(const fv_pipeline *p, const fv_case *c, fv_result *result)
{
    char sizes[96];
    fv_case_size_label(c, sizes, sizeof sizes);
    fv_result_init(result, c->id, c->family, fv_dtype_name(c->dtype), sizes, c->seed,
                   c->source_path);
    snprintf(result->arch, sizeof result->arch, "%s", p->arch);
    snprintf(result->approach, sizeof result->approach, "%s", fv_case_approach_name(c->approach));
    snprintf(result->tolerance, sizeof result->tolerance, "%s",
             fv_tolerance_name(p->options.tolerance));
    if (p->context != NULL) {
        snprintf(result->gpu_name, sizeof result->gpu_name, "%s", p->gpu.name);
        snprintf(result->gpu_uuid, sizeof result->gpu_uuid, "%s", p->gpu.uuid);
    } else {
        snprintf(result->gpu_name, sizeof result->gpu_name, "%s", p->device.name);
    }
    gethostname(result->host, sizeof result->host);
    fv_text repro = {0};
    fv_repro_command(c, &repro);
    snprintf(result->repro, sizeof result->repro, "%s", fv_text_str(&repro));
    fv_text_free(&repro);
}

/* Compiles (and with a GPU loads) every kernel of the plan into `kernels`;
 * the result describes the plan afresh and notes each kernel's resources.
 * *spilled is the first kernel that spills registers (NULL if none) and
 * *spill_bytes its spill bytes.  Stops at the first kernel that fails to
 * compile or load. */
static fv_status compile_plan(fv_pipeline *p, fv_case_plan *plan, fv_result *result,
                              int *kernels, fv_pipeline_kernel_sink kernel_sink,
                              void *sink_context, fv_kernel_plan **spilled, int *spill_bytes)
{
    clear_resources(result);
    describe_plan(plan, result);
    *spilled = NULL;
    *spill_bytes = 0;
    for (int32_t k = 0; k < plan->kernel_count; k++) {
        fv_rt_kernel_resources resources = {0};
        FV_TRY(prepare_kernel(p, &plan->kernels[k], result, &kernels[k], &resources));
        plan->kernels[k].compiled_registers = resources.registers;
        if (kernel_sink != NULL)
            kernel_sink(sink_context, &plan->kernels[k], &resources, p->arch, k,
                        plan->kernel_count);
        int spills = resources.spill_store_bytes + resources.spill_load_bytes;
        if (spills > 0 && *spilled == NULL) {
            *spilled = &plan->kernels[k];
            *spill_bytes = spills;
        }
    }
    return FV_OK;
}

enum { RELIEF_ATTEMPTS = 4 }; /* kernels emitted again after spilling, per plan */

/* Emits `spilled` again in the lighter form its family offers, if any
 * (*relieved).  A form the family offered that cannot be emitted is an
 * internal error, not a case the family does not take: the plan and the
 * kernels are then freed. */
static fv_status relieve_one(fv_case_plan *plan, int **kernels, fv_kernel_plan *spilled,
                             int spill_bytes, bool *relieved)
{
    char name[sizeof spilled->name];
    snprintf(name, sizeof name, "%s", spilled->name);
    fv_status status = fv_plan_relieve_registers(spilled, spill_bytes, relieved);
    if (status == FV_OK)
        return FV_OK;
    char message[512];
    snprintf(message, sizeof message, "%s", fv_error_message());
    free(*kernels);
    *kernels = NULL;
    fv_plan_free(plan);
    if (status == FV_ERR_NOMEM)
        return status;
    FV_FAIL(FV_ERR_INTERNAL, "%s, emitted again after spilling %d bytes: %s", name, spill_bytes,
            message);
}

/* Emits each kernel that spills again in a form with fewer registers live
 * and compiles the plan again, while its family offers one (at most
 * RELIEF_ATTEMPTS times a plan).  On return *spilled is the first kernel
 * that still spills (NULL if none), with *spill_bytes, and *every_form
 * whether that kernel was itself emitted again (its relief_note) before its
 * family ran out of forms.  On failure *stage says what failed, as for
 * plan_and_compile. */
static fv_status relieve_spills(fv_pipeline *p, fv_case_plan *plan, fv_result *result,
                                int **kernels, const char **stage,
                                fv_pipeline_kernel_sink kernel_sink, void *sink_context,
                                fv_kernel_plan **spilled, int *spill_bytes, bool *every_form)
{
    *every_form = false;
    for (int attempts = 0; *spilled != NULL && attempts < RELIEF_ATTEMPTS; attempts++) {
        bool relieved;
        *stage = "schedule";
        FV_TRY(relieve_one(plan, kernels, *spilled, *spill_bytes, &relieved));
        if (!relieved) {
            *every_form = (*spilled)->relief_note[0] != '\0';
            return FV_OK;
        }
        *stage = "compile";
        FV_TRY(compile_plan(p, plan, result, *kernels, kernel_sink, sink_context, spilled,
                            spill_bytes));
    }
    return FV_OK;
}

enum { HELD_KERNELS = 8 }; /* kernels per plan hold_occupancy considers */

/* Puts back the unbounded form of each kernel that `bounded` marks (keeps
 * the bounded forms if `keep`). */
static void settle_bounds(fv_case_plan *plan, fv_kernel_plan *previous, const bool *bounded,
                          bool keep)
{
    for (int32_t k = 0; k < plan->kernel_count && k < HELD_KERNELS; k++) {
        if (!bounded[k])
            continue;
        if (keep)
            fv_plan_forget_kernel(&previous[k]);
        else
            fv_plan_restore_kernel(&plan->kernels[k], &previous[k]);
    }
}

/* Bounds to their planned blocks per SM the kernels whose compiled
 * registers keep fewer (fv_plan_hold_occupancy) and compiles the plan
 * again; if a bounded kernel then spills, every kernel goes back to its
 * unbounded form and the plan is compiled once more (the unbounded forms
 * come from the loaded modules or the kernel cache where there is one;
 * NVRTC errors of the bounded forms take this path too).  On failure
 * *stage says what failed, as for plan_and_compile: emitting a kernel
 * again ("schedule") frees the plan and the kernels. */
static fv_status hold_occupancy(fv_pipeline *p, fv_case_plan *plan, fv_result *result,
                                int **kernels, const char **stage,
                                fv_pipeline_kernel_sink kernel_sink, void *sink_context)
{
    fv_kernel_plan previous[HELD_KERNELS];
    bool bounded[HELD_KERNELS] = {false};
    bool any = false;
    fv_status status = FV_OK;
    *stage = "schedule";
    for (int32_t k = 0; k < plan->kernel_count && k < HELD_KERNELS && status == FV_OK; k++) {
        status = fv_plan_hold_occupancy(&plan->kernels[k], &p->device, &previous[k], &bounded[k]);
        any = any || bounded[k];
    }
    if (status != FV_OK) {  /* as relieve_one: the form was offered, so a bug */
        char message[512];
        snprintf(message, sizeof message, "%s", fv_error_message());
        settle_bounds(plan, previous, bounded, false);
        free(*kernels);
        *kernels = NULL;
        fv_plan_free(plan);
        if (status == FV_ERR_NOMEM)
            return status;
        FV_FAIL(FV_ERR_INTERNAL, "a kernel emitted again bounded to its planned blocks: %s",
                message);
    }
    if (!any)
        return FV_OK;
    *stage = "compile";
    fv_kernel_plan *spilled;
    int spill_bytes;
    status = compile_plan(p, plan, result, *kernels, kernel_sink, sink_context, &spilled,
                          &spill_bytes);
    bool keep = status == FV_OK && spilled == NULL;
    settle_bounds(plan, previous, bounded, keep);
    if (keep)
        return FV_OK;
    return compile_plan(p, plan, result, *kernels, kernel_sink, sink_context, &spilled,
                        &spill_bytes);
}

/* Plans the case and compiles its kernels into *plan and *kernels (loaded
 * kernel indices, -1 without a GPU): a spilling kernel is emitted again in a
 * form with fewer registers live while its family offers one, then its
 * family is set aside and the case planned again without it.  *stage names
 * what failed: "schedule" (planning, or emitting a kernel again: nothing is
 * left to free) or "compile" (NVRTC, or loading the module: *plan and
 * *kernels are left for the caller to free). */
static fv_status plan_and_compile(fv_pipeline *p, const fv_case *c, fv_result *result,
                                  fv_case_plan *plan, int **kernels, const char **stage,
                                  fv_pipeline_kernel_sink kernel_sink, void *sink_context)
{
    const fv_scheduler *excluded[8] = {NULL};
    int excluded_count = 0;
    char reason[512] = "";
    *kernels = NULL;
    for (;;) {
        *stage = "schedule";
        free(*kernels);
        *kernels = NULL;
        fv_status planned = fv_plan_case_excluding(c, &p->device, excluded,
                                                   reason[0] ? reason : NULL, plan);
        if (planned != FV_OK) {
            if (excluded_count > 0) {  /* not the plan set aside: say why it was */
                clear_resources(result);
                fv_error_prefix("after %s", reason);
            }
            fv_error_trace(__FILE__, __LINE__);
            return planned;
        }
        record_taken_approach(c, plan, result);
        if (excluded_count == 0 && c->approach != FV_APPROACH_AUTO)
            record_auto_approach(p, c, result);  /* the same for every retry */
        *kernels = calloc((size_t)plan->kernel_count + 1, sizeof **kernels);
        if (*kernels == NULL) {
            fv_plan_free(plan);
            FV_FAIL(FV_ERR_NOMEM, "out of memory");
        }
        *stage = "compile";
        fv_kernel_plan *spilled;  /* the first kernel that spills */
        int spill_bytes;
        FV_TRY(compile_plan(p, plan, result, *kernels, kernel_sink, sink_context, &spilled,
                            &spill_bytes));
        bool every_form;
        FV_TRY(relieve_spills(p, plan, result, kernels, stage, kernel_sink, sink_context,
                              &spilled, &spill_bytes, &every_form));
        if (spilled == NULL)
            return hold_occupancy(p, plan, result, kernels, stage, kernel_sink, sink_context);
        if (excluded_count == 7)
            return FV_OK;
        size_t used = strlen(reason);
        snprintf(reason + used, sizeof reason - used, "%s%s not used: its kernel spills %d bytes%s%s",
                 used ? "; " : "", spilled->segment->scheduler->name, spill_bytes,
                 every_form ? " in every form its family offers" : "",
                 spilled->params.forced_not_good
                     ? " (forced against its heuristic, which judged it not good)"
                     : "");
        excluded[excluded_count++] = spilled->segment->scheduler;
        fv_plan_free(plan);
    }
}

fv_status fv_pipeline_plan_compiled(fv_pipeline *p, const fv_case *c, fv_case_plan *plan,
                                    fv_result *result, fv_pipeline_kernel_sink kernel_sink,
                                    void *sink_context)
{
    fill_identity(p, c, result);
    int *kernels;
    const char *stage;
    fv_status status = plan_and_compile(p, c, result, plan, &kernels, &stage, kernel_sink,
                                        sink_context);
    free(kernels);
    if (status != FV_OK && strcmp(stage, "schedule") != 0)
        fv_plan_free(plan);
    return status;
}

fv_status fv_pipeline_run(fv_pipeline *p, const fv_case *c, fv_result *result, double *samples,
                          int *sample_count, fv_text *report,
                          fv_pipeline_kernel_sink kernel_sink, void *sink_context)
{
    double started = now_ms();
    *sample_count = 0;
    fill_identity(p, c, result);
    fv_case_plan plan;
    int *kernels = NULL;
    const char *stage;
    fv_status status = plan_and_compile(p, c, result, &plan, &kernels, &stage, kernel_sink,
                                        sink_context);
    if (status != FV_OK && strcmp(stage, "schedule") == 0) {
        fv_result_fail(result, status == FV_ERR_UNSUPPORTED ? FV_RESULT_UNSUPPORTED
                                                            : FV_RESULT_ERROR,
                       "schedule", fv_error_message());
        result->wall_ms = now_ms() - started;
        return status == FV_ERR_NOMEM ? status : FV_OK;
    }
    if (status != FV_OK) {
        fv_result_fail(result, status == FV_ERR_NVRTC ? FV_RESULT_ERROR : FV_RESULT_ERROR,
                       status == FV_ERR_NVRTC ? "compile" : "load", fv_error_message());
        status = status == FV_ERR_NOMEM ? status : FV_OK;
    } else if (p->context == NULL) {
        if (result->spill_bytes > 0)
            fv_result_fail(result, FV_RESULT_FAIL, "compile", "a kernel spills registers");
        else if (result->shared_bytes > p->device.shared_per_block_optin)
            fail_shared_memory(p, result);
        else
            fv_result_fail(result, FV_RESULT_COMPILED, "compile", "");
    } else if (p->poisoned) {
        fv_result_fail(result, FV_RESULT_SKIPPED, "launch", p->poison_reason);
    } else {
        if (kernel_sink != NULL)  /* the plan is final: its kernels are launched next */
            kernel_sink(sink_context, NULL, NULL, p->arch, -1, plan.kernel_count);
        status = run_on_gpu(p, c, &plan, kernels, result, samples, sample_count, report);
    }
    free(kernels);
    fv_plan_free(&plan);
    result->wall_ms = now_ms() - started;
    result->finished_at = (double)time(NULL);
    return status;
}
