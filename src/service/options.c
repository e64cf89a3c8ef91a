/* options.c: option parsing with getopt_long, and case selection. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/options.h"
#include "service/plan.h"
#include "schedule/device.h"
#include "validate/store.h"

enum {
    OPTION_REFS = 1000,
    OPTION_FILTER,
    OPTION_MAX_REF_BYTES,
    OPTION_MEMORY_BUDGET,
    OPTION_INCLUDE_LARGE,
    OPTION_NO_VERIFY,
    OPTION_TOLERANCE,
    OPTION_COMPILE_ONLY,
    OPTION_NO_CHECK,
    OPTION_APPROACH,
    OPTION_THRESHOLD,
    OPTION_ALPHA,
    OPTION_REQUIRE_GPU,
    OPTION_DEVICE,
    OPTION_ARCH,
    OPTION_REPEATS,
    OPTION_FLUSH,
    OPTION_NO_SIZED_COPY,
    OPTION_WARMUP,
    OPTION_KERNEL_CACHE,
    OPTION_NO_KERNEL_CACHE,
    OPTION_IR,
    OPTION_SEGMENTS,
    OPTION_CUDA,
    OPTION_TIMEOUT,
    OPTION_RESUME,
    OPTION_BASELINE,
    OPTION_JUNIT,
    OPTION_LOCAL_RANK,
    OPTION_PARENT_PID,
};

static const struct option long_options[] = {
    {"refs", required_argument, NULL, OPTION_REFS},
    {"filter", required_argument, NULL, OPTION_FILTER},
    {"jobs", required_argument, NULL, 'j'},
    {"max-ref-bytes", required_argument, NULL, OPTION_MAX_REF_BYTES},
    {"memory-budget", required_argument, NULL, OPTION_MEMORY_BUDGET},
    {"include-large", no_argument, NULL, OPTION_INCLUDE_LARGE},
    {"no-verify", no_argument, NULL, OPTION_NO_VERIFY},
    {"tolerance", required_argument, NULL, OPTION_TOLERANCE},
    {"compile-only", no_argument, NULL, OPTION_COMPILE_ONLY},
    {"no-check", no_argument, NULL, OPTION_NO_CHECK},
    {"approach", required_argument, NULL, OPTION_APPROACH},
    {"require-gpu", no_argument, NULL, OPTION_REQUIRE_GPU},
    {"device", required_argument, NULL, OPTION_DEVICE},
    {"arch", required_argument, NULL, OPTION_ARCH},
    {"repeats", required_argument, NULL, OPTION_REPEATS},
    {"flush", required_argument, NULL, OPTION_FLUSH},
    {"no-sized-copy", no_argument, NULL, OPTION_NO_SIZED_COPY},
    {"warmup", required_argument, NULL, OPTION_WARMUP},
    {"output", required_argument, NULL, 'o'},
    {"kernel-cache", required_argument, NULL, OPTION_KERNEL_CACHE},
    {"no-kernel-cache", no_argument, NULL, OPTION_NO_KERNEL_CACHE},
    {"ir", no_argument, NULL, OPTION_IR},
    {"segments", no_argument, NULL, OPTION_SEGMENTS},
    {"cuda", no_argument, NULL, OPTION_CUDA},
    {"timeout", required_argument, NULL, OPTION_TIMEOUT},
    {"resume", required_argument, NULL, OPTION_RESUME},
    {"baseline", required_argument, NULL, OPTION_BASELINE},
    {"junit", required_argument, NULL, OPTION_JUNIT},
    {"threshold", required_argument, NULL, OPTION_THRESHOLD},
    {"alpha", required_argument, NULL, OPTION_ALPHA},
    {"local-rank", required_argument, NULL, OPTION_LOCAL_RANK},
    {"parent-pid", required_argument, NULL, OPTION_PARENT_PID},
    {NULL, 0, NULL, 0},
};

bool fv_options_parse_size(const char *text, int64_t *bytes)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno != 0 || end == text || !(value >= 0))
        return false;
    double scale = 1;
    switch (*end) {
    case 'K': case 'k': scale = 1024.0; end++; break;
    case 'M': case 'm': scale = 1024.0 * 1024; end++; break;
    case 'G': case 'g': scale = 1024.0 * 1024 * 1024; end++; break;
    case 'T': case 't': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || value * scale > 9.0e18)
        return false;
    *bytes = (int64_t)(value * scale);
    return true;
}

static bool parse_count(const char *text, int *count)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > 4096)
        return false;
    *count = (int)value;
    return true;
}

bool fv_options_parse_number(const char *text, double *value)
{
    char *end;
    errno = 0;
    double parsed = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(parsed))
        return false;
    *value = parsed;
    return true;
}

/* Seconds: a positive number up to a week. */
static bool parse_seconds(const char *text, double *seconds)
{
    double value;
    if (!fv_options_parse_number(text, &value) || !(value > 0) || value > 7 * 86400.0)
        return false;
    *seconds = value;
    return true;
}

static bool parse_pid(const char *text, long *pid)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > 0x7fffffffL)
        return false;
    *pid = value;
    return true;
}

static const char *default_refs_dir(void)
{
    static char buffer[1024];
    const char *configured = getenv("FV_REFS_DIR");
    if (configured != NULL && configured[0] != '\0')
        return configured;
    const char *home = getenv("HOME");
    snprintf(buffer, sizeof buffer, "%s/.cache/fuservalidate/refs",
             home != NULL && home[0] != '\0' ? home : ".");
    return buffer;
}

fv_status fv_options_parse(const char *command, int argc, char **argv, fv_options *options)
{
    memset(options, 0, sizeof *options);
    options->command = command;
    options->refs_dir = default_refs_dir();
    options->max_ref_bytes = FV_STORE_DEFAULT_MAX_BYTES;
    options->verify = true;
    options->regression_threshold = -1;
    options->regression_alpha = -1;
    options->tolerance = FV_TOLERANCE_BOUND;
    options->repeats = 20;
    options->warmup = 3;
    options->timeout_s = 600;
    optind = 1;
    opterr = 0;
    int option;
    while ((option = getopt_long(argc, argv, "j:o:", long_options, NULL)) != -1) {
        switch (option) {
        case OPTION_REFS: options->refs_dir = optarg; break;
        case OPTION_FILTER: options->filter = optarg; break;
        case 'j':
            if (!parse_count(optarg, &options->threads))
                FV_FAIL(FV_ERR_USAGE, "-j needs a thread count, not '%s'", optarg);
            break;
        case OPTION_MAX_REF_BYTES:
            if (!fv_options_parse_size(optarg, &options->max_ref_bytes))
                FV_FAIL(FV_ERR_USAGE, "--max-ref-bytes needs a size like 512M or 2G, not '%s'",
                        optarg);
            break;
        case OPTION_MEMORY_BUDGET:
            if (!fv_options_parse_size(optarg, &options->memory_budget))
                FV_FAIL(FV_ERR_USAGE, "--memory-budget needs a size like 256M, not '%s'", optarg);
            break;
        case OPTION_INCLUDE_LARGE: options->include_large = true; break;
        case OPTION_NO_VERIFY: options->verify = false; break;
        case OPTION_TOLERANCE:
            if (!fv_tolerance_parse(optarg, &options->tolerance))
                FV_FAIL(FV_ERR_USAGE, "--tolerance is bound or nvfuser, not '%s'", optarg);
            break;
        case OPTION_FLUSH:
            if (!fv_rt_flush_parse(optarg, &options->flush) || options->flush == FV_RT_FLUSH_NONE)
                FV_FAIL(FV_ERR_USAGE, "--flush is memset or read, not '%s'", optarg);
            break;
        case OPTION_NO_SIZED_COPY: options->no_sized_copy = true; break;
        case OPTION_COMPILE_ONLY: options->compile_only = true; break;
        case OPTION_NO_CHECK: options->no_check = true; break;
        case OPTION_APPROACH:
            options->approach_all = strcmp(optarg, "all") == 0;
            if (!options->approach_all && !fv_case_approach_parse(optarg, &options->approach))
                FV_FAIL(FV_ERR_USAGE, "--approach needs auto, multiwave, ws or all, not '%s'",
                        optarg);
            break;
        case OPTION_REQUIRE_GPU: options->require_gpu = true; break;
        case OPTION_DEVICE: options->device = optarg; break;
        case OPTION_ARCH:
            if (!fv_sched_parse_arch(optarg, &(int){0}, &(int){0}))
                FV_FAIL(FV_ERR_USAGE, "--arch needs a target like sm_90a or sm_100a, not '%s'",
                        optarg);
            options->arch = optarg;
            break;
        case OPTION_REPEATS:
            if (!parse_count(optarg, &options->repeats) || options->repeats < 1 ||
                options->repeats > 256)
                FV_FAIL(FV_ERR_USAGE, "--repeats needs 1 to 256, not '%s'", optarg);
            break;
        case OPTION_WARMUP:
            if (!parse_count(optarg, &options->warmup))
                FV_FAIL(FV_ERR_USAGE, "--warmup needs a count, not '%s'", optarg);
            break;
        case 'o': options->output = optarg; break;
        case OPTION_KERNEL_CACHE: options->kernel_cache = optarg; break;
        case OPTION_NO_KERNEL_CACHE: options->no_kernel_cache = true; break;
        case OPTION_IR: options->show_ir = true; break;
        case OPTION_SEGMENTS: options->show_segments = true; break;
        case OPTION_CUDA: options->show_cuda = true; break;
        case OPTION_TIMEOUT:
            if (!parse_seconds(optarg, &options->timeout_s))
                FV_FAIL(FV_ERR_USAGE, "--timeout needs a number of seconds, not '%s'", optarg);
            break;
        case OPTION_RESUME: options->resume = optarg; break;
        case OPTION_BASELINE: options->baseline = optarg; break;
        case OPTION_JUNIT: options->junit = optarg; break;
        case OPTION_THRESHOLD: {
            double percent;
            if (!fv_options_parse_number(optarg, &percent) || percent < 0 || percent > 1000)
                FV_FAIL(FV_ERR_USAGE, "--threshold needs a percentage like 5, not '%s'", optarg);
            options->regression_threshold = percent / 100;
            break;
        }
        case OPTION_ALPHA: {
            double alpha;
            if (!fv_options_parse_number(optarg, &alpha) || !(alpha > 0 && alpha < 1))
                FV_FAIL(FV_ERR_USAGE, "--alpha needs a level between 0 and 1 like 0.01, not '%s'",
                        optarg);
            options->regression_alpha = alpha;
            break;
        }
        case OPTION_LOCAL_RANK:
            if (!parse_count(optarg, &options->local_rank))
                FV_FAIL(FV_ERR_USAGE, "--local-rank needs a rank, not '%s'", optarg);
            break;
        case OPTION_PARENT_PID:
            if (!parse_pid(optarg, &options->parent_pid))
                FV_FAIL(FV_ERR_USAGE, "--parent-pid needs a process id, not '%s'", optarg);
            break;
        case ':':
            FV_FAIL(FV_ERR_USAGE, "%s needs a value", argv[optind - 1]);
        default:
            FV_FAIL(FV_ERR_USAGE, "unknown option '%s'", argv[optind - 1]);
        }
    }
    options->path_count = argc - optind;
    options->paths = calloc((size_t)options->path_count + 1, sizeof(char *));
    FV_CHECK_ALLOC(options->paths);
    for (int i = 0; i < options->path_count; i++)
        options->paths[i] = argv[optind + i];
    return FV_OK;
}

void fv_options_free(fv_options *options)
{
    free(options->paths);
    options->paths = NULL;
}

fv_status fv_options_select_cases(const fv_options *options, fv_case_list *list,
                                  fv_case ***selected, int32_t *count)
{
    static const char *const default_paths[] = {"cases"};
    const char *const *paths = options->path_count > 0 ? options->paths : default_paths;
    int path_count = options->path_count > 0 ? options->path_count : 1;
    FV_TRY(fv_frontend_collect(paths, path_count, list));
    *selected = calloc((size_t)list->count + 1, sizeof(fv_case *));
    FV_CHECK_ALLOC(*selected);
    *count = 0;
    for (int32_t i = 0; i < list->count; i++)
        if (options->filter == NULL || fnmatch(options->filter, list->cases[i]->id, 0) == 0)
            (*selected)[(*count)++] = list->cases[i];
    return FV_OK;
}

/* Whether a warp-specialized family takes a kernel of the case when forced. */
static bool warp_specialized_applies(const fv_case *c, const fv_device *device)
{
    fv_case forced = *c;
    forced.approach = FV_APPROACH_WS;
    fv_case_plan plan;
    if (fv_plan_case(&forced, device, &plan) != FV_OK) {
        fv_error_clear();
        return false;
    }
    bool applies = fv_plan_uses_approach(&plan, FV_APPROACH_WS);
    fv_plan_free(&plan);
    return applies;
}

static fv_status list_append(fv_case_list *list, fv_case *c)
{
    if (list->count == list->capacity) {
        int32_t capacity = list->capacity ? 2 * list->capacity : 64;
        fv_case **grown = realloc(list->cases, sizeof *grown * (size_t)capacity);
        if (grown == NULL) {
            fv_case_free(c);
            FV_FAIL(FV_ERR_NOMEM, "out of memory adding case %s", c->id);
        }
        list->cases = grown;
        list->capacity = capacity;
    }
    list->cases[list->count++] = c;
    return FV_OK;
}

fv_status fv_options_apply_approach(const fv_options *options, const fv_device *device,
                                    fv_case_list *list, fv_case ***selected, int32_t *count)
{
    if (!options->approach_all) {
        for (int32_t i = 0; options->approach != FV_APPROACH_AUTO && i < *count; i++)
            fv_case_with_approach((*selected)[i], options->approach);
        return FV_OK;
    }
    fv_case **expanded = calloc((size_t)(2 * *count) + 1, sizeof *expanded);
    FV_CHECK_ALLOC(expanded);
    int32_t kept = 0;
    fv_status status = FV_OK;
    for (int32_t i = 0; i < *count && status == FV_OK; i++) {
        fv_case *c = (*selected)[i];
        if (!warp_specialized_applies(c, device)) {
            expanded[kept++] = c;
            continue;
        }
        fv_case *ws = NULL;
        status = fv_case_clone(c, &ws);
        if (status == FV_OK)
            status = list_append(list, ws);
        if (status != FV_OK)
            break;
        fv_case_with_approach(c, FV_APPROACH_MULTIWAVE);
        fv_case_with_approach(ws, FV_APPROACH_WS);
        expanded[kept++] = c;
        expanded[kept++] = ws;
    }
    if (status != FV_OK) {
        free(expanded);
        return status;
    }
    free(*selected);
    *selected = expanded;
    *count = kept;
    return FV_OK;
}

fv_status fv_options_planning_device(const fv_options *options, fv_device *device)
{
    const char *name = options->device ? options->device : "H100";
    int major = 9, minor = 0;
    if (!options->device && options->arch && fv_sched_parse_arch(options->arch, &major, &minor))
        name = major >= 10 ? "B200" : "H100";
    return fv_sched_device_from_table(name, device);
}
