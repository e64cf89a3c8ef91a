/* clock.h: the monotonic clock that timeouts, flush intervals and wall
 * times are measured with. */
#ifndef FV_COMMON_CLOCK_H
#define FV_COMMON_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin; only differences mean
 * anything).  Never fails on Linux. */
double fv_monotonic_seconds(void);

#endif
