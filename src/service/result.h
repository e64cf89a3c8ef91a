/* result.h: the record of one case run (one row of the result archive).
 * Fixed-size fields so that the archive can store rows as an HDF5 compound
 * type that h5py and pandas read directly. */
#ifndef FV_SERVICE_RESULT_H
#define FV_SERVICE_RESULT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum fv_result_status {
    FV_RESULT_PASS = 0,     /* ran and every output within its allowed error */
    FV_RESULT_FAIL,         /* ran, some output mismatched (or a performance regression) */
    FV_RESULT_ERROR,        /* the harness could not run it (bad case file, I/O...) */
    FV_RESULT_CRASH,        /* the GPU worker died (kernel fault) */
    FV_RESULT_TIMEOUT,      /* the GPU worker passed the per-case time limit */
    FV_RESULT_UNSUPPORTED,  /* valid, but no scheduler or feature supports it */
    FV_RESULT_SKIPPED,      /* not run (filtered, resumed, or no GPU when required) */
    FV_RESULT_COMPILED,     /* --compile-only: every kernel compiled */
    FV_RESULT_STATUS_COUNT
} fv_result_status;

/* "pass", "fail", "error", "crash", "timeout", "unsupported", "skipped",
 * "compiled". */
const char *fv_result_status_name(fv_result_status status);

/* Parses a status name; false if unknown. */
bool fv_result_status_parse(const char *name, fv_result_status *status);

/* True for the statuses that make a run fail: fail, error, crash, timeout. */
bool fv_result_status_failed(int32_t status);

/* True for the statuses of a case that did what it was asked: pass, and
 * compiled (--compile-only). */
bool fv_result_status_passed(int32_t status);

#define FV_RESULT_MAX_SAMPLES 256

typedef struct fv_result {
    /* identity */
    char case_id[192];          /* "layer_norm_bwd/bf16/16384x2048/s0" (+ "@ws" when forced) */
    char family[64];            /* case family (definition or sweep name) */
    char dtype[8];              /* the case's dtype: "bf16", "fp16", "fp32" */
    char sizes[64];             /* "16384x2048" */
    uint64_t seed;
    char source[256];           /* case or sweep file it came from */
    char approach[16];          /* requested approach: "auto", "multiwave", "ws" */
    char taken_approach[16];    /* the approach that ran: "multiwave", "ws", or "" when no
                                   family of the plan is one of several approaches */
    char auto_approach[16];     /* the approach --approach auto takes for the case on this
                                   GPU (same values) */
    /* outcome */
    int32_t status;             /* fv_result_status */
    char stage[16];             /* last stage reached: frontend, segment, schedule, codegen,
                                   compile, load, inputs, launch, reference, compare, timing,
                                   repeat, sized copy, done */
    char message[512];          /* why it failed, or "" */
    /* what ran */
    int32_t segment_count;
    char schedulers[128];       /* per segment, "+"-joined: "inner_reduction+outer_reduction" */
    char parameters[1024];      /* each segment's chosen parameters and reasons */
    char kernel_hashes[400];    /* SHA-256 prefixes (16 hex) of each kernel's source, ","-joined */
    char arch[16];              /* "sm_90a" */
    /* kernel resources (worst over the kernels) */
    int32_t registers;          /* max registers per thread */
    int32_t spill_bytes;        /* spill stores + loads, summed */
    int32_t shared_bytes;       /* max static + dynamic shared memory per block */
    int32_t local_bytes;        /* max local (stack) bytes per thread */
    double compile_ms;          /* NVRTC time of kernels not found in the cache */
    int32_t kernels;            /* kernels compiled or loaded */
    int32_t cache_hits;         /* of those, found in the cubin cache */
    /* correctness (worst over outputs) */
    char tolerance[16];         /* "bound" or "nvfuser" */
    int64_t elements;           /* output elements compared */
    int64_t mismatches;
    double worst_ratio;         /* largest error / allowed error */
    double worst_absolute;
    double worst_relative;
    char reference_source[16];  /* "cached", "built", "rebuilt", "on-demand" */
    double reference_ms;        /* reference time (read or evaluate) */
    /* performance */
    int32_t repeats;            /* timed repeats (samples) */
    double time_median_ms, time_min_ms, time_max_ms;
    double io_bytes;            /* fusion input + output bytes, broadcast dims once */
    double bandwidth_gbs;       /* io_bytes / median time */
    double copy_bandwidth_gbs;  /* measured device-to-device copy bandwidth of this GPU */
    double percent_of_copy;     /* bandwidth / copy bandwidth * 100 */
    /* where and when */
    int32_t rank;
    char host[64];
    char gpu_name[64];
    char gpu_uuid[48];
    /* where the time went, besides compile_ms and reference_ms (0 for a
     * stage not reached, and in archives written before these columns) */
    double inputs_ms;           /* device buffers allocated, inputs generated and copied in */
    double outputs_ms;          /* outputs copied back to the host */
    double timing_ms;           /* the timed runs: warmup and repeats, L2 flushes included */
    /* a device-to-device copy of the case's traffic (io_bytes / 2 each way)
     * timed as the case was: what a kernel of this size can reach (0 when not
     * measured: --no-sized-copy, too little free memory, archives before it) */
    double sized_copy_gbs;      /* the copy's traffic (2 x io_bytes / 2, in whole 16-byte
                                   vectors each way) / its median time, GB/s */
    double percent_of_sized_copy; /* bandwidth_gbs / sized_copy_gbs * 100 */
    double wall_ms;             /* whole case, from first stage to the record */
    double finished_at;         /* Unix time the record was made */
    char repro[512];            /* one-line command that reruns just this case */
} fv_result;

/* Zeroes a result and fills identity fields from the arguments. */
void fv_result_init(fv_result *result, const char *case_id, const char *family, const char *dtype,
                    const char *sizes, uint64_t seed, const char *source);

/* Stamps a row made by this process without running the case (a file that
 * does not parse, a case that is gone): this host and the time now. */
void fv_result_stamp_here(fv_result *result);

/* Records a failure: status, stage and message (truncated to fit). */
void fv_result_fail(fv_result *result, fv_result_status status, const char *stage,
                    const char *message);

#endif
