/* pipeline.h: runs one case through the whole pipeline in this process:
 * plan (segment, schedule, emit), compile (NVRTC through the cubin cache),
 * and with a GPU: generate inputs, launch, compare the outputs with the
 * references, and time the kernels.  Case-level problems are recorded in the
 * result; only harness failures are returned as errors. */
#ifndef FV_SERVICE_PIPELINE_H
#define FV_SERVICE_PIPELINE_H

#include "runtime/cache.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/nvrtc.h"
#include "service/plan.h"
#include "service/result.h"
#include "validate/compare.h"
#include "validate/store.h"

typedef struct fv_pipeline_options {
    bool compile_only;          /* stop after NVRTC */
    bool check_outputs;         /* compare with the references (false: timing only, the
                                   result is `skipped` with its timings) */
    const char *arch;           /* NVRTC target; NULL: the device's */
    int warmup;                 /* untimed runs before timing */
    int repeats;                /* timed runs (samples) */
    fv_rt_flush flush;          /* how the L2 is emptied before each timed run */
    bool sized_copy;            /* also time a copy of each timed case's traffic */
    fv_tolerance_policy tolerance;
    fv_store *store;            /* reference store; NULL computes references every time */
    fv_rt_cache *kernel_cache;  /* cubin cache; NULL compiles every time */
    int threads;                /* host threads for inputs and references; 0 = all */
    int64_t memory_budget;      /* evaluator bytes per thread; 0 = default */
} fv_pipeline_options;

typedef struct fv_pipeline fv_pipeline;

/* A pipeline for the GPU `ordinal` of `driver`, or, with driver NULL, for
 * compile-only work against `table_device`.  Measures (or reads from the
 * cache) the GPU's copy bandwidth once.  Fails on CUDA errors. */
fv_status fv_pipeline_open(const fv_pipeline_options *options, fv_rt_driver *driver, int ordinal,
                           const fv_device *table_device, fv_pipeline **pipeline);

void fv_pipeline_close(fv_pipeline *pipeline);

/* The device the kernels are planned for. */
const fv_device *fv_pipeline_device(const fv_pipeline *pipeline);

/* Facts about the GPU (NULL in compile-only mode). */
const fv_rt_device_info *fv_pipeline_gpu(const fv_pipeline *pipeline);

/* Measured device-to-device copy bandwidth in GB/s (0 without a GPU). */
double fv_pipeline_copy_bandwidth(const fv_pipeline *pipeline);

/* Called once per kernel a case compiles, after compiling it, with its
 * source and resources and its place among the plan's kernels (index of
 * count).  A plan compiled again after a kernel spilled (the kernel emitted
 * again in a lighter form, or its family set aside and the case planned
 * again) counts from 0 again, so the sink also sees forms that never run.
 * With a GPU, called once more with `kernel` and `resources` NULL and index
 * -1 when the plan is final, just before its kernels are launched. */
typedef void (*fv_pipeline_kernel_sink)(void *context, const fv_kernel_plan *kernel,
                                        const fv_rt_kernel_resources *resources,
                                        const char *arch, int32_t index, int32_t count);

/* Runs a case and fills *result (status, stage, resources, comparison,
 * timing, bandwidth) and samples[0..*sample_count) with the timed repeats
 * (at most FV_RESULT_MAX_SAMPLES).  `report` (may be NULL) receives the full
 * comparison report of failing outputs.  Returns FV_OK even when the case
 * fails; an error only for harness failures (out of memory, store I/O). */
fv_status fv_pipeline_run(fv_pipeline *pipeline, const fv_case *c, fv_result *result,
                          double *samples, int *sample_count, fv_text *report,
                          fv_pipeline_kernel_sink kernel_sink, void *sink_context);

/* Plans the case and compiles its kernels as fv_pipeline_run does, without
 * running them: a kernel that spills is emitted again in a form with fewer
 * registers live while its family offers one, then its family is set aside
 * and the case planned without it.  *plan is the plan a run would launch
 * (free it with fv_plan_free); `result` gets the case's identity, the plan's
 * description and the kernels' resources; kernel_sink (may be NULL) is
 * called as by fv_pipeline_run (never with index -1).  On failure
 * (FV_ERR_UNSUPPORTED when no family takes a segment, FV_ERR_NVRTC when a
 * kernel does not compile, FV_ERR_INTERNAL when a kernel cannot be emitted
 * again, FV_ERR_NOMEM) nothing is left to free. */
fv_status fv_pipeline_plan_compiled(fv_pipeline *pipeline, const fv_case *c, fv_case_plan *plan,
                                    fv_result *result, fv_pipeline_kernel_sink kernel_sink,
                                    void *sink_context);

/* Bytes a case moves: every input and output once, broadcast dims once. */
double fv_pipeline_io_bytes(const fv_case *c);

#endif
