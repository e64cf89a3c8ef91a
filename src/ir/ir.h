/* ir.h: the fusion IR.  A fusion is a DAG of values (tensors up to rank 4 and
 * scalars) and ops, built through the fv_ir_* builder functions below (used by
 * the frontend reader and by tests), printed back in nvFuser's Python-frontend
 * syntax, and hashed canonically (equal for the same fusion written with other
 * names or statement order).
 *
 * Extents.  Every tensor dimension has a concrete extent or a symbol.  Symbols
 * are created for the symbolic (-1) dimensions of inputs and are unified by the
 * ops (union-find): `sub(T0, T1)` makes T0's and T1's extents equal.  A case
 * (see case.h) binds symbols to extents.
 *
 * Broadcast dimensions have extent 1; an *expanded* broadcast dimension has a
 * logical extent (concrete or symbolic) but no storage (stride 0).
 */
#ifndef FV_IR_IR_H
#define FV_IR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "common/text.h"

#define FV_MAX_RANK 4
#define FV_NO_VALUE (-1)

/* ---------------------------------------------------------------- dtypes */

typedef enum fv_dtype {
    FV_DTYPE_NONE = 0, /* "no dtype given" (DataType.Null) */
    FV_F64,
    FV_F32,
    FV_F16,
    FV_BF16,
    FV_I64,
    FV_I32,
    FV_BOOL,
    FV_DTYPE_COUNT
} fv_dtype;

/* Short name used in case ids and messages: "fp64", "fp32", "fp16", "bf16",
 * "i64", "i32", "bool", "none". */
const char *fv_dtype_name(fv_dtype dtype);

/* nvFuser frontend spelling without the "DataType." prefix: "Double",
 * "Float", "Half", "BFloat16", "Int", "Int32", "Bool", "Null". */
const char *fv_dtype_frontend_name(fv_dtype dtype);

/* Parses a short name ("bf16", "fp16"/"f16", "fp32"/"f32", "fp64"/"f64",
 * "i64", "i32", "bool") or a frontend name ("BFloat16", ...).  Returns false
 * for anything else and leaves *dtype unchanged. */
bool fv_dtype_parse(const char *name, fv_dtype *dtype);

/* Bytes per element (0 for FV_DTYPE_NONE). */
size_t fv_dtype_size(fv_dtype dtype);

bool fv_dtype_is_float(fv_dtype dtype);   /* f64, f32, f16, bf16 */
bool fv_dtype_is_half(fv_dtype dtype);    /* f16, bf16 */
bool fv_dtype_is_integer(fv_dtype dtype); /* i64, i32 */

/* ------------------------------------------------------------- locations */

/* A position in a source file (1-based); line 0 means "no location". */
typedef struct fv_source_loc {
    int line;
    int column;
} fv_source_loc;

/* -------------------------------------------------------------- values */

typedef enum fv_value_kind { FV_VALUE_TENSOR, FV_VALUE_SCALAR } fv_value_kind;

typedef enum fv_scalar_origin {
    FV_SCALAR_CONSTANT, /* a literal: `constant` holds it */
    FV_SCALAR_INPUT,    /* a fusion input; its value comes with each case */
    FV_SCALAR_EXTENT,   /* T.size(i) of a symbolic dimension: `symbol` */
    FV_SCALAR_COMPUTED  /* the result of an op on scalars */
} fv_scalar_origin;

typedef struct fv_dim {
    int64_t extent; /* concrete extent, or -1 when symbolic */
    int32_t symbol; /* symbol of a symbolic extent, or -1 when concrete */
    bool broadcast; /* broadcast dimension: extent 1 unless expanded */
    bool expanded;  /* broadcast dimension with a logical extent > 1 (stride 0) */
} fv_dim;

typedef struct fv_value {
    fv_value_kind kind;
    fv_dtype dtype;
    int rank;                         /* 0 for scalars and 0-d tensors */
    fv_dim dims[FV_MAX_RANK];
    int8_t contiguity[FV_MAX_RANK];   /* inputs: 1 true, 0 false, -1 None (broadcast) */
    int8_t stride_order[FV_MAX_RANK]; /* nvFuser stride_order: rank-1 = outermost;
                                         default rank-1, ..., 0 (row-major) */
    int32_t producer;        /* op that defines it, or -1 (inputs, constants, extents) */
    int32_t producer_output; /* which output of that op (var_mean has two) */
    int32_t input_index;     /* position among the fusion inputs, or -1 */
    fv_scalar_origin origin; /* scalars only */
    double constant;         /* FV_SCALAR_CONSTANT */
    int32_t symbol;          /* FV_SCALAR_EXTENT */
    char name[32];           /* name in the source ("T14"), "" if none */
    fv_source_loc loc;
} fv_value;

/* ------------------------------------------------------------------ ops */

typedef enum fv_op_kind {
    /* data movement and shape */
    FV_OP_CAST,
    FV_OP_BROADCAST_IN_DIM,
    FV_OP_BROADCAST,
    FV_OP_EXPAND,
    FV_OP_SQUEEZE,
    FV_OP_RESHAPE,
    FV_OP_PERMUTE,
    FV_OP_SET,
    FV_OP_SEGMENT_SET,
    /* unary math */
    FV_OP_NEG,
    FV_OP_ABS,
    FV_OP_EXP,
    FV_OP_LOG,
    FV_OP_SQRT,
    FV_OP_RSQRT,
    FV_OP_RECIPROCAL,
    /* binary math */
    FV_OP_ADD,
    FV_OP_SUB,
    FV_OP_MUL,
    FV_OP_DIV,
    FV_OP_POW,
    FV_OP_MAXIMUM,
    FV_OP_MINIMUM,
    /* comparisons (bool result) */
    FV_OP_EQ,
    FV_OP_NE,
    FV_OP_LT,
    FV_OP_LE,
    FV_OP_GT,
    FV_OP_GE,
    /* select */
    FV_OP_WHERE,
    /* reductions */
    FV_OP_SUM,
    FV_OP_MAX,
    FV_OP_VAR_MEAN, /* outputs[0] = variance, outputs[1] = mean */
    /* factories */
    FV_OP_FULL,     /* inputs[0] = fill scalar */
    FV_OP_KIND_COUNT
} fv_op_kind;

typedef enum fv_op_category {
    FV_CATEGORY_SHAPE,     /* cast, broadcasts, squeeze, reshape, permute, set */
    FV_CATEGORY_UNARY,
    FV_CATEGORY_BINARY,
    FV_CATEGORY_COMPARE,
    FV_CATEGORY_WHERE,
    FV_CATEGORY_REDUCTION,
    FV_CATEGORY_FACTORY
} fv_op_category;

typedef struct fv_op {
    fv_op_kind kind;
    int32_t inputs[3];
    int input_count;
    int32_t outputs[2];
    int output_count;
    fv_dtype dtype; /* cast: target; full: element type; sum: given dtype or NONE */
    /* Axes, by kind:
     *   sum/max/var_mean: reduced dims of the input (sorted, unique)
     *   squeeze:          removed dims of the input (sorted, unique)
     *   permute:          output dim i is input dim axes[i]
     *   broadcast_in_dim: input dim i becomes output dim axes[i] (increasing)
     *   broadcast:        input dim i becomes output dim axes[i] (the others are new) */
    int axis_count;
    int8_t axes[FV_MAX_RANK];
    bool keepdim;       /* reductions */
    int64_t correction; /* var_mean */
    fv_source_loc loc;
} fv_op;

/* Static facts about an op kind. */
const char *fv_ir_op_name(fv_op_kind kind); /* frontend name: "add", "var_mean", ... */
fv_op_category fv_ir_op_category(fv_op_kind kind);

/* Finds an op by its frontend name (as in `fd.ops.NAME`).  Returns false if
 * there is none. */
bool fv_ir_op_from_name(const char *name, fv_op_kind *kind);

/* --------------------------------------------------------------- fusion */

typedef struct fv_fusion {
    fv_value *values;
    int32_t value_count, value_capacity;
    fv_op *ops;
    int32_t op_count, op_capacity;
    int32_t *inputs; /* value ids, in call order */
    int32_t input_count, input_capacity;
    int32_t *outputs; /* value ids, in add_output order */
    int8_t (*output_stride_order)[FV_MAX_RANK]; /* per output; [0] = -1 when not given */
    int32_t output_count, output_capacity;
    int32_t *symbol_parent;  /* union-find over symbols */
    int64_t *symbol_extent;  /* at roots: the concrete extent a unification gave, or -1 */
    int32_t symbol_count, symbol_capacity;
    char name[64];           /* definition name, e.g. "nvfuser_fusion_id0" */
    /* Segment fusions: the whole fusion's outputs are all 16-bit
     * (fv_ir_outputs_all_half), so its exps may run on the special-function
     * unit (fv_exp_fast; fv-bound-v2's model).  Set by the segmenter; false in
     * a fusion the frontend or the builder makes; fv_ir_fusion_copy keeps
     * it, fv_ir_substitute_dtype clears it. */
    bool fast_exp;
    fv_source_loc current_loc; /* stamped on values/ops the builder creates */
    int reference_count;
} fv_fusion;

/* Creates an empty fusion with one reference.  FV_ERR_NOMEM on failure. */
fv_status fv_ir_fusion_create(fv_fusion **fusion);

/* Takes another reference / drops one; the last release frees.  NULL is ok. */
void fv_ir_fusion_retain(fv_fusion *fusion);
void fv_ir_fusion_release(fv_fusion *fusion);

/* Deep copy (one reference).  FV_ERR_NOMEM on failure. */
fv_status fv_ir_fusion_copy(const fv_fusion *source, fv_fusion **copy);

/* Sets the source location stamped on everything built next, and used in
 * builder error messages ("line:col: ..."). */
void fv_ir_set_location(fv_fusion *fusion, int line, int column);

/* ------------------------------------------------------------- builders
 * Every builder returns FV_OK and the new value id in *out, or an error
 * (FV_ERR_INPUT for shape/type mistakes, with a message that starts with the
 * current location as "line:col: "); on error the fusion is unchanged except
 * for symbol unifications already made. */

/* A tensor input.  shape[i] is -1 (symbolic) or a concrete extent; an extent
 * of 1 is a broadcast dimension.  contiguity may be NULL (all contiguous);
 * entries are 1, 0 or -1 (None).  stride_order may be NULL (row-major). */
fv_status fv_ir_define_tensor(fv_fusion *fusion, int rank, const int64_t *shape,
                              const int8_t *contiguity, fv_dtype dtype,
                              const int8_t *stride_order, int32_t *out);

/* A scalar literal, or (fv_ir_define_scalar_input) a scalar fusion input. */
fv_status fv_ir_define_scalar(fv_fusion *fusion, double value, fv_dtype dtype, int32_t *out);
fv_status fv_ir_define_scalar_input(fv_fusion *fusion, fv_dtype dtype, int32_t *out);

/* The extent of `tensor`'s dimension `dim` as a scalar (T.size(dim)): a
 * constant for concrete extents, an extent scalar for symbolic ones. */
fv_status fv_ir_size(fv_fusion *fusion, int32_t tensor, int dim, int32_t *out);

/* The target dimension a scalar names in a shape list: a constant gives a
 * concrete extent, an extent scalar its symbol.  Anything else is
 * FV_ERR_UNSUPPORTED. */
fv_status fv_ir_dim_from_scalar(const fv_fusion *fusion, int32_t scalar, fv_dim *dim);

/* Concrete-extent and same-as-tensor-dimension target dims for shape lists. */
fv_dim fv_ir_dim_concrete(int64_t extent);
fv_dim fv_ir_dim_of(const fv_fusion *fusion, int32_t tensor, int dim);

fv_status fv_ir_cast(fv_fusion *fusion, int32_t input, fv_dtype dtype, int32_t *out);
/* neg, abs, exp, log, sqrt, rsqrt, reciprocal, set, segment_set */
fv_status fv_ir_unary(fv_fusion *fusion, fv_op_kind kind, int32_t input, int32_t *out);
/* add ... minimum, comparisons; tensors of equal rank or scalars */
fv_status fv_ir_binary(fv_fusion *fusion, fv_op_kind kind, int32_t lhs, int32_t rhs, int32_t *out);
fv_status fv_ir_where(fv_fusion *fusion, int32_t condition, int32_t if_true, int32_t if_false,
                      int32_t *out);

/* broadcast_in_dim(input, shape, broadcast_dims): input dim i becomes output
 * dim broadcast_dims[i] (increasing); other output dims are new broadcast
 * dims; an input broadcast dim whose target extent is not 1 is expanded. */
fv_status fv_ir_broadcast_in_dim(fv_fusion *fusion, int32_t input, int output_rank,
                                 const fv_dim *shape, const int *broadcast_dims, int32_t *out);
/* broadcast(input, is_broadcast_dim): inserts size-1 dims where flags are true. */
fv_status fv_ir_broadcast(fv_fusion *fusion, int32_t input, int output_rank,
                          const bool *is_broadcast_dim, int32_t *out);
/* expand(input, shape): broadcast dims of input take the target extents. */
fv_status fv_ir_expand(fv_fusion *fusion, int32_t input, const fv_dim *shape, int32_t *out);
fv_status fv_ir_squeeze(fv_fusion *fusion, int32_t input, int dim_count, const int *dims,
                        int32_t *out);
fv_status fv_ir_permute(fv_fusion *fusion, int32_t input, const int *order, int32_t *out);
/* reshape(input, shape): element counts are checked now when all extents are
 * concrete, else when a case binds them. */
fv_status fv_ir_reshape(fv_fusion *fusion, int32_t input, int output_rank, const fv_dim *shape,
                        int32_t *out);

/* sum/max(input, dims, keepdim, dtype): dims may be negative (from the end).
 * dtype FV_DTYPE_NONE keeps the input dtype. */
fv_status fv_ir_reduce(fv_fusion *fusion, fv_op_kind kind, int32_t input, int dim_count,
                       const int *dims, bool keepdim, fv_dtype dtype, int32_t *out);
/* var_mean: *variance and *mean. */
fv_status fv_ir_var_mean(fv_fusion *fusion, int32_t input, int dim_count, const int *dims,
                         int64_t correction, bool keepdim, int32_t *variance, int32_t *mean);
/* full(shape, fill, dtype); `fill` is a scalar value. */
fv_status fv_ir_full(fv_fusion *fusion, int rank, const fv_dim *shape, int32_t fill,
                     fv_dtype dtype, int32_t *out);

/* Marks a value as the next fusion output; stride_order may be NULL. */
fv_status fv_ir_add_output(fv_fusion *fusion, int32_t value, const int8_t *stride_order);

/* True when `fusion` has outputs and every one is bf16 or fp16.  Such a
 * fusion's exps may be computed on the special-function unit: the evaluator
 * bounds them by that unit's error model and the segmenter marks the
 * segments (fv_fusion.fast_exp). */
bool fv_ir_outputs_all_half(const fv_fusion *fusion);

/* ------------------------------------------------------------ symbols */

/* The representative of a symbol's class. */
int32_t fv_ir_symbol_root(const fv_fusion *fusion, int32_t symbol);

/* Makes two dims' extents equal (both must be non-broadcast or expanded).
 * FV_ERR_INPUT if both are concrete and differ. */
fv_status fv_ir_unify_dims(fv_fusion *fusion, fv_dim a, fv_dim b);

/* True if the two dims have the same extent by construction. */
bool fv_ir_dims_same_extent(const fv_fusion *fusion, fv_dim a, fv_dim b);

/* -------------------------------------------------------- inspection */

static inline const fv_value *fv_ir_value(const fv_fusion *fusion, int32_t id)
{
    return &fusion->values[id];
}

/* True for a sum or max whose reduced dims are all plain (size-1, not
 * expanded) broadcast dims: an identity, as in Thunder's sums over [N, 1]'s
 * second dim.  Segmenters and schedulers treat it as element-wise. */
bool fv_ir_is_trivial_reduction(const fv_fusion *fusion, const fv_op *op);

/* True if the value is a scalar (not a tensor, not even 0-d). */
bool fv_ir_is_scalar(const fv_fusion *fusion, int32_t id);

/* A readable name for messages: the source name, or "v<id>". */
const char *fv_ir_value_label(const fv_fusion *fusion, int32_t id, char buffer[40]);

/* Ops in an order where each op comes after the producers of its inputs, and
 * only those that outputs depend on.  *order is allocated (caller frees). */
fv_status fv_ir_live_ops(const fv_fusion *fusion, int32_t **order, int32_t *count);

/* Number of uses of each value by ops (array of value_count, caller frees). */
fv_status fv_ir_use_counts(const fv_fusion *fusion, int32_t **counts);

/* Returns a copy where every occurrence of dtype `from` (values and op
 * attributes) becomes `to`. */
fv_status fv_ir_substitute_dtype(const fv_fusion *source, fv_dtype from, fv_dtype to,
                                 fv_fusion **result);

/* The half-precision dtype the fusion uses (bf16 or f16), or FV_F32 if none. */
fv_dtype fv_ir_half_dtype(const fv_fusion *fusion);

/* ---------------------------------------------------- printer and hash */

/* Prints the fusion as an nvFuser Python-frontend definition (a `def` and a
 * `with FusionDefinition() as fd:` block) that the reader accepts and that
 * hashes equal to `fusion`.  Values are named T<n>/S<n>/V<n>. */
fv_status fv_ir_print(const fv_fusion *fusion, fv_text *out);

/* The canonical text: a normalized listing independent of names and of the
 * statement order (values numbered in a depth-first walk from the outputs). */
fv_status fv_ir_canonical_text(const fv_fusion *fusion, fv_text *out);

/* SHA-256 of the canonical text, as 64 hex digits. */
fv_status fv_ir_hash(const fv_fusion *fusion, char hex[65]);

#endif /* FV_IR_IR_H */
