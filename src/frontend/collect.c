/* collect.c: turns files and directories into a list of cases.
 *
 * Directories are searched recursively in name order (hidden entries
 * skipped), so the list is the same on every machine.  Sweeps are expanded
 * first, to learn which definitions they name; then every file is visited in
 * order: a sweep contributes its cases, a .py its own case unless it was
 * found in a directory and a sweep names it.  A failing file becomes one
 * error entry; a duplicate case id keeps the first case.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/frontend_internal.h"

enum { MAX_DIRECTORY_DEPTH = 32, PATH_CAPACITY = 512 };

typedef struct collected_file {
    char path[PATH_CAPACITY];
    bool is_sweep;
    bool named_explicitly;
} collected_file;

typedef struct file_array {
    collected_file *files;
    int32_t count, capacity;
} file_array;

/* Case ids seen so far: open addressing over indexes into list->cases. */
typedef struct id_table {
    int32_t *slots; /* -1 = empty */
    size_t capacity;
    size_t count;
} id_table;

/* ------------------------------------------------------------ errors */

static fv_status add_error(fv_case_list *list, const char *path, fv_status status,
                           const char *message)
{
    if (list->error_count == list->error_capacity) {
        int32_t capacity = list->error_capacity ? list->error_capacity * 2 : 8;
        fv_case_error *grown = realloc(list->errors, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        list->errors = grown;
        list->error_capacity = capacity;
    }
    fv_case_error *error = &list->errors[list->error_count++];
    memset(error, 0, sizeof *error);
    snprintf(error->path, sizeof error->path, "%s", path);
    fv_frontend_file_stem(path, error->family, sizeof error->family);
    snprintf(error->message, sizeof error->message, "%s", message);
    error->status = status;
    return FV_OK;
}

/* Records the current error of a failed file. */
static fv_status add_current_error(fv_case_list *list, const char *path, fv_status status)
{
    return add_error(list, path, status, fv_error_message());
}

static fv_status add_located_error(fv_case_list *list, const char *path, fv_status status,
                                   const char *format, ...) __attribute__((format(printf, 4, 5)));

static fv_status add_located_error(fv_case_list *list, const char *path, fv_status status,
                                   const char *format, ...)
{
    char detail[768], message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(detail, sizeof detail, format, args);
    va_end(args);
    snprintf(message, sizeof message, "%s:1:1: %s", path, detail);
    return add_error(list, path, status, message);
}

/* ------------------------------------------------------------- files */

static bool has_suffix(const char *path, const char *suffix)
{
    size_t length = strlen(path), suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(path + length - suffix_length, suffix) == 0;
}

static fv_status add_file(file_array *files, const char *path, bool named_explicitly)
{
    if (files->count == files->capacity) {
        int32_t capacity = files->capacity ? files->capacity * 2 : 32;
        collected_file *grown = realloc(files->files, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        files->files = grown;
        files->capacity = capacity;
    }
    collected_file *file = &files->files[files->count++];
    snprintf(file->path, sizeof file->path, "%s", path);
    file->is_sweep = has_suffix(path, ".sweep");
    file->named_explicitly = named_explicitly;
    return FV_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of a directory (hidden ones skipped), sorted; caller frees. */
static fv_status list_directory(const char *directory, char ***names, int32_t *count,
                                int *error)
{
    *names = NULL;
    *count = 0;
    *error = 0;
    DIR *handle = opendir(directory);
    if (handle == NULL) {
        *error = errno;
        return FV_OK;
    }
    int32_t capacity = 0;
    fv_status status = FV_OK;
    for (struct dirent *entry = readdir(handle); entry != NULL; entry = readdir(handle)) {
        if (entry->d_name[0] == '.')
            continue;
        if (*count == capacity) {
            capacity = capacity ? capacity * 2 : 32;
            char **grown = realloc(*names, sizeof *grown * (size_t)capacity);
            if (grown == NULL) {
                status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
                break;
            }
            *names = grown;
        }
        (*names)[*count] = strdup(entry->d_name);
        if ((*names)[*count] == NULL) {
            status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
            break;
        }
        (*count)++;
    }
    closedir(handle);
    if (*count > 1)
        qsort(*names, (size_t)*count, sizeof **names, compare_names);
    return status;
}

static void free_names(char **names, int32_t count)
{
    for (int32_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

static fv_status walk_directory(const char *directory, int depth, file_array *files,
                                fv_case_list *list);

static fv_status visit_entry(const char *directory, const char *name, int depth,
                             file_array *files, fv_case_list *list)
{
    char path[PATH_CAPACITY];
    size_t length = strlen(directory);
    while (length > 1 && directory[length - 1] == '/')
        length--;
    int written = snprintf(path, sizeof path, "%.*s/%s", (int)length, directory, name);
    if (written < 0 || (size_t)written >= sizeof path) {
        if (has_suffix(name, ".py") || has_suffix(name, ".sweep"))
            return add_located_error(list, name, FV_ERR_INPUT, "the path is too long");
        return FV_OK;
    }
    struct stat info;
    if (stat(path, &info) != 0)
        return add_located_error(list, path, FV_ERR_IO, "cannot read: %s", strerror(errno));
    if (S_ISDIR(info.st_mode))
        return walk_directory(path, depth + 1, files, list);
    if (S_ISREG(info.st_mode) && (has_suffix(path, ".py") || has_suffix(path, ".sweep")))
        return add_file(files, path, false);
    return FV_OK;
}

static fv_status walk_directory(const char *directory, int depth, file_array *files,
                                fv_case_list *list)
{
    if (depth > MAX_DIRECTORY_DEPTH)
        return add_located_error(list, directory, FV_ERR_INPUT,
                                 "directories nested more than %d deep", MAX_DIRECTORY_DEPTH);
    char **names;
    int32_t count;
    int error;
    FV_TRY(list_directory(directory, &names, &count, &error));
    if (error != 0)
        return add_located_error(list, directory, FV_ERR_IO, "cannot read the directory: %s",
                                 strerror(error));
    fv_status status = FV_OK;
    for (int32_t i = 0; i < count && status == FV_OK; i++)
        status = visit_entry(directory, names[i], depth, files, list);
    free_names(names, count);
    return status;
}

/* ----------------------------------------------------------- case ids */

static size_t id_hash(const char *id)
{
    size_t hash = 1469598103934665603u;
    for (; *id != '\0'; id++)
        hash = (hash ^ (unsigned char)*id) * 1099511628211u;
    return hash;
}

static size_t id_slot(const id_table *table, const fv_case_list *list, const char *id)
{
    size_t index = id_hash(id) & (table->capacity - 1);
    while (table->slots[index] >= 0 && strcmp(list->cases[table->slots[index]]->id, id) != 0)
        index = (index + 1) & (table->capacity - 1);
    return index;
}

static fv_status id_table_insert(id_table *table, const fv_case_list *list, int32_t index)
{
    if ((table->count + 1) * 2 > table->capacity) {
        size_t capacity = table->capacity ? table->capacity * 2 : 256;
        int32_t *slots = malloc(sizeof *slots * capacity);
        FV_CHECK_ALLOC(slots);
        for (size_t i = 0; i < capacity; i++)
            slots[i] = -1;
        id_table grown = {slots, capacity, 0};
        for (size_t i = 0; i < table->capacity; i++)
            if (table->slots[i] >= 0)
                grown.slots[id_slot(&grown, list, list->cases[table->slots[i]]->id)] =
                    table->slots[i];
        grown.count = table->count;
        free(table->slots);
        *table = grown;
    }
    table->slots[id_slot(table, list, list->cases[index]->id)] = index;
    table->count++;
    return FV_OK;
}

/* Appends a case (taking it), or records a duplicate id and frees it. */
static fv_status append_case(fv_case_list *list, id_table *ids, fv_case *c)
{
    if (ids->capacity > 0) {
        int32_t existing = ids->slots[id_slot(ids, list, c->id)];
        if (existing >= 0) {
            const fv_case *first = list->cases[existing];
            char message[1024];
            snprintf(message, sizeof message,
                     "%s:%d:1: duplicate case id '%s' (the first comes from %s:%d)",
                     c->source_path, c->source_line > 0 ? c->source_line : 1, c->id,
                     first->source_path, first->source_line > 0 ? first->source_line : 1);
            fv_status status = add_error(list, c->source_path, FV_ERR_INPUT, message);
            fv_case_free(c);
            return status;
        }
    }
    if (list->count == list->capacity) {
        int32_t capacity = list->capacity ? list->capacity * 2 : 64;
        fv_case **grown = realloc(list->cases, sizeof *grown * (size_t)capacity);
        if (grown == NULL) {
            fv_case_free(c);
            FV_FAIL(FV_ERR_NOMEM, "out of memory collecting cases");
        }
        list->cases = grown;
        list->capacity = capacity;
    }
    list->cases[list->count] = c;
    FV_TRY(id_table_insert(ids, list, list->count));
    list->count++;
    return FV_OK;
}

/* ------------------------------------------------------------ phases */

/* Per file: the outcome of expanding a sweep. */
typedef struct sweep_result {
    fv_case_list cases;
    fv_status status;
    char message[1024];
    char definition[PATH_MAX];
} sweep_result;

static void canonical_path(const char *path, char *buffer, size_t size)
{
    char resolved[PATH_MAX];
    if (realpath(path, resolved) != NULL)
        snprintf(buffer, size, "%s", resolved);
    else
        snprintf(buffer, size, "%s", path);
}

static fv_status expand_sweeps(const file_array *files, sweep_result *results)
{
    for (int32_t i = 0; i < files->count; i++) {
        if (!files->files[i].is_sweep)
            continue;
        sweep_result *result = &results[i];
        char named[PATH_CAPACITY];
        result->status = fv_frontend_expand_sweep(files->files[i].path, &result->cases, named,
                                                  sizeof named);
        if (result->status == FV_ERR_NOMEM)
            return FV_ERR_NOMEM;
        if (result->status != FV_OK)
            snprintf(result->message, sizeof result->message, "%s", fv_error_message());
        if (named[0] != '\0')
            canonical_path(named, result->definition, sizeof result->definition);
    }
    return FV_OK;
}

static bool named_by_sweep(const file_array *files, const sweep_result *results,
                           const char *path)
{
    char canonical[PATH_MAX];
    canonical_path(path, canonical, sizeof canonical);
    for (int32_t i = 0; i < files->count; i++)
        if (files->files[i].is_sweep && strcmp(results[i].definition, canonical) == 0)
            return true;
    return false;
}

static fv_status collect_definition(const char *path, fv_case_list *list, id_table *ids)
{
    fv_definition *definition;
    fv_case *c = NULL;
    fv_status status = fv_frontend_read_definition(path, &definition);
    if (status == FV_OK) {
        status = fv_frontend_case_from_inputs(definition, &c);
        fv_frontend_definition_free(definition);
    }
    if (status == FV_ERR_NOMEM)
        return status;
    if (status != FV_OK)
        return add_current_error(list, path, status);
    return append_case(list, ids, c);
}

static fv_status collect_files(const file_array *files, sweep_result *results,
                               fv_case_list *list, id_table *ids)
{
    FV_TRY(expand_sweeps(files, results));
    for (int32_t i = 0; i < files->count; i++) {
        const collected_file *file = &files->files[i];
        sweep_result *result = &results[i];
        if (!file->is_sweep) {
            if (file->named_explicitly || !named_by_sweep(files, results, file->path))
                FV_TRY(collect_definition(file->path, list, ids));
            continue;
        }
        if (result->status != FV_OK) {
            FV_TRY(add_error(list, file->path, result->status, result->message));
            continue;
        }
        for (int32_t c = 0; c < result->cases.count; c++) {
            fv_case *taken = result->cases.cases[c];
            result->cases.cases[c] = NULL;
            FV_TRY(append_case(list, ids, taken));
        }
    }
    return FV_OK;
}

/* Checks the top-level paths and lists the files they name. */
static fv_status gather_files(const char *const *paths, int path_count, file_array *files,
                              fv_case_list *list)
{
    for (int i = 0; i < path_count; i++) {
        struct stat info;
        if (stat(paths[i], &info) != 0 && (errno == ENOENT || errno == ENOTDIR))
            FV_FAIL(FV_ERR_NOT_FOUND, "%s: no such file or directory", paths[i]);
    }
    for (int i = 0; i < path_count; i++) {
        struct stat info;
        if (stat(paths[i], &info) != 0)
            FV_TRY(add_located_error(list, paths[i], FV_ERR_IO, "cannot read: %s",
                                     strerror(errno)));
        else if (S_ISDIR(info.st_mode))
            FV_TRY(walk_directory(paths[i], 0, files, list));
        else if (strlen(paths[i]) >= PATH_CAPACITY)
            FV_TRY(add_located_error(list, paths[i], FV_ERR_INPUT, "the path is too long"));
        else if (has_suffix(paths[i], ".py") || has_suffix(paths[i], ".sweep"))
            FV_TRY(add_file(files, paths[i], true));
        else
            FV_TRY(add_located_error(list, paths[i], FV_ERR_INPUT,
                                     "not a case file (expected .py or .sweep)"));
    }
    return FV_OK;
}

fv_status fv_frontend_collect(const char *const *paths, int path_count, fv_case_list *list)
{
    file_array files = {0};
    id_table ids = {0};
    sweep_result *results = NULL;
    fv_status status;
    FV_TRY_GOTO(status, gather_files(paths, path_count, &files, list), done);
    for (int32_t i = 0; i < list->count; i++)
        FV_TRY_GOTO(status, id_table_insert(&ids, list, i), done);
    results = calloc((size_t)files.count + 1, sizeof *results);
    if (results == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    FV_TRY_GOTO(status, collect_files(&files, results, list, &ids), done);
done:
    for (int32_t i = 0; results != NULL && i < files.count; i++)
        fv_case_list_free(&results[i].cases);
    free(results);
    free(files.files);
    free(ids.slots);
    if (status == FV_OK)
        fv_error_clear();
    return status;
}

void fv_case_list_free(fv_case_list *list)
{
    if (list == NULL)
        return;
    for (int32_t i = 0; i < list->count; i++)
        fv_case_free(list->cases[i]);
    free(list->cases);
    free(list->errors);
    memset(list, 0, sizeof *list);
}
