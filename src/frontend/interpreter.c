/* interpreter.c: runs the statements of a parsed definition file against the
 * IR builder, without Python.
 *
 * Python values are modelled by `object`: a fusion value (tensor or scalar),
 * the (variance, mean) pair var_mean returns, a shape vector, the
 * FusionDefinition, a def, or the `inputs` list.  Names live in hash-table
 * scopes: the module's, and the running def's.  The module may hold imports
 * (nvfuser, torch), one `def NAME(fd : FusionDefinition)`, one
 * `with FusionDefinition() as fd:` block (calling the def, or holding the
 * statements itself), `inputs = [...]` and `fd.execute(...)`.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_internal.h"

typedef fv_frontend_node node;
typedef fv_frontend_statement statement;

/* ------------------------------------------------------------ objects */

typedef enum object_kind {
    OBJECT_VALUE,              /* value: a fusion value id */
    OBJECT_PAIR,               /* value, second: var_mean's variance and mean */
    OBJECT_VECTOR,             /* rank, dims: a shape (define_vector, T.shape()) */
    OBJECT_FUSION_DEFINITION,  /* the `fd` object */
    OBJECT_FUNCTION,           /* function: a def statement */
    OBJECT_INPUTS              /* the `inputs` list */
} object_kind;

typedef struct object {
    object_kind kind;
    int32_t value, second;
    int rank;
    fv_dim dims[FV_MAX_RANK];
    const statement *function;
} object;

typedef struct binding {
    char name[FV_FRONTEND_MAX_NAME + 1]; /* "" = free slot */
    object object;
} binding;

typedef struct scope {
    binding *bindings;
    size_t capacity, count; /* capacity is 0 or a power of two */
} scope;

typedef struct interpreter {
    const char *path;
    fv_fusion *fusion;       /* NULL until the FusionDefinition opens */
    bool fusion_open;        /* statements may add to the fusion */
    bool definition_called;
    scope globals;
    scope *locals;           /* the running def's scope, or NULL */
    const node *inputs_list;
    const statement *last_def;
    int def_count;
} interpreter;

/* ------------------------------------------------------------- errors */

static fv_status fail_at(const interpreter *it, fv_status status, const node *at,
                         const char *format, ...) __attribute__((format(printf, 4, 5)));

static fv_status fail_at(const interpreter *it, fv_status status, const node *at,
                         const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_frontend_error_at(status, it->path, at->line, at->column, "%s", message);
}

/* Sets the location the builder stamps and reports for the next call. */
static void locate(interpreter *it, const node *at)
{
    fv_ir_set_location(it->fusion, at->line, at->column);
}

/* Turns a builder failure into "path:line:column: message". */
static fv_status built(const interpreter *it, const node *at, fv_status status)
{
    if (status == FV_OK)
        return FV_OK;
    return fv_frontend_error_relocate(status, it->path, at->line, at->column);
}

/* -------------------------------------------------------------- scopes */

/* True if `expression` is `<something>.name`. */
static bool attribute_is(const node *expression, const char *name)
{
    size_t length = strlen(name);
    return expression->kind == FV_NODE_ATTRIBUTE && (size_t)expression->length == length &&
           memcmp(expression->text, name, length) == 0;
}

static void node_text(const node *name, char buffer[FV_FRONTEND_MAX_NAME + 1])
{
    int length = name->length > FV_FRONTEND_MAX_NAME ? FV_FRONTEND_MAX_NAME : name->length;
    memcpy(buffer, name->text, (size_t)length);
    buffer[length] = '\0';
}

static size_t name_hash(const char *name)
{
    size_t hash = 1469598103934665603u;
    for (; *name != '\0'; name++)
        hash = (hash ^ (unsigned char)*name) * 1099511628211u;
    return hash;
}

static binding *scope_slot(const scope *s, const char *name)
{
    if (s->capacity == 0)
        return NULL;
    size_t index = name_hash(name) & (s->capacity - 1);
    while (s->bindings[index].name[0] != '\0' && strcmp(s->bindings[index].name, name) != 0)
        index = (index + 1) & (s->capacity - 1);
    return &s->bindings[index];
}

static fv_status scope_grow(scope *s)
{
    size_t capacity = s->capacity ? s->capacity * 2 : 64;
    binding *bindings = calloc(capacity, sizeof *bindings);
    FV_CHECK_ALLOC(bindings);
    scope grown = {bindings, capacity, 0};
    for (size_t i = 0; i < s->capacity; i++) {
        if (s->bindings[i].name[0] == '\0')
            continue;
        *scope_slot(&grown, s->bindings[i].name) = s->bindings[i];
        grown.count++;
    }
    free(s->bindings);
    *s = grown;
    return FV_OK;
}

static fv_status scope_set(scope *s, const char *name, const object *value)
{
    if ((s->count + 1) * 2 > s->capacity)
        FV_TRY(scope_grow(s));
    binding *slot = scope_slot(s, name);
    if (slot->name[0] == '\0') {
        snprintf(slot->name, sizeof slot->name, "%s", name);
        s->count++;
    }
    slot->object = *value;
    return FV_OK;
}

static void scope_free(scope *s)
{
    free(s->bindings);
    memset(s, 0, sizeof *s);
}

static const object *lookup(const interpreter *it, const node *name)
{
    char text[FV_FRONTEND_MAX_NAME + 1];
    node_text(name, text);
    const scope *scopes[2] = {it->locals, &it->globals};
    for (int i = 0; i < 2; i++) {
        if (scopes[i] == NULL)
            continue;
        const binding *slot = scope_slot(scopes[i], text);
        if (slot != NULL && slot->name[0] != '\0')
            return &slot->object;
    }
    return NULL;
}

static fv_status lookup_defined(const interpreter *it, const node *name, const object **out)
{
    *out = lookup(it, name);
    if (*out == NULL)
        return fail_at(it, FV_ERR_INPUT, name, "name '%.*s' is not defined", name->length,
                       name->text);
    return FV_OK;
}

/* Binds `name` in the current scope; a fusion value gets the name if it
 * has none yet (so inputs keep theirs when the name is reassigned). */
static fv_status assign(interpreter *it, const node *name, const object *value)
{
    char text[FV_FRONTEND_MAX_NAME + 1];
    node_text(name, text);
    if (value->kind == OBJECT_VALUE && it->fusion != NULL) {
        fv_value *named = &it->fusion->values[value->value];
        if (named->name[0] == '\0') {
            if (strlen(text) > FV_FRONTEND_MAX_VALUE_NAME)
                return fail_at(it, FV_ERR_UNSUPPORTED, name,
                               "name '%s' is too long for a fusion value (at most %d "
                               "characters)",
                               text, FV_FRONTEND_MAX_VALUE_NAME);
            snprintf(named->name, sizeof named->name, "%s", text);
        }
    }
    return scope_set(it->locals != NULL ? it->locals : &it->globals, text, value);
}

/* ------------------------------------------------------ argument values */

static fv_status evaluate(interpreter *it, const node *expression, object *out);

static fv_status missing(const interpreter *it, const node *call, const char *function,
                         const char *parameter)
{
    return fail_at(it, FV_ERR_INPUT, call, "%s: missing argument '%s'", function, parameter);
}

/* A tensor or scalar fusion value. */
static fv_status argument_value(interpreter *it, const char *function, const node *argument,
                                int32_t *value)
{
    object result;
    FV_TRY(evaluate(it, argument, &result));
    if (result.kind == OBJECT_PAIR)
        return fail_at(it, FV_ERR_INPUT, argument,
                       "%s: var_mean returns two tensors; unpack them first", function);
    if (result.kind != OBJECT_VALUE)
        return fail_at(it, FV_ERR_INPUT, argument, "%s: expected a tensor or scalar", function);
    *value = result.value;
    return FV_OK;
}

static fv_status argument_tensor(interpreter *it, const char *function, const node *argument,
                                 int32_t *tensor)
{
    FV_TRY(argument_value(it, function, argument, tensor));
    if (it->fusion->values[*tensor].kind != FV_VALUE_TENSOR)
        return fail_at(it, FV_ERR_INPUT, argument, "%s expects a tensor, but got a scalar",
                       function);
    return FV_OK;
}

static fv_status argument_int(const interpreter *it, const char *function, const node *argument,
                              const char *parameter, int64_t minimum, int64_t maximum,
                              int64_t *value)
{
    if (!fv_frontend_literal_integer(argument, value))
        return fail_at(it, FV_ERR_INPUT, argument, "%s: %s must be an integer literal",
                       function, parameter);
    if (*value < minimum || *value > maximum)
        return fail_at(it, FV_ERR_INPUT, argument, "%s: %s %lld is out of range", function,
                       parameter, (long long)*value);
    return FV_OK;
}

static fv_status argument_bool(const interpreter *it, const char *function, const node *argument,
                               const char *parameter, bool *value)
{
    if (fv_frontend_node_is_name(argument, "True") || fv_frontend_node_is_name(argument, "False")) {
        *value = fv_frontend_node_is_name(argument, "True");
        return FV_OK;
    }
    return fail_at(it, FV_ERR_INPUT, argument, "%s: %s must be True or False", function,
                   parameter);
}

/* A list (or tuple) of at most FV_MAX_RANK integer literals; a single
 * integer counts as a list of one. */
static fv_status argument_int_list(const interpreter *it, const char *function,
                                   const node *argument, const char *parameter, int *values,
                                   int *count)
{
    int64_t single;
    if (fv_frontend_literal_integer(argument, &single)) {
        FV_TRY(argument_int(it, function, argument, parameter, -64, 64, &single));
        values[0] = (int)single;
        *count = 1;
        return FV_OK;
    }
    if (argument->kind != FV_NODE_LIST && argument->kind != FV_NODE_TUPLE)
        return fail_at(it, FV_ERR_INPUT, argument, "%s: %s must be a list of integers",
                       function, parameter);
    if (argument->count > FV_MAX_RANK)
        return fail_at(it, FV_ERR_UNSUPPORTED, argument,
                       "%s: %s has %d entries (tensors have at most %d dims)", function,
                       parameter, argument->count, FV_MAX_RANK);
    *count = 0;
    for (const node *item = argument->items; item != NULL; item = item->next) {
        int64_t value;
        FV_TRY(argument_int(it, function, item, parameter, -64, 64, &value));
        values[(*count)++] = (int)value;
    }
    return FV_OK;
}

/* DataType.X or nvfuser.DataType.X; DataType.Null gives FV_DTYPE_NONE. */
static fv_status argument_dtype(const interpreter *it, const char *function, const node *argument,
                                fv_dtype *dtype)
{
    char dotted[96];
    const char *prefix = NULL;
    if (fv_frontend_dotted_name(argument, dotted, sizeof dotted)) {
        if (strncmp(dotted, "DataType.", 9) == 0)
            prefix = dotted + 9;
        else if (strncmp(dotted, "nvfuser.DataType.", 17) == 0)
            prefix = dotted + 17;
    }
    if (prefix == NULL)
        return fail_at(it, FV_ERR_INPUT, argument, "%s: dtype must be DataType.<name>",
                       function);
    if (strcmp(prefix, "Null") == 0) {
        *dtype = FV_DTYPE_NONE;
        return FV_OK;
    }
    fv_dtype parsed;
    if (!fv_dtype_parse(prefix, &parsed) || strcmp(fv_dtype_frontend_name(parsed), prefix) != 0)
        return fail_at(it, FV_ERR_UNSUPPORTED, argument, "%s: unsupported dtype DataType.%s",
                       function, prefix);
    *dtype = parsed;
    return FV_OK;
}

/* A scalar fusion value as a target extent (positive integer literal or
 * T.size(i)). */
static fv_status scalar_to_dim(interpreter *it, const char *function, const node *at,
                               int32_t scalar, fv_dim *dim)
{
    const fv_value *value = &it->fusion->values[scalar];
    if (value->kind != FV_VALUE_SCALAR)
        return fail_at(it, FV_ERR_INPUT, at, "%s: a tensor cannot be a shape entry", function);
    if (value->origin == FV_SCALAR_CONSTANT &&
        !(value->constant >= 1 && value->constant <= (double)FV_FRONTEND_MAX_EXTENT &&
          value->constant == floor(value->constant)))
        return fail_at(it, FV_ERR_INPUT, at,
                       "%s: %g is not a valid extent (a positive integer up to 2^40)", function,
                       value->constant);
    locate(it, at);
    return built(it, at, fv_ir_dim_from_scalar(it->fusion, scalar, dim));
}

/* One entry of a shape list: an integer literal or a scalar value. */
static fv_status shape_entry(interpreter *it, const char *function, const node *item,
                             fv_dim *dim)
{
    int64_t extent;
    if (fv_frontend_literal_integer(item, &extent)) {
        if (extent < 1 || extent > FV_FRONTEND_MAX_EXTENT)
            return fail_at(it, FV_ERR_INPUT, item,
                           "%s: extent %lld is not supported in a shape (use a positive extent "
                           "up to 2^40 or T.size(i))",
                           function, (long long)extent);
        *dim = fv_ir_dim_concrete(extent);
        return FV_OK;
    }
    int32_t scalar = -1;
    FV_TRY(argument_value(it, function, item, &scalar));
    return scalar_to_dim(it, function, item, scalar, dim);
}

/* Product of the extents known so far (concrete, or unified with one);
 * false if it would exceed FV_FRONTEND_MAX_ELEMENTS. */
static bool known_size_fits(const fv_fusion *fusion, int rank, const fv_dim *dims)
{
    int64_t count = 1;
    for (int d = 0; d < rank; d++) {
        int64_t extent = dims[d].extent;
        if (dims[d].symbol >= 0)
            extent = fusion->symbol_extent[fv_ir_symbol_root(fusion, dims[d].symbol)];
        if (dims[d].broadcast && !dims[d].expanded)
            extent = 1;
        if (extent <= 0)
            continue;
        if (__builtin_mul_overflow(count, extent, &count) || count > FV_FRONTEND_MAX_ELEMENTS)
            return false;
    }
    return true;
}

/* A shape: a list of entries, or a vector (define_vector, T.shape()). */
static fv_status argument_shape(interpreter *it, const char *function, const node *argument,
                                int *rank, fv_dim *dims)
{
    if (argument->kind == FV_NODE_LIST || argument->kind == FV_NODE_TUPLE) {
        if (argument->count > FV_MAX_RANK)
            return fail_at(it, FV_ERR_UNSUPPORTED, argument,
                           "%s: a shape of rank %d is not supported (at most %d)", function,
                           argument->count, FV_MAX_RANK);
        *rank = 0;
        for (const node *item = argument->items; item != NULL; item = item->next)
            FV_TRY(shape_entry(it, function, item, &dims[(*rank)++]));
    } else {
        object vector;
        FV_TRY(evaluate(it, argument, &vector));
        if (vector.kind != OBJECT_VECTOR)
            return fail_at(it, FV_ERR_INPUT, argument,
                           "%s: a shape must be a list, a vector or T.shape()", function);
        *rank = vector.rank;
        memcpy(dims, vector.dims, sizeof vector.dims);
    }
    if (!known_size_fits(it->fusion, *rank, dims))
        return fail_at(it, FV_ERR_INPUT, argument, "%s: the shape has more than 2^50 elements",
                       function);
    return FV_OK;
}

static fv_status check_list_length(const interpreter *it, const char *function, const node *at,
                                   const char *parameter, int count, int rank)
{
    if (count != rank)
        return fail_at(it, FV_ERR_INPUT, at, "%s: %s has %d entries for a rank-%d tensor",
                       function, parameter, count, rank);
    return FV_OK;
}

static int rank_of(const interpreter *it, int32_t value) { return it->fusion->values[value].rank; }

/* ---------------------------------------------------------- fd.ops.* */

typedef struct op_entry op_entry;
typedef fv_status (*op_handler)(interpreter *it, const node *call, const op_entry *op,
                                const node **arguments, object *out);

struct op_entry {
    const char *name;
    fv_op_kind kind;
    op_handler handler;
    int parameter_count;
    const char *parameters[5];
};

static object value_object(int32_t value)
{
    object result = {.kind = OBJECT_VALUE, .value = value, .second = -1};
    return result;
}

static fv_status op_cast(interpreter *it, const node *call, const op_entry *op,
                         const node **arguments, object *out)
{
    int32_t input = -1;
    fv_dtype dtype;
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "dtype");
    FV_TRY(argument_value(it, op->name, arguments[0], &input));
    FV_TRY(argument_dtype(it, op->name, arguments[1], &dtype));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_cast(it->fusion, input, dtype, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_broadcast_in_dim(interpreter *it, const node *call, const op_entry *op,
                                     const node **arguments, object *out)
{
    const node *shape_node = arguments[1] != NULL ? arguments[1] : arguments[3];
    if (arguments[1] != NULL && arguments[3] != NULL)
        return fail_at(it, FV_ERR_INPUT, arguments[3],
                       "%s: give either shape or output_shape, not both", op->name);
    if (arguments[0] == NULL || shape_node == NULL || arguments[2] == NULL)
        return missing(it, call, op->name,
                       arguments[0] == NULL ? "arg" : shape_node == NULL ? "shape"
                                                                        : "broadcast_dims");
    int32_t input = -1;
    int rank, dim_count, broadcast_dims[FV_MAX_RANK];
    fv_dim shape[FV_MAX_RANK];
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(argument_shape(it, op->name, shape_node, &rank, shape));
    FV_TRY(argument_int_list(it, op->name, arguments[2], "broadcast_dims", broadcast_dims,
                             &dim_count));
    FV_TRY(check_list_length(it, op->name, arguments[2], "broadcast_dims", dim_count,
                             rank_of(it, input)));
    locate(it, call);
    FV_TRY(built(it, call,
                 fv_ir_broadcast_in_dim(it->fusion, input, rank, shape, broadcast_dims,
                                        &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_broadcast(interpreter *it, const node *call, const op_entry *op,
                              const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "is_broadcast_dim");
    int32_t input = -1;
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    const node *flags = arguments[1];
    if (flags->kind != FV_NODE_LIST && flags->kind != FV_NODE_TUPLE)
        return fail_at(it, FV_ERR_INPUT, flags, "%s: is_broadcast_dim must be a list of bools",
                       op->name);
    if (flags->count > FV_MAX_RANK)
        return fail_at(it, FV_ERR_UNSUPPORTED, flags, "%s: rank %d is not supported (at most %d)",
                       op->name, flags->count, FV_MAX_RANK);
    bool is_broadcast[FV_MAX_RANK];
    int rank = 0;
    for (const node *item = flags->items; item != NULL; item = item->next)
        FV_TRY(argument_bool(it, op->name, item, "is_broadcast_dim", &is_broadcast[rank++]));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_broadcast(it->fusion, input, rank, is_broadcast, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_expand(interpreter *it, const node *call, const op_entry *op,
                           const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "shape");
    int32_t input = -1;
    int rank;
    fv_dim shape[FV_MAX_RANK];
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(argument_shape(it, op->name, arguments[1], &rank, shape));
    FV_TRY(check_list_length(it, op->name, arguments[1], "shape", rank, rank_of(it, input)));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_expand(it->fusion, input, shape, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_squeeze(interpreter *it, const node *call, const op_entry *op,
                            const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "dims");
    int32_t input = -1;
    int dims[FV_MAX_RANK], count;
    bool squeeze_expanded = false;
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(argument_int_list(it, op->name, arguments[1], "dims", dims, &count));
    if (arguments[2] != NULL)
        FV_TRY(argument_bool(it, op->name, arguments[2], "squeeze_expanded", &squeeze_expanded));
    const fv_value *source = &it->fusion->values[input];
    for (int i = 0; i < count && !squeeze_expanded; i++) {
        int dim = dims[i] < 0 ? dims[i] + source->rank : dims[i];
        if (dim >= 0 && dim < source->rank && source->dims[dim].expanded)
            return fail_at(it, FV_ERR_INPUT, arguments[1],
                           "%s: dimension %d is an expanded broadcast; pass "
                           "squeeze_expanded=True to remove it",
                           op->name, dim);
    }
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_squeeze(it->fusion, input, count, dims, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_reshape(interpreter *it, const node *call, const op_entry *op,
                            const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "new_shape");
    int32_t input = -1;
    int rank;
    fv_dim shape[FV_MAX_RANK];
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(argument_shape(it, op->name, arguments[1], &rank, shape));
    const fv_value *source = &it->fusion->values[input];
    if (!known_size_fits(it->fusion, source->rank, source->dims))
        return fail_at(it, FV_ERR_INPUT, arguments[0], "%s: the input has more than 2^50 elements",
                       op->name);
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_reshape(it->fusion, input, rank, shape, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_permute(interpreter *it, const node *call, const op_entry *op,
                            const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "dims");
    int32_t input = -1;
    int order[FV_MAX_RANK], count;
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(argument_int_list(it, op->name, arguments[1], "dims", order, &count));
    FV_TRY(check_list_length(it, op->name, arguments[1], "dims", count, rank_of(it, input)));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_permute(it->fusion, input, order, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_unary(interpreter *it, const node *call, const op_entry *op,
                          const node **arguments, object *out)
{
    if (arguments[0] == NULL)
        return missing(it, call, op->name, "arg");
    int32_t input = -1;
    FV_TRY(argument_value(it, op->name, arguments[0], &input));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_unary(it->fusion, op->kind, input, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_binary(interpreter *it, const node *call, const op_entry *op,
                           const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg1" : "arg2");
    int32_t lhs = -1, rhs = -1;
    FV_TRY(argument_value(it, op->name, arguments[0], &lhs));
    FV_TRY(argument_value(it, op->name, arguments[1], &rhs));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_binary(it->fusion, op->kind, lhs, rhs, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_where(interpreter *it, const node *call, const op_entry *op,
                          const node **arguments, object *out)
{
    int32_t operands[3];
    for (int i = 0; i < 3; i++) {
        if (arguments[i] == NULL)
            return missing(it, call, op->name, op->parameters[i]);
        FV_TRY(argument_value(it, op->name, arguments[i], &operands[i]));
    }
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_where(it->fusion, operands[0], operands[1], operands[2],
                                       &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

/* Reduction dims: the given list, or every dim when absent. */
static fv_status reduction_dims(const interpreter *it, const op_entry *op, const node *argument,
                                int32_t input, int *dims, int *count)
{
    if (argument != NULL)
        return argument_int_list(it, op->name, argument, "dims", dims, count);
    *count = rank_of(it, input);
    for (int d = 0; d < *count; d++)
        dims[d] = d;
    return FV_OK;
}

static fv_status op_reduce(interpreter *it, const node *call, const op_entry *op,
                           const node **arguments, object *out)
{
    if (arguments[0] == NULL)
        return missing(it, call, op->name, "arg");
    int32_t input = -1;
    int dims[FV_MAX_RANK], count;
    bool keepdim = false;
    fv_dtype dtype = FV_DTYPE_NONE;
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(reduction_dims(it, op, arguments[1], input, dims, &count));
    if (arguments[2] != NULL)
        FV_TRY(argument_bool(it, op->name, arguments[2], "keepdim", &keepdim));
    if (arguments[3] != NULL)
        FV_TRY(argument_dtype(it, op->name, arguments[3], &dtype));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_reduce(it->fusion, op->kind, input, count, dims, keepdim, dtype,
                                        &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_var_mean(interpreter *it, const node *call, const op_entry *op,
                             const node **arguments, object *out)
{
    if (arguments[0] == NULL)
        return missing(it, call, op->name, "arg");
    int32_t input = -1, variance, mean;
    int dims[FV_MAX_RANK], count;
    int64_t correction = 1;
    bool keepdim = false;
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(reduction_dims(it, op, arguments[1], input, dims, &count));
    if (arguments[2] != NULL)
        FV_TRY(argument_int(it, op->name, arguments[2], "correction", 0, 1 << 20, &correction));
    if (arguments[3] != NULL)
        FV_TRY(argument_bool(it, op->name, arguments[3], "keepdim", &keepdim));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_var_mean(it->fusion, input, count, dims, correction, keepdim,
                                          &variance, &mean)));
    *out = (object){.kind = OBJECT_PAIR, .value = variance, .second = mean};
    return FV_OK;
}

static fv_status op_full(interpreter *it, const node *call, const op_entry *op,
                         const node **arguments, object *out)
{
    for (int i = 0; i < 3; i++)
        if (arguments[i] == NULL)
            return missing(it, call, op->name, op->parameters[i]);
    int rank;
    fv_dim shape[FV_MAX_RANK];
    int32_t fill = -1;
    fv_dtype dtype;
    FV_TRY(argument_shape(it, op->name, arguments[0], &rank, shape));
    FV_TRY(argument_value(it, op->name, arguments[1], &fill));
    FV_TRY(argument_dtype(it, op->name, arguments[2], &dtype));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_full(it->fusion, rank, shape, fill, dtype, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status op_size(interpreter *it, const node *call, const op_entry *op,
                         const node **arguments, object *out)
{
    if (arguments[0] == NULL || arguments[1] == NULL)
        return missing(it, call, op->name, arguments[0] == NULL ? "arg" : "dim");
    int32_t input = -1;
    int64_t dim;
    FV_TRY(argument_tensor(it, op->name, arguments[0], &input));
    FV_TRY(argument_int(it, op->name, arguments[1], "dim", -64, 64, &dim));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_size(it->fusion, input, (int)dim, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

#define UNARY(name, kind) {name, kind, op_unary, 1, {"arg"}}
#define BINARY(name, kind) {name, kind, op_binary, 2, {"arg1", "arg2"}}

static const op_entry op_table[] = {
    {"cast", FV_OP_CAST, op_cast, 2, {"arg", "dtype"}},
    {"broadcast_in_dim", FV_OP_BROADCAST_IN_DIM, op_broadcast_in_dim, 4,
     {"arg", "shape", "broadcast_dims", "output_shape"}},
    {"broadcast", FV_OP_BROADCAST, op_broadcast, 2, {"arg", "is_broadcast_dim"}},
    {"expand", FV_OP_EXPAND, op_expand, 2, {"arg", "shape"}},
    {"squeeze", FV_OP_SQUEEZE, op_squeeze, 3, {"arg", "dims", "squeeze_expanded"}},
    {"reshape", FV_OP_RESHAPE, op_reshape, 2, {"arg", "new_shape"}},
    {"permute", FV_OP_PERMUTE, op_permute, 2, {"arg", "dims"}},
    UNARY("set", FV_OP_SET),
    UNARY("segment_set", FV_OP_SEGMENT_SET),
    UNARY("neg", FV_OP_NEG),
    UNARY("abs", FV_OP_ABS),
    UNARY("exp", FV_OP_EXP),
    UNARY("log", FV_OP_LOG),
    UNARY("sqrt", FV_OP_SQRT),
    UNARY("rsqrt", FV_OP_RSQRT),
    UNARY("reciprocal", FV_OP_RECIPROCAL),
    BINARY("add", FV_OP_ADD),
    BINARY("sub", FV_OP_SUB),
    BINARY("mul", FV_OP_MUL),
    BINARY("div", FV_OP_DIV),
    BINARY("pow", FV_OP_POW),
    BINARY("maximum", FV_OP_MAXIMUM),
    BINARY("minimum", FV_OP_MINIMUM),
    BINARY("eq", FV_OP_EQ),
    BINARY("ne", FV_OP_NE),
    BINARY("lt", FV_OP_LT),
    BINARY("le", FV_OP_LE),
    BINARY("gt", FV_OP_GT),
    BINARY("ge", FV_OP_GE),
    {"where", FV_OP_WHERE, op_where, 3, {"pred", "value1", "value2"}},
    {"sum", FV_OP_SUM, op_reduce, 4, {"arg", "dims", "keepdim", "dtype"}},
    {"max", FV_OP_MAX, op_reduce, 4, {"arg", "dims", "keepdim", "dtype"}},
    {"var_mean", FV_OP_VAR_MEAN, op_var_mean, 4, {"arg", "dims", "correction", "keepdim"}},
    {"full", FV_OP_FULL, op_full, 3, {"shape", "fill_value", "dtype"}},
    {"size", FV_OP_KIND_COUNT /* no op: a scalar */, op_size, 2, {"arg", "dim"}},
};

static fv_status call_op(interpreter *it, const node *call, const node *name, object *out)
{
    const op_entry *op = NULL;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0] && op == NULL; i++)
        if (strlen(op_table[i].name) == (size_t)name->length &&
            memcmp(op_table[i].name, name->text, (size_t)name->length) == 0)
            op = &op_table[i];
    if (op == NULL)
        return fail_at(it, FV_ERR_UNSUPPORTED, call, "unsupported operation fd.ops.%.*s",
                       name->length, name->text);
    const node *arguments[5];
    FV_TRY(fv_frontend_bind_arguments(it->path, call, op->name, op->parameters,
                                      op->parameter_count, arguments));
    return op->handler(it, call, op, arguments, out);
}

/* -------------------------------------------------------- fd.define_* */

static fv_status count_input(const interpreter *it, const node *call)
{
    if (it->fusion->input_count >= FV_CASE_MAX_INPUTS)
        return fail_at(it, FV_ERR_UNSUPPORTED, call,
                       "more than %d fusion inputs are not supported", FV_CASE_MAX_INPUTS);
    return FV_OK;
}

/* define_tensor's shape: integer literals, -1 for symbolic extents. */
static fv_status tensor_shape(const interpreter *it, const node *argument, int *rank,
                              int64_t *shape)
{
    if (argument->kind != FV_NODE_LIST && argument->kind != FV_NODE_TUPLE)
        return fail_at(it, FV_ERR_INPUT, argument,
                       "define_tensor: shape must be a list of integers");
    if (argument->count > FV_MAX_RANK)
        return fail_at(it, FV_ERR_UNSUPPORTED, argument,
                       "define_tensor: tensors of rank %d are not supported (at most %d)",
                       argument->count, FV_MAX_RANK);
    *rank = 0;
    int64_t count = 1;
    for (const node *item = argument->items; item != NULL; item = item->next) {
        int64_t extent;
        if (!fv_frontend_literal_integer(item, &extent))
            return fail_at(it, FV_ERR_INPUT, item,
                           "define_tensor: shape entries must be integer literals");
        if (extent != -1 && (extent < 1 || extent > FV_FRONTEND_MAX_EXTENT))
            return fail_at(it, FV_ERR_INPUT, item,
                           "define_tensor: extent %lld is not supported (use -1 or a positive "
                           "extent up to 2^40)",
                           (long long)extent);
        if (extent > 0 && (__builtin_mul_overflow(count, extent, &count) ||
                           count > FV_FRONTEND_MAX_ELEMENTS))
            return fail_at(it, FV_ERR_INPUT, argument,
                           "define_tensor: the shape has more than 2^50 elements");
        shape[(*rank)++] = extent;
    }
    return FV_OK;
}

static fv_status tensor_contiguity(const interpreter *it, const node *argument, int rank,
                                   const int64_t *shape, int8_t *contiguity)
{
    if (argument->kind != FV_NODE_LIST && argument->kind != FV_NODE_TUPLE)
        return fail_at(it, FV_ERR_INPUT, argument,
                       "define_tensor: contiguity must be a list of True, False or None");
    FV_TRY(check_list_length(it, "define_tensor", argument, "contiguity", argument->count, rank));
    int d = 0;
    for (const node *item = argument->items; item != NULL; item = item->next, d++) {
        if (fv_frontend_node_is_name(item, "None")) {
            if (shape[d] != 1)
                return fail_at(it, FV_ERR_INPUT, item,
                               "define_tensor: contiguity[%d] is None, but dimension %d is not "
                               "a broadcast dimension (extent 1)",
                               d, d);
            contiguity[d] = -1;
            continue;
        }
        bool contiguous = false;
        FV_TRY(argument_bool(it, "define_tensor", item, "contiguity", &contiguous));
        contiguity[d] = contiguous ? 1 : 0;
    }
    return FV_OK;
}

/* A stride_order list of `rank` entries (a permutation of 0..rank-1). */
static fv_status stride_order_list(const interpreter *it, const char *function,
                                   const node *argument, int rank, int8_t *order)
{
    int values[FV_MAX_RANK], count;
    FV_TRY(argument_int_list(it, function, argument, "stride_order", values, &count));
    FV_TRY(check_list_length(it, function, argument, "stride_order", count, rank));
    bool seen[FV_MAX_RANK] = {false};
    for (int d = 0; d < FV_MAX_RANK; d++)
        order[d] = -1;
    for (int d = 0; d < count; d++) {
        if (values[d] < 0 || values[d] >= rank || seen[values[d]])
            return fail_at(it, FV_ERR_INPUT, argument,
                           "%s: stride_order must be a permutation of 0..%d", function,
                           rank - 1);
        seen[values[d]] = true;
        order[d] = (int8_t)values[d];
    }
    return FV_OK;
}

static fv_status define_tensor(interpreter *it, const node *call, object *out)
{
    static const char *const parameters[] = {"shape", "contiguity", "dtype", "is_cpu",
                                             "stride_order"};
    const node *arguments[5];
    FV_TRY(fv_frontend_bind_arguments(it->path, call, "define_tensor", parameters, 5, arguments));
    if (arguments[0] == NULL)
        return missing(it, call, "define_tensor", "shape");
    FV_TRY(count_input(it, call));
    int rank = 0;
    int64_t shape[FV_MAX_RANK];
    int8_t contiguity[FV_MAX_RANK] = {1, 1, 1, 1};
    int8_t stride_order[FV_MAX_RANK];
    fv_dtype dtype = FV_F32;
    bool is_cpu = false;
    FV_TRY(tensor_shape(it, arguments[0], &rank, shape));
    for (int d = 0; d < rank; d++)
        contiguity[d] = shape[d] == 1 ? -1 : 1;
    if (arguments[1] != NULL && !fv_frontend_node_is_name(arguments[1], "None"))
        FV_TRY(tensor_contiguity(it, arguments[1], rank, shape, contiguity));
    if (arguments[2] != NULL)
        FV_TRY(argument_dtype(it, "define_tensor", arguments[2], &dtype));
    if (arguments[3] != NULL)
        FV_TRY(argument_bool(it, "define_tensor", arguments[3], "is_cpu", &is_cpu));
    if (is_cpu)
        return fail_at(it, FV_ERR_UNSUPPORTED, arguments[3],
                       "define_tensor: is_cpu=True (a CPU scalar tensor) is not supported");
    bool has_order = arguments[4] != NULL && !fv_frontend_node_is_name(arguments[4], "None");
    if (has_order)
        FV_TRY(stride_order_list(it, "define_tensor", arguments[4], rank, stride_order));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_define_tensor(it->fusion, rank, shape, contiguity, dtype,
                                               has_order ? stride_order : NULL, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

/* define_scalar's value: a number literal or True/False. */
static fv_status scalar_literal(const interpreter *it, const node *argument, double *value,
                                fv_dtype *literal_dtype)
{
    bool is_integer;
    if (fv_frontend_node_is_name(argument, "True") || fv_frontend_node_is_name(argument, "False")) {
        *value = fv_frontend_node_is_name(argument, "True") ? 1 : 0;
        *literal_dtype = FV_BOOL;
        return FV_OK;
    }
    if (!fv_frontend_literal_number(argument, value, &is_integer))
        return fail_at(it, FV_ERR_UNSUPPORTED, argument,
                       "define_scalar: the value must be a number literal, True or False");
    *literal_dtype = is_integer ? FV_I64 : FV_F64;
    return FV_OK;
}

static fv_status define_scalar(interpreter *it, const node *call, object *out)
{
    static const char *const parameters[] = {"value", "dtype"};
    const node *arguments[2];
    FV_TRY(fv_frontend_bind_arguments(it->path, call, "define_scalar", parameters, 2, arguments));
    fv_dtype dtype = FV_DTYPE_NONE;
    if (arguments[1] != NULL)
        FV_TRY(argument_dtype(it, "define_scalar", arguments[1], &dtype));
    if (arguments[0] == NULL || fv_frontend_node_is_name(arguments[0], "None")) {
        FV_TRY(count_input(it, call));
        locate(it, call);
        FV_TRY(built(it, call, fv_ir_define_scalar_input(it->fusion, dtype, &out->value)));
        *out = value_object(out->value);
        return FV_OK;
    }
    double value;
    fv_dtype literal_dtype = FV_F64;
    FV_TRY(scalar_literal(it, arguments[0], &value, &literal_dtype));
    if (dtype == FV_DTYPE_NONE)
        dtype = literal_dtype;
    if ((fv_dtype_is_integer(dtype) && value != floor(value)) ||
        (dtype == FV_BOOL && value != 0 && value != 1))
        return fail_at(it, FV_ERR_INPUT, arguments[0],
                       "define_scalar: %g is not a value of DataType.%s", value,
                       fv_dtype_frontend_name(dtype));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_define_scalar(it->fusion, value, dtype, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static fv_status define_vector(interpreter *it, const node *call, object *out)
{
    static const char *const parameters[] = {"values", "dtype"};
    const node *arguments[2];
    FV_TRY(fv_frontend_bind_arguments(it->path, call, "define_vector", parameters, 2, arguments));
    if (arguments[0] == NULL)
        return missing(it, call, "define_vector", "values");
    if (arguments[1] != NULL) {
        fv_dtype dtype;
        FV_TRY(argument_dtype(it, "define_vector", arguments[1], &dtype));
        if (dtype != FV_I64 && dtype != FV_I32)
            return fail_at(it, FV_ERR_INPUT, arguments[1],
                           "define_vector: dtype must be DataType.Int");
    }
    const node *values = arguments[0];
    if (values->kind != FV_NODE_LIST && values->kind != FV_NODE_TUPLE)
        return fail_at(it, FV_ERR_UNSUPPORTED, values,
                       "define_vector: the values must be a list of extents");
    *out = (object){.kind = OBJECT_VECTOR, .value = -1, .second = -1};
    return argument_shape(it, "define_vector", values, &out->rank, out->dims);
}

static fv_status add_output(interpreter *it, const node *call, object *out)
{
    static const char *const parameters[] = {"output", "stride_order", "alias_input"};
    const node *arguments[3];
    FV_TRY(fv_frontend_bind_arguments(it->path, call, "add_output", parameters, 3, arguments));
    if (arguments[0] == NULL)
        return missing(it, call, "add_output", "output");
    const node *order_node = arguments[1];
    const node *alias = arguments[2];
    if (order_node != NULL && order_node->kind != FV_NODE_LIST &&
        order_node->kind != FV_NODE_TUPLE && !fv_frontend_node_is_name(order_node, "None"))
        alias = order_node; /* add_output(T, alias) is the aliasing overload */
    if (alias != NULL && !fv_frontend_node_is_name(alias, "None"))
        return fail_at(it, FV_ERR_UNSUPPORTED, alias,
                       "add_output: alias_input (an in-place output) is not supported");
    int32_t output = -1;
    FV_TRY(argument_value(it, "add_output", arguments[0], &output));
    int8_t order[FV_MAX_RANK];
    bool has_order = order_node != NULL && alias != order_node &&
                     !fv_frontend_node_is_name(order_node, "None");
    if (has_order)
        FV_TRY(stride_order_list(it, "add_output", order_node, rank_of(it, output), order));
    locate(it, call);
    FV_TRY(built(it, call, fv_ir_add_output(it->fusion, output, has_order ? order : NULL)));
    *out = (object){.kind = OBJECT_VALUE, .value = output, .second = -1};
    return FV_OK;
}

static fv_status call_fd_method(interpreter *it, const node *call, const node *method,
                                object *out)
{
    if (attribute_is(method, "define_tensor"))
        return define_tensor(it, call, out);
    if (attribute_is(method, "define_scalar"))
        return define_scalar(it, call, out);
    if (attribute_is(method, "define_vector"))
        return define_vector(it, call, out);
    if (attribute_is(method, "add_output"))
        return add_output(it, call, out);
    return fail_at(it, FV_ERR_UNSUPPORTED, call, "unsupported method fd.%.*s", method->length,
                   method->text);
}

/* T.size(i) and T.shape(). */
static fv_status call_tensor_method(interpreter *it, const node *call, int32_t tensor,
                                    const node *method, object *out)
{
    if (attribute_is(method, "size")) {
        static const char *const parameters[] = {"dim"};
        const node *arguments[1];
        FV_TRY(fv_frontend_bind_arguments(it->path, call, "size", parameters, 1, arguments));
        if (arguments[0] == NULL)
            return missing(it, call, "size", "dim");
        int64_t dim;
        FV_TRY(argument_int(it, "size", arguments[0], "dim", -64, 64, &dim));
        locate(it, call);
        FV_TRY(built(it, call, fv_ir_size(it->fusion, tensor, (int)dim, &out->value)));
        *out = value_object(out->value);
        return FV_OK;
    }
    if (attribute_is(method, "shape")) {
        if (call->count > 0)
            return fail_at(it, FV_ERR_INPUT, call->items, "shape: takes no arguments");
        const fv_value *value = &it->fusion->values[tensor];
        *out = (object){.kind = OBJECT_VECTOR, .value = -1, .second = -1, .rank = value->rank};
        for (int d = 0; d < value->rank; d++)
            out->dims[d] = fv_ir_dim_of(it->fusion, tensor, d);
        return FV_OK;
    }
    return fail_at(it, FV_ERR_UNSUPPORTED, call, "unsupported tensor method .%.*s",
                   method->length, method->text);
}

static fv_status require_open(const interpreter *it, const node *call)
{
    if (!it->fusion_open)
        return fail_at(it, FV_ERR_INPUT, call,
                       "the FusionDefinition is only usable inside its with block");
    return FV_OK;
}

static fv_status evaluate_call(interpreter *it, const node *call, object *out)
{
    const node *callee = call->child;
    if (callee->kind == FV_NODE_NAME) {
        const object *target;
        FV_TRY(lookup_defined(it, callee, &target));
        if (target->kind == OBJECT_FUNCTION)
            return fail_at(it, FV_ERR_UNSUPPORTED, call,
                           "%.*s(...) can only be called as `%.*s(fd)` in the with block",
                           callee->length, callee->text, callee->length, callee->text);
        return fail_at(it, FV_ERR_INPUT, call, "'%.*s' is not callable", callee->length,
                       callee->text);
    }
    if (callee->kind != FV_NODE_ATTRIBUTE)
        return fail_at(it, FV_ERR_UNSUPPORTED, call, "unsupported call");
    const node *base = callee->child;
    object owner;
    if (attribute_is(base, "ops")) {
        FV_TRY(evaluate(it, base->child, &owner));
        if (owner.kind == OBJECT_FUSION_DEFINITION) {
            FV_TRY(require_open(it, call));
            return call_op(it, call, callee, out);
        }
        return fail_at(it, FV_ERR_UNSUPPORTED, call, "unsupported call");
    }
    FV_TRY(evaluate(it, base, &owner));
    if (owner.kind == OBJECT_FUSION_DEFINITION) {
        FV_TRY(require_open(it, call));
        return call_fd_method(it, call, callee, out);
    }
    if (owner.kind == OBJECT_VALUE && it->fusion->values[owner.value].kind == FV_VALUE_TENSOR)
        return call_tensor_method(it, call, owner.value, callee, out);
    return fail_at(it, FV_ERR_UNSUPPORTED, call, "unsupported call .%.*s(...)", callee->length,
                   callee->text);
}

/* A literal number or bool as a constant scalar (float: Double, int: Int). */
static fv_status literal_constant(interpreter *it, const node *expression, double value,
                                  fv_dtype dtype, object *out)
{
    if (it->fusion == NULL || !it->fusion_open)
        return fail_at(it, FV_ERR_UNSUPPORTED, expression,
                       "a literal is only usable inside the fusion definition");
    locate(it, expression);
    FV_TRY(built(it, expression, fv_ir_define_scalar(it->fusion, value, dtype, &out->value)));
    *out = value_object(out->value);
    return FV_OK;
}

static const char *operator_op_name(char operator_char)
{
    switch (operator_char) {
    case '+': return "add";
    case '-': return "sub";
    case '*': return "mul";
    default: return "div";
    }
}

static fv_status evaluate(interpreter *it, const node *expression, object *out)
{
    double number;
    bool is_integer;
    switch (expression->kind) {
    case FV_NODE_NAME: {
        if (fv_frontend_node_is_name(expression, "True") ||
            fv_frontend_node_is_name(expression, "False"))
            return literal_constant(it, expression,
                                    fv_frontend_node_is_name(expression, "True") ? 1 : 0,
                                    FV_BOOL, out);
        if (fv_frontend_node_is_name(expression, "None"))
            return fail_at(it, FV_ERR_INPUT, expression, "None is not a tensor or scalar");
        const object *found;
        FV_TRY(lookup_defined(it, expression, &found));
        *out = *found;
        return FV_OK;
    }
    case FV_NODE_INTEGER:
    case FV_NODE_FLOAT:
    case FV_NODE_UNARY:
        if (!fv_frontend_literal_number(expression, &number, &is_integer))
            return fail_at(it, FV_ERR_UNSUPPORTED, expression,
                           "unary '%c' on a fusion value is not supported (use fd.ops.neg)",
                           expression->operator_char);
        return literal_constant(it, expression, number, is_integer ? FV_I64 : FV_F64, out);
    case FV_NODE_BINARY:
        return fail_at(it, FV_ERR_UNSUPPORTED, expression,
                       "operator '%c' is not supported here (use fd.ops.%s)",
                       expression->operator_char, operator_op_name(expression->operator_char));
    case FV_NODE_CALL:
        return evaluate_call(it, expression, out);
    case FV_NODE_LIST:
    case FV_NODE_TUPLE:
        return fail_at(it, FV_ERR_INPUT, expression, "a list is not a tensor or scalar here");
    case FV_NODE_STRING:
        return fail_at(it, FV_ERR_INPUT, expression, "a string is not a tensor or scalar");
    case FV_NODE_ATTRIBUTE: {
        char dotted[96];
        if (!fv_frontend_dotted_name(expression, dotted, sizeof dotted))
            snprintf(dotted, sizeof dotted, "...%.*s", expression->length, expression->text);
        return fail_at(it, FV_ERR_UNSUPPORTED, expression, "unsupported expression '%s'",
                       dotted);
    }
    case FV_NODE_KEYWORD:
        break;
    }
    return fail_at(it, FV_ERR_INPUT, expression, "unexpected keyword argument");
}

/* ----------------------------------------------------------- statements */

static fv_status assign_targets(interpreter *it, const statement *s, const object *value)
{
    if (s->target_count == 1) {
        if (value->kind == OBJECT_PAIR)
            return fail_at(it, FV_ERR_INPUT, s->targets,
                           "var_mean returns two tensors: write "
                           "`var, mean = fd.ops.var_mean(...)`");
        return assign(it, s->targets, value);
    }
    if (s->target_count != 2 || value->kind != OBJECT_PAIR)
        return fail_at(it, FV_ERR_INPUT, s->targets, "cannot unpack this value into %d names",
                       s->target_count);
    object first = value_object(value->value);
    object second = value_object(value->second);
    FV_TRY(assign(it, s->targets, &first));
    return assign(it, s->targets->next, &second);
}

static const char *statement_keyword(const statement *s)
{
    switch (s->kind) {
    case FV_STATEMENT_IMPORT: return "import";
    case FV_STATEMENT_FROM_IMPORT: return "from";
    case FV_STATEMENT_DEF: return "def";
    case FV_STATEMENT_WITH: return "with";
    default: return "statement";
    }
}

static fv_status fail_statement(const interpreter *it, fv_status status, const statement *s,
                                const char *message)
{
    return fv_frontend_error_at(status, it->path, s->line, s->column, "%s", message);
}

/* A statement of the fusion (in the def's body or the with block). */
static fv_status run_fusion_statement(interpreter *it, const statement *s)
{
    object value;
    switch (s->kind) {
    case FV_STATEMENT_PASS:
        return FV_OK;
    case FV_STATEMENT_EXPRESSION:
        if (s->value->kind == FV_NODE_STRING)
            return FV_OK; /* a docstring */
        return evaluate(it, s->value, &value);
    case FV_STATEMENT_ASSIGN:
        FV_TRY(evaluate(it, s->value, &value));
        return assign_targets(it, s, &value);
    default: {
        char message[96];
        snprintf(message, sizeof message, "'%s' inside the fusion definition is not supported",
                 statement_keyword(s));
        return fail_statement(it, FV_ERR_UNSUPPORTED, s, message);
    }
    }
}

static fv_status run_body(interpreter *it, const statement *body,
                          fv_status (*run)(interpreter *, const statement *))
{
    for (const statement *s = body; s != NULL; s = s->next)
        FV_TRY(run(it, s));
    return FV_OK;
}

/* Runs a def's body with its parameter bound to the FusionDefinition. */
static fv_status run_definition(interpreter *it, const statement *function)
{
    if (it->definition_called)
        return fail_at(it, FV_ERR_UNSUPPORTED, function->name,
                       "the fusion definition is called twice; one fusion per file");
    it->definition_called = true;
    snprintf(it->fusion->name, sizeof it->fusion->name, "%.*s", function->name->length,
             function->name->text);
    scope locals = {0};
    object fd = {.kind = OBJECT_FUSION_DEFINITION, .value = -1, .second = -1};
    char parameter[FV_FRONTEND_MAX_NAME + 1];
    node_text(function->names, parameter);
    fv_status status = scope_set(&locals, parameter, &fd);
    if (status == FV_OK) {
        it->locals = &locals;
        status = run_body(it, function->body, run_fusion_statement);
        it->locals = NULL;
    }
    scope_free(&locals);
    return status;
}

/* `NAME(fd)` in the with block. */
static fv_status call_definition(interpreter *it, const node *call, const statement *function)
{
    object argument = {.kind = OBJECT_VALUE};
    if (call->count == 1 && call->items->kind != FV_NODE_KEYWORD)
        FV_TRY(evaluate(it, call->items, &argument));
    if (argument.kind != OBJECT_FUSION_DEFINITION)
        return fail_at(it, FV_ERR_INPUT, call,
                       "%.*s must be called with the FusionDefinition: `%.*s(fd)`",
                       call->child->length, call->child->text, call->child->length,
                       call->child->text);
    return run_definition(it, function);
}

static fv_status run_with_statement(interpreter *it, const statement *s)
{
    if (s->kind == FV_STATEMENT_EXPRESSION && s->value->kind == FV_NODE_CALL &&
        s->value->child->kind == FV_NODE_NAME) {
        const object *target = lookup(it, s->value->child);
        if (target != NULL && target->kind == OBJECT_FUNCTION)
            return call_definition(it, s->value, target->function);
    }
    return run_fusion_statement(it, s);
}

static fv_status open_fusion(interpreter *it, const node *at)
{
    if (it->fusion != NULL)
        return fail_at(it, FV_ERR_UNSUPPORTED, at,
                       "a second FusionDefinition; one fusion per file is supported");
    FV_TRY(fv_ir_fusion_create(&it->fusion));
    snprintf(it->fusion->name, sizeof it->fusion->name, "nvfuser_fusion");
    it->fusion_open = true;
    return FV_OK;
}

static fv_status close_fusion(interpreter *it, const node *at)
{
    it->fusion_open = false;
    if (it->fusion->output_count == 0)
        return fail_at(it, FV_ERR_INPUT, at, "the fusion has no outputs (call fd.add_output)");
    return FV_OK;
}

static fv_status run_with(interpreter *it, const statement *s)
{
    const node *context = s->value;
    char dotted[96];
    bool is_definition = context->kind == FV_NODE_CALL &&
                         fv_frontend_dotted_name(context->child, dotted, sizeof dotted) &&
                         (strcmp(dotted, "FusionDefinition") == 0 ||
                          strcmp(dotted, "nvfuser.FusionDefinition") == 0);
    if (!is_definition)
        return fail_at(it, FV_ERR_UNSUPPORTED, context,
                       "unsupported with statement (expected `with FusionDefinition() as fd:`)");
    if (context->count > 0)
        return fail_at(it, FV_ERR_UNSUPPORTED, context->items,
                       "FusionDefinition() arguments are not supported");
    FV_TRY(open_fusion(it, s->name));
    object fd = {.kind = OBJECT_FUSION_DEFINITION, .value = -1, .second = -1};
    FV_TRY(assign(it, s->name, &fd));
    FV_TRY(run_body(it, s->body, run_with_statement));
    return close_fusion(it, s->name);
}

static fv_status check_import(const interpreter *it, const statement *s)
{
    if (s->alias != NULL)
        return fail_at(it, FV_ERR_UNSUPPORTED, s->alias, "import aliases ('as') are not supported");
    for (const node *module = s->names; module != NULL; module = module->next)
        if (!fv_frontend_node_is_name(module, "nvfuser") &&
            !fv_frontend_node_is_name(module, "torch"))
            return fail_at(it, FV_ERR_UNSUPPORTED, module,
                           "unsupported import '%.*s' (only nvfuser and torch)", module->length,
                           module->text);
    return FV_OK;
}

static fv_status register_def(interpreter *it, const statement *s)
{
    if (s->name_count != 1)
        return fail_at(it, FV_ERR_UNSUPPORTED, s->name,
                       "a fusion definition takes exactly one parameter (the FusionDefinition)");
    object function = {.kind = OBJECT_FUNCTION, .value = -1, .second = -1, .function = s};
    it->def_count++;
    it->last_def = s;
    return assign(it, s->name, &function);
}

/* `fd.execute(inputs)` and the like at module level: checked, then ignored. */
static fv_status run_module_expression(interpreter *it, const statement *s)
{
    const node *value = s->value;
    if (value->kind == FV_NODE_STRING)
        return FV_OK;
    if (value->kind == FV_NODE_CALL && attribute_is(value->child, "execute") &&
        value->child->child->kind == FV_NODE_NAME) {
        const object *owner = lookup(it, value->child->child);
        if (owner != NULL && owner->kind == OBJECT_FUSION_DEFINITION) {
            const object *ignored;
            for (const node *argument = value->items; argument != NULL; argument = argument->next)
                if (argument->kind == FV_NODE_NAME)
                    FV_TRY(lookup_defined(it, argument, &ignored));
            return FV_OK;
        }
    }
    char dotted[96];
    if (value->kind == FV_NODE_CALL && fv_frontend_dotted_name(value->child, dotted, sizeof dotted))
        return fail_at(it, FV_ERR_UNSUPPORTED, value,
                       "unsupported call %s(...) at module level (only fd.execute(...))", dotted);
    return fail_at(it, FV_ERR_UNSUPPORTED, value, "unsupported statement at module level");
}

static fv_status run_module_assign(interpreter *it, const statement *s)
{
    if (s->target_count == 1 && fv_frontend_node_is_name(s->targets, "inputs") &&
        (s->value->kind == FV_NODE_LIST || s->value->kind == FV_NODE_TUPLE)) {
        it->inputs_list = s->value;
        object inputs = {.kind = OBJECT_INPUTS, .value = -1, .second = -1};
        return assign(it, s->targets, &inputs);
    }
    return fail_at(it, FV_ERR_UNSUPPORTED, s->targets,
                   "unsupported assignment at module level (only `inputs = [...]`)");
}

static fv_status run_module_statement(interpreter *it, const statement *s)
{
    switch (s->kind) {
    case FV_STATEMENT_IMPORT:
    case FV_STATEMENT_FROM_IMPORT: return check_import(it, s);
    case FV_STATEMENT_DEF: return register_def(it, s);
    case FV_STATEMENT_WITH: return run_with(it, s);
    case FV_STATEMENT_ASSIGN: return run_module_assign(it, s);
    case FV_STATEMENT_EXPRESSION: return run_module_expression(it, s);
    case FV_STATEMENT_PASS: return FV_OK;
    }
    return FV_OK;
}

/* A file with a def but no with block: the def is the fusion. */
static fv_status run_lone_definition(interpreter *it)
{
    if (it->def_count == 0) {
        node start = {.line = 1, .column = 1};
        return fail_at(it, FV_ERR_INPUT, &start,
                       "no fusion definition found (expected `def NAME(fd : FusionDefinition)` "
                       "or `with FusionDefinition() as fd:`)");
    }
    if (it->def_count > 1)
        return fail_at(it, FV_ERR_INPUT, it->last_def->name,
                       "several defs and no `with FusionDefinition() as fd:` block that calls "
                       "one of them");
    FV_TRY(open_fusion(it, it->last_def->name));
    FV_TRY(run_definition(it, it->last_def));
    return close_fusion(it, it->last_def->name);
}

fv_status fv_frontend_build_fusion(const char *path, const fv_frontend_syntax *syntax,
                                   fv_fusion **fusion, const fv_frontend_node **inputs_list)
{
    *fusion = NULL;
    *inputs_list = NULL;
    interpreter it = {.path = path};
    fv_status status = run_body(&it, syntax->statements, run_module_statement);
    if (status == FV_OK && it.fusion == NULL)
        status = run_lone_definition(&it);
    scope_free(&it.globals);
    if (status != FV_OK) {
        fv_ir_fusion_release(it.fusion);
        return status;
    }
    *fusion = it.fusion;
    *inputs_list = it.inputs_list;
    return FV_OK;
}
