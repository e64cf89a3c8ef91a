/* sweep.c: sweep files: a line format that names a definition and expands it
 * into cases over sizes, dtypes and seeds (docs/case-format.md).
 *
 *   definition layer_norm_bwd.py      # relative to the sweep file
 *   name layer_norm_bwd               # family in case ids (default: file stem)
 *   dim N = T0.0                      # a name for input T0's dim 0 (#k: k-th input)
 *   dtypes bf16 fp16 fp32             # substitutes the definition's half dtype
 *   seeds 0 1
 *   distribution T3 uniform(0.5,1.5)  # per input
 *   scalar S0 1e-5                    # per scalar input
 *   sizes N=2048,16384 H=1024,2048    # one Cartesian product per line
 *
 * Reading is two passes: the lines are parsed into a `sweep` (syntax errors
 * name their line and column), then the definition is read and every name,
 * dtype and size is checked against it (errors name the line that caused
 * them).  Expansion is all or nothing.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_internal.h"

enum {
    MAX_DIMS = 16,         /* dim lines */
    MAX_VALUES = 64,       /* values of one name on a sizes line */
    MAX_SIZES_LINES = 256,
    MAX_DTYPES = 4,
    MAX_SEEDS = 64,
    MAX_CASES = 100000,    /* cases one sweep may expand to */
    MAX_WORD = 256
};

typedef struct sweep_dim {
    char name[FV_FRONTEND_MAX_NAME + 1];
    char input[FV_FRONTEND_MAX_NAME + 1]; /* a name, or "#k" */
    int dim;                              /* as written (may be negative) */
    fv_source_loc loc, input_loc;
    int input_position;                   /* resolved */
    int resolved_dim;
} sweep_dim;

typedef struct size_item {
    char name[FV_FRONTEND_MAX_NAME + 1];
    fv_source_loc loc;
    int dim_index;                        /* resolved: into sweep.dims */
    int value_count;
    int64_t values[MAX_VALUES];
} size_item;

typedef struct size_group {
    fv_source_loc loc;
    int item_count;
    size_item items[MAX_DIMS];
} size_group;

typedef struct input_setting {
    char input[FV_FRONTEND_MAX_NAME + 1];
    fv_source_loc loc;
    fv_distribution distribution; /* distribution lines */
    double value;                 /* scalar lines */
    int input_position;
} input_setting;

typedef struct sweep {
    const char *path;
    char definition[512];
    fv_source_loc definition_loc;
    char family[64];
    fv_source_loc name_loc;
    sweep_dim dims[MAX_DIMS];
    int dim_count;
    fv_dtype dtypes[MAX_DTYPES];
    fv_source_loc dtype_locs[MAX_DTYPES];
    int dtype_count;
    fv_source_loc dtypes_loc;
    uint64_t seeds[MAX_SEEDS];
    int seed_count;
    fv_source_loc seeds_loc;
    input_setting distributions[FV_CASE_MAX_INPUTS];
    int distribution_count;
    input_setting scalars[FV_CASE_MAX_INPUTS];
    int scalar_count;
    size_group *groups;
    int group_count;
} sweep;

/* --------------------------------------------------------- line reading */

typedef struct line_reader {
    const char *path;
    const char *text; /* the line without its newline and comment */
    size_t length;
    size_t position;
    int line;
} line_reader;

static fv_status line_error(const line_reader *r, size_t position, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static fv_status line_error(const line_reader *r, size_t position, const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_frontend_error_at(FV_ERR_INPUT, r->path, r->line, (int)position + 1, "%s",
                                message);
}

static fv_source_loc loc_at(const line_reader *r, size_t position)
{
    return (fv_source_loc){r->line, (int)position + 1};
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static void skip_blanks(line_reader *r)
{
    while (r->position < r->length && is_blank(r->text[r->position]))
        r->position++;
}

static bool at_line_end(line_reader *r)
{
    skip_blanks(r);
    return r->position >= r->length;
}

/* Describes what is at the current position for "expected X but found Y". */
static void describe_here(const line_reader *r, char *buffer, size_t size)
{
    if (r->position >= r->length)
        snprintf(buffer, size, "end of line");
    else
        snprintf(buffer, size, "'%c'", r->text[r->position]);
}

/* A word: bytes up to a blank or one of `stops`, into `buffer`. */
static fv_status read_word(line_reader *r, const char *stops, const char *what, char *buffer,
                           size_t size, size_t *start)
{
    skip_blanks(r);
    *start = r->position;
    while (r->position < r->length && !is_blank(r->text[r->position]) &&
           strchr(stops, r->text[r->position]) == NULL)
        r->position++;
    size_t length = r->position - *start;
    if (length == 0) {
        char found[32];
        describe_here(r, found, sizeof found);
        return line_error(r, *start, "expected %s but found %s", what, found);
    }
    if (length >= size)
        return line_error(r, *start, "%s is too long (at most %zu characters)", what, size - 1);
    memcpy(buffer, r->text + *start, length);
    buffer[length] = '\0';
    return FV_OK;
}

static fv_status expect_char(line_reader *r, char expected)
{
    skip_blanks(r);
    if (r->position < r->length && r->text[r->position] == expected) {
        r->position++;
        return FV_OK;
    }
    char found[32];
    describe_here(r, found, sizeof found);
    return line_error(r, r->position, "expected '%c' but found %s", expected, found);
}

static fv_status expect_end(line_reader *r)
{
    if (at_line_end(r))
        return FV_OK;
    size_t end = r->position;
    while (end < r->length && !is_blank(r->text[end]))
        end++;
    return line_error(r, r->position, "unexpected '%.*s' at the end of the line",
                      (int)(end - r->position > 40 ? 40 : end - r->position),
                      r->text + r->position);
}

static bool is_identifier(const char *text)
{
    if (!isalpha((unsigned char)text[0]) && text[0] != '_')
        return false;
    for (const char *c = text; *c != '\0'; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            return false;
    return true;
}

/* Parses an unsigned decimal integer (the whole word); false on overflow. */
static bool parse_unsigned(const char *word, uint64_t maximum, uint64_t *value)
{
    *value = 0;
    if (word[0] == '\0')
        return false;
    for (const char *c = word; *c != '\0'; c++) {
        if (!isdigit((unsigned char)*c))
            return false;
        uint64_t digit = (uint64_t)(*c - '0');
        if (*value > (maximum - digit) / 10)
            return false;
        *value = *value * 10 + digit;
    }
    return true;
}

/* An input reference: an identifier or "#k". */
static fv_status check_input_reference(const line_reader *r, size_t start, const char *word)
{
    uint64_t position;
    if (word[0] == '#' ? parse_unsigned(word + 1, FV_CASE_MAX_INPUTS, &position)
                       : is_identifier(word))
        return FV_OK;
    return line_error(r, start, "'%s' is not an input name or #position", word);
}

/* ------------------------------------------------------------ keywords */

static fv_status duplicate_line(const line_reader *r, const char *keyword, fv_source_loc first)
{
    return line_error(r, 0, "a second '%s' line (the first is on line %d)", keyword, first.line);
}

static fv_status parse_definition_line(sweep *sw, line_reader *r)
{
    if (sw->definition_loc.line > 0)
        return duplicate_line(r, "definition", sw->definition_loc);
    skip_blanks(r);
    size_t start = r->position, end = r->length;
    while (end > start && is_blank(r->text[end - 1]))
        end--;
    if (end == start)
        return line_error(r, start, "expected the definition's path but found end of line");
    if (end - start >= sizeof sw->definition)
        return line_error(r, start, "the definition's path is too long");
    memcpy(sw->definition, r->text + start, end - start);
    sw->definition[end - start] = '\0';
    sw->definition_loc = loc_at(r, start);
    return FV_OK;
}

static fv_status parse_name_line(sweep *sw, line_reader *r)
{
    if (sw->name_loc.line > 0)
        return duplicate_line(r, "name", sw->name_loc);
    size_t start;
    FV_TRY(read_word(r, "", "a family name", sw->family, sizeof sw->family, &start));
    for (const char *c = sw->family; *c != '\0'; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return line_error(r, start,
                              "the family name may only hold letters, digits, '_', '-' and '.'");
    sw->name_loc = loc_at(r, start);
    return expect_end(r);
}

static fv_status parse_dim_line(sweep *sw, line_reader *r)
{
    if (sw->dim_count >= MAX_DIMS)
        return line_error(r, 0, "too many dim lines (at most %d)", MAX_DIMS);
    sweep_dim *dim = &sw->dims[sw->dim_count];
    size_t start;
    FV_TRY(read_word(r, "=", "a dim name", dim->name, sizeof dim->name, &start));
    if (!is_identifier(dim->name))
        return line_error(r, start, "'%s' is not a valid dim name", dim->name);
    for (int i = 0; i < sw->dim_count; i++)
        if (strcmp(sw->dims[i].name, dim->name) == 0)
            return line_error(r, start, "dim '%s' is declared twice", dim->name);
    dim->loc = loc_at(r, start);
    FV_TRY(expect_char(r, '='));
    char reference[2 * FV_FRONTEND_MAX_NAME + 8];
    FV_TRY(read_word(r, "", "INPUT.DIM", reference, sizeof reference, &start));
    char *dot = strrchr(reference, '.');
    if (dot == NULL)
        return line_error(r, start, "expected INPUT.DIM (such as T0.1) but found '%s'", reference);
    *dot = '\0';
    const char *dim_text = dot + 1;
    bool negative = dim_text[0] == '-';
    uint64_t index;
    if (!parse_unsigned(dim_text + (negative ? 1 : 0), 64, &index))
        return line_error(r, start, "'%s' is not a dimension number", dim_text);
    if (strlen(reference) > FV_FRONTEND_MAX_NAME)
        return line_error(r, start, "the input name is too long");
    FV_TRY(check_input_reference(r, start, reference));
    snprintf(dim->input, sizeof dim->input, "%s", reference);
    dim->dim = negative ? -(int)index : (int)index;
    dim->input_loc = loc_at(r, start);
    sw->dim_count++;
    return expect_end(r);
}

static fv_status parse_dtypes_line(sweep *sw, line_reader *r)
{
    if (sw->dtypes_loc.line > 0)
        return duplicate_line(r, "dtypes", sw->dtypes_loc);
    sw->dtypes_loc = loc_at(r, 0);
    while (!at_line_end(r)) {
        char word[MAX_WORD];
        size_t start;
        fv_dtype dtype;
        FV_TRY(read_word(r, "", "a dtype", word, sizeof word, &start));
        if (!fv_dtype_parse(word, &dtype))
            return line_error(r, start, "unknown dtype '%s'", word);
        if (!fv_dtype_is_float(dtype))
            return line_error(r, start,
                              "dtype '%s' cannot be swept (use bf16, fp16, fp32 or fp64)", word);
        for (int i = 0; i < sw->dtype_count; i++)
            if (sw->dtypes[i] == dtype)
                return line_error(r, start, "dtype '%s' is listed twice", word);
        sw->dtype_locs[sw->dtype_count] = loc_at(r, start);
        sw->dtypes[sw->dtype_count++] = dtype;
    }
    if (sw->dtype_count == 0)
        return line_error(r, r->position, "expected a dtype but found end of line");
    return FV_OK;
}

static fv_status parse_seeds_line(sweep *sw, line_reader *r)
{
    if (sw->seeds_loc.line > 0)
        return duplicate_line(r, "seeds", sw->seeds_loc);
    sw->seeds_loc = loc_at(r, 0);
    while (!at_line_end(r)) {
        char word[MAX_WORD];
        size_t start;
        uint64_t seed;
        FV_TRY(read_word(r, "", "a seed", word, sizeof word, &start));
        if (!parse_unsigned(word, UINT64_MAX, &seed))
            return line_error(r, start, "'%s' is not a seed (a non-negative integer)", word);
        for (int i = 0; i < sw->seed_count; i++)
            if (sw->seeds[i] == seed)
                return line_error(r, start, "seed %s is listed twice", word);
        if (sw->seed_count >= MAX_SEEDS)
            return line_error(r, start, "too many seeds (at most %d)", MAX_SEEDS);
        sw->seeds[sw->seed_count++] = seed;
    }
    if (sw->seed_count == 0)
        return line_error(r, r->position, "expected a seed but found end of line");
    return FV_OK;
}

/* `distribution INPUT DIST` or `scalar INPUT VALUE`. */
static fv_status parse_input_setting(sweep *sw, line_reader *r, bool is_distribution)
{
    input_setting *settings = is_distribution ? sw->distributions : sw->scalars;
    int *count = is_distribution ? &sw->distribution_count : &sw->scalar_count;
    if (*count >= FV_CASE_MAX_INPUTS)
        return line_error(r, 0, "too many %s lines", is_distribution ? "distribution" : "scalar");
    input_setting *setting = &settings[*count];
    size_t start;
    FV_TRY(read_word(r, "", "an input name", setting->input, sizeof setting->input, &start));
    FV_TRY(check_input_reference(r, start, setting->input));
    setting->loc = loc_at(r, start);
    for (int i = 0; i < *count; i++)
        if (strcmp(settings[i].input, setting->input) == 0)
            return line_error(r, start, "input '%s' already has a %s line", setting->input,
                              is_distribution ? "distribution" : "scalar");
    skip_blanks(r);
    size_t value_start = r->position, end = r->length;
    while (end > value_start && is_blank(r->text[end - 1]))
        end--;
    char text[MAX_WORD];
    if (end == value_start)
        return line_error(r, value_start, "expected a %s but found end of line",
                          is_distribution ? "distribution" : "value");
    if (end - value_start >= sizeof text)
        return line_error(r, value_start, "the %s is too long",
                          is_distribution ? "distribution" : "value");
    memcpy(text, r->text + value_start, end - value_start);
    text[end - value_start] = '\0';
    if (is_distribution) {
        if (!fv_distribution_parse(text, &setting->distribution))
            return line_error(r, value_start,
                              "invalid distribution '%s' (expected normal(mean,std), "
                              "uniform(low,high) or constant(value))",
                              text);
    } else {
        char *parsed_end;
        setting->value = strtod(text, &parsed_end);
        if (parsed_end == text || *parsed_end != '\0' || !isfinite(setting->value))
            return line_error(r, value_start, "'%s' is not a number", text);
    }
    (*count)++;
    return FV_OK;
}

/* NAME=V[,V]... */
static fv_status parse_size_item(line_reader *r, size_group *group)
{
    if (group->item_count >= MAX_DIMS)
        return line_error(r, r->position, "too many names on one sizes line (at most %d)",
                          MAX_DIMS);
    size_item *item = &group->items[group->item_count];
    size_t start;
    FV_TRY(read_word(r, "=,", "a dim name", item->name, sizeof item->name, &start));
    if (!is_identifier(item->name))
        return line_error(r, start, "'%s' is not a valid dim name", item->name);
    for (int i = 0; i < group->item_count; i++)
        if (strcmp(group->items[i].name, item->name) == 0)
            return line_error(r, start, "dim '%s' is given twice on this line", item->name);
    item->loc = loc_at(r, start);
    FV_TRY(expect_char(r, '='));
    item->value_count = 0;
    for (;;) {
        char word[MAX_WORD];
        size_t value_start;
        uint64_t value;
        FV_TRY(read_word(r, ",=", "an extent", word, sizeof word, &value_start));
        if (!parse_unsigned(word, (uint64_t)FV_FRONTEND_MAX_EXTENT, &value) || value == 0)
            return line_error(r, value_start,
                              "'%s' is not an extent (a positive integer up to 2^40)", word);
        if (item->value_count >= MAX_VALUES)
            return line_error(r, value_start, "too many values for '%s' (at most %d)",
                              item->name, MAX_VALUES);
        item->values[item->value_count++] = (int64_t)value;
        skip_blanks(r);
        if (r->position >= r->length || r->text[r->position] != ',')
            break;
        r->position++;
    }
    group->item_count++;
    return FV_OK;
}

static fv_status parse_sizes_line(sweep *sw, line_reader *r)
{
    if (sw->group_count >= MAX_SIZES_LINES)
        return line_error(r, 0, "too many sizes lines (at most %d)", MAX_SIZES_LINES);
    size_group *groups = realloc(sw->groups, sizeof *groups * (size_t)(sw->group_count + 1));
    FV_CHECK_ALLOC(groups);
    sw->groups = groups;
    size_group *group = &groups[sw->group_count];
    memset(group, 0, sizeof *group);
    group->loc = loc_at(r, 0);
    while (!at_line_end(r))
        FV_TRY(parse_size_item(r, group));
    if (group->item_count == 0)
        return line_error(r, r->position, "expected NAME=EXTENTS but found end of line");
    sw->group_count++;
    return FV_OK;
}

static fv_status parse_line(sweep *sw, line_reader *r)
{
    char keyword[MAX_WORD];
    size_t start;
    if (at_line_end(r))
        return FV_OK;
    FV_TRY(read_word(r, "", "a keyword", keyword, sizeof keyword, &start));
    if (strcmp(keyword, "definition") == 0)
        return parse_definition_line(sw, r);
    if (strcmp(keyword, "name") == 0)
        return parse_name_line(sw, r);
    if (strcmp(keyword, "dim") == 0)
        return parse_dim_line(sw, r);
    if (strcmp(keyword, "dtypes") == 0)
        return parse_dtypes_line(sw, r);
    if (strcmp(keyword, "seeds") == 0)
        return parse_seeds_line(sw, r);
    if (strcmp(keyword, "distribution") == 0)
        return parse_input_setting(sw, r, true);
    if (strcmp(keyword, "scalar") == 0)
        return parse_input_setting(sw, r, false);
    if (strcmp(keyword, "sizes") == 0)
        return parse_sizes_line(sw, r);
    return line_error(r, start,
                      "unknown sweep keyword '%.40s' (expected definition, name, dim, dtypes, "
                      "seeds, distribution, scalar or sizes)",
                      keyword);
}

/* Cuts a line at its comment ('#' not followed by a digit) and checks its
 * bytes; sets r->length. */
static fv_status trim_line(line_reader *r)
{
    for (size_t i = 0; i < r->length; i++) {
        unsigned char c = (unsigned char)r->text[i];
        if (c == '#' && !(i + 1 < r->length && isdigit((unsigned char)r->text[i + 1]))) {
            r->length = i;
            return FV_OK;
        }
        if (c == 0)
            return line_error(r, i, "unexpected NUL byte");
        if ((c < 0x20 && c != '\t') || c >= 0x7f)
            return line_error(r, i, "unexpected byte 0x%02x", c);
    }
    return FV_OK;
}

static fv_status parse_sweep_text(sweep *sw, const char *text, size_t size)
{
    size_t start = 0;
    int line = 1;
    while (start < size) {
        size_t end = start;
        while (end < size && text[end] != '\n')
            end++;
        line_reader r = {.path = sw->path, .text = text + start, .length = end - start,
                         .line = line};
        if (r.length > 0 && r.text[r.length - 1] == '\r')
            r.length--;
        FV_TRY(trim_line(&r));
        FV_TRY(parse_line(sw, &r));
        start = end + 1;
        line++;
    }
    if (sw->definition_loc.line == 0)
        return fv_frontend_error_at(FV_ERR_INPUT, sw->path, 1, 1,
                                    "the sweep has no 'definition' line");
    return FV_OK;
}

/* ----------------------------------------------------------- resolving */

static fv_status fail_loc(const sweep *sw, fv_source_loc loc, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static fv_status fail_loc(const sweep *sw, fv_source_loc loc, const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_frontend_error_at(FV_ERR_INPUT, sw->path, loc.line, loc.column, "%s", message);
}

/* The definition's path: relative paths are taken from the sweep's directory. */
static fv_status definition_path(const sweep *sw, char *buffer, size_t size)
{
    const char *slash = strrchr(sw->path, '/');
    int written;
    if (sw->definition[0] == '/' || slash == NULL)
        written = snprintf(buffer, size, "%s", sw->definition);
    else
        written = snprintf(buffer, size, "%.*s/%s", (int)(slash - sw->path), sw->path,
                           sw->definition);
    if (written < 0 || (size_t)written >= size)
        return fail_loc(sw, sw->definition_loc, "the definition's path is too long");
    return FV_OK;
}

static fv_status read_sweep_definition(const sweep *sw, const char *path,
                                       fv_definition **definition)
{
    fv_status status = fv_frontend_read_definition(path, definition);
    if (status == FV_OK)
        return FV_OK;
    char message[1536];
    snprintf(message, sizeof message, "%s", fv_error_message());
    if (status == FV_ERR_NOT_FOUND || status == FV_ERR_IO)
        status = FV_ERR_INPUT;
    return fv_frontend_error_at(status, sw->path, sw->definition_loc.line,
                                sw->definition_loc.column, "in definition %s", message);
}

/* A comma-separated list of the fusion's input names, for messages. */
static void input_names(const fv_fusion *fusion, char *buffer, size_t size)
{
    size_t used = 0;
    buffer[0] = '\0';
    for (int32_t k = 0; k < fusion->input_count && used + 1 < size; k++) {
        char label[40];
        int written = snprintf(buffer + used, size - used, "%s%s", k ? ", " : "",
                               fv_ir_value_label(fusion, fusion->inputs[k], label));
        if (written < 0)
            break;
        used += (size_t)written;
    }
}

static fv_status resolve_input(const sweep *sw, const fv_fusion *fusion, const char *reference,
                               fv_source_loc loc, int *position)
{
    if (reference[0] == '#') {
        uint64_t index;
        if (!parse_unsigned(reference + 1, FV_CASE_MAX_INPUTS, &index) ||
            index >= (uint64_t)fusion->input_count)
            return fail_loc(sw, loc, "input %s does not exist (the definition has %d inputs)",
                            reference, (int)fusion->input_count);
        *position = (int)index;
        return FV_OK;
    }
    for (int32_t k = 0; k < fusion->input_count; k++) {
        if (strcmp(fusion->values[fusion->inputs[k]].name, reference) == 0) {
            *position = k;
            return FV_OK;
        }
    }
    char names[256];
    input_names(fusion, names, sizeof names);
    return fail_loc(sw, loc, "unknown input '%s' (the definition's inputs are %s)", reference,
                    names);
}

static fv_status resolve_dims(sweep *sw, const fv_fusion *fusion)
{
    for (int i = 0; i < sw->dim_count; i++) {
        sweep_dim *dim = &sw->dims[i];
        FV_TRY(resolve_input(sw, fusion, dim->input, dim->input_loc, &dim->input_position));
        const fv_value *input = &fusion->values[fusion->inputs[dim->input_position]];
        if (input->kind != FV_VALUE_TENSOR)
            return fail_loc(sw, dim->input_loc, "input %s is a scalar and has no dims",
                            dim->input);
        int index = dim->dim < 0 ? dim->dim + input->rank : dim->dim;
        if (index < 0 || index >= input->rank)
            return fail_loc(sw, dim->input_loc, "input %s has no dim %d (its rank is %d)",
                            dim->input, dim->dim, input->rank);
        if (input->dims[index].broadcast)
            return fail_loc(sw, dim->input_loc,
                            "%s dim %d is a broadcast dimension (extent 1) and cannot be sized",
                            dim->input, index);
        dim->resolved_dim = index;
    }
    return FV_OK;
}

static fv_status resolve_settings(sweep *sw, const fv_fusion *fusion)
{
    for (int i = 0; i < sw->distribution_count; i++) {
        input_setting *setting = &sw->distributions[i];
        FV_TRY(resolve_input(sw, fusion, setting->input, setting->loc, &setting->input_position));
        if (fusion->values[fusion->inputs[setting->input_position]].kind != FV_VALUE_TENSOR)
            return fail_loc(sw, setting->loc,
                            "input %s is a scalar: give its value with `scalar %s VALUE`",
                            setting->input, setting->input);
    }
    for (int i = 0; i < sw->scalar_count; i++) {
        input_setting *setting = &sw->scalars[i];
        FV_TRY(resolve_input(sw, fusion, setting->input, setting->loc, &setting->input_position));
        if (fusion->values[fusion->inputs[setting->input_position]].kind != FV_VALUE_SCALAR)
            return fail_loc(sw, setting->loc, "input %s is a tensor, not a scalar",
                            setting->input);
    }
    return FV_OK;
}

static fv_status resolve_sizes(sweep *sw)
{
    for (int g = 0; g < sw->group_count; g++) {
        for (int i = 0; i < sw->groups[g].item_count; i++) {
            size_item *item = &sw->groups[g].items[i];
            item->dim_index = -1;
            for (int d = 0; d < sw->dim_count; d++)
                if (strcmp(sw->dims[d].name, item->name) == 0)
                    item->dim_index = d;
            if (item->dim_index < 0)
                return fail_loc(sw, item->loc,
                                "unknown dim '%s' (declare it with `dim %s = INPUT.DIM`)",
                                item->name, item->name);
        }
    }
    return FV_OK;
}

/* Scalar inputs need a value: a scalar line, or the definition's inputs list. */
static fv_status check_scalars(const sweep *sw, const fv_definition *definition)
{
    const fv_fusion *fusion = definition->fusion;
    for (int32_t k = 0; k < fusion->input_count; k++) {
        if (fusion->values[fusion->inputs[k]].kind != FV_VALUE_SCALAR || definition->has_inputs)
            continue;
        bool given = false;
        for (int i = 0; i < sw->scalar_count; i++)
            given = given || sw->scalars[i].input_position == k;
        if (!given) {
            char label[40];
            fv_ir_value_label(fusion, fusion->inputs[k], label);
            return fail_loc(sw, sw->definition_loc,
                            "scalar input %s has no value: add `scalar %s VALUE`", label, label);
        }
    }
    return FV_OK;
}

/* One fusion per requested dtype (the definition's half dtype replaced). */
static fv_status dtype_fusions(const sweep *sw, fv_fusion *fusion, fv_fusion **fusions)
{
    fv_dtype half = fv_ir_half_dtype(fusion);
    for (int i = 0; i < sw->dtype_count; i++) {
        fv_dtype target = sw->dtypes[i];
        if (!fv_dtype_is_half(half)) {
            if (target != half)
                return fail_loc(sw, sw->dtype_locs[i],
                                "the definition uses no half-precision dtype, so it cannot be "
                                "swept to %s (only %s)",
                                fv_dtype_name(target), fv_dtype_name(half));
            fv_ir_fusion_retain(fusion);
            fusions[i] = fusion;
            continue;
        }
        if (target == half) {
            fv_ir_fusion_retain(fusion);
            fusions[i] = fusion;
            continue;
        }
        FV_TRY(fv_ir_substitute_dtype(fusion, half, target, &fusions[i]));
    }
    return FV_OK;
}

/* --------------------------------------------------------- expanding */

typedef struct expansion {
    const sweep *sw;
    const fv_definition *definition;
    fv_fusion *fusions[MAX_DTYPES];
    fv_case **cases;
    int32_t count, capacity;
} expansion;

static int64_t combinations(const size_group *group)
{
    int64_t count = 1;
    for (int i = 0; i < group->item_count; i++)
        if (__builtin_mul_overflow(count, (int64_t)group->items[i].value_count, &count) ||
            count > MAX_CASES)
            return MAX_CASES + 1;
    return count;
}

static fv_status check_case_count(const sweep *sw)
{
    int64_t total = 0;
    int64_t per_shape = (int64_t)sw->dtype_count * sw->seed_count;
    for (int g = 0; g < sw->group_count || (g == 0 && sw->group_count == 0); g++) {
        int64_t shapes = sw->group_count == 0 ? 1 : combinations(&sw->groups[g]);
        total += shapes * per_shape;
        if (total > MAX_CASES) {
            fv_source_loc loc = sw->group_count == 0 ? sw->definition_loc : sw->groups[g].loc;
            return fail_loc(sw, loc, "the sweep expands to more than %d cases", MAX_CASES);
        }
    }
    return FV_OK;
}

/* Binds one combination of a sizes line (or the inputs list's sizes). */
static fv_status bind_sizes(const expansion *x, const size_group *group, const int *choice,
                            fv_case *c)
{
    const sweep *sw = x->sw;
    if (group == NULL) {
        fv_status status = FV_OK;
        if (x->definition->has_inputs)
            status = fv_frontend_bind_input_extents(x->definition, c);
        if (status == FV_OK)
            status = fv_frontend_check_case_sizes(c);
        if (status != FV_OK)
            return fv_frontend_error_relocate(status, sw->path, sw->definition_loc.line,
                                              sw->definition_loc.column);
        return FV_OK;
    }
    for (int i = 0; i < group->item_count; i++) {
        const size_item *item = &group->items[i];
        const sweep_dim *dim = &sw->dims[item->dim_index];
        fv_status status = fv_case_bind(c, dim->input_position, dim->resolved_dim,
                                        item->values[choice[i]]);
        if (status != FV_OK)
            return fv_frontend_error_relocate(status, sw->path, item->loc.line, item->loc.column);
    }
    fv_status status = fv_frontend_check_case_sizes(c);
    if (status != FV_OK)
        return fv_frontend_error_relocate(status, sw->path, group->loc.line, group->loc.column);
    return FV_OK;
}

static void set_inputs(const expansion *x, fv_case *c)
{
    const sweep *sw = x->sw;
    for (int k = 0; k < x->definition->input_count && k < FV_CASE_MAX_INPUTS; k++) {
        c->distributions[k] = x->definition->distributions[k];
        c->scalar_inputs[k] = x->definition->scalar_values[k];
    }
    for (int i = 0; i < sw->distribution_count; i++)
        c->distributions[sw->distributions[i].input_position] = sw->distributions[i].distribution;
    for (int i = 0; i < sw->scalar_count; i++) {
        int k = sw->scalars[i].input_position;
        c->scalar_inputs[k] = sw->scalars[i].value;
        c->distributions[k] = (fv_distribution){FV_DIST_CONSTANT, sw->scalars[i].value, 0};
    }
}

static fv_status add_case(expansion *x, const size_group *group, const int *choice,
                          int dtype_index, uint64_t seed)
{
    const sweep *sw = x->sw;
    fv_case *c;
    FV_TRY(fv_case_create(x->fusions[dtype_index], &c));
    fv_status status = bind_sizes(x, group, choice, c);
    if (status == FV_OK && x->count == x->capacity) {
        int32_t capacity = x->capacity ? x->capacity * 2 : 64;
        fv_case **grown = realloc(x->cases, sizeof *grown * (size_t)capacity);
        if (grown == NULL)
            status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        else {
            x->cases = grown;
            x->capacity = capacity;
        }
    }
    if (status != FV_OK) {
        fv_case_free(c);
        return status;
    }
    c->dtype = sw->dtypes[dtype_index];
    c->seed = seed;
    snprintf(c->family, sizeof c->family, "%s", sw->family);
    snprintf(c->source_path, sizeof c->source_path, "%s", sw->path);
    c->source_line = group != NULL ? group->loc.line : sw->definition_loc.line;
    set_inputs(x, c);
    fv_case_make_id(c);
    x->cases[x->count++] = c;
    return FV_OK;
}

/* Every combination of one sizes line (the last name varies fastest). */
static fv_status expand_group(expansion *x, const size_group *group)
{
    const sweep *sw = x->sw;
    int choice[MAX_DIMS] = {0};
    for (;;) {
        for (int t = 0; t < sw->dtype_count; t++)
            for (int s = 0; s < sw->seed_count; s++)
                FV_TRY(add_case(x, group, choice, t, sw->seeds[s]));
        int i = group != NULL ? group->item_count - 1 : -1;
        while (i >= 0 && ++choice[i] == group->items[i].value_count)
            choice[i--] = 0;
        if (i < 0)
            return FV_OK;
    }
}

static fv_status expand(expansion *x)
{
    const sweep *sw = x->sw;
    if (sw->group_count == 0)
        return expand_group(x, NULL);
    for (int g = 0; g < sw->group_count; g++)
        FV_TRY(expand_group(x, &sw->groups[g]));
    return FV_OK;
}

static fv_status resolve(sweep *sw, const fv_definition *definition)
{
    const fv_fusion *fusion = definition->fusion;
    if (sw->name_loc.line == 0)
        fv_frontend_file_stem(sw->path, sw->family, sizeof sw->family);
    FV_TRY(resolve_dims(sw, fusion));
    FV_TRY(resolve_settings(sw, fusion));
    FV_TRY(resolve_sizes(sw));
    FV_TRY(check_scalars(sw, definition));
    if (sw->dtype_count == 0) {
        sw->dtypes[0] = fv_ir_half_dtype(fusion);
        sw->dtype_locs[0] = sw->definition_loc;
        sw->dtype_count = 1;
    }
    if (sw->seed_count == 0) {
        sw->seeds[0] = 0;
        sw->seed_count = 1;
    }
    return check_case_count(sw);
}

static fv_status append_cases(expansion *x, fv_case_list *list)
{
    if (list->count + x->count > list->capacity) {
        int64_t needed = (int64_t)list->count + x->count;
        int32_t capacity = list->capacity ? list->capacity : 64;
        while (capacity < needed)
            capacity *= 2;
        fv_case **grown = realloc(list->cases, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        list->cases = grown;
        list->capacity = capacity;
    }
    memcpy(list->cases + list->count, x->cases, sizeof *x->cases * (size_t)x->count);
    list->count += x->count;
    x->count = 0;
    return FV_OK;
}

static fv_status expand_sweep_text(sweep *sw, const char *text, size_t size, fv_case_list *list,
                                   char *named, size_t named_size)
{
    FV_TRY(parse_sweep_text(sw, text, size));
    char path[512];
    FV_TRY(definition_path(sw, path, sizeof path));
    if (named != NULL)
        snprintf(named, named_size, "%s", path);
    fv_definition *definition;
    FV_TRY(read_sweep_definition(sw, path, &definition));
    expansion x = {.sw = sw, .definition = definition};
    fv_status status;
    FV_TRY_GOTO(status, resolve(sw, definition), done);
    FV_TRY_GOTO(status, dtype_fusions(sw, definition->fusion, x.fusions), done);
    FV_TRY_GOTO(status, expand(&x), done);
    FV_TRY_GOTO(status, append_cases(&x, list), done);
done:
    for (int32_t i = 0; i < x.count; i++)
        fv_case_free(x.cases[i]);
    free(x.cases);
    for (int i = 0; i < MAX_DTYPES; i++)
        fv_ir_fusion_release(x.fusions[i]);
    fv_frontend_definition_free(definition);
    return status;
}

fv_status fv_frontend_expand_sweep_text(const char *path, const char *text, size_t size,
                                        fv_case_list *list, char *definition_path,
                                        size_t definition_path_size)
{
    if (definition_path != NULL && definition_path_size > 0)
        definition_path[0] = '\0';
    if (size > FV_FRONTEND_MAX_FILE_SIZE)
        return fv_frontend_error_at(FV_ERR_INPUT, path, 1, 1, "the file is larger than %d MiB",
                                    FV_FRONTEND_MAX_FILE_SIZE >> 20);
    sweep *sw = calloc(1, sizeof *sw);
    FV_CHECK_ALLOC(sw);
    sw->path = path;
    fv_status status = expand_sweep_text(sw, text, size, list, definition_path,
                                         definition_path_size);
    free(sw->groups);
    free(sw);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

fv_status fv_frontend_expand_sweep(const char *path, fv_case_list *list, char *definition_path,
                                   size_t definition_path_size)
{
    if (definition_path != NULL && definition_path_size > 0)
        definition_path[0] = '\0';
    char *text;
    size_t size;
    FV_TRY(fv_frontend_read_file(path, &text, &size));
    fv_status status = fv_frontend_expand_sweep_text(path, text, size, list, definition_path,
                                                     definition_path_size);
    free(text);
    return status;
}
