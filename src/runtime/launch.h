/* launch.h: running compiled kernels on one GPU: the device's primary
 * context with one stream, modules loaded from cubins, device buffers,
 * normal and cooperative launches, occupancy, event timing with an L2 flush,
 * and the device-to-device copy bandwidth that results are compared with.
 *
 * Errors are FV_ERR_CUDA with the driver's error name and description and
 * what was being done (for kernels, the kernel's name); callers add the case
 * id with fv_error_prefix.  A kernel fault poisons the context for good:
 * every later call on it fails, and the worker process that owns it must be
 * replaced (DESIGN.md, process model).  A context and everything made from it
 * are used by one thread at a time; fv_rt_context_make_current binds it to
 * the calling thread.
 */
#ifndef FV_RUNTIME_LAUNCH_H
#define FV_RUNTIME_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "runtime/cache.h"
#include "runtime/device.h"
#include "runtime/driver.h"

typedef uint64_t fv_rt_device_pointer; /* a CUdeviceptr: a device address, 0 for none */

typedef struct fv_rt_context fv_rt_context;
typedef struct fv_rt_module fv_rt_module;
typedef struct fv_rt_function fv_rt_function; /* owned by its module */

/* ---------------------------------------------------------------- contexts */

/* Retains the primary context of device `ordinal`, makes it current on this
 * thread and creates the stream that launches and timing use (a blocking
 * stream: it is ordered with the copies and memsets below).  Failure:
 * FV_ERR_NOT_FOUND for a bad ordinal, FV_ERR_CUDA, FV_ERR_NOMEM; *context is
 * NULL and nothing is held. */
fv_status fv_rt_context_open(fv_rt_driver *driver, int ordinal, fv_rt_context **context);

/* Waits for outstanding work, destroys the stream, the L2-flush buffer and kernel and
 * releases the primary context.  Unload modules and free buffers first.
 * Always releases what it can; returns the first failure (FV_ERR_CUDA, e.g.
 * the sticky error of an earlier kernel fault).  NULL is a no-op. */
fv_status fv_rt_context_close(fv_rt_context *context);

/* The device the context runs on (queried at open). */
const fv_rt_device_info *fv_rt_context_device(const fv_rt_context *context);

/* Makes the context current on the calling thread.  FV_ERR_CUDA on failure. */
fv_status fv_rt_context_make_current(fv_rt_context *context);

/* Waits for all work on the device; reports kernel faults (FV_ERR_CUDA). */
fv_status fv_rt_synchronize(fv_rt_context *context);

/* ----------------------------------------------------------------- modules */

/* Loads a cubin (from fv_rt_compile) into the context.  The image may be freed
 * afterwards.  Failure: FV_ERR_CUDA (e.g. CUDA_ERROR_NO_BINARY_FOR_GPU when
 * the cubin is for another architecture), FV_ERR_NOMEM; *module is NULL. */
fv_status fv_rt_module_load(fv_rt_context *context, const void *cubin, size_t size,
                            fv_rt_module **module);

/* Unloads the module and frees its functions.  Returns FV_ERR_CUDA if the
 * driver reports a failure; the handle is freed either way.  NULL: no-op. */
fv_status fv_rt_module_unload(fv_rt_module *module);

/* The kernel `name` (an extern "C" __global__ name) of the module; asking
 * twice gives the same handle.  Failure: FV_ERR_CUDA (CUDA_ERROR_NOT_FOUND
 * when there is no such kernel), FV_ERR_USAGE for a name that is too long,
 * FV_ERR_NOMEM; *function is NULL. */
fv_status fv_rt_module_function(fv_rt_module *module, const char *name,
                                fv_rt_function **function);

/* The kernel's name. */
const char *fv_rt_function_name(const fv_rt_function *function);

/* What the driver says about a loaded kernel (bytes per block / thread). */
typedef struct fv_rt_function_attributes {
    int registers;                 /* per thread */
    int static_shared_bytes;       /* per block */
    int local_bytes;               /* per thread */
    int max_threads_per_block;     /* the most this kernel can launch with */
    int max_dynamic_shared_bytes;  /* current limit for dynamic shared memory */
} fv_rt_function_attributes;

/* Reads the attributes.  Failure: FV_ERR_CUDA. */
fv_status fv_rt_function_attributes_get(const fv_rt_function *function,
                                        fv_rt_function_attributes *attributes);

/* Raises the kernel's dynamic shared memory limit to at least `bytes`
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; needed above 48 KiB).
 * fv_rt_launch and fv_rt_occupancy call it themselves.  Failure:
 * FV_ERR_UNSUPPORTED for more than the device's opt-in maximum per block,
 * FV_ERR_CUDA if the driver refuses (static + dynamic over the maximum). */
fv_status fv_rt_function_reserve_dynamic_shared(fv_rt_function *function, size_t bytes);

/* Blocks of `block_threads` threads with `dynamic_shared_bytes` each that fit
 * on one SM at once (cuOccupancyMaxActiveBlocksPerMultiprocessor); 0 if the
 * block cannot run at all.  Failure: FV_ERR_CUDA, FV_ERR_USAGE for
 * block_threads < 1. */
fv_status fv_rt_occupancy(fv_rt_function *function, int block_threads,
                          size_t dynamic_shared_bytes, int *blocks_per_sm);

/* Clusters of `cluster_blocks` blocks (along x) of `block_threads` threads
 * with `dynamic_shared_bytes` each that fit on the device at once
 * (cuOccupancyMaxActiveClusters); 0 if such a cluster cannot run.
 * Failure: FV_ERR_CUDA, FV_ERR_USAGE for block_threads or cluster_blocks
 * < 1. */
fv_status fv_rt_occupancy_clusters(fv_rt_function *function, int block_threads,
                                   size_t dynamic_shared_bytes, int cluster_blocks,
                                   int *clusters);

/* ---------------------------------------------------------------- launches */

typedef struct fv_rt_launch_config {
    unsigned grid[3];              /* blocks in x, y, z (each >= 1) */
    unsigned block[3];             /* threads in x, y, z (each >= 1) */
    unsigned dynamic_shared_bytes; /* per block */
    bool cooperative;              /* cuLaunchCooperativeKernel: all blocks co-resident, so the
                                      kernel may use a grid-wide sync; the grid must fit
                                      (occupancy x SM count) */
    unsigned cluster;              /* blocks per thread-block cluster along x (cuLaunchKernelEx;
                                      grid[0] a multiple of it); 0 or 1: no clusters */
} fv_rt_launch_config;

/* Launches the kernel on the context's stream, asynchronously.  `arguments`
 * is cuLaunchKernel's kernelParams: one pointer per kernel parameter, to a
 * value of exactly that parameter's type (e.g. &device_pointer, &n).
 * Raises the dynamic shared memory limit when needed.  Launch-time errors
 * (bad configuration, too large a cooperative grid) are FV_ERR_CUDA here;
 * faults inside the kernel surface at the next synchronizing call.
 * FV_ERR_UNSUPPORTED for a cooperative launch on a device without it or a
 * cluster launch below compute capability 9.0, FV_ERR_USAGE for a zero
 * dimension or a grid that is not a whole number of clusters. */
fv_status fv_rt_launch(fv_rt_function *function, const fv_rt_launch_config *config,
                       void **arguments);

/* ----------------------------------------------------------------- buffers */

/* Allocates `bytes` (> 0) of device memory.  Failure: FV_ERR_CUDA
 * (CUDA_ERROR_OUT_OF_MEMORY), FV_ERR_USAGE for 0 bytes; *pointer is 0. */
fv_status fv_rt_alloc(fv_rt_context *context, size_t bytes, fv_rt_device_pointer *pointer);

/* Frees a buffer from fv_rt_alloc; 0 is a no-op.  FV_ERR_CUDA if the driver
 * reports a failure (the buffer is unusable either way). */
fv_status fv_rt_free(fv_rt_context *context, fv_rt_device_pointer pointer);

/* Copies host -> device.  Ordered after earlier launches; returns once the
 * host buffer may be reused.  Failure: FV_ERR_CUDA. */
fv_status fv_rt_copy_to_device(fv_rt_context *context, fv_rt_device_pointer destination,
                               const void *source, size_t bytes);

/* Copies device -> host; waits for earlier launches and for the copy.
 * Failure: FV_ERR_CUDA (including faults of earlier kernels). */
fv_status fv_rt_copy_to_host(fv_rt_context *context, void *destination,
                             fv_rt_device_pointer source, size_t bytes);

/* Sets `bytes` bytes to `value`, ordered with launches.  Failure: FV_ERR_CUDA. */
fv_status fv_rt_memset(fv_rt_context *context, fv_rt_device_pointer destination,
                       uint8_t value, size_t bytes);

/* ------------------------------------------------------------------ timing */

/* Launches one execution of a case: every kernel of it, in order, with
 * fv_rt_launch.  Returns FV_OK or the first failure. */
typedef fv_status (*fv_rt_launch_sequence)(fv_rt_context *context, void *user_data);

/* How the L2 is emptied of a case's data before each timed execution
 * (untimed): both pass over a buffer of twice the L2 size.  A memset (the
 * common practice: nvbench, Triton's do_bench) leaves the L2 holding dirty
 * lines of that buffer, whose write-back the timed kernel then pays; a read
 * leaves clean lines, so the kernel pays only for its own traffic (on an
 * H200 the memset cost a copy of 32 MiB each way 2.9 us of its 20.5,
 * bench/results/h200-2026-11-27.md, "What the L2 flush costs"). */
typedef enum fv_rt_flush {
    FV_RT_FLUSH_MEMSET, /* cuMemsetD8Async over the buffer (the default: 0) */
    FV_RT_FLUSH_READ,   /* a kernel that reads the buffer and writes nothing */
    FV_RT_FLUSH_NONE,   /* inputs may be served from L2 */
} fv_rt_flush;

/* "memset", "read" or "none"; NULL for a value outside the enum. */
const char *fv_rt_flush_name(fv_rt_flush flush);

/* Parses one of fv_rt_flush_name's names.  False (and *flush unchanged) for
 * anything else. */
bool fv_rt_flush_parse(const char *text, fv_rt_flush *flush);

/* The CUDA source of FV_RT_FLUSH_READ's kernel, fv_l2_read_flush(buffer,
 * vectors, sink), for tests that compile it without a GPU. */
const char *fv_rt_read_flush_source(void);

typedef struct fv_rt_timing {
    int warmup;        /* untimed executions first (>= 0) */
    int repeats;       /* timed executions (>= 1), one sample each */
    fv_rt_flush flush; /* before each timed execution */
} fv_rt_timing;

/* Runs `sequence` timing->warmup times, then timing->repeats times, each
 * repeat bracketed by two events on the context's stream (the L2 flush, if
 * asked for, is enqueued before the first event, so the GPU stays busy while
 * the host enqueues the kernels; the read flush's kernel is compiled with
 * NVRTC on its first use in a context).  Waits once at the end and writes
 * samples_ms[0 .. repeats-1] in milliseconds, in execution order; the caller
 * takes median, minimum and maximum.  Failure: the sequence's status,
 * FV_ERR_CUDA (kernel faults included), FV_ERR_USAGE for bad counts or an
 * unknown flush, FV_ERR_NVRTC if the read flush's kernel does not compile,
 * FV_ERR_NOMEM; the samples are then unspecified. */
fv_status fv_rt_time(fv_rt_context *context, fv_rt_launch_sequence sequence, void *user_data,
                     const fv_rt_timing *timing, float *samples_ms);

/* Times a device-to-device copy of `bytes` (> 0) as fv_rt_time times a case:
 * the same warm-up, repeats, L2 flush and events, the copy
 * (cuMemcpyDtoDAsync) on the context's stream.  Allocates a source and a
 * destination of `bytes` each for the call and frees them.  This is the
 * reference for a kernel that moves 2 x `bytes`: what a copy of its traffic
 * reaches, fixed costs (launch, the flush's write-back) included.  Failure:
 * as fv_rt_time (which never returns FV_ERR_UNSUPPORTED); FV_ERR_USAGE for 0
 * bytes; FV_ERR_UNSUPPORTED, with nothing left allocated, when the device
 * has less than 2 x `bytes` (and 256 MiB) free or runs out of memory while
 * the buffers are allocated; the samples are then unspecified. */
fv_status fv_rt_time_copy(fv_rt_context *context, uint64_t bytes, const fv_rt_timing *timing,
                          float *samples_ms);

/* ---------------------------------------------------------- copy bandwidth */

typedef struct fv_rt_copy_bandwidth_result {
    double gigabytes_per_second; /* 2 x bytes / median time / 1e9: read + write traffic */
    uint64_t bytes;              /* size of one copy */
    int repeats;                 /* timed copies (median taken) */
    bool from_cache;             /* read from the cache record instead of measured */
    char cache_problem[FV_RT_CACHE_PROBLEM_CAPACITY]; /* "" or why the record was not used or
                                                         could not be written; never fatal */
} fv_rt_copy_bandwidth_result;

/* The device-to-device copy bandwidth of the context's GPU: the median of
 * several timed cuMemcpyDtoD copies of min(1 GiB, free memory / 4) bytes,
 * after one untimed copy.  With a cache, the result is kept in the record
 * "copy-bandwidth-<GPU UUID>.txt" there and later calls read it instead of
 * measuring (one measurement per GPU).  Failure: FV_ERR_CUDA, FV_ERR_NOMEM,
 * FV_ERR_UNSUPPORTED when less than 64 MiB is free. */
fv_status fv_rt_copy_bandwidth(fv_rt_context *context, fv_rt_cache *cache,
                               fv_rt_copy_bandwidth_result *result);

#endif
