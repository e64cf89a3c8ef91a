/* cli.c: sub-command dispatch and option parsing for fuservalidate. */
#include <stdio.h>
#include <string.h>

#include "common/status.h"
#include "service/cli.h"

static void print_usage(FILE *stream)
{
    fprintf(stream,
            "usage: fuservalidate [run] [options] PATH...   run cases (files, sweeps, directories)\n"
            "       fuservalidate show CASE                 print IR, segments, schedule, CUDA\n"
            "       fuservalidate refs PATH... [--refs DIR] [-j N]   build or verify references\n"
            "       fuservalidate compare OLD.h5 NEW.h5     report regressions between archives\n"
            "       fuservalidate --version\n");
}

int fv_cli_main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("fuservalidate %s (%s)\n", FV_VERSION, FV_GIT_REVISION);
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        print_usage(stdout);
        return 0;
    }
    print_usage(stderr);
    return fv_status_exit_code(FV_ERR_USAGE);
}
