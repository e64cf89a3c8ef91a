/* cli.c: sub-command dispatch for fuservalidate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "service/cli.h"
#include "service/commands.h"

static void print_usage(FILE *stream)
{
    fprintf(stream,
            "usage: fuservalidate [run] [options] PATH...      run cases (files, sweeps, directories)\n"
            "       fuservalidate show CASE-ID|FILE [PATH...]  print a case: inputs, outputs, IR\n"
            "       fuservalidate refs [options] PATH...       build or verify reference store\n"
            "       fuservalidate compare OLD.h5 NEW.h5 [--threshold PERCENT] [--alpha A]\n"
            "                             [--junit FILE]   regressions of NEW against OLD\n"
            "       fuservalidate --version\n"
            "       (under mpirun or srun, every rank runs the same command; rank 0 hands out\n"
            "       the cases and writes the archive)\n"
            "options:\n"
            "  --refs DIR             reference store (default $FV_REFS_DIR or\n"
            "                         ~/.cache/fuservalidate/refs)\n"
            "  --filter GLOB          only cases whose id matches GLOB\n"
            "  -j, --jobs N           threads for references (default: all cores)\n"
            "  --max-ref-bytes SIZE   keep references up to SIZE per case (default 2G)\n"
            "  --memory-budget SIZE   evaluator buffers per thread (default 1M)\n"
            "  --include-large        refs: evaluate cases above the size limit (not stored)\n"
            "  --no-verify            refs: trust stored entries without reading them back\n"
            "  --tolerance POLICY     bound (default) or nvfuser\n"
            "  -o, --output FILE      result archive (default fuservalidate-DATE-PID.h5)\n"
            "  --compile-only         stop after NVRTC (the default without a GPU)\n"
            "  --approach A           auto (nvFuser's rules), multiwave, ws (forced: the\n"
            "                         warp-specialized TMA kernels; ids get @ws) or all\n"
            "                         (each case once per approach it can take)\n"
            "  --no-check             time kernels without checking their outputs against the\n"
            "                         references (benchmarks; results are `skipped`)\n"
            "  --require-gpu          no GPU is a harness failure\n"
            "  --device NAME          built-in device for compile-only: H100, H200, B200, GB200\n"
            "  --arch ARCH            NVRTC target, e.g. sm_90a or sm_100a; show compiles the\n"
            "                         case for it as a run would (registers, spills)\n"
            "  --ir, --segments, --cuda  show: only these parts\n"
            "  --repeats N, --warmup N  timed and untimed runs per case (default 20, 3)\n"
            "  --flush memset|read    how the L2 is emptied before each timed run (default\n"
            "                         memset, as nvbench; read leaves no dirty lines)\n"
            "  --no-sized-copy        do not time, beside each case, a copy of its bytes\n"
            "                         (the reference for short kernels: %% of a same-size copy)\n"
            "  --kernel-cache DIR     cubin cache (default $FV_KERNEL_CACHE or\n"
            "                         ~/.cache/fuservalidate/kernels); --no-kernel-cache\n"
            "  --timeout SECONDS      per case; a worker past it is killed, the case is a\n"
            "                         timeout (default 600)\n"
            "  --resume ARCHIVE       finish an interrupted run: cases with a row are not run\n"
            "                         again, the others are appended to ARCHIVE\n"
            "  --baseline OLD.h5      an earlier archive: its durations order the cases, and\n"
            "                         at the end the run is compared with it (new failures,\n"
            "                         changed kernels, regressions: exit status 1)\n"
            "  --threshold PERCENT    slowdown that counts as a regression (default 5)\n"
            "  --alpha A              significance of the Mann-Whitney U test (default 0.01)\n"
            "  --junit FILE           JUnit XML report (with --baseline, regressions fail)\n"
            "exit status: 0 all passed, 1 some case failed, crashed or timed out,\n"
            "             2 the harness failed, 130/143 stopped by SIGINT/SIGTERM\n");
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
    /* compare has options of its own. */
    if (argc >= 2 && strcmp(argv[1], "compare") == 0)
        return fv_command_compare(argc - 1, argv + 1);
    const char *command = "run";
    int skip = 1;
    if (argc >= 2 && (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "show") == 0 ||
                      strcmp(argv[1], "refs") == 0 || strcmp(argv[1], "worker") == 0)) {
        command = argv[1];
        skip = 2;
    }
    /* getopt_long sees the arguments after the sub-command as argv[1...];
     * it reorders them, so it gets a copy of the pointers. */
    char **arguments = calloc((size_t)argc + 1, sizeof(char *));
    if (arguments == NULL) {
        fprintf(stderr, "fuservalidate: out of memory\n");
        return 2;
    }
    arguments[0] = argv[0];
    for (int i = skip; i < argc; i++)
        arguments[i - skip + 1] = argv[i];
    fv_options options;
    fv_status status = fv_options_parse(command, argc - skip + 1, arguments, &options);
    if (status != FV_OK) {
        fprintf(stderr, "fuservalidate: %s\n", fv_error_message());
        print_usage(stderr);
        fv_options_free(&options);
        free(arguments);
        return fv_status_exit_code(status);
    }
    int exit_code;
    if (strcmp(command, "show") == 0)
        exit_code = fv_command_show(&options);
    else if (strcmp(command, "refs") == 0)
        exit_code = fv_command_refs(&options);
    else if (strcmp(command, "worker") == 0)
        exit_code = fv_command_worker(&options);
    else
        exit_code = fv_command_run(&options, argc, argv);
    free(arguments);
    fv_options_free(&options);
    return exit_code;
}
