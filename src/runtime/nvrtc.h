/* nvrtc.h: compiles generated CUDA C++ to a cubin with NVRTC, through the
 * on-disk cache (runtime/cache.h), and reports each kernel's resources
 * (registers, spills, local and shared memory) as ptxas gives them.  Needs no
 * GPU and no CUDA driver. */
#ifndef FV_RUNTIME_NVRTC_H
#define FV_RUNTIME_NVRTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct fv_rt_cache fv_rt_cache;

enum {
    FV_RT_KERNEL_NAME_CAPACITY = 256, /* longest kernel name + NUL */
    FV_RT_CACHE_KEY_CAPACITY = 65,    /* 64 hex digits + NUL */
    FV_RT_CACHE_PROBLEM_CAPACITY = 512
};

/* What ptxas reported for one entry function (its "-v" output).  Sizes in
 * bytes; a kernel with no spills has both spill counts 0. */
typedef struct fv_rt_kernel_resources {
    char name[FV_RT_KERNEL_NAME_CAPACITY]; /* the extern "C" name */
    int registers;            /* 32-bit registers per thread */
    int barriers;             /* named barriers used */
    int local_bytes;          /* stack frame per thread: local arrays and spill slots */
    int spill_store_bytes;    /* per thread */
    int spill_load_bytes;     /* per thread */
    int static_shared_bytes;  /* __shared__ variables per block (not dynamic shared memory) */
} fv_rt_kernel_resources;

typedef struct fv_rt_compile_request {
    const char *source;              /* CUDA C++, NUL-terminated */
    const char *program_name;        /* file name NVRTC uses in messages; NULL: "kernel.cu" */
    const char *const *kernel_names; /* extern "C" __global__ names that must be in the cubin */
    size_t kernel_count;             /* at least 1 */
    const char *arch;                /* real target: "sm_90a", "sm_100a", "sm_90" */
    const char *const *options;      /* extra NVRTC options, appended after ours in order
                                        (e.g. "-DROWS=128", "--use_fast_math"); may be NULL */
    size_t option_count;
    fv_rt_cache *cache;              /* NULL: compile without the on-disk cache */
} fv_rt_compile_request;

typedef struct fv_rt_compiled {
    uint8_t *cubin;                  /* ELF image for cuModuleLoadData */
    size_t cubin_size;               /* bytes */
    fv_rt_kernel_resources *kernels; /* every entry function ptxas reported, in log order */
    size_t kernel_count;
    char *log;                       /* NVRTC's log (ptxas info, warnings); never NULL after
                                        success, possibly "" */
    int nvrtc_major;                 /* NVRTC that produced the cubin: 13 */
    int nvrtc_minor;
    double nvrtc_ms;                 /* NVRTC compile wall time of this cubin (for a cache hit,
                                        the time the original compilation took) */
    double compile_ms;               /* wall time of this fv_rt_compile call */
    bool cache_hit;                  /* the cubin came from the cache */
    bool cache_rejected;             /* a corrupt cache entry was found, deleted and recompiled */
    char cache_problem[FV_RT_CACHE_PROBLEM_CAPACITY]; /* why an entry was rejected or could not
                                        be read or stored ("" if none); never fatal */
    char cache_key[FV_RT_CACHE_KEY_CAPACITY];         /* "" when no cache was used */
} fv_rt_compiled;

/* NVRTC's version (nvrtcVersion).  Fails with FV_ERR_NVRTC only if NVRTC does. */
fv_status fv_rt_nvrtc_version(int *major, int *minor);

/* The directory given to NVRTC with --include-path (where cuda_bf16.h is),
 * chosen once per process: $FV_CUDA_INCLUDE if set; else the include/
 * directory beside the libnvrtc actually loaded (so headers and compiler
 * match); else $CUDA_HOME/include, $CUDA_PATH/include, /usr/local/cuda/include.
 * Its cccl/ subdirectory, where CUDA 13 keeps <cuda/...> and what
 * <cooperative_groups.h> includes, is passed too when it exists.
 * Fails with FV_ERR_NOT_FOUND (naming the places tried) if none has
 * cuda_bf16.h. */
fv_status fv_rt_nvrtc_include_dir(const char **directory);

/* Compiles request->source for request->arch into a cubin, or takes it from
 * request->cache.  NVRTC gets, in this order:
 *   --gpu-architecture=<arch> -default-device -std=c++17 --ptxas-options=-v
 *   --no-cache --include-path=<dir> [--include-path=<dir>/cccl] <request options...>
 * (--no-cache, NVRTC 12.9 and newer: NVRTC's own cache, active where a driver
 * is installed, returns programs without the ptxas report.)
 * On success `out` owns the cubin, the resources of every entry function and
 * the log (free with fv_rt_compiled_free); every requested kernel is among
 * out->kernels.  A cache entry that fails its checks is reported in
 * out->cache_problem, deleted and replaced; cache I/O trouble never fails a
 * compilation (it is reported in out->cache_problem).
 * Failure: FV_ERR_NVRTC when NVRTC rejects the program or an option, with the
 * program name, kernel names, target and the first error lines of the log in
 * the message and the whole log in out->log (the caller still calls
 * fv_rt_compiled_free); FV_ERR_NOT_FOUND if a requested kernel is not in the
 * program; FV_ERR_UNSUPPORTED for a target that is not sm_*; FV_ERR_USAGE for
 * a malformed request; FV_ERR_INTERNAL if ptxas's report cannot be read;
 * FV_ERR_NOMEM.  Everything in `out` but the log is then empty. */
fv_status fv_rt_compile(const fv_rt_compile_request *request, fv_rt_compiled *out);

/* The resources of kernel `name`, or NULL if the cubin has no such entry. */
const fv_rt_kernel_resources *fv_rt_compiled_kernel(const fv_rt_compiled *compiled,
                                                    const char *name);

/* Releases everything `compiled` owns and zeroes it.  Safe on a zeroed value. */
void fv_rt_compiled_free(fv_rt_compiled *compiled);

/* Reads the resources of every entry function from a ptxas "-v" log (NVRTC's
 * program log): "Compiling entry function 'k'", "Function properties for k" with
 * its "N bytes stack frame, N bytes spill stores, N bytes spill loads" line,
 * and "Used N registers, used N barriers, ..., N bytes smem".  Entries whose
 * names do not fit FV_RT_KERNEL_NAME_CAPACITY are left out; device functions
 * are not entries.  Registers, stack frame and spills that ptxas did not print
 * are -1; barriers and smem, which it leaves out when zero, are 0.  On success *kernels
 * (free()) holds *count records, possibly 0.  Failure: FV_ERR_NOMEM. */
fv_status fv_rt_parse_ptxas_log(const char *log, fv_rt_kernel_resources **kernels,
                                size_t *count);

#endif
