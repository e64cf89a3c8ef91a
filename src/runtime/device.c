/* device.c: reads device attributes through the CUDA driver. */
#include "runtime/device.h"

#include <stdio.h>
#include <string.h>

#include "runtime/driver_internal.h"

static fv_status get_attribute(fv_rt_driver *driver, CUdevice device, int ordinal,
                               CUdevice_attribute attribute, const char *what, int *value)
{
    FV_CU_CHECK(driver, driver->device_get_attribute(value, attribute, device),
                "reading %s of device %d", what, ordinal);
    return FV_OK;
}

/* Formats the UUID the way nvidia-smi and CUDA_VISIBLE_DEVICES spell it. */
static void format_uuid(const CUuuid *uuid, char text[FV_RT_DEVICE_UUID_CAPACITY])
{
    const unsigned char *b = (const unsigned char *)uuid->bytes;
    snprintf(text, FV_RT_DEVICE_UUID_CAPACITY,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static fv_status query_identity(fv_rt_driver *driver, CUdevice device, fv_rt_device_info *info)
{
    int ordinal = info->ordinal;
    FV_CU_CHECK(driver, driver->device_get_name(info->name, (int)sizeof info->name, device),
                "reading the name of device %d", ordinal);
    info->name[sizeof info->name - 1] = '\0';
    CUuuid uuid;
    FV_CU_CHECK(driver, driver->device_get_uuid(&uuid, device), "reading the UUID of device %d",
                ordinal);
    format_uuid(&uuid, info->uuid);
    FV_CU_CHECK(driver,
                driver->device_get_pci_bus_id(info->pci_bus_id, (int)sizeof info->pci_bus_id,
                                              device),
                "reading the PCI bus id of device %d", ordinal);
    info->pci_bus_id[sizeof info->pci_bus_id - 1] = '\0';
    size_t total = 0;
    FV_CU_CHECK(driver, driver->device_total_memory(&total, device),
                "reading the memory size of device %d", ordinal);
    info->total_memory = total;
    return FV_OK;
}

static fv_status query_attributes(fv_rt_driver *driver, CUdevice device, fv_rt_device_info *info)
{
    const struct {
        CUdevice_attribute attribute;
        const char *what;
        int *value;
    } attributes[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability", &info->compute_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability", &info->compute_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count", &info->sm_count},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block",
         &info->max_threads_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM",
         &info->max_threads_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM",
         &info->registers_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block",
         &info->registers_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM",
         &info->shared_memory_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block",
         &info->shared_memory_per_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block",
         &info->shared_memory_per_block_optin},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size", &info->l2_size},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock", &info->memory_clock_khz},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width",
         &info->memory_bus_width_bits},
    };
    for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++)
        FV_TRY(get_attribute(driver, device, info->ordinal, attributes[i].attribute,
                             attributes[i].what, attributes[i].value));
    int cooperative = 0;
    FV_TRY(get_attribute(driver, device, info->ordinal, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
                         "cooperative launch support", &cooperative));
    info->cooperative_launch = cooperative != 0;
    return FV_OK;
}

fv_status fv_rt_device_query(fv_rt_driver *driver, int ordinal, fv_rt_device_info *info)
{
    memset(info, 0, sizeof *info);
    if (ordinal < 0 || ordinal >= driver->device_count)
        FV_FAIL(FV_ERR_NOT_FOUND, "no CUDA device %d (%d visible)", ordinal,
                driver->device_count);
    CUdevice device;
    FV_CU_CHECK(driver, driver->device_get(&device, ordinal), "opening device %d", ordinal);
    info->ordinal = ordinal;
    info->driver_version = driver->version;
    fv_status status;
    FV_TRY_GOTO(status, query_identity(driver, device, info), fail);
    FV_TRY_GOTO(status, query_attributes(driver, device, info), fail);
    return FV_OK;
fail:
    memset(info, 0, sizeof *info);
    return status;
}

fv_status fv_rt_device_arch(int compute_major, int compute_minor, char *arch, size_t size)
{
    if (compute_major <= 0 || compute_minor < 0)
        FV_FAIL(FV_ERR_INTERNAL, "invalid compute capability %d.%d", compute_major,
                compute_minor);
    const char *suffix = compute_major >= 9 ? "a" : "";
    int length = snprintf(arch, size, "sm_%d%d%s", compute_major, compute_minor, suffix);
    if (length < 0 || (size_t)length >= size)
        FV_FAIL(FV_ERR_INTERNAL, "architecture buffer of %zu bytes is too small", size);
    return FV_OK;
}

double fv_rt_device_peak_bandwidth(const fv_rt_device_info *info)
{
    return 2.0 * info->memory_clock_khz * 1e3 * (info->memory_bus_width_bits / 8.0) / 1e9;
}
