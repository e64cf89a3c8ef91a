/* cli.h: the command line of fuservalidate (run, show, refs, compare, worker). */
#ifndef FV_SERVICE_CLI_H
#define FV_SERVICE_CLI_H

/* Runs the program with its arguments and returns the process exit status:
 * 0 every case passed, 1 some case failed, 2 the harness itself failed. */
int fv_cli_main(int argc, char **argv);

#endif
