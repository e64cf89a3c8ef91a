/* support.c: helpers shared by the frontend's files: located error messages,
 * whole-file reading with a size limit, file stems, and the element-count
 * guard that runs before a case's sizes are checked. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend_internal.h"

fv_status fv_frontend_error_at(fv_status status, const char *path, int line, int column,
                               const char *format, ...)
{
    char message[1536];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return fv_error_raise(status, __FILE__, __LINE__, "%s:%d:%d: %s", path, line, column,
                          message);
}

/* True if `message` starts with "<digits>:<digits>: ". */
static bool starts_with_location(const char *message)
{
    const char *cursor = message;
    for (int part = 0; part < 2; part++) {
        if (!isdigit((unsigned char)*cursor))
            return false;
        while (isdigit((unsigned char)*cursor))
            cursor++;
        if (*cursor++ != ':')
            return false;
    }
    return *cursor == ' ';
}

fv_status fv_frontend_error_relocate(fv_status status, const char *path, int line, int column)
{
    char message[1536];
    snprintf(message, sizeof message, "%s", fv_error_message());
    if (starts_with_location(message))
        return fv_error_raise(status, __FILE__, __LINE__, "%s:%s", path, message);
    return fv_error_raise(status, __FILE__, __LINE__, "%s:%d:%d: %s", path, line, column,
                          message);
}

fv_status fv_frontend_read_file(const char *path, char **text, size_t *size)
{
    *text = NULL;
    *size = 0;
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        int error = errno;
        fv_status status = error == ENOENT || error == ENOTDIR ? FV_ERR_NOT_FOUND : FV_ERR_IO;
        return fv_frontend_error_at(status, path, 1, 1, "cannot open the file: %s",
                                    strerror(error));
    }
    size_t capacity = 64 * 1024, used = 0;
    char *buffer = malloc(capacity + 1);
    if (buffer == NULL) {
        fclose(file);
        FV_FAIL(FV_ERR_NOMEM, "out of memory reading %s", path);
    }
    for (;;) {
        if (used == capacity) {
            if (capacity > FV_FRONTEND_MAX_FILE_SIZE)
                break;
            size_t grown_capacity = capacity * 2;
            char *grown = realloc(buffer, grown_capacity + 1);
            if (grown == NULL) {
                free(buffer);
                fclose(file);
                FV_FAIL(FV_ERR_NOMEM, "out of memory reading %s", path);
            }
            buffer = grown;
            capacity = grown_capacity;
        }
        size_t got = fread(buffer + used, 1, capacity - used, file);
        used += got;
        if (got == 0)
            break;
    }
    int read_error = ferror(file) ? errno : 0;
    bool closed = fclose(file) == 0;
    if (read_error != 0 || !closed) {
        free(buffer);
        return fv_frontend_error_at(FV_ERR_IO, path, 1, 1, "cannot read the file: %s",
                                    strerror(read_error != 0 ? read_error : errno));
    }
    if (used > FV_FRONTEND_MAX_FILE_SIZE) {
        free(buffer);
        return fv_frontend_error_at(FV_ERR_INPUT, path, 1, 1, "the file is larger than %d MiB",
                                    FV_FRONTEND_MAX_FILE_SIZE >> 20);
    }
    buffer[used] = '\0';
    *text = buffer;
    *size = used;
    return FV_OK;
}

void fv_frontend_file_stem(const char *path, char *buffer, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    size_t length = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot != NULL && dot != base)
        length = (size_t)(dot - base);
    if (length >= size)
        length = size - 1;
    memcpy(buffer, base, length);
    buffer[length] = '\0';
}

fv_status fv_frontend_check_case_sizes(const fv_case *c)
{
    const fv_fusion *fusion = c->fusion;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        const fv_value *value = &fusion->values[v];
        if (value->kind != FV_VALUE_TENSOR)
            continue;
        int64_t count = 1;
        for (int d = 0; d < value->rank; d++) {
            int64_t extent = fv_case_dim_extent(c, value->dims[d]);
            if (extent <= 0)
                continue;
            if (__builtin_mul_overflow(count, extent, &count) ||
                count > FV_FRONTEND_MAX_ELEMENTS) {
                char label[40];
                FV_FAIL(FV_ERR_INPUT, "%s would have more than 2^50 elements at these sizes",
                        fv_ir_value_label(fusion, v, label));
            }
        }
    }
    FV_TRY(fv_case_check_bound(c));
    return FV_OK;
}
