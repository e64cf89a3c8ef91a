/* options.h: the command-line options shared by the sub-commands, and the
 * case selection they all start from. */
#ifndef FV_SERVICE_OPTIONS_H
#define FV_SERVICE_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/status.h"
#include "frontend/frontend.h"
#include "runtime/launch.h"
#include "schedule/device.h"
#include "validate/compare.h"

typedef struct fv_options {
    const char *command;        /* "run", "show", "refs", "worker" */
    const char **paths;         /* positional arguments */
    int path_count;
    const char *refs_dir;       /* reference store directory */
    const char *filter;         /* glob over case ids, or NULL */
    int threads;                /* -j; 0 = all cores */
    int64_t max_ref_bytes;      /* store size policy */
    int64_t memory_budget;      /* evaluator bytes per thread; 0 = default */
    bool include_large;         /* refs: evaluate cases above the limit too */
    bool verify;                /* refs: read stored entries back whole */
    fv_tolerance_policy tolerance;
    bool compile_only;          /* stop after NVRTC */
    bool no_check;              /* run: time kernels without checking outputs (benchmarks) */
    fv_case_approach approach;  /* --approach: auto (default), multiwave or ws */
    bool approach_all;          /* --approach all: each case once per applicable approach */
    bool require_gpu;           /* no GPU is a harness failure, not compile-only */
    const char *device;         /* built-in device for --compile-only ("H100", "B200"...) */
    const char *arch;           /* NVRTC target override ("sm_90a", "sm_100a") */
    int repeats, warmup;        /* timing */
    fv_rt_flush flush;          /* --flush: how the L2 is emptied before each timed run
                                   (memset, the default, or read) */
    bool no_sized_copy;         /* run: do not time a copy of each case's traffic */
    const char *output;         /* result archive path, or NULL for the default */
    const char *kernel_cache;   /* cubin cache directory, or NULL for the default */
    bool no_kernel_cache;
    bool show_ir, show_segments, show_cuda; /* show: the parts asked for (none = all) */
    double timeout_s;           /* run: per-case limit, seconds (default 600) */
    const char *resume;         /* run: archive of an interrupted run to complete, or NULL */
    const char *baseline;       /* run: archive of an earlier run to compare with, or NULL */
    const char *junit;          /* run: JUnit XML file to write, or NULL */
    double regression_threshold; /* run --baseline: slowdown fraction; < 0: default */
    double regression_alpha;    /* run --baseline: significance; <= 0: default */
    int local_rank;             /* worker: the rank's index on its node (picks the GPU) */
    long parent_pid;            /* worker: the rank's pid; 0 = do not check */
} fv_options;

/* Parses argv (after the sub-command) into *options.  FV_ERR_USAGE with a
 * message for unknown options or bad values.  Defaults: refs dir from
 * $FV_REFS_DIR or ~/.cache/fuservalidate/refs, all cores, 2 GiB limit. */
fv_status fv_options_parse(const char *command, int argc, char **argv, fv_options *options);

/* Frees what fv_options_parse allocated. */
void fv_options_free(fv_options *options);

/* Parses a whole argument as a finite number.  False if malformed. */
bool fv_options_parse_number(const char *text, double *value);

/* Parses "512", "64K", "2G" (binary units) into bytes.  False if malformed. */
bool fv_options_parse_size(const char *text, int64_t *bytes);

/* The cases the paths name (default "cases" when none is given) that pass
 * the filter, in collection order; unreadable or malformed files are in
 * list->errors.  *selected points into list->cases (caller frees the array,
 * and the list with fv_case_list_free).  FV_ERR_NOT_FOUND for a missing path. */
fv_status fv_options_select_cases(const fv_options *options, fv_case_list *list,
                                  fv_case ***selected, int32_t *count);

/* Applies --approach to the selected cases of `list`: a forced approach
 * marks every case ("...@ws"); `all` replaces each case that the
 * warp-specialized approach can take (planned on `device`) by one case per
 * approach, "...@multiwave" and "...@ws", added to the list (which owns
 * them); *selected and *count are updated.  FV_ERR_NOMEM. */
fv_status fv_options_apply_approach(const fv_options *options, const fv_device *device,
                                    fv_case_list *list, fv_case ***selected, int32_t *count);

/* The built-in device that show and rank 0 plan for: --device, else B200
 * for an --arch of compute capability 10 or more, else H100.  FV_ERR_USAGE
 * for an unknown --device. */
fv_status fv_options_planning_device(const fv_options *options, fv_device *device);

#endif
