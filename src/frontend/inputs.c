/* inputs.c: reads a definition's `inputs = [...]` list into a distribution,
 * extents and a dtype per tensor input and a value per scalar input, and
 * checks it against the fusion's inputs (count, kind, rank, dtype, fixed
 * extents, and extents that the fusion makes equal).
 *
 * Entries are torch factory calls (randn, rand, ones, zeros, full,
 * testing.make_tensor), number literals, `.cuda()` / `.to('cuda')` (no-ops)
 * and arithmetic with numbers, which moves and scales the distribution:
 * `torch.randn(...) * 2 + 1` is normal(1, 2), `torch.rand(...) + 0.5` is
 * uniform(0.5, 1.5).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/frontend_internal.h"

typedef fv_frontend_node node;

/* One evaluated entry: a tensor with its distribution, or a number. */
typedef struct entry {
    bool is_tensor;
    fv_dtype dtype;
    int rank;
    int64_t extents[FV_MAX_RANK];
    fv_distribution distribution;
    double number;
} entry;

typedef enum factory_kind {
    FACTORY_RANDN,
    FACTORY_RAND,
    FACTORY_ONES,
    FACTORY_ZEROS,
    FACTORY_FULL,
    FACTORY_MAKE_TENSOR
} factory_kind;

static const struct {
    const char *name;
    factory_kind kind;
} factories[] = {
    {"torch.randn", FACTORY_RANDN},
    {"torch.rand", FACTORY_RAND},
    {"torch.ones", FACTORY_ONES},
    {"torch.zeros", FACTORY_ZEROS},
    {"torch.full", FACTORY_FULL},
    {"torch.testing.make_tensor", FACTORY_MAKE_TENSOR},
    {"make_tensor", FACTORY_MAKE_TENSOR},
};

static const struct {
    const char *name;
    fv_dtype dtype;
} torch_dtypes[] = {
    {"float32", FV_F32}, {"float", FV_F32},  {"float16", FV_F16}, {"half", FV_F16},
    {"bfloat16", FV_BF16}, {"float64", FV_F64}, {"double", FV_F64}, {"int64", FV_I64},
    {"long", FV_I64},    {"int32", FV_I32},  {"int", FV_I32},     {"bool", FV_BOOL},
};

static fv_status fail_at(const char *path, fv_status status, const node *at, const char *format,
                         ...) __attribute__((format(printf, 4, 5)));

static fv_status fail_at(const char *path, fv_status status, const node *at, const char *format,
                         ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_frontend_error_at(status, path, at->line, at->column, "%s", message);
}

/* ------------------------------------------------------- distributions */

static void shift(fv_distribution *distribution, double offset)
{
    distribution->a += offset;
    if (distribution->kind == FV_DIST_UNIFORM)
        distribution->b += offset;
}

static void scale(fv_distribution *distribution, double factor)
{
    switch (distribution->kind) {
    case FV_DIST_NORMAL:
        distribution->a *= factor;
        distribution->b *= fabs(factor);
        break;
    case FV_DIST_UNIFORM: {
        double low = distribution->a * factor, high = distribution->b * factor;
        distribution->a = factor < 0 ? high : low;
        distribution->b = factor < 0 ? low : high;
        break;
    }
    case FV_DIST_CONSTANT:
        distribution->a *= factor;
        break;
    }
}

/* `left op right` where at most one side is a tensor. */
static fv_status combine(const char *path, const node *at, const entry *left,
                         const entry *right, entry *out)
{
    char op = at->operator_char;
    if (left->is_tensor && right->is_tensor)
        return fail_at(path, FV_ERR_UNSUPPORTED, at,
                       "arithmetic between two tensors is not supported in inputs");
    if ((op == '/' && right->number == 0 && !right->is_tensor))
        return fail_at(path, FV_ERR_INPUT, at, "division by zero");
    if (!left->is_tensor && !right->is_tensor) {
        *out = *left;
        switch (op) {
        case '+': out->number = left->number + right->number; break;
        case '-': out->number = left->number - right->number; break;
        case '*': out->number = left->number * right->number; break;
        default: out->number = left->number / right->number; break;
        }
        return FV_OK;
    }
    if (!left->is_tensor && op == '/')
        return fail_at(path, FV_ERR_UNSUPPORTED, at,
                       "dividing a number by a tensor is not supported in inputs");
    const entry *tensor = left->is_tensor ? left : right;
    double number = left->is_tensor ? right->number : left->number;
    *out = *tensor;
    switch (op) {
    case '+': shift(&out->distribution, number); break;
    case '*': scale(&out->distribution, number); break;
    case '/': scale(&out->distribution, 1.0 / number); break;
    default: /* '-' */
        if (left->is_tensor) {
            shift(&out->distribution, -number);
        } else {
            scale(&out->distribution, -1);
            shift(&out->distribution, number);
        }
        break;
    }
    return FV_OK;
}

/* --------------------------------------------------------- arguments */

/* The text between a string literal's quotes (escapes are left as they are). */
static void string_content(const node *string, const char **text, int *length)
{
    int quotes = string->length >= 6 && string->text[1] == string->text[0] &&
                         string->text[2] == string->text[0]
                     ? 3
                     : 1;
    *text = string->text + quotes;
    *length = string->length - 2 * quotes;
    if (*length < 0)
        *length = 0;
}

static fv_status read_device(const char *path, const char *function, const node *argument)
{
    const node *string = argument;
    char dotted[64];
    if (argument->kind == FV_NODE_CALL && fv_frontend_dotted_name(argument->child, dotted,
                                                                   sizeof dotted) &&
        strcmp(dotted, "torch.device") == 0 && argument->count >= 1)
        string = argument->items;
    if (string->kind != FV_NODE_STRING)
        return fail_at(path, FV_ERR_INPUT, argument, "%s: device must be a string such as 'cuda:0'",
                       function);
    const char *text;
    int length;
    string_content(string, &text, &length);
    if (length < 4 || memcmp(text, "cuda", 4) != 0)
        return fail_at(path, FV_ERR_UNSUPPORTED, argument,
                       "%s: device '%.*s' is not supported (inputs are CUDA tensors)", function,
                       length > 40 ? 40 : length, text);
    return FV_OK;
}

static fv_status read_dtype(const char *path, const char *function, const node *argument,
                            fv_dtype *dtype)
{
    char dotted[64];
    if (!fv_frontend_dotted_name(argument, dotted, sizeof dotted) ||
        strncmp(dotted, "torch.", 6) != 0)
        return fail_at(path, FV_ERR_INPUT, argument, "%s: dtype must be torch.<dtype>", function);
    for (size_t i = 0; i < sizeof torch_dtypes / sizeof torch_dtypes[0]; i++) {
        if (strcmp(dotted + 6, torch_dtypes[i].name) == 0) {
            *dtype = torch_dtypes[i].dtype;
            return FV_OK;
        }
    }
    return fail_at(path, FV_ERR_UNSUPPORTED, argument, "%s: unsupported dtype %s", function,
                   dotted);
}

static fv_status read_bool(const char *path, const char *function, const node *argument,
                           const char *parameter)
{
    if (fv_frontend_node_is_name(argument, "True") || fv_frontend_node_is_name(argument, "False"))
        return FV_OK;
    return fail_at(path, FV_ERR_INPUT, argument, "%s: %s must be True or False", function,
                   parameter);
}

static fv_status read_number(const char *path, const char *function, const node *argument,
                             const char *parameter, double *value)
{
    bool is_integer;
    if (fv_frontend_node_is_name(argument, "True") || fv_frontend_node_is_name(argument, "False")) {
        *value = fv_frontend_node_is_name(argument, "True") ? 1 : 0;
        return FV_OK;
    }
    if (!fv_frontend_literal_number(argument, value, &is_integer))
        return fail_at(path, FV_ERR_INPUT, argument, "%s: %s must be a number literal", function,
                       parameter);
    return FV_OK;
}

/* Sizes: integer literals, or one list/tuple of them. */
static fv_status read_sizes(const char *path, const char *function, const node *const *sizes,
                            int count, entry *out)
{
    const node *items[FV_MAX_RANK + 1];
    int item_count = 0;
    if (count == 1 && (sizes[0]->kind == FV_NODE_LIST || sizes[0]->kind == FV_NODE_TUPLE)) {
        for (const node *item = sizes[0]->items; item != NULL; item = item->next) {
            if (item_count > FV_MAX_RANK)
                break;
            items[item_count++] = item;
        }
    } else {
        for (int i = 0; i < count && item_count <= FV_MAX_RANK; i++)
            items[item_count++] = sizes[i];
    }
    if (item_count > FV_MAX_RANK)
        return fail_at(path, FV_ERR_UNSUPPORTED, sizes[0],
                       "%s: tensors of rank above %d are not supported", function, FV_MAX_RANK);
    int64_t elements = 1;
    out->rank = item_count;
    for (int d = 0; d < item_count; d++) {
        int64_t extent;
        if (!fv_frontend_literal_integer(items[d], &extent))
            return fail_at(path, FV_ERR_INPUT, items[d], "%s: sizes must be integer literals",
                           function);
        if (extent < 1 || extent > FV_FRONTEND_MAX_EXTENT)
            return fail_at(path, FV_ERR_INPUT, items[d],
                           "%s: size %lld is not supported (a positive size up to 2^40)",
                           function, (long long)extent);
        if (__builtin_mul_overflow(elements, extent, &elements) ||
            elements > FV_FRONTEND_MAX_ELEMENTS)
            return fail_at(path, FV_ERR_INPUT, items[d], "%s: more than 2^50 elements",
                           function);
        out->extents[d] = extent;
    }
    return FV_OK;
}

/* ---------------------------------------------------------- factories */

enum { SLOT_DTYPE, SLOT_DEVICE, SLOT_REQUIRES_GRAD, SLOT_SIZE, SLOT_FILL, SLOT_LOW, SLOT_HIGH,
       SLOT_COUNT };

static const char *const slot_names[SLOT_COUNT] = {"dtype", "device", "requires_grad", "size",
                                                   "fill_value", "low", "high"};

static bool slot_allowed(factory_kind kind, int slot)
{
    if (slot == SLOT_SIZE || slot == SLOT_FILL)
        return kind == FACTORY_FULL;
    if (slot == SLOT_LOW || slot == SLOT_HIGH)
        return kind == FACTORY_MAKE_TENSOR;
    return true;
}

/* Splits a factory call into positional arguments and keyword slots. */
static fv_status split_arguments(const char *path, const node *call, const char *function,
                                 factory_kind kind, const node **positional, int *positional_count,
                                 const node **slots)
{
    for (int s = 0; s < SLOT_COUNT; s++)
        slots[s] = NULL;
    *positional_count = 0;
    for (const node *argument = call->items; argument != NULL; argument = argument->next) {
        if (argument->kind != FV_NODE_KEYWORD) {
            if (*positional_count > FV_MAX_RANK)
                return fail_at(path, FV_ERR_UNSUPPORTED, argument,
                               "%s: too many positional arguments", function);
            positional[(*positional_count)++] = argument;
            continue;
        }
        int found = -1;
        for (int s = 0; s < SLOT_COUNT && found < 0; s++)
            if (slot_allowed(kind, s) && strlen(slot_names[s]) == (size_t)argument->length &&
                memcmp(slot_names[s], argument->text, (size_t)argument->length) == 0)
                found = s;
        if (found < 0)
            return fail_at(path, FV_ERR_INPUT, argument, "%s: unknown keyword argument '%.*s'",
                           function, argument->length, argument->text);
        if (slots[found] != NULL)
            return fail_at(path, FV_ERR_INPUT, argument, "%s: argument '%s' given twice",
                           function, slot_names[found]);
        slots[found] = argument->child;
    }
    return FV_OK;
}

/* torch.full(size, fill_value, ...): its size list and fill value. */
static fv_status read_full(const char *path, const node *call, const node **positional,
                           int positional_count, const node **slots, entry *out)
{
    if (positional_count > 2)
        return fail_at(path, FV_ERR_INPUT, positional[2],
                       "torch.full: too many positional arguments (at most 2)");
    const node *size = positional_count > 0 ? positional[0] : NULL;
    const node *fill = positional_count > 1 ? positional[1] : NULL;
    if ((size != NULL && slots[SLOT_SIZE] != NULL) || (fill != NULL && slots[SLOT_FILL] != NULL))
        return fail_at(path, FV_ERR_INPUT, call, "torch.full: an argument is given twice");
    size = size != NULL ? size : slots[SLOT_SIZE];
    fill = fill != NULL ? fill : slots[SLOT_FILL];
    if (size == NULL || fill == NULL)
        return fail_at(path, FV_ERR_INPUT, call, "torch.full: missing argument '%s'",
                       size == NULL ? "size" : "fill_value");
    if (size->kind != FV_NODE_LIST && size->kind != FV_NODE_TUPLE)
        return fail_at(path, FV_ERR_INPUT, size, "torch.full: size must be a list or tuple");
    FV_TRY(read_sizes(path, "torch.full", &size, 1, out));
    double value;
    bool is_integer = false;
    bool is_bool =
        fv_frontend_node_is_name(fill, "True") || fv_frontend_node_is_name(fill, "False");
    FV_TRY(read_number(path, "torch.full", fill, "fill_value", &value));
    if (!is_bool && !fv_frontend_literal_number(fill, &value, &is_integer))
        return fail_at(path, FV_ERR_INPUT, fill, "torch.full: fill_value must be a number");
    out->dtype = is_bool ? FV_BOOL : is_integer ? FV_I64 : FV_F32;
    out->distribution = (fv_distribution){FV_DIST_CONSTANT, value, 0};
    return FV_OK;
}

static fv_status read_factory(const char *path, const node *call, factory_kind kind,
                              const char *function, entry *out)
{
    const node *positional[FV_MAX_RANK + 1];
    const node *slots[SLOT_COUNT];
    int positional_count;
    FV_TRY(split_arguments(path, call, function, kind, positional, &positional_count, slots));
    *out = (entry){.is_tensor = true, .dtype = FV_F32};
    if (kind == FACTORY_FULL) {
        FV_TRY(read_full(path, call, positional, positional_count, slots, out));
    } else {
        FV_TRY(read_sizes(path, function, positional, positional_count, out));
    }
    if (slots[SLOT_DTYPE] != NULL)
        FV_TRY(read_dtype(path, function, slots[SLOT_DTYPE], &out->dtype));
    else if (kind == FACTORY_MAKE_TENSOR)
        return fail_at(path, FV_ERR_INPUT, call, "%s: missing argument 'dtype'", function);
    if (slots[SLOT_DEVICE] != NULL)
        FV_TRY(read_device(path, function, slots[SLOT_DEVICE]));
    if (slots[SLOT_REQUIRES_GRAD] != NULL)
        FV_TRY(read_bool(path, function, slots[SLOT_REQUIRES_GRAD], "requires_grad"));
    switch (kind) {
    case FACTORY_RANDN: out->distribution = (fv_distribution){FV_DIST_NORMAL, 0, 1}; break;
    case FACTORY_RAND: out->distribution = (fv_distribution){FV_DIST_UNIFORM, 0, 1}; break;
    case FACTORY_ONES: out->distribution = (fv_distribution){FV_DIST_CONSTANT, 1, 0}; break;
    case FACTORY_ZEROS: out->distribution = (fv_distribution){FV_DIST_CONSTANT, 0, 0}; break;
    case FACTORY_FULL: break;
    case FACTORY_MAKE_TENSOR: {
        double low = -9, high = 9;
        if (slots[SLOT_LOW] != NULL && !fv_frontend_node_is_name(slots[SLOT_LOW], "None"))
            FV_TRY(read_number(path, function, slots[SLOT_LOW], "low", &low));
        if (slots[SLOT_HIGH] != NULL && !fv_frontend_node_is_name(slots[SLOT_HIGH], "None"))
            FV_TRY(read_number(path, function, slots[SLOT_HIGH], "high", &high));
        if (low > high)
            return fail_at(path, FV_ERR_INPUT, call, "%s: low %g is above high %g", function,
                           low, high);
        out->distribution = (fv_distribution){FV_DIST_UNIFORM, low, high};
        break;
    }
    }
    return FV_OK;
}

/* ------------------------------------------------------------ entries */

static fv_status evaluate_entry(const char *path, const node *expression, entry *out);

/* .cuda() and .to('cuda'): the tensor is unchanged. */
static fv_status read_device_method(const char *path, const node *call, entry *out)
{
    const node *method = call->child;
    bool is_cuda = method->length == 4 && memcmp(method->text, "cuda", 4) == 0;
    FV_TRY(evaluate_entry(path, method->child, out));
    if (!out->is_tensor)
        return fail_at(path, FV_ERR_INPUT, call, "%s() needs a tensor", is_cuda ? "cuda" : "to");
    if (is_cuda) {
        if (call->count > 1 || (call->count == 1 && call->items->kind == FV_NODE_KEYWORD))
            return fail_at(path, FV_ERR_UNSUPPORTED, call->items,
                           "cuda: only .cuda() or .cuda(index) is supported");
        return FV_OK;
    }
    if (call->count != 1)
        return fail_at(path, FV_ERR_UNSUPPORTED, call,
                       "to: only .to('cuda') or .to(device='cuda') is supported");
    const node *argument = call->items;
    if (argument->kind == FV_NODE_KEYWORD) {
        if (argument->length != 6 || memcmp(argument->text, "device", 6) != 0)
            return fail_at(path, FV_ERR_UNSUPPORTED, argument,
                           "to: only .to('cuda') or .to(device='cuda') is supported");
        argument = argument->child;
    }
    return read_device(path, "to", argument);
}

static fv_status evaluate_call_entry(const char *path, const node *call, entry *out)
{
    char dotted[96];
    bool named = fv_frontend_dotted_name(call->child, dotted, sizeof dotted);
    for (size_t i = 0; named && i < sizeof factories / sizeof factories[0]; i++)
        if (strcmp(dotted, factories[i].name) == 0)
            return read_factory(path, call, factories[i].kind, dotted, out);
    const node *method = call->child;
    if (method->kind == FV_NODE_ATTRIBUTE && !named &&
        ((method->length == 4 && memcmp(method->text, "cuda", 4) == 0) ||
         (method->length == 2 && memcmp(method->text, "to", 2) == 0)))
        return read_device_method(path, call, out);
    if (named)
        return fail_at(path, FV_ERR_UNSUPPORTED, call, "unsupported input expression %s(...)",
                       dotted);
    return fail_at(path, FV_ERR_UNSUPPORTED, call, "unsupported input expression");
}

static fv_status evaluate_entry(const char *path, const node *expression, entry *out)
{
    *out = (entry){.is_tensor = false};
    switch (expression->kind) {
    case FV_NODE_INTEGER: out->number = (double)expression->integer; return FV_OK;
    case FV_NODE_FLOAT: out->number = expression->real; return FV_OK;
    case FV_NODE_NAME:
        if (fv_frontend_node_is_name(expression, "True") ||
            fv_frontend_node_is_name(expression, "False")) {
            out->number = fv_frontend_node_is_name(expression, "True") ? 1 : 0;
            return FV_OK;
        }
        return fail_at(path, FV_ERR_UNSUPPORTED, expression,
                       "unsupported input entry '%.*s' (expected a torch call or a number)",
                       expression->length, expression->text);
    case FV_NODE_UNARY:
        FV_TRY(evaluate_entry(path, expression->child, out));
        if (expression->operator_char == '-') {
            out->number = -out->number;
            scale(&out->distribution, -1);
        }
        return FV_OK;
    case FV_NODE_BINARY: {
        entry left, right;
        FV_TRY(evaluate_entry(path, expression->child, &left));
        FV_TRY(evaluate_entry(path, expression->right, &right));
        return combine(path, expression, &left, &right, out);
    }
    case FV_NODE_CALL:
        return evaluate_call_entry(path, expression, out);
    default:
        return fail_at(path, FV_ERR_UNSUPPORTED, expression,
                       "unsupported input entry (expected a torch call or a number)");
    }
}

static bool distribution_finite(const fv_distribution *distribution)
{
    return isfinite(distribution->a) && isfinite(distribution->b);
}

/* ----------------------------------------------------------- matching */

static fv_status check_tensor_entry(const char *path, const node *at, int k, const entry *e,
                                    const fv_value *input, const char *label)
{
    if (!e->is_tensor)
        return fail_at(path, FV_ERR_INPUT, at, "inputs[%d]: a number for tensor input %s", k,
                       label);
    if (e->rank != input->rank)
        return fail_at(path, FV_ERR_INPUT, at,
                       "inputs[%d]: a rank-%d tensor for %s, which has rank %d", k, e->rank,
                       label, input->rank);
    if (e->dtype != input->dtype)
        return fail_at(path, FV_ERR_INPUT, at, "inputs[%d]: dtype %s for %s, which is %s", k,
                       fv_dtype_name(e->dtype), label, fv_dtype_name(input->dtype));
    for (int d = 0; d < input->rank; d++) {
        fv_dim dim = input->dims[d];
        if (dim.symbol >= 0)
            continue;
        int64_t fixed = dim.broadcast && !dim.expanded ? 1 : dim.extent;
        if (e->extents[d] != fixed)
            return fail_at(path, FV_ERR_INPUT, at,
                           "inputs[%d]: dim %d of %s has the extent %lld in the definition, "
                           "not %lld",
                           k, d, label, (long long)fixed, (long long)e->extents[d]);
    }
    if (!distribution_finite(&e->distribution))
        return fail_at(path, FV_ERR_INPUT, at, "inputs[%d]: the distribution is out of range", k);
    return FV_OK;
}

static fv_status check_scalar_entry(const char *path, const node *at, int k, const entry *e,
                                    const fv_value *input, const char *label)
{
    if (e->is_tensor)
        return fail_at(path, FV_ERR_INPUT, at, "inputs[%d]: a tensor for scalar input %s", k,
                       label);
    if (!isfinite(e->number) ||
        (fv_dtype_is_integer(input->dtype) && e->number != floor(e->number)) ||
        (input->dtype == FV_BOOL && e->number != 0 && e->number != 1))
        return fail_at(path, FV_ERR_INPUT, at, "inputs[%d]: %g is not a valid %s for %s", k,
                       e->number, fv_dtype_name(input->dtype), label);
    return FV_OK;
}

/* Checks entry k and records it in the definition; binds its symbolic
 * extents in `c` so that conflicting sizes are found. */
static fv_status record_entry(const char *path, const node *at, int k, const entry *e,
                              fv_definition *definition, fv_case *c)
{
    const fv_fusion *fusion = definition->fusion;
    int32_t id = fusion->inputs[k];
    const fv_value *input = &fusion->values[id];
    char label[40];
    fv_ir_value_label(fusion, id, label);
    if (input->kind == FV_VALUE_SCALAR) {
        FV_TRY(check_scalar_entry(path, at, k, e, input, label));
        definition->scalar_values[k] = e->number;
        definition->distributions[k] = (fv_distribution){FV_DIST_CONSTANT, e->number, 0};
        return FV_OK;
    }
    FV_TRY(check_tensor_entry(path, at, k, e, input, label));
    definition->distributions[k] = e->distribution;
    for (int d = 0; d < input->rank; d++) {
        definition->extents[k][d] = e->extents[d];
        if (input->dims[d].symbol < 0 || input->dims[d].broadcast)
            continue;
        fv_status status = fv_case_bind(c, k, d, e->extents[d]);
        if (status != FV_OK) {
            fv_error_prefix("inputs[%d]", k);
            return fv_frontend_error_relocate(status, path, at->line, at->column);
        }
    }
    return FV_OK;
}

static fv_status read_entries(const char *path, const node *list, fv_definition *definition,
                              fv_case *c)
{
    const fv_fusion *fusion = definition->fusion;
    int k = 0;
    for (const node *item = list->items; item != NULL; item = item->next, k++) {
        if (k >= fusion->input_count)
            return fail_at(path, FV_ERR_INPUT, item,
                           "inputs[%d]: the definition has only %d inputs", k,
                           (int)fusion->input_count);
        entry e;
        FV_TRY(evaluate_entry(path, item, &e));
        FV_TRY(record_entry(path, item, k, &e, definition, c));
    }
    if (k < fusion->input_count)
        return fail_at(path, FV_ERR_INPUT, list,
                       "inputs has %d entries, but the definition has %d inputs", k,
                       (int)fusion->input_count);
    fv_status status = fv_frontend_check_case_sizes(c);
    if (status != FV_OK)
        return fv_frontend_error_relocate(status, path, list->line, list->column);
    return FV_OK;
}

fv_status fv_frontend_read_inputs(const char *path, const fv_frontend_node *list,
                                  fv_definition *definition)
{
    fv_case *c;
    FV_TRY(fv_case_create(definition->fusion, &c));
    fv_status status = read_entries(path, list, definition, c);
    fv_case_free(c);
    if (status != FV_OK) {
        fv_error_trace(__FILE__, __LINE__);
        return status;
    }
    definition->has_inputs = true;
    definition->inputs_loc = (fv_source_loc){list->line, list->column};
    return FV_OK;
}
