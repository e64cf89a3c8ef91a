/* plan.h: what the compiler makes of one case on one device: its segments,
 * each segment's scheduler parameters, and each kernel's CUDA source.  Used
 * by `show` and by the pipeline that compiles and runs the kernels. */
#ifndef FV_SERVICE_PLAN_H
#define FV_SERVICE_PLAN_H

#include "segment/segment.h"

typedef struct fv_kernel_plan {
    const fv_segment *segment;     /* borrowed from the plan's segmentation */
    fv_case segment_case;          /* the case seen through the segment's fusion */
    fv_schedule_params params;
    fv_launch_shape launch;
    char name[64];                 /* kernel name: "fv_segment0_inner_reduction" */
    char *source;                  /* CUDA C */
    char hash[65];                 /* SHA-256 of the source */
    char relief_note[256];         /* "emitted again after spilling N bytes: ..." once the
                                      kernel was (fv_plan_relieve_registers), then "bounded to
                                      ..." once it was (fv_plan_hold_occupancy), or "" */
    int compiled_registers;        /* per thread, as NVRTC compiled the source (0 before) */
} fv_kernel_plan;

typedef struct fv_case_plan {
    fv_segmentation segmentation;
    fv_kernel_plan *kernels;       /* one per segment, in execution order */
    int32_t kernel_count;
    char fallback[512];            /* why a family was set aside for these sizes, or "" */
    char selection[512];           /* approach families not selected for the case, and why */
} fv_case_plan;

/* Segments the case, chooses parameters for `device` and emits every
 * kernel.  A family whose parameters do not fit the case's sizes (a row too
 * large for a persistent kernel) is set aside and the case segmented again
 * with the others; `fallback` says so.  FV_ERR_UNSUPPORTED when no scheduler
 * takes a segment; the message names the segment.  On failure the partial
 * plan is freed. */
fv_status fv_plan_case(const fv_case *c, const fv_device *device, fv_case_plan *plan);

/* The same without the families in `excluded` (NULL-terminated), noting
 * `reason` in the fallback text. */
fv_status fv_plan_case_excluding(const fv_case *c, const fv_device *device,
                                 const fv_scheduler *const *excluded, const char *reason,
                                 fv_case_plan *plan);

/* The approach the plan takes: that of its first kernel whose family is an
 * approach (fv_scheduler.approach), or FV_APPROACH_AUTO when none is. */
fv_case_approach fv_plan_approach(const fv_case_plan *plan);

/* Whether any kernel of the plan comes from a family of `approach`. */
bool fv_plan_uses_approach(const fv_case_plan *plan, fv_case_approach approach);

/* For a kernel that spilled `spill_bytes` bytes: the form of it with fewer
 * registers live that its family offers (fv_scheduler.relieve_registers),
 * emitted in place of the kernel, with relief_note "emitted again after
 * spilling N bytes: ..." (kept out of the source and its description, so
 * that the hash does not depend on the compiler's spill count); *relieved
 * true.  *relieved false and the kernel unchanged when the family offers
 * none or the form emits the same source.  On failure (out of memory, an
 * emitter error) the kernel is unchanged. */
fv_status fv_plan_relieve_registers(fv_kernel_plan *kernel, int spill_bytes, bool *relieved);

/* For a kernel whose compiled_registers keep fewer of its blocks on an SM
 * of `device` than its parameters planned: the same kernel bounded to them
 * (fv_scheduler.hold_occupancy), emitted in place of the kernel with
 * "bounded to ..." added to its relief_note; *previous then holds the kernel as it was
 * (its source owned by *previous: fv_plan_restore_kernel puts it back,
 * fv_plan_forget_kernel frees it) and *bounded is true.  *bounded false and
 * the kernel unchanged when the family bounds no such kernel or the form
 * emits the same source.  On failure (out of memory, an emitter error) the
 * kernel is unchanged. */
fv_status fv_plan_hold_occupancy(fv_kernel_plan *kernel, const fv_device *device,
                                 fv_kernel_plan *previous, bool *bounded);

/* Puts back the kernel fv_plan_hold_occupancy replaced (freeing the
 * bounded source); fv_plan_forget_kernel frees the replaced one's source
 * instead, keeping the bounded kernel. */
void fv_plan_restore_kernel(fv_kernel_plan *kernel, fv_kernel_plan *previous);
void fv_plan_forget_kernel(fv_kernel_plan *previous);

void fv_plan_free(fv_case_plan *plan);

/* Host values of a kernel's scalar parameters (doubles, in parameter
 * order); returns the count, at most `capacity`. */
fv_status fv_plan_scalar_arguments(const fv_kernel_plan *kernel, double *values, int capacity,
                                   int *count);

#endif
