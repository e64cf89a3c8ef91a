/* ir_internal.h: helpers shared by the IR's own files; not for other modules. */
#ifndef FV_IR_INTERNAL_H
#define FV_IR_INTERNAL_H

#include "ir/ir.h"

/* Appends a value (dims broadcast-free extent 1, row-major order, no producer)
 * and returns its id.  FV_ERR_NOMEM on failure. */
fv_status fv_ir_internal_new_value(fv_fusion *fusion, fv_value_kind kind, fv_dtype dtype, int rank,
                                   int32_t *id);

/* Appends an op of `kind` with no inputs or outputs yet. */
fv_status fv_ir_internal_new_op(fv_fusion *fusion, fv_op_kind kind, int32_t *id);

/* Appends `value` to the fusion inputs and records its position. */
fv_status fv_ir_internal_add_input(fv_fusion *fusion, int32_t value);

/* Creates a fresh symbol (its own class, no known extent). */
fv_status fv_ir_internal_new_symbol(fv_fusion *fusion, int32_t *symbol);

/* Raises `status` with "line:col: " (the fusion's current location) in front
 * of the formatted message.  Returns `status`. */
fv_status fv_ir_internal_error(const fv_fusion *fusion, fv_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#endif
