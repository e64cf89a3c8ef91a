/* compare_command.c: `fuservalidate compare OLD.h5 NEW.h5 [--threshold PERCENT]
 * [--alpha A] [--junit FILE]`: the regressions of NEW against OLD, printed,
 * optionally as JUnit, with the exit status 0 (none), 1 (a new failure or a
 * performance regression) or 2 (the harness failed). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/commands.h"
#include "service/compare.h"
#include "service/options.h"

enum { OPTION_THRESHOLD = 1000, OPTION_ALPHA, OPTION_JUNIT, OPTION_HELP };

static const struct option compare_options[] = {
    {"threshold", required_argument, NULL, OPTION_THRESHOLD},
    {"alpha", required_argument, NULL, OPTION_ALPHA},
    {"junit", required_argument, NULL, OPTION_JUNIT},
    {"help", no_argument, NULL, OPTION_HELP},
    {NULL, 0, NULL, 0},
};

typedef struct compare_arguments {
    const char *old_path, *new_path;
    const char *junit_path;      /* NULL: no JUnit file */
    fv_compare_options options;
    bool help;
} compare_arguments;

static void print_compare_usage(FILE *stream)
{
    fprintf(stream,
            "usage: fuservalidate compare OLD.h5 NEW.h5 [--threshold PERCENT] [--alpha A] "
            "[--junit FILE]\n"
            "  --threshold PERCENT  slowdown of the median that counts as a regression "
            "(default %g)\n"
            "  --alpha A            significance of the two-sided Mann-Whitney U test "
            "(default %g)\n"
            "  --junit FILE         also write NEW's results and the regressions as JUnit XML\n"
            "exit status: 0 no new failure or regression, 1 some, 2 the harness failed\n",
            FV_COMPARE_DEFAULT_THRESHOLD * 100, FV_COMPARE_DEFAULT_ALPHA);
}

static fv_status parse_arguments(int argc, char **argv, compare_arguments *arguments)
{
    memset(arguments, 0, sizeof *arguments);
    arguments->options = fv_compare_default_options();
    optind = 1;
    opterr = 0;
    int option;
    double value;
    while ((option = getopt_long(argc, argv, "", compare_options, NULL)) != -1) {
        switch (option) {
        case OPTION_THRESHOLD:
            if (!fv_options_parse_number(optarg, &value) || value < 0 || value > 10000)
                FV_FAIL(FV_ERR_USAGE, "--threshold needs a percentage like 5, not '%s'", optarg);
            arguments->options.threshold = value / 100;
            break;
        case OPTION_ALPHA:
            if (!fv_options_parse_number(optarg, &value) || !(value > 0 && value < 1))
                FV_FAIL(FV_ERR_USAGE, "--alpha needs a level between 0 and 1 like 0.01, not '%s'",
                        optarg);
            arguments->options.alpha = value;
            break;
        case OPTION_JUNIT: arguments->junit_path = optarg; break;
        case OPTION_HELP: arguments->help = true; return FV_OK;
        case ':': FV_FAIL(FV_ERR_USAGE, "%s needs a value", argv[optind - 1]);
        default: FV_FAIL(FV_ERR_USAGE, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        FV_FAIL(FV_ERR_USAGE, "compare needs two archives, OLD and NEW (got %d)", argc - optind);
    arguments->old_path = argv[optind];
    arguments->new_path = argv[optind + 1];
    return FV_OK;
}

int fv_command_compare(int argc, char **argv)
{
    compare_arguments arguments;
    if (parse_arguments(argc, argv, &arguments) != FV_OK) {
        fprintf(stderr, "fuservalidate compare: %s\n", fv_error_message());
        print_compare_usage(stderr);
        return 2;
    }
    if (arguments.help) {
        print_compare_usage(stdout);
        return 0;
    }
    fv_compare_report report;
    if (fv_compare_archives(arguments.old_path, arguments.new_path, &arguments.options,
                            &report) != FV_OK) {
        fprintf(stderr, "fuservalidate compare: %s\n", fv_error_message());
        return 2;
    }
    fv_compare_print(&report, stdout);
    fflush(stdout);
    int exit_code = fv_compare_exit_status(&report);
    if (arguments.junit_path != NULL) {
        if (fv_compare_write_junit(&report, arguments.junit_path) == FV_OK) {
            printf("junit %s\n", arguments.junit_path);
        } else {
            fprintf(stderr, "fuservalidate compare: %s\n", fv_error_message());
            exit_code = 2;
        }
    }
    fv_compare_report_free(&report);
    return exit_code;
}
