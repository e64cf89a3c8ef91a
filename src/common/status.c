/* status.c: thread-local error messages and their file:line trails. */
#include "common/status.h"

#include <stdio.h>
#include <string.h>

enum { MESSAGE_CAPACITY = 2048, TRAIL_FRAMES = 16, TRAIL_CAPACITY = 1024 };

typedef struct error_state {
    fv_status status;
    char message[MESSAGE_CAPACITY];
    const char *files[TRAIL_FRAMES];
    int lines[TRAIL_FRAMES];
    int frame_count;
    char trail[TRAIL_CAPACITY];
} error_state;

static _Thread_local error_state current_error;

static const char *const status_names[FV_STATUS_COUNT] = {
    [FV_OK] = "ok",
    [FV_ERR_USAGE] = "usage",
    [FV_ERR_INPUT] = "input",
    [FV_ERR_UNSUPPORTED] = "unsupported",
    [FV_ERR_NOT_FOUND] = "not-found",
    [FV_ERR_CORRUPT] = "corrupt",
    [FV_ERR_IO] = "io",
    [FV_ERR_NOMEM] = "out-of-memory",
    [FV_ERR_HDF5] = "hdf5",
    [FV_ERR_CUDA] = "cuda",
    [FV_ERR_NVRTC] = "nvrtc",
    [FV_ERR_MPI] = "mpi",
    [FV_ERR_INTERNAL] = "internal",
};

const char *fv_status_name(fv_status status)
{
    if ((int)status < 0 || status >= FV_STATUS_COUNT)
        return "unknown";
    return status_names[status];
}

fv_status fv_error_raise(fv_status status, const char *file, int line, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(current_error.message, sizeof current_error.message, format, args);
    va_end(args);
    current_error.status = status;
    current_error.files[0] = file;
    current_error.lines[0] = line;
    current_error.frame_count = 1;
    return status;
}

void fv_error_trace(const char *file, int line)
{
    int frame = current_error.frame_count;
    if (frame <= 0 || frame >= TRAIL_FRAMES)
        return;
    current_error.files[frame] = file;
    current_error.lines[frame] = line;
    current_error.frame_count = frame + 1;
}

void fv_error_prefix(const char *format, ...)
{
    char context[512];
    char joined[MESSAGE_CAPACITY];
    va_list args;
    va_start(args, format);
    vsnprintf(context, sizeof context, format, args);
    va_end(args);
    snprintf(joined, sizeof joined, "%s: %s", context, current_error.message);
    memcpy(current_error.message, joined, sizeof joined);
}

const char *fv_error_message(void) { return current_error.message; }

fv_status fv_error_status(void) { return current_error.status; }

const char *fv_error_trail(void)
{
    size_t used = 0;
    current_error.trail[0] = '\0';
    for (int frame = 0; frame < current_error.frame_count; frame++) {
        const char *file = current_error.files[frame];
        const char *base = strstr(file, "src/");
        if (base == NULL)
            base = strstr(file, "validate/");
        if (base == NULL)
            base = file;
        int written = snprintf(current_error.trail + used, sizeof current_error.trail - used,
                               "%s%s:%d", frame == 0 ? "raised at " : ", via ", base,
                               current_error.lines[frame]);
        if (written < 0 || (size_t)written >= sizeof current_error.trail - used)
            break;
        used += (size_t)written;
    }
    return current_error.trail;
}

void fv_error_clear(void)
{
    current_error.status = FV_OK;
    current_error.message[0] = '\0';
    current_error.frame_count = 0;
}

int fv_status_exit_code(fv_status status) { return status == FV_OK ? 0 : 2; }
