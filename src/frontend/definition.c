/* definition.c: definition files (.py) as a whole: parse, build the fusion,
 * read the inputs list; and the case a definition's own inputs list gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_internal.h"

static fv_definition *new_definition(const char *path)
{
    fv_definition *definition = calloc(1, sizeof *definition);
    if (definition == NULL)
        return NULL;
    snprintf(definition->path, sizeof definition->path, "%s", path);
    fv_frontend_file_stem(path, definition->family, sizeof definition->family);
    for (int k = 0; k < FV_CASE_MAX_INPUTS; k++) {
        definition->distributions[k] = (fv_distribution){FV_DIST_NORMAL, 0, 1};
        for (int d = 0; d < FV_MAX_RANK; d++)
            definition->extents[k][d] = -1;
    }
    return definition;
}

fv_status fv_frontend_parse_definition(const char *path, const char *text, size_t size,
                                       fv_definition **out)
{
    *out = NULL;
    fv_frontend_syntax syntax;
    FV_TRY(fv_frontend_parse(path, text, size, &syntax));
    fv_definition *definition = new_definition(path);
    if (definition == NULL) {
        fv_frontend_syntax_free(&syntax);
        FV_FAIL(FV_ERR_NOMEM, "out of memory reading %s", path);
    }
    const fv_frontend_node *inputs_list = NULL;
    fv_status status;
    FV_TRY_GOTO(status, fv_frontend_build_fusion(path, &syntax, &definition->fusion, &inputs_list),
                failed);
    definition->input_count = definition->fusion->input_count;
    if (inputs_list != NULL)
        FV_TRY_GOTO(status, fv_frontend_read_inputs(path, inputs_list, definition), failed);
    fv_frontend_syntax_free(&syntax);
    *out = definition;
    return FV_OK;
failed:
    fv_frontend_syntax_free(&syntax);
    fv_frontend_definition_free(definition);
    return status;
}

fv_status fv_frontend_read_definition(const char *path, fv_definition **out)
{
    *out = NULL;
    char *text;
    size_t size;
    FV_TRY(fv_frontend_read_file(path, &text, &size));
    fv_status status = fv_frontend_parse_definition(path, text, size, out);
    free(text);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

void fv_frontend_definition_free(fv_definition *definition)
{
    if (definition == NULL)
        return;
    fv_ir_fusion_release(definition->fusion);
    free(definition);
}

fv_status fv_frontend_bind_input_extents(const fv_definition *definition, fv_case *c)
{
    const fv_fusion *fusion = definition->fusion;
    for (int32_t k = 0; k < fusion->input_count; k++) {
        const fv_value *input = &fusion->values[fusion->inputs[k]];
        if (input->kind != FV_VALUE_TENSOR)
            continue;
        for (int d = 0; d < input->rank; d++)
            if (input->dims[d].symbol >= 0 && !input->dims[d].broadcast)
                FV_TRY(fv_case_bind(c, k, d, definition->extents[k][d]));
    }
    return FV_OK;
}

/* Binds the inputs list's sizes, checks them, and fills in the rest. */
static fv_status fill_case(const fv_definition *definition, fv_case *c)
{
    FV_TRY(fv_frontend_bind_input_extents(definition, c));
    FV_TRY(fv_frontend_check_case_sizes(c));
    snprintf(c->family, sizeof c->family, "%s", definition->family);
    snprintf(c->source_path, sizeof c->source_path, "%s", definition->path);
    c->source_line = 0;
    c->seed = 0;
    for (int k = 0; k < definition->input_count && k < FV_CASE_MAX_INPUTS; k++) {
        c->distributions[k] = definition->distributions[k];
        c->scalar_inputs[k] = definition->scalar_values[k];
    }
    fv_case_make_id(c);
    return FV_OK;
}

fv_status fv_frontend_case_from_inputs(const fv_definition *definition, fv_case **out)
{
    *out = NULL;
    if (!definition->has_inputs)
        return fv_frontend_error_at(FV_ERR_INPUT, definition->path, 1, 1,
                                    "the definition has no `inputs = [...]` list, so it is not a "
                                    "case by itself (name it in a sweep)");
    fv_case *c;
    FV_TRY(fv_case_create(definition->fusion, &c));
    fv_status status = fill_case(definition, c);
    if (status != FV_OK) {
        fv_case_free(c);
        return fv_frontend_error_relocate(status, definition->path, definition->inputs_loc.line,
                                          definition->inputs_loc.column);
    }
    *out = c;
    return FV_OK;
}
