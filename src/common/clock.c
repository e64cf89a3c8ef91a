/* clock.c: the monotonic clock (see clock.h). */
#include "common/clock.h"

#include <time.h>

double fv_monotonic_seconds(void)
{
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + 1e-9 * (double)time.tv_nsec;
}
