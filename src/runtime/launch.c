/* launch.c: contexts, modules, buffers, launches, event timing and the copy
 * bandwidth measurement, over the run-time-loaded CUDA driver. */
#include "runtime/launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/driver_internal.h"
#include "runtime/nvrtc.h"

enum {
    DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024, /* above this a kernel must opt in */
    MAX_TIMING_REPEATS = 100000,
    BANDWIDTH_REPEATS = 9,
    BANDWIDTH_RECORD_FORMAT = 1
};

static const uint64_t BANDWIDTH_MAX_BYTES = UINT64_C(1) << 30;
static const uint64_t BANDWIDTH_MIN_BYTES = UINT64_C(64) << 20;
static const uint64_t BANDWIDTH_ALIGNMENT = UINT64_C(2) << 20;

struct fv_rt_context {
    fv_rt_driver *driver;
    CUdevice device;
    CUcontext context;       /* the device's primary context (retained) */
    CUstream stream;         /* launches and timing */
    fv_rt_device_info info;
    CUdeviceptr flush_buffer; /* 2 x L2 bytes, zeroed, allocated on first use */
    size_t flush_bytes;
    CUdeviceptr flush_sink;   /* one 16-byte vector the read flush writes only if the buffer
                                 is not zero (after a memset flush with another byte) */
    fv_rt_module *flush_module;  /* the read flush's kernel, compiled on first use */
    fv_rt_function *flush_reader;
};

struct fv_rt_function {
    fv_rt_function *next;
    fv_rt_module *module;
    CUfunction handle;
    char name[FV_RT_KERNEL_NAME_CAPACITY];
    size_t dynamic_shared_limit; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set */
};

struct fv_rt_module {
    fv_rt_context *context;
    CUmodule handle;
    fv_rt_function *functions;
};

/* ---------------------------------------------------------------- contexts */

static fv_status create_context(fv_rt_context *context, int ordinal)
{
    fv_rt_driver *driver = context->driver;
    FV_CU_CHECK(driver, driver->device_get(&context->device, ordinal), "opening device %d",
                ordinal);
    FV_CU_CHECK(driver, driver->primary_context_retain(&context->context, context->device),
                "retaining the primary context of device %d", ordinal);
    return FV_OK;
}

fv_status fv_rt_context_open(fv_rt_driver *driver, int ordinal, fv_rt_context **context)
{
    *context = NULL;
    fv_rt_context *opened = calloc(1, sizeof *opened);
    FV_CHECK_ALLOC(opened);
    opened->driver = driver;
    fv_status status;
    FV_TRY_GOTO(status, fv_rt_device_query(driver, ordinal, &opened->info), fail_free);
    FV_TRY_GOTO(status, create_context(opened, ordinal), fail_free);
    FV_CU_CHECK_GOTO(driver, status, driver->context_set_current(opened->context), fail_release,
                     "making the context of device %d current", ordinal);
    FV_CU_CHECK_GOTO(driver, status, driver->stream_create(&opened->stream, CU_STREAM_DEFAULT),
                     fail_release, "creating a stream on device %d", ordinal);
    *context = opened;
    return FV_OK;
fail_release:
    driver->primary_context_release(opened->device); /* already failing: result not needed */
fail_free:
    free(opened);
    return status;
}

/* Keeps the first failure: later cleanup steps still run. */
static void keep_first(fv_status *first, fv_status status)
{
    if (*first == FV_OK && status != FV_OK)
        *first = status;
}

static fv_status check_result(fv_rt_driver *driver, CUresult result, const char *what,
                              int ordinal)
{
    FV_CU_CHECK(driver, result, "%s on device %d", what, ordinal);
    return FV_OK;
}

fv_status fv_rt_context_close(fv_rt_context *context)
{
    if (context == NULL)
        return FV_OK;
    fv_rt_driver *driver = context->driver;
    int ordinal = context->info.ordinal;
    fv_status first = FV_OK;
    keep_first(&first, check_result(driver, driver->context_set_current(context->context),
                                    "making the context current", ordinal));
    keep_first(&first, check_result(driver, driver->context_synchronize(),
                                    "waiting for outstanding work", ordinal));
    if (context->flush_module != NULL)
        keep_first(&first, fv_rt_module_unload(context->flush_module));
    if (context->flush_sink != 0)
        keep_first(&first, check_result(driver, driver->memory_free(context->flush_sink),
                                        "freeing the L2 flush's sink", ordinal));
    if (context->flush_buffer != 0)
        keep_first(&first, check_result(driver, driver->memory_free(context->flush_buffer),
                                        "freeing the L2 flush buffer", ordinal));
    keep_first(&first, check_result(driver, driver->stream_destroy(context->stream),
                                    "destroying the stream", ordinal));
    keep_first(&first, check_result(driver, driver->primary_context_release(context->device),
                                    "releasing the primary context", ordinal));
    free(context);
    if (first != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return first;
}

const fv_rt_device_info *fv_rt_context_device(const fv_rt_context *context)
{
    return &context->info;
}

fv_status fv_rt_context_make_current(fv_rt_context *context)
{
    FV_CU_CHECK(context->driver, context->driver->context_set_current(context->context),
                "making the context of device %d current", context->info.ordinal);
    return FV_OK;
}

fv_status fv_rt_synchronize(fv_rt_context *context)
{
    FV_CU_CHECK(context->driver, context->driver->context_synchronize(),
                "waiting for the work on device %d", context->info.ordinal);
    return FV_OK;
}

/* ----------------------------------------------------------------- modules */

fv_status fv_rt_module_load(fv_rt_context *context, const void *cubin, size_t size,
                            fv_rt_module **module)
{
    *module = NULL;
    if (cubin == NULL || size < 4)
        FV_FAIL(FV_ERR_USAGE, "no cubin to load");
    fv_rt_module *loaded = calloc(1, sizeof *loaded);
    FV_CHECK_ALLOC(loaded);
    loaded->context = context;
    fv_rt_driver *driver = context->driver;
    fv_status status;
    FV_CU_CHECK_GOTO(driver, status, driver->module_load_data(&loaded->handle, cubin), fail,
                     "loading a %zu-byte cubin on device %d (%s, sm_%d%d)", size,
                     context->info.ordinal, context->info.name, context->info.compute_major,
                     context->info.compute_minor);
    *module = loaded;
    return FV_OK;
fail:
    free(loaded);
    return status;
}

fv_status fv_rt_module_unload(fv_rt_module *module)
{
    if (module == NULL)
        return FV_OK;
    fv_rt_function *function = module->functions;
    while (function != NULL) {
        fv_rt_function *next = function->next;
        free(function);
        function = next;
    }
    fv_rt_driver *driver = module->context->driver;
    CUresult result = driver->module_unload(module->handle);
    int ordinal = module->context->info.ordinal;
    free(module);
    FV_CU_CHECK(driver, result, "unloading a module on device %d", ordinal);
    return FV_OK;
}

static fv_status function_attribute(const fv_rt_function *function,
                                    CUfunction_attribute attribute, const char *what,
                                    int *value)
{
    fv_rt_driver *driver = function->module->context->driver;
    FV_CU_CHECK(driver, driver->function_get_attribute(value, attribute, function->handle),
                "reading %s of kernel %s", what, function->name);
    return FV_OK;
}

fv_status fv_rt_module_function(fv_rt_module *module, const char *name,
                                fv_rt_function **function)
{
    *function = NULL;
    if (name == NULL || strlen(name) >= FV_RT_KERNEL_NAME_CAPACITY)
        FV_FAIL(FV_ERR_USAGE, "kernel name missing or too long");
    for (fv_rt_function *known = module->functions; known != NULL; known = known->next)
        if (strcmp(known->name, name) == 0) {
            *function = known;
            return FV_OK;
        }
    fv_rt_function *found = calloc(1, sizeof *found);
    FV_CHECK_ALLOC(found);
    found->module = module;
    strcpy(found->name, name);
    fv_rt_driver *driver = module->context->driver;
    fv_status status;
    FV_CU_CHECK_GOTO(driver, status,
                     driver->module_get_function(&found->handle, module->handle, name), fail,
                     "looking up kernel %s in its module", name);
    int limit = 0;
    FV_TRY_GOTO(status,
                function_attribute(found, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   "the dynamic shared memory limit", &limit),
                fail);
    found->dynamic_shared_limit = limit > 0 ? (size_t)limit : 0;
    found->next = module->functions;
    module->functions = found;
    *function = found;
    return FV_OK;
fail:
    free(found);
    return status;
}

const char *fv_rt_function_name(const fv_rt_function *function) { return function->name; }

fv_status fv_rt_function_attributes_get(const fv_rt_function *function,
                                        fv_rt_function_attributes *attributes)
{
    memset(attributes, 0, sizeof *attributes);
    FV_TRY(function_attribute(function, CU_FUNC_ATTRIBUTE_NUM_REGS, "the register count",
                              &attributes->registers));
    FV_TRY(function_attribute(function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                              "the static shared memory", &attributes->static_shared_bytes));
    FV_TRY(function_attribute(function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                              "the local memory", &attributes->local_bytes));
    FV_TRY(function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                              "the block size limit", &attributes->max_threads_per_block));
    FV_TRY(function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              "the dynamic shared memory limit",
                              &attributes->max_dynamic_shared_bytes));
    return FV_OK;
}

fv_status fv_rt_function_reserve_dynamic_shared(fv_rt_function *function, size_t bytes)
{
    if (bytes <= function->dynamic_shared_limit)
        return FV_OK;
    const fv_rt_device_info *device = &function->module->context->info;
    if (bytes > (size_t)device->shared_memory_per_block_optin)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "kernel %s asks for %zu bytes of dynamic shared memory; %s allows %d per block",
                function->name, bytes, device->name, device->shared_memory_per_block_optin);
    fv_rt_driver *driver = function->module->context->driver;
    FV_CU_CHECK(driver,
                driver->function_set_attribute(function->handle,
                                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               (int)bytes),
                "allowing kernel %s %zu bytes of dynamic shared memory", function->name, bytes);
    function->dynamic_shared_limit = bytes;
    return FV_OK;
}

fv_status fv_rt_occupancy(fv_rt_function *function, int block_threads,
                          size_t dynamic_shared_bytes, int *blocks_per_sm)
{
    *blocks_per_sm = 0;
    if (block_threads < 1)
        FV_FAIL(FV_ERR_USAGE, "occupancy of kernel %s for %d threads per block",
                function->name, block_threads);
    FV_TRY(fv_rt_function_reserve_dynamic_shared(function, dynamic_shared_bytes));
    fv_rt_driver *driver = function->module->context->driver;
    FV_CU_CHECK(driver,
                driver->occupancy_blocks_per_sm(blocks_per_sm, function->handle, block_threads,
                                                dynamic_shared_bytes),
                "computing the occupancy of kernel %s (%d threads, %zu bytes dynamic shared)",
                function->name, block_threads, dynamic_shared_bytes);
    return FV_OK;
}

/* A cuLaunchKernelEx configuration on the context's stream: clusters of
 * `cluster` blocks along x, cooperative if asked.  `attributes` holds two. */
static void cluster_config(const fv_rt_function *function, const unsigned grid[3],
                           const unsigned block[3], unsigned dynamic_shared_bytes,
                           unsigned cluster, bool cooperative, CUlaunchAttribute *attributes,
                           CUlaunchConfig *config)
{
    memset(config, 0, sizeof *config);
    memset(attributes, 0, 2 * sizeof *attributes);
    config->gridDimX = grid[0];
    config->gridDimY = grid[1];
    config->gridDimZ = grid[2];
    config->blockDimX = block[0];
    config->blockDimY = block[1];
    config->blockDimZ = block[2];
    config->sharedMemBytes = dynamic_shared_bytes;
    config->hStream = function->module->context->stream;
    attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[0].value.clusterDim.x = cluster;
    attributes[0].value.clusterDim.y = 1;
    attributes[0].value.clusterDim.z = 1;
    attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attributes[1].value.cooperative = cooperative ? 1 : 0;
    config->attrs = attributes;
    config->numAttrs = 2;
}

fv_status fv_rt_occupancy_clusters(fv_rt_function *function, int block_threads,
                                   size_t dynamic_shared_bytes, int cluster_blocks,
                                   int *clusters)
{
    *clusters = 0;
    if (block_threads < 1 || cluster_blocks < 1)
        FV_FAIL(FV_ERR_USAGE, "cluster occupancy of kernel %s for %d threads per block, %d blocks "
                "per cluster", function->name, block_threads, cluster_blocks);
    FV_TRY(fv_rt_function_reserve_dynamic_shared(function, dynamic_shared_bytes));
    fv_rt_driver *driver = function->module->context->driver;
    unsigned grid[3] = {(unsigned)cluster_blocks, 1, 1}, block[3] = {(unsigned)block_threads, 1, 1};
    CUlaunchAttribute attributes[2];
    CUlaunchConfig config;
    cluster_config(function, grid, block, (unsigned)dynamic_shared_bytes, (unsigned)cluster_blocks,
                   true, attributes, &config);
    FV_CU_CHECK(driver, driver->occupancy_max_active_clusters(clusters, function->handle, &config),
                "computing the cluster occupancy of kernel %s (%d blocks of %d threads, %zu bytes "
                "dynamic shared)", function->name, cluster_blocks, block_threads,
                dynamic_shared_bytes);
    return FV_OK;
}

/* ---------------------------------------------------------------- launches */

static CUresult launch_in_clusters(fv_rt_function *function, const fv_rt_launch_config *launch,
                                   void **arguments)
{
    CUlaunchAttribute attributes[2];
    CUlaunchConfig config;
    cluster_config(function, launch->grid, launch->block, launch->dynamic_shared_bytes,
                   launch->cluster, launch->cooperative, attributes, &config);
    return function->module->context->driver->launch_kernel_ex(&config, function->handle,
                                                                arguments, NULL);
}

fv_status fv_rt_launch(fv_rt_function *function, const fv_rt_launch_config *config,
                       void **arguments)
{
    const unsigned *grid = config->grid;
    const unsigned *block = config->block;
    for (int i = 0; i < 3; i++)
        if (grid[i] == 0 || block[i] == 0)
            FV_FAIL(FV_ERR_USAGE, "launch of kernel %s with a zero grid or block dimension",
                    function->name);
    fv_rt_context *context = function->module->context;
    if (config->cooperative && !context->info.cooperative_launch)
        FV_FAIL(FV_ERR_UNSUPPORTED, "%s does not support cooperative launches (kernel %s)",
                context->info.name, function->name);
    bool clustered = config->cluster > 1;
    if (clustered && context->info.compute_major < 9)
        FV_FAIL(FV_ERR_UNSUPPORTED, "%s (compute capability %d.%d) has no thread-block clusters "
                "(kernel %s)", context->info.name, context->info.compute_major, context->info.compute_minor,
                function->name);
    if (clustered && grid[0] % config->cluster != 0)
        FV_FAIL(FV_ERR_USAGE, "launch of kernel %s: grid %u is not a multiple of its cluster of %u",
                function->name, grid[0], config->cluster);
    FV_TRY(fv_rt_function_reserve_dynamic_shared(function, config->dynamic_shared_bytes));
    fv_rt_driver *driver = context->driver;
    CUresult result =
        clustered ? launch_in_clusters(function, config, arguments)
        : config->cooperative
            ? driver->launch_cooperative_kernel(function->handle, grid[0], grid[1], grid[2],
                                                block[0], block[1], block[2],
                                                config->dynamic_shared_bytes, context->stream,
                                                arguments)
            : driver->launch_kernel(function->handle, grid[0], grid[1], grid[2], block[0],
                                    block[1], block[2], config->dynamic_shared_bytes,
                                    context->stream, arguments, NULL);
    FV_CU_CHECK(driver, result,
                "launching kernel %s%s%s (grid %ux%ux%u, block %ux%ux%u, %u bytes dynamic shared)",
                function->name, config->cooperative ? " cooperatively" : "",
                clustered ? " in clusters" : "", grid[0], grid[1], grid[2], block[0], block[1],
                block[2], config->dynamic_shared_bytes);
    return FV_OK;
}

/* ----------------------------------------------------------------- buffers */

fv_status fv_rt_alloc(fv_rt_context *context, size_t bytes, fv_rt_device_pointer *pointer)
{
    *pointer = 0;
    if (bytes == 0)
        FV_FAIL(FV_ERR_USAGE, "allocation of 0 bytes");
    CUdeviceptr allocated = 0;
    FV_CU_CHECK(context->driver, context->driver->memory_alloc(&allocated, bytes),
                "allocating %zu bytes on device %d", bytes, context->info.ordinal);
    *pointer = allocated;
    return FV_OK;
}

fv_status fv_rt_free(fv_rt_context *context, fv_rt_device_pointer pointer)
{
    if (pointer == 0)
        return FV_OK;
    FV_CU_CHECK(context->driver, context->driver->memory_free((CUdeviceptr)pointer),
                "freeing device memory on device %d", context->info.ordinal);
    return FV_OK;
}

fv_status fv_rt_copy_to_device(fv_rt_context *context, fv_rt_device_pointer destination,
                               const void *source, size_t bytes)
{
    FV_CU_CHECK(context->driver,
                context->driver->memcpy_host_to_device((CUdeviceptr)destination, source, bytes),
                "copying %zu bytes to device %d", bytes, context->info.ordinal);
    return FV_OK;
}

fv_status fv_rt_copy_to_host(fv_rt_context *context, void *destination,
                             fv_rt_device_pointer source, size_t bytes)
{
    FV_CU_CHECK(context->driver,
                context->driver->memcpy_device_to_host(destination, (CUdeviceptr)source, bytes),
                "copying %zu bytes from device %d", bytes, context->info.ordinal);
    return FV_OK;
}

fv_status fv_rt_memset(fv_rt_context *context, fv_rt_device_pointer destination,
                       uint8_t value, size_t bytes)
{
    FV_CU_CHECK(context->driver,
                context->driver->memset_d8((CUdeviceptr)destination, value, bytes),
                "setting %zu bytes on device %d", bytes, context->info.ordinal);
    return FV_OK;
}

/* ------------------------------------------------------------------ timing */

static fv_status ensure_flush_buffer(fv_rt_context *context)
{
    if (context->flush_buffer != 0)
        return FV_OK;
    size_t bytes = 2 * (size_t)(context->info.l2_size > 0 ? context->info.l2_size : 1 << 20);
    CUdeviceptr buffer = 0;
    FV_CU_CHECK(context->driver, context->driver->memory_alloc(&buffer, bytes),
                "allocating the %zu-byte L2 flush buffer on device %d", bytes,
                context->info.ordinal);
    context->flush_buffer = buffer;
    context->flush_bytes = bytes;
    FV_CU_CHECK(context->driver, context->driver->memset_d8(buffer, 0, bytes),
                "zeroing the L2 flush buffer on device %d", context->info.ordinal);
    return FV_OK;
}

/* The read flush: the xor of every 16-byte vector of the (zeroed) flush
 * buffer, stored only if it is not zero, so that the loads are not dropped
 * and no line of the L2 is left dirty. */
static const char READ_FLUSH_SOURCE[] =
    "// The L2 read flush of fuservalidate's timing (runtime/launch.c).\n"
    "extern \"C\" __global__ void fv_l2_read_flush(const int4 *__restrict__ buffer,\n"
    "                                              unsigned long long vectors, int4 *sink)\n"
    "{\n"
    "    int4 total = make_int4(0, 0, 0, 0);\n"
    "    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n"
    "    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "         i < vectors; i += stride) {\n"
    "        const int4 v = buffer[i];\n"
    "        total.x ^= v.x; total.y ^= v.y; total.z ^= v.z; total.w ^= v.w;\n"
    "    }\n"
    "    if ((total.x | total.y | total.z | total.w) != 0)\n"
    "        *sink = total;\n"
    "}\n";

enum { READ_FLUSH_BLOCKS_PER_SM = 8, READ_FLUSH_THREADS = 256 };

const char *fv_rt_read_flush_source(void)
{
    return READ_FLUSH_SOURCE;
}

/* Compiles and loads the read flush's kernel for this device, once; the
 * kernel is kept only when its sink and module are both in place. */
static fv_status ensure_flush_reader(fv_rt_context *context)
{
    if (context->flush_reader != NULL)
        return FV_OK;
    if (context->flush_sink == 0)
        FV_CU_CHECK(context->driver, context->driver->memory_alloc(&context->flush_sink, 16),
                    "allocating the L2 flush's sink on device %d", context->info.ordinal);
    char arch[FV_RT_ARCH_CAPACITY];
    FV_TRY(fv_rt_device_arch(context->info.compute_major, context->info.compute_minor, arch,
                             sizeof arch));
    const char *names[1] = {"fv_l2_read_flush"};
    fv_rt_compile_request request = {.source = fv_rt_read_flush_source(),
                                     .program_name = "l2_read_flush.cu",
                                     .kernel_names = names, .kernel_count = 1, .arch = arch};
    fv_rt_compiled compiled;
    FV_TRY(fv_rt_compile(&request, &compiled));
    fv_rt_module *module = NULL;
    fv_status status = fv_rt_module_load(context, compiled.cubin, compiled.cubin_size, &module);
    fv_rt_compiled_free(&compiled);
    FV_TRY(status);
    fv_rt_function *reader = NULL;
    status = fv_rt_module_function(module, names[0], &reader);
    if (status != FV_OK) {
        keep_first(&status, fv_rt_module_unload(module));
        return status;
    }
    context->flush_module = module;
    context->flush_reader = reader;
    return FV_OK;
}

static const char *const FLUSH_NAMES[] = {
    [FV_RT_FLUSH_MEMSET] = "memset", [FV_RT_FLUSH_READ] = "read", [FV_RT_FLUSH_NONE] = "none"};

const char *fv_rt_flush_name(fv_rt_flush flush)
{
    return (unsigned)flush < sizeof FLUSH_NAMES / sizeof FLUSH_NAMES[0] ? FLUSH_NAMES[flush]
                                                                        : NULL;
}

bool fv_rt_flush_parse(const char *text, fv_rt_flush *flush)
{
    for (unsigned i = 0; i < sizeof FLUSH_NAMES / sizeof FLUSH_NAMES[0]; i++)
        if (strcmp(text, FLUSH_NAMES[i]) == 0) {
            *flush = (fv_rt_flush)i;
            return true;
        }
    return false;
}

static fv_status prepare_flush(fv_rt_context *context, fv_rt_flush flush)
{
    if (flush == FV_RT_FLUSH_NONE)
        return FV_OK;
    FV_TRY(ensure_flush_buffer(context));
    if (flush == FV_RT_FLUSH_READ)
        FV_TRY(ensure_flush_reader(context));
    return FV_OK;
}

/* Enqueues the flush (prepare_flush has run) on the context's stream;
 * `repeat` varies the memset's byte. */
static fv_status enqueue_flush(fv_rt_context *context, fv_rt_flush flush, int repeat)
{
    fv_rt_driver *driver = context->driver;
    if (flush == FV_RT_FLUSH_MEMSET)
        FV_CU_CHECK(driver,
                    driver->memset_d8_async(context->flush_buffer, (unsigned char)repeat,
                                            context->flush_bytes, context->stream),
                    "flushing the L2 of device %d", context->info.ordinal);
    if (flush != FV_RT_FLUSH_READ)
        return FV_OK;
    unsigned long long vectors = context->flush_bytes / 16;
    void *arguments[] = {&context->flush_buffer, &vectors, &context->flush_sink};
    int sms = context->info.sm_count > 0 ? context->info.sm_count : 1;
    fv_rt_launch_config config = {.grid = {(unsigned)(sms * READ_FLUSH_BLOCKS_PER_SM), 1, 1},
                                  .block = {READ_FLUSH_THREADS, 1, 1}};
    FV_TRY(fv_rt_launch(context->flush_reader, &config, arguments));
    return FV_OK;
}

typedef struct event_set {
    CUevent *events;  /* 2 per repeat: start, stop */
    int count;        /* created so far */
} event_set;

static fv_status create_events(fv_rt_context *context, int count, event_set *set)
{
    set->events = calloc((size_t)count, sizeof *set->events);
    set->count = 0;
    FV_CHECK_ALLOC(set->events);
    for (; set->count < count; set->count++)
        FV_CU_CHECK(context->driver,
                    context->driver->event_create(&set->events[set->count], CU_EVENT_DEFAULT),
                    "creating timing event %d on device %d", set->count,
                    context->info.ordinal);
    return FV_OK;
}

static fv_status destroy_events(fv_rt_context *context, event_set *set)
{
    fv_status first = FV_OK;
    for (int i = 0; i < set->count; i++)
        keep_first(&first, check_result(context->driver,
                                        context->driver->event_destroy(set->events[i]),
                                        "destroying a timing event", context->info.ordinal));
    free(set->events);
    set->events = NULL;
    set->count = 0;
    return first;
}

static fv_status record(fv_rt_context *context, CUevent event, CUstream stream)
{
    FV_CU_CHECK(context->driver, context->driver->event_record(event, stream),
                "recording a timing event on device %d", context->info.ordinal);
    return FV_OK;
}

/* One timed repeat: flush (untimed), start event, the case's kernels, stop. */
static fv_status timed_repeat(fv_rt_context *context, fv_rt_launch_sequence sequence,
                              void *user_data, fv_rt_flush flush, int repeat, CUevent start,
                              CUevent stop)
{
    FV_TRY(enqueue_flush(context, flush, repeat));
    FV_TRY(record(context, start, context->stream));
    FV_TRY(sequence(context, user_data));
    FV_TRY(record(context, stop, context->stream));
    return FV_OK;
}

static fv_status run_timing(fv_rt_context *context, fv_rt_launch_sequence sequence,
                            void *user_data, const fv_rt_timing *timing, const event_set *set,
                            float *samples_ms)
{
    fv_rt_driver *driver = context->driver;
    for (int i = 0; i < timing->warmup; i++)
        FV_TRY(sequence(context, user_data));
    for (int r = 0; r < timing->repeats; r++)
        FV_TRY(timed_repeat(context, sequence, user_data, timing->flush, r,
                            set->events[2 * r], set->events[2 * r + 1]));
    FV_CU_CHECK(driver, driver->event_synchronize(set->events[2 * timing->repeats - 1]),
                "waiting for the timed kernels on device %d", context->info.ordinal);
    for (int r = 0; r < timing->repeats; r++)
        FV_CU_CHECK(driver,
                    driver->event_elapsed_time(&samples_ms[r], set->events[2 * r],
                                               set->events[2 * r + 1]),
                    "reading timing event pair %d on device %d", r, context->info.ordinal);
    return FV_OK;
}

fv_status fv_rt_time(fv_rt_context *context, fv_rt_launch_sequence sequence, void *user_data,
                     const fv_rt_timing *timing, float *samples_ms)
{
    if (timing->warmup < 0 || timing->repeats < 1 || timing->repeats > MAX_TIMING_REPEATS)
        FV_FAIL(FV_ERR_USAGE, "timing with %d warm-up runs and %d repeats", timing->warmup,
                timing->repeats);
    if (fv_rt_flush_name(timing->flush) == NULL)
        FV_FAIL(FV_ERR_USAGE, "timing with unknown L2 flush %d", (int)timing->flush);
    FV_TRY(prepare_flush(context, timing->flush));
    event_set set = {0};
    fv_status status;
    FV_TRY_GOTO(status, create_events(context, 2 * timing->repeats, &set), done);
    FV_TRY_GOTO(status, run_timing(context, sequence, user_data, timing, &set, samples_ms),
                done);
done:
    keep_first(&status, destroy_events(context, &set));
    return status;
}

/* Left free beside a timed copy's two buffers (the driver's own needs). */
#define COPY_HEADROOM_BYTES (256ull << 20)

static fv_status free_device_memory(fv_rt_context *context, size_t *free_bytes)
{
    size_t total_bytes = 0;
    FV_CU_CHECK(context->driver, context->driver->memory_get_info(free_bytes, &total_bytes),
                "reading the free memory of device %d", context->info.ordinal);
    return FV_OK;
}

typedef struct timed_copy {
    fv_rt_device_pointer source, destination;
    uint64_t bytes;
} timed_copy;

/* fv_rt_alloc, but a device out of memory (another process on the GPU took
 * it after the check) is FV_ERR_UNSUPPORTED, as too little free memory is. */
static fv_status allocate_copy_buffer(fv_rt_context *context, uint64_t bytes,
                                      fv_rt_device_pointer *pointer)
{
    CUdeviceptr allocated = 0;
    CUresult result = context->driver->memory_alloc(&allocated, bytes);
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
        FV_FAIL(FV_ERR_UNSUPPORTED, "no room for a timed copy of %llu bytes on device %d",
                (unsigned long long)bytes, context->info.ordinal);
    FV_CU_CHECK(context->driver, result, "allocating %llu bytes on device %d",
                (unsigned long long)bytes, context->info.ordinal);
    *pointer = allocated;
    return FV_OK;
}

static fv_status enqueue_copy(fv_rt_context *context, void *user_data)
{
    const timed_copy *copy = user_data;
    FV_CU_CHECK(context->driver,
                context->driver->memcpy_device_to_device_async(
                    (CUdeviceptr)copy->destination, (CUdeviceptr)copy->source, copy->bytes,
                    context->stream),
                "copying %llu bytes on device %d", (unsigned long long)copy->bytes,
                context->info.ordinal);
    return FV_OK;
}

fv_status fv_rt_time_copy(fv_rt_context *context, uint64_t bytes, const fv_rt_timing *timing,
                          float *samples_ms)
{
    if (bytes == 0)
        FV_FAIL(FV_ERR_USAGE, "timing a copy of 0 bytes");
    size_t free_bytes = 0;
    FV_TRY(free_device_memory(context, &free_bytes));
    if (free_bytes < COPY_HEADROOM_BYTES || bytes > (free_bytes - COPY_HEADROOM_BYTES) / 2)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "a timed copy of %llu bytes needs twice that and 256 MiB free on device %d, "
                "which has %zu bytes free",
                (unsigned long long)bytes, context->info.ordinal, free_bytes);
    timed_copy copy = {.bytes = bytes};
    fv_status status;
    FV_TRY_GOTO(status, allocate_copy_buffer(context, bytes, &copy.source), done);
    FV_TRY_GOTO(status, allocate_copy_buffer(context, bytes, &copy.destination), done);
    FV_TRY_GOTO(status, fv_rt_memset(context, copy.source, 0x5a, bytes), done);
    FV_TRY_GOTO(status, fv_rt_time(context, enqueue_copy, &copy, timing, samples_ms), done);
done:
    keep_first(&status, fv_rt_free(context, copy.destination));
    keep_first(&status, fv_rt_free(context, copy.source));
    return status;
}

/* ---------------------------------------------------------- copy bandwidth */

static int compare_floats(const void *left, const void *right)
{
    float a = *(const float *)left;
    float b = *(const float *)right;
    return (a > b) - (a < b);
}

static void bandwidth_record_name(const fv_rt_context *context, char *name, size_t size)
{
    snprintf(name, size, "copy-bandwidth-%s.txt", context->info.uuid);
}

/* Reads a record written by store_bandwidth; false if absent or unusable. */
static bool parse_bandwidth(const char *text, const char *uuid,
                            fv_rt_copy_bandwidth_result *result)
{
    int format = 0;
    char recorded_uuid[FV_RT_DEVICE_UUID_CAPACITY];
    double value = 0;
    unsigned long long bytes = 0;
    int repeats = 0;
    int fields = sscanf(text,
                        "fuservalidate copy bandwidth %d\nuuid %47s\ngigabytes_per_second %lf\n"
                        "bytes %llu\nrepeats %d",
                        &format, recorded_uuid, &value, &bytes, &repeats);
    if (fields != 5 || format != BANDWIDTH_RECORD_FORMAT || strcmp(recorded_uuid, uuid) != 0 ||
        !(value > 0 && value < 1e6) || repeats < 1)
        return false;
    result->gigabytes_per_second = value;
    result->bytes = bytes;
    result->repeats = repeats;
    return true;
}

static fv_status read_cached_bandwidth(fv_rt_context *context, fv_rt_cache *cache,
                                       fv_rt_copy_bandwidth_result *result)
{
    char name[128];
    bandwidth_record_name(context, name, sizeof name);
    char *text = NULL;
    if (fv_rt_cache_read_text(cache, name, &text) != FV_OK) {
        snprintf(result->cache_problem, sizeof result->cache_problem,
                 "cannot read the bandwidth record: %s", fv_error_message());
        fv_error_clear();
        return FV_OK;
    }
    if (text == NULL)
        return FV_OK;
    result->from_cache = parse_bandwidth(text, context->info.uuid, result);
    if (!result->from_cache)
        snprintf(result->cache_problem, sizeof result->cache_problem,
                 "ignored the malformed record %s/%s", fv_rt_cache_directory(cache), name);
    free(text);
    return FV_OK;
}

static void store_bandwidth(fv_rt_context *context, fv_rt_cache *cache,
                            fv_rt_copy_bandwidth_result *result)
{
    char name[128];
    char text[256];
    bandwidth_record_name(context, name, sizeof name);
    snprintf(text, sizeof text,
             "fuservalidate copy bandwidth %d\nuuid %s\ngigabytes_per_second %.3f\nbytes %llu\n"
             "repeats %d\ndevice %s\n",
             BANDWIDTH_RECORD_FORMAT, context->info.uuid, result->gigabytes_per_second,
             (unsigned long long)result->bytes, result->repeats, context->info.name);
    if (fv_rt_cache_write_text(cache, name, text) != FV_OK) {
        snprintf(result->cache_problem, sizeof result->cache_problem,
                 "cannot store the bandwidth record: %s", fv_error_message());
        fv_error_clear();
    }
}

static fv_status copy_size(fv_rt_context *context, uint64_t *bytes)
{
    size_t free_bytes = 0;
    FV_TRY(free_device_memory(context, &free_bytes));
    uint64_t size = free_bytes / 4 < BANDWIDTH_MAX_BYTES ? free_bytes / 4 : BANDWIDTH_MAX_BYTES;
    size -= size % BANDWIDTH_ALIGNMENT;
    if (size < BANDWIDTH_MIN_BYTES)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "too little free memory on device %d (%zu bytes) to measure copy bandwidth",
                context->info.ordinal, free_bytes);
    *bytes = size;
    return FV_OK;
}

/* Times `repeats` copies on the legacy default stream (cuMemcpyDtoD's). */
static fv_status time_copies(fv_rt_context *context, CUdeviceptr source,
                             CUdeviceptr destination, uint64_t bytes, const event_set *set,
                             float *samples_ms)
{
    fv_rt_driver *driver = context->driver;
    int ordinal = context->info.ordinal;
    FV_CU_CHECK(driver, driver->memcpy_device_to_device(destination, source, bytes),
                "warm-up copy of %llu bytes on device %d", (unsigned long long)bytes, ordinal);
    for (int i = 0; i < BANDWIDTH_REPEATS; i++) {
        FV_TRY(record(context, set->events[0], NULL));
        FV_CU_CHECK(driver, driver->memcpy_device_to_device(destination, source, bytes),
                    "copying %llu bytes on device %d", (unsigned long long)bytes, ordinal);
        FV_TRY(record(context, set->events[1], NULL));
        FV_CU_CHECK(driver, driver->event_synchronize(set->events[1]),
                    "waiting for a copy on device %d", ordinal);
        FV_CU_CHECK(driver,
                    driver->event_elapsed_time(&samples_ms[i], set->events[0], set->events[1]),
                    "reading the copy time on device %d", ordinal);
    }
    return FV_OK;
}

static fv_status measure_bandwidth(fv_rt_context *context, fv_rt_copy_bandwidth_result *result)
{
    uint64_t bytes = 0;
    FV_TRY(copy_size(context, &bytes));
    fv_rt_device_pointer source = 0;
    fv_rt_device_pointer destination = 0;
    event_set set = {0};
    float samples[BANDWIDTH_REPEATS];
    fv_status status;
    FV_TRY_GOTO(status, fv_rt_alloc(context, bytes, &source), done);
    FV_TRY_GOTO(status, fv_rt_alloc(context, bytes, &destination), done);
    FV_TRY_GOTO(status, fv_rt_memset(context, source, 0x5a, bytes), done);
    FV_TRY_GOTO(status, create_events(context, 2, &set), done);
    FV_TRY_GOTO(status, time_copies(context, source, destination, bytes, &set, samples), done);
    qsort(samples, BANDWIDTH_REPEATS, sizeof samples[0], compare_floats);
    float median_ms = samples[BANDWIDTH_REPEATS / 2];
    if (!(median_ms > 0)) {
        status = fv_error_raise(FV_ERR_CUDA, __FILE__, __LINE__,
                                "copy on device %d timed at %g ms", context->info.ordinal,
                                (double)median_ms);
        goto done;
    }
    result->bytes = bytes;
    result->repeats = BANDWIDTH_REPEATS;
    result->gigabytes_per_second = 2.0 * (double)bytes / (median_ms * 1e-3) / 1e9;
done:
    keep_first(&status, destroy_events(context, &set));
    keep_first(&status, fv_rt_free(context, destination));
    keep_first(&status, fv_rt_free(context, source));
    return status;
}

fv_status fv_rt_copy_bandwidth(fv_rt_context *context, fv_rt_cache *cache,
                               fv_rt_copy_bandwidth_result *result)
{
    memset(result, 0, sizeof *result);
    if (cache != NULL) {
        FV_TRY(read_cached_bandwidth(context, cache, result));
        if (result->from_cache)
            return FV_OK;
    }
    FV_TRY(measure_bandwidth(context, result));
    if (cache != NULL)
        store_bandwidth(context, cache, result);
    return FV_OK;
}
