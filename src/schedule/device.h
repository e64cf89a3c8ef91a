/* device.h: the device model the schedulers plan for: read from the driver on
 * a GPU, or taken from a built-in table (H100 SXM, H200, B200, GB200) for
 * `--compile-only --device NAME`. */
#ifndef FV_SCHEDULE_DEVICE_H
#define FV_SCHEDULE_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"

typedef struct fv_device {
    char name[64];               /* "NVIDIA H100 80GB HBM3", or the table name */
    int major, minor;            /* compute capability */
    char arch[16];               /* NVRTC target: "sm_90a", "sm_100a" */
    int sm_count;
    int max_threads_per_block;
    int max_threads_per_sm;
    int registers_per_sm;        /* 32-bit registers */
    int registers_per_block;
    int64_t shared_per_sm;       /* bytes */
    int64_t shared_per_block_optin; /* bytes a kernel may opt in to */
    int64_t l2_bytes;
    double peak_bandwidth_gbs;   /* datasheet DRAM bandwidth, GB/s */
    bool from_driver;            /* read from a real GPU */
} fv_device;

/* Fills *device from the built-in table by name ("H100", "H100-SXM", "H200",
 * "B200", "GB200", case-insensitive).  FV_ERR_USAGE listing the names if
 * unknown. */
fv_status fv_sched_device_from_table(const char *name, fv_device *device);

/* The names in the built-in table, NULL-terminated. */
const char *const *fv_sched_device_names(void);

/* NVRTC arch string for a compute capability: 9.0 -> "sm_90a", 10.0 ->
 * "sm_100a" (the "a" variants enable TMA/setmaxnreg); others "sm_XY". */
void fv_sched_arch_for(int major, int minor, char *arch, size_t size);

/* Parses "sm_90a"/"sm_100a"/"sm_90" into a compute capability.  False if
 * malformed. */
bool fv_sched_parse_arch(const char *arch, int *major, int *minor);

#endif
