/* driver.c: loads libcuda.so.1 at run time and resolves the driver functions
 * through cuGetProcAddress, each at an explicit ABI version. */
#include "runtime/driver_internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static const char DRIVER_LIBRARY[] = "libcuda.so.1";

typedef PFN_cuGetProcAddress_v12000 get_proc_address_function;

/* Looks up the `version` ABI of one driver function, with the legacy default
 * stream (our code never uses the per-thread default stream). */
static fv_status resolve(get_proc_address_function get_proc_address, int driver_version,
                         const char *symbol, int version, void **address)
{
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *address = NULL;
    CUresult result = get_proc_address(symbol, address, version,
                                       CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
    if (result != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || *address == NULL)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "the CUDA driver (version %d) has no %s of CUDA %d (lookup result %d, "
                "symbol status %d): update the driver",
                driver_version, symbol, version, (int)result, (int)found);
    return FV_OK;
}

/* Looks one function up and stores it in its member, as the type that goes
 * with its version. */
#define RESOLVE(member, symbol, abi)                                                    \
    do {                                                                                \
        void *address_;                                                                 \
        FV_TRY(resolve(get_proc_address, driver->version, #symbol, abi, &address_));    \
        driver->member = (PFN_##symbol##_v##abi)address_;                               \
    } while (0);

static fv_status resolve_all(fv_rt_driver *driver, get_proc_address_function get_proc_address)
{
    FV_RT_DRIVER_FUNCTIONS(RESOLVE)
    return FV_OK;
}

#undef RESOLVE

/* Finds cuGetProcAddress_v2 (CUDA 12.0 and newer) and reads the driver
 * version, which cuDriverGetVersion gives even before cuInit. */
static fv_status load_library(fv_rt_driver *driver, get_proc_address_function *get_proc_address)
{
    driver->library = dlopen(DRIVER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (driver->library == NULL) {
        const char *reason = dlerror();
        FV_FAIL(FV_ERR_NOT_FOUND, "no CUDA driver: cannot load %s (%s)", DRIVER_LIBRARY,
                reason ? reason : "unknown reason");
    }
    void *address = dlsym(driver->library, "cuGetProcAddress_v2");
    if (address == NULL)
        FV_FAIL(FV_ERR_UNSUPPORTED,
                "the CUDA driver in %s is too old: it has no cuGetProcAddress_v2 (CUDA 12.0 "
                "or newer is needed; CUDA %d.%d is what we were built with)",
                DRIVER_LIBRARY, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    *get_proc_address = (get_proc_address_function)address;
    void *get_version = dlsym(driver->library, "cuDriverGetVersion");
    if (get_version == NULL)
        FV_FAIL(FV_ERR_UNSUPPORTED, "%s has no cuDriverGetVersion", DRIVER_LIBRARY);
    if (((PFN_cuDriverGetVersion_v2020)get_version)(&driver->version) != CUDA_SUCCESS)
        FV_FAIL(FV_ERR_NOT_FOUND, "the CUDA driver does not report its version");
    return FV_OK;
}

/* cuInit and the device count: a driver without devices is "not found". */
static fv_status initialize(fv_rt_driver *driver)
{
    CUresult result = driver->init(0);
    if (result != CUDA_SUCCESS)
        FV_FAIL(FV_ERR_NOT_FOUND, "no usable CUDA device: cuInit failed: %s: %s",
                fv_rt_cuda_error_name(driver, result), fv_rt_cuda_error_string(driver, result));
    FV_CU_CHECK(driver, driver->device_get_count(&driver->device_count), "counting CUDA devices");
    if (driver->device_count <= 0) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        FV_FAIL(FV_ERR_NOT_FOUND, "no CUDA device visible (CUDA_VISIBLE_DEVICES=%s)",
                visible ? visible : "unset");
    }
    return FV_OK;
}

fv_status fv_rt_driver_open(fv_rt_driver **driver)
{
    *driver = NULL;
    fv_rt_driver *opened = calloc(1, sizeof *opened);
    FV_CHECK_ALLOC(opened);
    get_proc_address_function get_proc_address = NULL;
    fv_status status;
    FV_TRY_GOTO(status, load_library(opened, &get_proc_address), fail);
    FV_TRY_GOTO(status, resolve_all(opened, get_proc_address), fail);
    FV_TRY_GOTO(status, initialize(opened), fail);
    *driver = opened;
    return FV_OK;
fail:
    free(opened); /* the library stays loaded: see fv_rt_driver_close */
    return status;
}

void fv_rt_driver_close(fv_rt_driver *driver) { free(driver); }

int fv_rt_driver_version(const fv_rt_driver *driver) { return driver->version; }

int fv_rt_driver_device_count(const fv_rt_driver *driver) { return driver->device_count; }

const char *fv_rt_cuda_error_name(const fv_rt_driver *driver, CUresult result)
{
    static _Thread_local char unknown[32];
    const char *name = NULL;
    if (driver != NULL && driver->get_error_name != NULL &&
        driver->get_error_name(result, &name) == CUDA_SUCCESS && name != NULL)
        return name;
    snprintf(unknown, sizeof unknown, "CUDA_ERROR_%d", (int)result);
    return unknown;
}

const char *fv_rt_cuda_error_string(const fv_rt_driver *driver, CUresult result)
{
    const char *description = NULL;
    if (driver != NULL && driver->get_error_string != NULL &&
        driver->get_error_string(result, &description) == CUDA_SUCCESS && description != NULL)
        return description;
    return "no description from the driver";
}
