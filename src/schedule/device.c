/* device.c: the built-in device table and arch strings. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "schedule/device.h"

/* Published figures: SM counts, 64K registers and 228 KiB shared memory per
 * SM (227 KiB = 232448 bytes per block with opt-in), L2 sizes and datasheet
 * HBM bandwidth. */
static const struct {
    const char *aliases[3];
    fv_device device;
} table[] = {
    {{"H100", "H100-SXM", NULL},
     {"H100 SXM (table)", 9, 0, "sm_90a", 132, 1024, 2048, 65536, 65536, 233472, 232448,
      50 << 20, 3350, false}},
    {{"H200", NULL, NULL},
     {"H200 (table)", 9, 0, "sm_90a", 132, 1024, 2048, 65536, 65536, 233472, 232448, 50 << 20,
      4800, false}},
    {{"B200", NULL, NULL},
     {"B200 (table)", 10, 0, "sm_100a", 148, 1024, 2048, 65536, 65536, 233472, 232448,
      126 << 20, 8000, false}},
    {{"GB200", NULL, NULL},
     {"GB200 (table)", 10, 0, "sm_100a", 152, 1024, 2048, 65536, 65536, 233472, 232448,
      126 << 20, 8000, false}},
};

fv_status fv_sched_device_from_table(const char *name, fv_device *device)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        for (int a = 0; a < 3 && table[i].aliases[a]; a++)
            if (strcasecmp(name, table[i].aliases[a]) == 0) {
                *device = table[i].device;
                return FV_OK;
            }
    FV_FAIL(FV_ERR_USAGE, "unknown device '%s' (known: H100, H200, B200, GB200)", name);
}

const char *const *fv_sched_device_names(void)
{
    static const char *const names[] = {"H100", "H200", "B200", "GB200", NULL};
    return names;
}

void fv_sched_arch_for(int major, int minor, char *arch, size_t size)
{
    bool accelerated = (major == 9 && minor == 0) || (major == 10 && minor == 0);
    snprintf(arch, size, "sm_%d%d%s", major, minor, accelerated ? "a" : "");
}

bool fv_sched_parse_arch(const char *arch, int *major, int *minor)
{
    int number = 0;
    char suffix = '\0';
    int consumed = 0;
    if (sscanf(arch, "sm_%d%c%n", &number, &suffix, &consumed) < 1)
        return false;
    if (number < 50 || number > 199)
        return false;
    *major = number / 10;
    *minor = number % 10;
    return true;
}
