/* schedule.h: scheduler families behind one table of function pointers.
 *
 * A segment (a part of a fusion that becomes one kernel) is seen through its
 * canonical view: its axis classes are merged, outer to inner, into at most
 * two canonical axes whenever adjacent classes are spanned by the same tensors
 * and reduced alike, so a [B, S, H] layer norm is scheduled as [B*S, H] and a
 * purely element-wise [N, H] fusion as one flat axis.  Each family decides
 * whether it accepts a segment, chooses parameters for a case on a device,
 * emits the CUDA source, and gives the launch shape.  Nothing outside a family
 * switches on the family: callers go through the table.
 */
#ifndef FV_SCHEDULE_SCHEDULE_H
#define FV_SCHEDULE_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/text.h"
#include "ir/axes.h"
#include "ir/case.h"
#include "schedule/device.h"

#define FV_CANONICAL_MAX_AXES 2

/* A segment as a scheduler sees it. */
typedef struct fv_segment_view {
    const fv_fusion *fusion;  /* the segment as a fusion (its own inputs and outputs) */
    int32_t *order;           /* its live ops, topological */
    int32_t op_count;
    fv_axes axes;
    int axis_count;           /* canonical axes: 0 (scalars), 1 [inner] or 2 [outer, inner] */
    int32_t axis_classes[FV_CANONICAL_MAX_AXES][FV_MAX_RANK]; /* classes in each, outer first */
    int axis_class_count[FV_CANONICAL_MAX_AXES];
    uint8_t *spans;           /* per value id: bit a set = spans canonical axis a */
    uint8_t reduced_axes;     /* bit a: some reduction reduces canonical axis a */
    bool *after_reduction;    /* per value id: depends on a reduction in the segment */
    bool canonical;           /* false: the segment has no canonical view (see why) */
    char why[256];
} fv_segment_view;

/* Builds the view of a segment fusion.  A segment without a canonical view
 * (more than two canonical axes, a tensor spanning part of a merged axis, a
 * non-contiguous or permuted input, a broken reshape) is still returned with
 * canonical = false and the reason in `why`; only allocation fails. */
fv_status fv_sched_view_build(const fv_fusion *segment, fv_segment_view *view);
void fv_sched_view_free(fv_segment_view *view);

/* Extent of canonical axis `axis` in a case (product of its classes'
 * extents); 1 for a missing axis. */
int64_t fv_sched_axis_extent(const fv_segment_view *view, const fv_case *c, int axis);

/* The kernel's `outer` and `inner` parameters for a case: the canonical
 * extents as [outer, inner] (outer 1 with fewer than two axes). */
void fv_sched_canonical_extents(const fv_segment_view *view, const fv_case *c, int64_t *outer,
                                int64_t *inner);

/* True if value `id` depends, through the segment's ops, on a reduction. */
bool fv_sched_after_reduction(const fv_segment_view *view, int32_t id);

/* ------------------------------------------------------------- families */

typedef struct fv_launch_shape {
    int grid[3];
    int block[3];
    int dynamic_shared_bytes;
    int64_t workspace_bytes;  /* device scratch (floats) the kernel needs */
    int semaphore_count;      /* zeroed unsigned counters the kernel needs */
    bool cooperative;         /* needs a cooperative launch (grid sync) */
    bool resident;            /* the grid is clamped at launch to the blocks (whole
                                 clusters) resident at once, as a cooperative one is:
                                 its rows are grid-strided, and blocks past those would
                                 only run as a second wave */
    int grid_multiple;        /* with `resident`: a clamped grid stays a multiple of this
                                 (0 or 1: any number of blocks) */
    int cluster;              /* blocks per thread-block cluster along x (grid[0] a multiple
                                 of it); 0: no clusters */
} fv_launch_shape;

/* The blocks along x to launch `shape` with where `resident` blocks (whole
 * clusters) of its kernel fit on the device at once: its grid if it is
 * neither cooperative nor `resident`, or if it fits; else `resident`,
 * rounded down to a multiple of its grid_multiple (one multiple where
 * fewer are resident: a forward grid that must be a multiple runs a second
 * wave rather than compute wrongly).  Cannot fail. */
int fv_sched_launch_blocks(const fv_launch_shape *shape, int resident);

/* Parameters a family chose for one case.  The fields a family does not use
 * stay 0; `description` says what was chosen and why. */
typedef struct fv_schedule_params {
    int vector;          /* elements per vector access (16 bytes / element size, or less) */
    int block_x, block_y;
    int rows_per_block;
    int grid_limit;      /* at most this many blocks on the grid-strided axis */
    int serial;          /* elements per thread in the serial (persistent) loop */
    int extra[32];       /* family-specific */
    /* A forced approach whose heuristic judged its parameters not good
     * (nvFuser would not take it): its kernel may spill, and the plan then
     * sets it aside as it does any spilling kernel. */
    bool forced_not_good;
    char description[2048];
} fv_schedule_params;

typedef struct fv_scheduler {
    const char *name;  /* "pointwise", "inner_reduction", ... */
    /* The approach this family implements where several families are
     * approaches to the same fusions (norm backward: multi-wave or
     * warp-specialized); FV_APPROACH_AUTO for every other family. */
    fv_case_approach approach;
    /* Whether the family can take this segment; if not, `why` says why. */
    bool (*accepts)(const fv_segment_view *view, char *why, size_t why_size);
    /* Optional (NULL: always): for families that are one of several
     * approaches, the automatic rule: whether this family should take the
     * segment of this unforced case on this device.  A case forced to an
     * approach takes the families of that approach and sets the others'
     * aside without asking (service/plan.c).  When false, the plan sets the
     * family aside for the case and notes `why`. */
    bool (*selected)(const fv_segment_view *view, const fv_case *c, const fv_device *device,
                     char *why, size_t why_size);
    /* Parameters for a case on a device.  FV_ERR_UNSUPPORTED if the sizes
     * do not fit (e.g. a row too large for a persistent kernel). */
    fv_status (*choose)(const fv_segment_view *view, const fv_case *c, const fv_device *device,
                        fv_schedule_params *params);
    /* The kernel's CUDA source, one `extern "C" __global__` named `kernel_name`. */
    fv_status (*emit)(const fv_segment_view *view, const fv_schedule_params *params,
                      const char *kernel_name, fv_text *source);
    /* Grid, block, shared memory and workspace for a case. */
    fv_status (*launch)(const fv_segment_view *view, const fv_schedule_params *params,
                        const fv_case *c, const fv_device *device, fv_launch_shape *shape);
    /* Optional (NULL: none): for a kernel that spilled registers, a form of
     * it with fewer registers live and the same launch.  Changes `params`,
     * says what it changed in `what` and returns true; false (params
     * unchanged) when the family has no such form left.  The plan emits the
     * kernel again (fv_plan_relieve_registers) before it sets the family
     * aside. */
    bool (*relieve_registers)(const fv_segment_view *view, fv_schedule_params *params,
                              char *what, size_t what_size);
    /* Optional (NULL: none): for a kernel compiled to `registers` per thread,
     * which keep fewer of its blocks on an SM of `device` than its parameters
     * planned, the same kernel bounded to the planned blocks
     * (__launch_bounds__), so that ptxas holds its registers to them.
     * Changes `params`, says what in `what` and returns true; false (params
     * unchanged) where the kernel keeps its planned blocks or the family
     * bounds no such kernel.  The plan keeps the bounded form only if it
     * compiles without spilling (fv_plan_hold_occupancy). */
    bool (*hold_occupancy)(const fv_segment_view *view, fv_schedule_params *params,
                           const fv_device *device, int registers, char *what,
                           size_t what_size);
} fv_scheduler;

/* The families in priority order, NULL-terminated. */
const fv_scheduler *const *fv_sched_registry(void);

/* The general families only (pointwise, inner and outer reduction),
 * NULL-terminated: a fusion segmented with them takes the multi-kernel path. */
const fv_scheduler *const *fv_sched_general_families(void);

/* The first family in the registry that accepts the segment, or NULL with
 * each family's reason joined in `why`. */
const fv_scheduler *fv_sched_find(const fv_segment_view *view, char *why, size_t why_size);

/* The same over `families` (NULL-terminated; NULL means the registry). */
const fv_scheduler *fv_sched_find_in(const fv_scheduler *const *families,
                                     const fv_segment_view *view, char *why, size_t why_size);

/* The family with this name, or NULL. */
const fv_scheduler *fv_sched_by_name(const char *name);

/* The families (defined in their own files). */
extern const fv_scheduler fv_sched_pointwise;
extern const fv_scheduler fv_sched_inner_reduction;
extern const fv_scheduler fv_sched_outer_reduction;
extern const fv_scheduler fv_sched_inner_persistent;
extern const fv_scheduler fv_sched_inner_multipass;
extern const fv_scheduler fv_sched_inner_outer_persistent;
extern const fv_scheduler fv_sched_inner_tma;
extern const fv_scheduler fv_sched_inner_outer_ws;

#endif
