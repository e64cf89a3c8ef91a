/* signals.h: SIGINT and SIGTERM (a Slurm time limit) as a flag that the
 * run's loops check: the handler only records the signal (async-signal-safe),
 * and the loops stop, flush and close the archive themselves. */
#ifndef FV_SERVICE_SIGNALS_H
#define FV_SERVICE_SIGNALS_H

#include "common/status.h"

/* Catches SIGINT and SIGTERM (recording the first), and ignores SIGPIPE (a
 * dead worker shows up as EPIPE) and SIGXFSZ (a file-size limit shows up as
 * EFBIG, like a full disk).  FV_ERR_INTERNAL if sigaction fails. */
fv_status fv_signal_install(void);

/* The first SIGINT or SIGTERM received since fv_signal_install, or 0. */
int fv_signal_pending(void);

/* The exit status for a stop by `signal_number`: 128 + the number (130 for
 * SIGINT, 143 for SIGTERM). */
int fv_signal_exit_code(int signal_number);

/* The exit status when the run stops because its GPU worker was killed from
 * outside: that of the signal received, or of SIGTERM (the usual sender,
 * e.g. Slurm) when this process got none. */
int fv_signal_stop_exit_code(void);

#endif
