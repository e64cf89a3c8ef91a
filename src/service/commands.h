/* commands.h: the sub-commands.  Each returns the process exit status:
 * 0 everything passed, 1 some case failed, 2 the harness itself failed. */
#ifndef FV_SERVICE_COMMANDS_H
#define FV_SERVICE_COMMANDS_H

#include "service/options.h"

int fv_command_refs(const fv_options *options);
int fv_command_show(const fv_options *options);
/* argc/argv: the whole command line, recorded in the archive (and given to
 * MPI_Init when an MPI launcher started the process).  Also returns 130 or
 * 143 when SIGINT or SIGTERM stopped the run. */
int fv_command_run(const fv_options *options, int argc, char **argv);

/* `compare OLD.h5 NEW.h5 [options]`; argv[0] is "compare" (service/compare.h). */
int fv_command_compare(int argc, char **argv);

/* The GPU worker process that `run` starts on each rank (service/worker.h);
 * not for people to start by hand. */
int fv_command_worker(const fv_options *options);

/* Prints each collected file error as "error: path:line:col: message". */
void fv_command_print_case_errors(const fv_case_list *list);

/* Peak resident memory of this process so far, in bytes. */
int64_t fv_command_peak_memory(void);

#endif
