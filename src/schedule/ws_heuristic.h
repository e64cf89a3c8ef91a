/* ws_heuristic.h: the parameters of the warp-specialized (TMA) approach to
 * norm backward and the rule that selects it, after nvFuser
 * (../shared/research/nvfuser.md sections 1.3 and 1.4).
 *
 * The kernel shape: one CTA per SM; a producer warp group (128 threads)
 * copies whole rows (x and dy) into a circular buffer of `stages` slots with
 * 1-D bulk TMA copies; `bdimy` compute groups of `bdimx` threads take
 * `unroll` rows per step each.  Budgets, with R(b) the registers per thread
 * that b bytes per row take (b / H * ceil(H / vec / bdimx) * vec / 4):
 *
 *   shared memory: circ * unroll * stages + (gmem_to_regs ? 0 : noncirc)
 *                  + roundUp(16 * stages, 128) + roundUp(unroll * bdimx * bdimy * 4, 128)
 *                  <= the opt-in shared memory per block;
 *   registers:     (regs_cached ? R(circ) * unroll : 0) + (gmem_to_regs ? R(noncirc) : 0)
 *                  + R(partials) + 112 <= the compute groups' registers,
 *
 * where circ is the bytes per row of the circularly buffered inputs, noncirc
 * those of the inputs along the row only (the weight) and partials those of
 * the outer reductions' f32 partial rows.  The compute groups' registers are
 * the block's per-thread registers (64K / 4 sub-partitions / warps per
 * sub-partition, in units of 256 per warp, at most 255) raised by register
 * sharing when the block has more than 256 threads: compute = R + (R - 32) *
 * 128 / compute threads, down to a multiple of 8, at most 255; the producer
 * gets the rest. */
#ifndef FV_SCHEDULE_WS_HEURISTIC_H
#define FV_SCHEDULE_WS_HEURISTIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "schedule/device.h"

/* What the heuristic needs to know of a norm-backward segment and case. */
typedef struct fv_sched_ws_problem {
    int64_t rows;                /* outer extent */
    int64_t inner;               /* H */
    int vector;                  /* elements per 16-byte (or narrower) access */
    int64_t circular_bytes;      /* per row: inputs spanning both axes (x, dy) */
    int64_t noncircular_bytes;   /* per row: inputs along the row only (weight) */
    int64_t partial_bytes;       /* per row: f32 partial rows of the outer reductions */
    int inner_reductions;        /* reductions over the row (2 for layer norm) */
    int step_entries;            /* grouped steps: a row's entries in the step's arrays (a
                                    var_mean has two: its sum and its squared deviations) */
    bool static_shapes;          /* every input extent is a constant of the definition */
} fv_sched_ws_problem;

typedef struct fv_sched_ws_params {
    int bdimx, bdimy, unroll, stages;
    bool regs_cached;            /* a stage's rows are copied to registers, freeing it early */
    bool gmem_to_regs;           /* the weight goes from global memory straight to registers */
    int threads;                 /* bdimx * bdimy + 128 (the producer warp group) */
    int compute_registers;       /* per compute thread (after register sharing) */
    int producer_registers;      /* per producer thread */
    bool register_sharing;       /* setmaxnreg: more than 256 threads */
    int registers_needed;        /* the register budget's left-hand side */
    int64_t shared_bytes;        /* the shared-memory budget's left-hand side */
    char pass;                   /* search pass that produced it: 'A'..'D' */
    bool good;                   /* is_good_ws_heuristic */
    char why_not_good[128];
} fv_sched_ws_params;

/* R(bytes): registers per thread that `bytes` per row take. */
int fv_sched_ws_registers_for(const fv_sched_ws_problem *problem, int64_t bytes, int bdimx);

/* Registers per thread for a block of `threads` threads (before sharing). */
int fv_sched_ws_registers_per_thread(const fv_device *device, int threads);

/* The search of nvFuser 1.3 (passes A-D, then stages doubled while shared
 * memory allows, rounded to a multiple of bdimy).  Always fills *params;
 * params->good says whether the result is worth using.  FV_ERR_INTERNAL for
 * a problem with non-positive sizes. */
fv_status fv_sched_ws_heuristic(const fv_sched_ws_problem *problem, const fv_device *device,
                          fv_sched_ws_params *params);

/* is_good_ws_heuristic again for `params` (from fv_sched_ws_heuristic),
 * with the registers the emitted kernel's compute threads really get in
 * place of nvFuser's register-sharing figure, and its floor of 64 registers
 * left to one compute group applied with the weight in shared memory too
 * (beside the partials alone: LN bwd 16-bit 16384 x 20480 leaves 40 and its
 * kernel spilled 96-160 bytes); sets params->good and params->why_not_good.
 * Never fails. */
void fv_sched_ws_judge(const fv_sched_ws_problem *problem, int compute_registers,
                       fv_sched_ws_params *params);

/* The automatic selection of nvFuser 1.4: the warp-specialized approach only
 * on compute capability 10 or newer, with static input shapes, and with more
 * than 16 rows per SM when there are several inner reductions (layer norm)
 * or more than 4 otherwise (RMS norm).  `why` gets the reason when false. */
bool fv_sched_ws_preferred(const fv_sched_ws_problem *problem, const fv_device *device, char *why,
                     size_t why_size);

#endif
