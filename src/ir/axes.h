/* axes.h: which dimensions of a fusion's tensors are the same axis.  Each op
 * maps its operands' dimensions onto its outputs' (element-wise ops dim by
 * dim, broadcast_in_dim through broadcast_dims, reductions keep the others,
 * permute and squeeze by position, reshape where extents match at either
 * end); a union-find over (value, dim) turns these into axis classes.
 * Broadcast dimensions belong to no class: nothing varies along them.  The
 * evaluator streams rows along a class; the schedulers canonicalize segments
 * by classes. */
#ifndef FV_IR_AXES_H
#define FV_IR_AXES_H

#include "ir/ir.h"

typedef struct fv_axes {
    int32_t class_count;
    int32_t (*dim_class)[FV_MAX_RANK]; /* per value id: class of each dim; -1 for
                                          broadcast dims, scalars and dead values */
    bool *broken;                      /* per class: a reshape splits or merges it */
} fv_axes;

/* Builds the classes over the ops `order[0..op_count)` (live ops in
 * topological order); only values those ops touch, and the fusion inputs and
 * outputs, get classes.  FV_ERR_NOMEM on failure. */
fv_status fv_ir_axes_build(const fv_fusion *fusion, const int32_t *order, int32_t op_count,
                           fv_axes *axes);

void fv_ir_axes_free(fv_axes *axes);

#endif
