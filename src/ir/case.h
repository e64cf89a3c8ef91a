/* case.h: a case is a fusion bound to sizes, dtypes, a seed and per-input
 * distributions: everything needed to generate its inputs, run it and
 * compute its references.  Cases come from the frontend (a definition with an
 * `inputs = [...]` list, or a sweep file); their ids are stable strings such as
 * "layer_norm_bwd/bf16/16384x2048/s0".
 */
#ifndef FV_IR_CASE_H
#define FV_IR_CASE_H

#include "ir/ir.h"

typedef enum fv_distribution_kind {
    FV_DIST_NORMAL,   /* mean a, standard deviation b */
    FV_DIST_UNIFORM,  /* uniform on [a, b) */
    FV_DIST_CONSTANT  /* every element a */
} fv_distribution_kind;

typedef struct fv_distribution {
    fv_distribution_kind kind;
    double a, b;
} fv_distribution;

/* Parses "normal(0,1)", "uniform(0.5,1.5)", "constant(2)" (also "ones",
 * "zeros").  Returns false on anything else. */
bool fv_distribution_parse(const char *text, fv_distribution *distribution);

/* Writes the same syntax back ("normal(0,1)"). */
void fv_distribution_format(const fv_distribution *distribution, char *buffer, size_t size);

/* Which approach a norm-backward case runs with: nvFuser's rule picks one
 * (auto), or the run forces one and the case id says so ("...@ws"). */
typedef enum fv_case_approach {
    FV_APPROACH_AUTO = 0,
    FV_APPROACH_MULTIWAVE,
    FV_APPROACH_WS
} fv_case_approach;

/* "auto", "multiwave", "ws". */
const char *fv_case_approach_name(fv_case_approach approach);

/* Parses those names; false otherwise. */
bool fv_case_approach_parse(const char *text, fv_case_approach *approach);

/* Splits "id@ws" into the id and the approach (FV_APPROACH_AUTO and the
 * whole text when there is no known suffix).  `base` holds `size` bytes. */
void fv_case_split_approach(const char *id, char *base, size_t size, fv_case_approach *approach);

#define FV_CASE_ID_CAPACITY 192
#define FV_CASE_MAX_INPUTS 32

typedef struct fv_case {
    char id[FV_CASE_ID_CAPACITY]; /* "family/dtype/AxB/sSEED" */
    char family[64];              /* "layer_norm_bwd" */
    char source_path[512];        /* the .py or .sweep file it came from */
    int source_line;              /* sweep line that produced it (0 for .py) */
    fv_fusion *fusion;            /* one reference held; dtype already substituted */
    fv_dtype dtype;               /* the case's main dtype (for ids and reports) */
    int64_t *symbol_extents;      /* per symbol id (any member of a class): bound extent */
    int32_t symbol_count;
    uint64_t seed;
    fv_distribution distributions[FV_CASE_MAX_INPUTS]; /* per fusion input */
    double scalar_inputs[FV_CASE_MAX_INPUTS];          /* scalar input values */
    fv_case_approach approach;    /* forced approach, or FV_APPROACH_AUTO */
} fv_case;

/* Creates a case for `fusion` (takes a reference) with every symbol unbound,
 * seed 0 and normal(0,1) inputs.  FV_ERR_UNSUPPORTED if the fusion has more
 * than FV_CASE_MAX_INPUTS inputs. */
fv_status fv_case_create(fv_fusion *fusion, fv_case **out);

/* A copy of `c` (sharing its fusion, with a reference of its own).
 * FV_ERR_NOMEM. */
fv_status fv_case_clone(const fv_case *c, fv_case **out);

/* Forces `approach` on the case and marks its id ("...@ws"); AUTO removes
 * the mark. */
void fv_case_with_approach(fv_case *c, fv_case_approach approach);

/* Frees a case and drops its fusion reference.  NULL is ok. */
void fv_case_free(fv_case *c);

/* Binds the symbolic extent of input `input_position`'s dim `dim` (and so its
 * whole symbol class).  FV_ERR_INPUT if the dim is concrete and differs, or
 * the class is already bound to another extent (the message names both). */
fv_status fv_case_bind(fv_case *c, int input_position, int dim, int64_t extent);

/* Checks that every symbol is bound and every reshape conserves elements.
 * FV_ERR_INPUT names the first unbound input dimension. */
fv_status fv_case_check_bound(const fv_case *c);

/* The extent of a dim in this case (expanded broadcast dims report their
 * logical extent; plain broadcast dims 1).  -1 if unbound. */
int64_t fv_case_dim_extent(const fv_case *c, fv_dim dim);

/* Extents of a value's dims (logical, as fv_case_dim_extent); returns rank. */
int fv_case_shape(const fv_case *c, int32_t value, int64_t extents[FV_MAX_RANK]);

/* Number of logical elements of a value (1 for scalars). */
int64_t fv_case_numel(const fv_case *c, int32_t value);

/* Number of stored elements (expanded broadcast dims count once). */
int64_t fv_case_stored_numel(const fv_case *c, int32_t value);

/* Value of a scalar (constant, input, extent or computed) in this case.
 * FV_ERR_INPUT if it depends on an unbound extent. */
fv_status fv_case_scalar_value(const fv_case *c, int32_t value, double *result);

/* "16384x2048": the extents of the first input tensor's dims, or of all bound
 * symbol classes in input order when that is shorter. */
void fv_case_size_label(const fv_case *c, char *buffer, size_t size);

/* Builds the id from family, dtype, sizes and seed (overwrites c->id). */
void fv_case_make_id(fv_case *c);

/* Whether every input extent of the case's fusion is a constant of its
 * definition (no symbolic dimension): a static shape. */
bool fv_case_static_shapes(const fv_case *c);

#endif /* FV_IR_CASE_H */
