/* family.h: helpers the scheduler families share: checks every family makes,
 * vector widths, and the head of every generated kernel.  Private to
 * src/schedule/. */
#ifndef FV_SCHEDULE_FAMILY_H
#define FV_SCHEDULE_FAMILY_H

#include "codegen/emit.h"
#include "schedule/schedule.h"

/* Sets why and returns false. */
bool fv_family_reject(char *why, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* The view is canonical and every output is a tensor without expanded
 * broadcast dims. */
bool fv_family_common_checks(const fv_segment_view *view, char *why, size_t size);

/* The reductions among the segment's live ops, topological; returns count. */
int fv_family_reductions(const fv_segment_view *view, const fv_op **reductions, int capacity);

/* Largest power of two <= 16 bytes / element size over the tensors spanning
 * the inner axis that divides `inner`. */
int fv_family_vector_width(const fv_segment_view *view, int64_t inner);

/* a / b rounded up, for a >= 0 and b > 0. */
int64_t fv_family_ceil_div(int64_t a, int64_t b);

int fv_family_pow2_ceil(int64_t value);
int fv_family_pow2_floor(int64_t value);

/* Appends the common header, a comment naming the family and parameters,
 * and then `body` (the filled skeleton). */
void fv_family_kernel_head(const char *family, const fv_schedule_params *params, fv_text *source);

/* Text of a number, for skeleton sections. */
const char *fv_family_number(char *buffer, int value);

/* The identity of a sum or max reduction as CUDA text ("0.0f",
 * "-INFINITY"). */
const char *fv_family_reduction_identity(const fv_op *reduction);

/* Emits `target` combined with `value` by the reduction's operation
 * ("t += v;" or "t = fv_maximum(t, v);"). */
void fv_family_combine(fv_emitter *e, const fv_op *reduction, const char *target,
                       const char *value);

/* Marks in `needed` (one flag per value id) every value that the values
 * already marked depend on within the segment (walking its ops backwards). */
void fv_family_needed_closure(const fv_segment_view *view, bool *needed);

/* Row reductions accumulated in registers (inner_reduction, inner_multipass):
 * declares accumulator<first> .. accumulator<first + count - 1>, one per
 * reduction, at its identity (a Welford state for var_mean). */
void fv_family_emit_accumulators(fv_emitter *e, const fv_op *const *reductions, int count,
                                 int first);

/* Opens an unrolled loop over the thread's `vector` lanes (`lane`); with
 * span_lanes, its body is guarded to the lanes in the row (`column` the
 * chunk's first column).  Returns the indent of the loop's one statement. */
const char *fv_family_open_lane_loop(fv_emitter *e);

/* Adds the thread's `vector` lanes of each reduction's input (computed
 * before this) to its accumulator; with span_lanes, only the lanes in the
 * row (`column` the chunk's first column). */
void fv_family_emit_accumulate(fv_emitter *e, const fv_op *const *reductions, int count,
                               int first);

/* Emits `name` = its sum (its maximum if `maximum`) over the row's `block_x`
 * threads, then, with `cluster` > 1, over the cluster's blocks in rank order
 * (cluster_exchange.cuh; the kernel declares cluster_exchange,
 * cluster_arrived and exchange_phase). */
void fv_family_emit_row_total(fv_emitter *e, const char *name, bool maximum, int block_x,
                              int cluster);

/* Combines each accumulator over the row's `block_x` threads (every thread
 * gets the result; `reduction_scratch` holds 96 floats per row), then, with
 * `cluster` > 1, over the cluster's blocks (cluster_exchange.cuh: sums and
 * maxima only, no var_mean), and declares the reductions' outputs from
 * them, rounded to their dtype. */
void fv_family_emit_row_reduce(fv_emitter *e, const fv_op *const *reductions, int count,
                               int first, int block_x, int cluster);

#endif
