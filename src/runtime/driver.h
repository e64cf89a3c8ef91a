/* driver.h: the CUDA driver library, opened at run time.
 *
 * libcuda is never linked: fv_rt_driver_open loads "libcuda.so.1" with dlopen
 * and resolves each driver function through cuGetProcAddress, so the program
 * starts, and compiles kernels (NVRTC needs no driver), on machines without a
 * GPU.  This header is the whole public face of the driver and does not
 * include cuda.h; the function table lives in runtime/driver_internal.h, which
 * only src/runtime/ includes.
 */
#ifndef FV_RUNTIME_DRIVER_H
#define FV_RUNTIME_DRIVER_H

#include "common/status.h"

typedef struct fv_rt_driver fv_rt_driver;

/* Loads libcuda.so.1, resolves every driver function the runtime uses, calls
 * cuInit(0) and counts the devices.  On success *driver is a new handle for
 * fv_rt_driver_close.  On failure *driver is NULL and the status is
 * FV_ERR_NOT_FOUND when there is no usable GPU (the library cannot be loaded,
 * cuInit fails, or no device is visible; the message says which, and GPU
 * tests treat this status as "skip"), FV_ERR_UNSUPPORTED when the driver lacks
 * a function we need (older than CUDA 12.0), FV_ERR_NOMEM on allocation
 * failure.  Safe to call more than once; each handle is independent. */
fv_status fv_rt_driver_open(fv_rt_driver **driver);

/* Frees the handle.  libcuda itself stays loaded for the life of the process
 * (it keeps internal threads; unloading it is not safe).  NULL is a no-op. */
void fv_rt_driver_close(fv_rt_driver *driver);

/* The driver's CUDA version as cuDriverGetVersion gives it: 13000 for 13.0. */
int fv_rt_driver_version(const fv_rt_driver *driver);

/* Number of visible devices (at least 1 for an open driver). */
int fv_rt_driver_device_count(const fv_rt_driver *driver);

#endif
