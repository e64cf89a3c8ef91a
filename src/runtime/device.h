/* device.h: the facts about one GPU that schedulers, the archive and the
 * timing code need, read from the CUDA driver. */
#ifndef FV_RUNTIME_DEVICE_H
#define FV_RUNTIME_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "runtime/driver.h"

enum {
    FV_RT_DEVICE_NAME_CAPACITY = 256,
    FV_RT_DEVICE_UUID_CAPACITY = 48, /* "GPU-" + 36 characters + NUL */
    FV_RT_DEVICE_PCI_CAPACITY = 32,
    FV_RT_ARCH_CAPACITY = 16
};

typedef struct fv_rt_device_info {
    int ordinal;                              /* the driver's device ordinal */
    char name[FV_RT_DEVICE_NAME_CAPACITY];    /* "NVIDIA H100 80GB HBM3" */
    char uuid[FV_RT_DEVICE_UUID_CAPACITY];    /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
                                                 as nvidia-smi prints it */
    char pci_bus_id[FV_RT_DEVICE_PCI_CAPACITY]; /* "0000:3b:00.0" */
    int compute_major;                        /* compute capability, 9 for sm_90 */
    int compute_minor;
    int sm_count;                             /* multiprocessors */
    int max_threads_per_block;
    int max_threads_per_sm;
    int registers_per_sm;                     /* 32-bit registers */
    int registers_per_block;
    int shared_memory_per_sm;                 /* bytes */
    int shared_memory_per_block;              /* bytes, without opt-in (48 KiB) */
    int shared_memory_per_block_optin;        /* bytes, the most one block may opt in to */
    int l2_size;                              /* bytes */
    int memory_clock_khz;                     /* peak memory clock */
    int memory_bus_width_bits;
    bool cooperative_launch;                  /* supports cooperative (grid-sync) launches */
    uint64_t total_memory;                    /* bytes */
    int driver_version;                       /* 13000 for CUDA 13.0 */
} fv_rt_device_info;

/* Fills `info` for device `ordinal` (0 .. fv_rt_driver_device_count - 1).
 * Does not create a context.  Failure: FV_ERR_NOT_FOUND for an ordinal out
 * of range, FV_ERR_CUDA when a driver query fails; `info` is then zeroed. */
fv_status fv_rt_device_query(fv_rt_driver *driver, int ordinal, fv_rt_device_info *info);

/* The NVRTC target for a compute capability: "sm_90a" for 9.0, "sm_100a" for
 * 10.0 (the architecture-specific variant from Hopper on, which TMA and
 * warp-group instructions need; cubins for it run on exactly that
 * capability), "sm_80" for 8.0.  Returns FV_ERR_INTERNAL if `size` is too
 * small (FV_RT_ARCH_CAPACITY always suffices) or the capability is not
 * positive. */
fv_status fv_rt_device_arch(int compute_major, int compute_minor, char *arch, size_t size);

/* Peak DRAM bandwidth from the memory clock and bus width, in GB/s
 * (2 transfers per clock).  A rough ceiling; 0 if the driver reports no clock. */
double fv_rt_device_peak_bandwidth(const fv_rt_device_info *info);

#endif
