/* driver_internal.h: the table of CUDA driver functions behind fv_rt_driver,
 * and FV_CU_CHECK.  Only src/runtime/ includes this header (it includes
 * cuda.h); the rest of the project sees runtime/driver.h.
 *
 * Every function is looked up with cuGetProcAddress at an explicit ABI
 * version and called through the matching typedef of cudaTypedefs.h:
 * (memory_alloc, cuMemAlloc, 3020) gives a member of type
 * PFN_cuMemAlloc_v3020 that holds what cuGetProcAddress("cuMemAlloc", ...,
 * 3020, ...) returns, i.e. cuMemAlloc_v2.  Type and version come from one
 * line, so they cannot disagree.  (Asking for CUDA_VERSION instead is wrong:
 * for 13000 the driver returns cuCtxSynchronize_v13000, which takes a
 * context argument that cuda.h's default cuCtxSynchronize(void) lacks.)
 * The versions chosen are the ones cuda.h 13.0 maps the plain names to.
 */
#ifndef FV_RUNTIME_DRIVER_INTERNAL_H
#define FV_RUNTIME_DRIVER_INTERNAL_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdio.h>

#include "common/status.h"
#include "runtime/driver.h"

/* X(member, driver symbol, ABI version) for every function the runtime uses. */
#define FV_RT_DRIVER_FUNCTIONS(X)                                                        \
    X(init, cuInit, 2000)                                                                \
    X(driver_get_version, cuDriverGetVersion, 2020)                                      \
    X(get_error_name, cuGetErrorName, 6000)                                              \
    X(get_error_string, cuGetErrorString, 6000)                                          \
    X(device_get_count, cuDeviceGetCount, 2000)                                          \
    X(device_get, cuDeviceGet, 2000)                                                     \
    X(device_get_name, cuDeviceGetName, 2000)                                            \
    X(device_get_uuid, cuDeviceGetUuid, 11040)                                           \
    X(device_get_pci_bus_id, cuDeviceGetPCIBusId, 4010)                                  \
    X(device_get_attribute, cuDeviceGetAttribute, 2000)                                  \
    X(device_total_memory, cuDeviceTotalMem, 3020)                                       \
    X(primary_context_retain, cuDevicePrimaryCtxRetain, 7000)                            \
    X(primary_context_release, cuDevicePrimaryCtxRelease, 11000)                         \
    X(context_set_current, cuCtxSetCurrent, 4000)                                        \
    X(context_synchronize, cuCtxSynchronize, 2000)                                       \
    X(module_load_data, cuModuleLoadData, 2000)                                          \
    X(module_unload, cuModuleUnload, 2000)                                               \
    X(module_get_function, cuModuleGetFunction, 2000)                                    \
    X(function_get_attribute, cuFuncGetAttribute, 2020)                                  \
    X(function_set_attribute, cuFuncSetAttribute, 9000)                                  \
    X(launch_kernel, cuLaunchKernel, 4000)                                               \
    X(launch_cooperative_kernel, cuLaunchCooperativeKernel, 9000)                        \
    X(launch_kernel_ex, cuLaunchKernelEx, 11060)                                         \
    X(occupancy_blocks_per_sm, cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)        \
    X(occupancy_max_active_clusters, cuOccupancyMaxActiveClusters, 11070)                \
    X(memory_get_info, cuMemGetInfo, 3020)                                               \
    X(memory_alloc, cuMemAlloc, 3020)                                                    \
    X(memory_free, cuMemFree, 3020)                                                      \
    X(memcpy_host_to_device, cuMemcpyHtoD, 3020)                                         \
    X(memcpy_device_to_host, cuMemcpyDtoH, 3020)                                         \
    X(memcpy_device_to_device, cuMemcpyDtoD, 3020)                                       \
    X(memcpy_device_to_device_async, cuMemcpyDtoDAsync, 3020)                            \
    X(memset_d8, cuMemsetD8, 3020)                                                       \
    X(memset_d8_async, cuMemsetD8Async, 3020)                                            \
    X(event_create, cuEventCreate, 2000)                                                 \
    X(event_record, cuEventRecord, 2000)                                                 \
    X(event_synchronize, cuEventSynchronize, 2000)                                       \
    X(event_elapsed_time, cuEventElapsedTime, 12080)                                     \
    X(event_destroy, cuEventDestroy, 4000)                                               \
    X(stream_create, cuStreamCreate, 2000)                                               \
    X(stream_synchronize, cuStreamSynchronize, 2000)                                     \
    X(stream_destroy, cuStreamDestroy, 4000)

#define FV_RT_DRIVER_MEMBER(member, symbol, abi) PFN_##symbol##_v##abi member;

struct fv_rt_driver {
    void *library;          /* dlopen handle of libcuda.so.1 (never closed) */
    int version;            /* cuDriverGetVersion: 13000 for 13.0 */
    int device_count;
    FV_RT_DRIVER_FUNCTIONS(FV_RT_DRIVER_MEMBER)
};

#undef FV_RT_DRIVER_MEMBER

/* "CUDA_ERROR_INVALID_VALUE" for a result; "CUDA_ERROR_<n>" if the driver does
 * not know it.  Never NULL. */
const char *fv_rt_cuda_error_name(const fv_rt_driver *driver, CUresult result);

/* The driver's description of a result ("invalid argument"); never NULL. */
const char *fv_rt_cuda_error_string(const fv_rt_driver *driver, CUresult result);

/* Evaluates `call` (a CUresult expression); on failure returns FV_ERR_CUDA from
 * the enclosing function through FV_FAIL, with the message
 *   "<what>: CUDA_ERROR_NAME: driver's description"
 * and the file:line of the check.  `...` is a printf format saying what was
 * being done ("loading the module of kernel %s", name) and its arguments.
 * Callers higher up add the case id with fv_error_prefix. */
#define FV_CU_CHECK(driver, call, ...)                                                   \
    do {                                                                                 \
        CUresult fv_cu_result_ = (call);                                                 \
        if (fv_cu_result_ != CUDA_SUCCESS) {                                             \
            char fv_cu_what_[512];                                                       \
            snprintf(fv_cu_what_, sizeof fv_cu_what_, __VA_ARGS__);                      \
            FV_FAIL(FV_ERR_CUDA, "%s: %s: %s", fv_cu_what_,                              \
                    fv_rt_cuda_error_name((driver), fv_cu_result_),                      \
                    fv_rt_cuda_error_string((driver), fv_cu_result_));                   \
        }                                                                                \
    } while (0)

/* Like FV_CU_CHECK, but stores FV_ERR_CUDA in `var` and jumps to `label`
 * (for functions that must release what they acquired). */
#define FV_CU_CHECK_GOTO(driver, var, call, label, ...)                                  \
    do {                                                                                 \
        CUresult fv_cu_result_ = (call);                                                 \
        if (fv_cu_result_ != CUDA_SUCCESS) {                                             \
            char fv_cu_what_[512];                                                       \
            snprintf(fv_cu_what_, sizeof fv_cu_what_, __VA_ARGS__);                      \
            (var) = fv_error_raise(FV_ERR_CUDA, __FILE__, __LINE__, "%s: %s: %s",        \
                                   fv_cu_what_,                                          \
                                   fv_rt_cuda_error_name((driver), fv_cu_result_),       \
                                   fv_rt_cuda_error_string((driver), fv_cu_result_));    \
            goto label;                                                                  \
        }                                                                                \
    } while (0)

#endif
