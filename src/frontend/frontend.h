/* frontend.h: reads case files into fusions and cases.
 *
 * Two kinds of files (docs/case-format.md describes both):
 *   - definitions (.py): nvFuser Python-frontend definitions as nvFuser and
 *     Lightning Thunder print them, read without running Python, optionally
 *     with an `inputs = [...]` list that makes them a case of their own;
 *   - sweeps (.sweep): a small line format that names a definition and
 *     expands it over sizes, dtypes and seeds.
 * Every error about a file's content is FV_ERR_INPUT or FV_ERR_UNSUPPORTED
 * with the message "path:line:column: message", naming the construct.  The
 * reader never crashes, hangs or reads out of bounds, whatever the bytes.
 */
#ifndef FV_FRONTEND_FRONTEND_H
#define FV_FRONTEND_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "ir/case.h"
#include "ir/ir.h"

/* A parsed definition file. */
typedef struct fv_definition {
    fv_fusion *fusion;   /* one reference held; fusion->name = the def's name */
    char path[512];      /* the file it was read from */
    char family[64];     /* file stem, used in case ids */
    bool has_inputs;     /* the file has an `inputs = [...]` list; the fields below
                            are filled from it (else normal(0,1), extents -1, 0.0) */
    int input_count;     /* = fusion->input_count */
    fv_distribution distributions[FV_CASE_MAX_INPUTS]; /* per fusion input */
    int64_t extents[FV_CASE_MAX_INPUTS][FV_MAX_RANK];   /* per input and dim */
    double scalar_values[FV_CASE_MAX_INPUTS];           /* scalar inputs' values */
    fv_source_loc inputs_loc; /* where the `inputs` list starts (line 0 if none) */
} fv_definition;

/* Parses a definition from `size` bytes of `text` (need not be
 * NUL-terminated; `path` is only used in messages and ids).  On success
 * *out is a new definition the caller frees with fv_frontend_definition_free.
 * On failure *out is NULL and the status is FV_ERR_INPUT or
 * FV_ERR_UNSUPPORTED ("path:line:column: ..."), or FV_ERR_NOMEM. */
fv_status fv_frontend_parse_definition(const char *path, const char *text, size_t size,
                                       fv_definition **out);

/* Reads and parses a definition file (at most 8 MiB).  Errors as
 * fv_frontend_parse_definition, plus FV_ERR_NOT_FOUND / FV_ERR_IO when the
 * file cannot be read. */
fv_status fv_frontend_read_definition(const char *path, fv_definition **out);

/* Frees a definition and drops its fusion reference.  NULL is ok. */
void fv_frontend_definition_free(fv_definition *definition);

/* The case a definition's own `inputs` list describes: family = file stem,
 * the dtype the fusion uses (fv_ir_half_dtype), seed 0, extents and
 * distributions from the list, id from fv_case_make_id, source_line 0.
 * FV_ERR_INPUT ("path:1:1: ...") if the definition has no inputs list. */
fv_status fv_frontend_case_from_inputs(const fv_definition *definition, fv_case **out);

/* A file that could not be read, parsed or expanded, or a duplicate case. */
typedef struct fv_case_error {
    char path[512];
    char family[64];     /* the file stem */
    char message[1024];  /* "path:line:column: message" */
    fv_status status;
} fv_case_error;

/* Cases and errors collected from files; zero-initialize before use. */
typedef struct fv_case_list {
    fv_case **cases;
    int32_t count, capacity;
    fv_case_error *errors;
    int32_t error_count, error_capacity;
} fv_case_list;

/* Expands one sweep file and appends its cases to list->cases (all of them
 * or none).  If `definition_path` is not NULL it receives the path of the
 * definition the sweep names ("" if reading stopped before that).  On failure the list
 * is unchanged and the status is FV_ERR_INPUT / FV_ERR_UNSUPPORTED
 * ("path:line:column: ..."), FV_ERR_NOT_FOUND / FV_ERR_IO (the sweep file
 * itself cannot be read) or FV_ERR_NOMEM. */
fv_status fv_frontend_expand_sweep(const char *path, fv_case_list *list,
                                   char *definition_path, size_t definition_path_size);

/* Like fv_frontend_expand_sweep, for a sweep whose `size` bytes of text are
 * given: `path` is used in messages, ids (the default family) and to find a
 * relative definition, which is read from disk. */
fv_status fv_frontend_expand_sweep_text(const char *path, const char *text, size_t size,
                                        fv_case_list *list, char *definition_path,
                                        size_t definition_path_size);

/* Collects cases from files (.py, .sweep) and directories (searched
 * recursively, entries in name order, hidden entries skipped).  Sweeps are
 * expanded; a .py found in a directory runs as its own case only if no
 * collected sweep names it, while a .py named in `paths` always does.  A file
 * that fails becomes one entry of list->errors and collection goes on; a
 * duplicate case id keeps the first case and records an error naming both
 * sources.  Appends to `list`.  Returns FV_ERR_NOT_FOUND (adding nothing) if a
 * path in `paths` does not exist, FV_ERR_NOMEM when out of memory, else
 * FV_OK even when some files failed. */
fv_status fv_frontend_collect(const char *const *paths, int path_count, fv_case_list *list);

/* Frees every case and error of the list and zeroes it.  NULL is ok. */
void fv_case_list_free(fv_case_list *list);

#endif
