/* emit.h: writes a segment's element-wise math as CUDA C into a family's
 * kernel skeleton.
 *
 * Generated code is meant to be read: each fusion value becomes a local `vN`
 * (N its value id) with a comment giving the op, the source name and line;
 * values that vary along the vectorized inner axis are arrays of one element
 * per lane, the others plain scalars.  Skeletons (`*.cuh`, embedded at build
 * time) contain `@NAME@` placeholders that the families fill with sections
 * this module writes.
 *
 * Kernel parameters follow one convention for every family:
 *   the segment's tensor inputs (const pointers, in input order),
 *   its outputs (pointers, in output order),
 *   the scalars the host computes (double), in fv_codegen_scalar_params order,
 *   long long outer, long long inner (canonical extents),
 *   float *workspace, unsigned *semaphores (zeroed scratch, may be unused).
 */
#ifndef FV_CODEGEN_EMIT_H
#define FV_CODEGEN_EMIT_H

#include "common/text.h"
#include "schedule/schedule.h"

extern const char fv_skeleton_common[];
extern const char fv_skeleton_pointwise[];
extern const char fv_skeleton_inner_reduction[];
extern const char fv_skeleton_outer_reduction[];
extern const char fv_skeleton_inner_persistent[];
extern const char fv_skeleton_inner_multipass[];
extern const char fv_skeleton_inner_outer_persistent[];
extern const char fv_skeleton_warp_specialized[];
extern const char fv_skeleton_inner_outer_stage_two[];
extern const char fv_skeleton_cluster_exchange[];

typedef struct fv_emitter {
    const fv_segment_view *view;
    int vector;             /* lanes per thread along the inner axis */
    fv_text *out;           /* the section being written */
    int indent;             /* spaces */
    bool *declared;         /* per value id: declared in the current scope */
    /* Persistent kernels: per value id, the line that reads an input that
     * spans both axes from the row buffer instead of global memory (e.g.
     * "const float (&v3)[8] = buffer3[b];"), or NULL. */
    const char **buffered_load;
    /* Persistent kernels that read the row-constant inputs (a weight) from
     * device memory in every pass over every row: those loads ask L1 to keep
     * the lines (fv_load_kept_in_l1). */
    bool keep_row_constants_in_l1;
    /* Outputs that span both axes store their 16-byte vectors around L1
     * (fv_store_around_l1, no allocation there); set by the persistent
     * emitter (stores_rows_around_l1), plain stores otherwise. */
    bool store_rows_around_l1;
    /* Outputs that span both axes store their 16-byte vectors as streaming
     * stores (fv_store_streaming, st.global.cs: evicted first from L2); set
     * by inner_multipass, whose later passes read the row's inputs again
     * from L2 while its outputs are written. */
    bool store_rows_streaming;
    /* Rows of an odd length computed on the 16-byte chunks of their aligned
     * span (set by the persistent emitter): a lane's element may lie outside
     * the row, so the inputs along the row that are read from device memory
     * are loaded lane by lane (fv_load_lanes) and the row outputs stored so
     * where a chunk is not wholly in the row (fv_store_lanes); the index's
     * inner expression is then the chunk's first column, negative before the
     * row. */
    bool span_lanes;
    /* With span_lanes, the inputs along both axes are read from device
     * memory on their span's chunks (set by inner_multipass): a chunk is
     * aligned to its vector there, so a chunk wholly in the row is one vector
     * load (fv_load_chunk); the row constants stay lane by lane. */
    bool load_span_chunks;
    /* The row's length as the lane tests of span_lanes read it: "inner"
     * (long long), or an int copy where the kernel's columns are ints (the
     * persistent emitter's `row_length`: a row it holds fits a block). */
    const char *row_length;
    /* With span_lanes, a condition that is a constant once the batch loop is
     * unrolled and true where the chunk lies wholly in the row (steps after
     * the first whose chunks end within it; set by the persistent emitter),
     * or NULL / "": float row outputs pass it to fv_store_lanes as `whole`,
     * so those steps store whole vectors with no lane test. */
    const char *whole_chunk_test;
    /* With span_lanes, a lane's test against the thread's lane window (set
     * by the persistent emitter where it declares one), or NULL / "": the
     * masked lane loops then test it instead of fv_in_row. */
    const char *lane_window_test;
} fv_emitter;

/* Index expressions of the element a thread is at. */
typedef struct fv_emit_index {
    const char *outer;  /* e.g. "row" (ignored if the segment has no outer axis) */
    const char *inner;  /* e.g. "column" (first of the thread's lanes) */
} fv_emit_index;

fv_status fv_codegen_begin(fv_emitter *emitter, const fv_segment_view *view, int vector);
void fv_codegen_end(fv_emitter *emitter);

/* Which canonical axes a value spans, seen as [outer, inner]. */
bool fv_codegen_spans_inner(const fv_segment_view *view, int32_t value);
bool fv_codegen_spans_outer(const fv_segment_view *view, int32_t value);

/* Scalars the kernel receives as parameters (non-literal scalars the live ops
 * use), in parameter order; returns the count.  `ids` holds value_count. */
int32_t fv_codegen_scalar_params(const fv_segment_view *view, int32_t *ids);

/* The kernel's parameter list (without parentheses), one per line. */
void fv_codegen_parameters(const fv_segment_view *view, fv_text *out);

/* Sets needed[v] (value_count + 1 flags) for each value fv_codegen_compute
 * would compute for `targets`: the targets not declared yet and the
 * undeclared tensors they are computed from, back to reductions (whose
 * inputs are not followed). */
void fv_codegen_needed(const fv_emitter *emitter, const bool *targets, bool *needed);

/* Emits the loads and ops that compute every value with targets[v] set
 * (and whatever they need) that is not declared yet, in topological order.
 * Reductions are not emitted: their results must have been declared. */
void fv_codegen_compute(fv_emitter *emitter, const bool *targets, fv_emit_index where);

/* Declares `value` as `expression` (e.g. a reduction's result), scalar. */
void fv_codegen_declare(fv_emitter *emitter, int32_t value, const char *expression);

/* Declares a value that spans the inner axis from a per-lane array. */
void fv_codegen_declare_lanes(fv_emitter *emitter, int32_t value, const char *array);

/* The value a store of output `value` reads: for a cast from a float
 * register to bf16 or fp16, the cast's input (the store's conversion rounds
 * the same way, so the kernel rounds once); else `value` itself.  Callers
 * compute this value before fv_codegen_store. */
int32_t fv_codegen_stored_value(const fv_segment_view *view, int32_t value);

/* Stores output `position` (value `value`) at `where`, converting to its
 * dtype; reads fv_codegen_stored_value(value). */
void fv_codegen_store(fv_emitter *emitter, int position, int32_t value, fv_emit_index where);

/* Computes what output `position` (value `value`) needs at `where` and
 * stores it at `store_at`.  `scratch` holds value_count + 1 flags (cleared
 * and used here). */
void fv_codegen_compute_output(fv_emitter *emitter, bool *scratch, int position, int32_t value,
                               fv_emit_index where, fv_emit_index store_at);

/* Saves / restores the declared set around a scope. */
bool *fv_codegen_save(const fv_emitter *emitter);
void fv_codegen_restore(fv_emitter *emitter, bool *saved);

/* Expression of `value` at lane `lane` ("v12[lane]", "v9", a literal...). */
void fv_codegen_value(const fv_emitter *emitter, int32_t value, const char *lane, char *buffer,
                      size_t size);

/* Register type of a dtype's values in kernels: "float", "double", ... */
const char *fv_codegen_register_type(fv_dtype dtype);

/* The device function a float exp of a segment fusion calls: "fv_exp_fast"
 * (2^(a·log2 e) on the special-function unit, within fv-bound-v2's model for
 * fusions whose outputs are all 16-bit) where the segmenter set
 * `fusion->fast_exp`, "expf" otherwise. */
const char *fv_codegen_exp_function(const fv_fusion *fusion);

/* The C type a tensor of `dtype` is stored as in device memory
 * ("__nv_bfloat16", "__half", "float", "double", ...). */
const char *fv_codegen_storage_type(fv_dtype dtype);

/* Writes `expression` wrapped so the value is rounded as `dtype` says
 * (fv_round_bf16(...), fv_round_f16(...), or unchanged) into `buffer`. */
void fv_codegen_rounded(fv_dtype dtype, const char *expression, char *buffer, size_t size);

/* The kernel parameter position (in0, in1, ...) of input tensor `value`:
 * tensor inputs before it, scalars not counted. */
int fv_codegen_input_position(const fv_fusion *fusion, int32_t value);

/* Appends a line at the emitter's indentation. */
void fv_codegen_line(fv_emitter *emitter, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Copies `skeleton`, replacing each line that holds only "@NAME@" by the
 * section of that name (re-indented to the placeholder's column) and each
 * "@NAME@" inside a line by the section's text.  FV_ERR_INTERNAL names an
 * unknown placeholder. */
fv_status fv_codegen_fill(const char *skeleton, const char *const *names,
                          const char *const *sections, int count, fv_text *out);

#endif
