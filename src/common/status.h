/* status.h: error values for every module of fuservalidate.
 *
 * Errors are values.  A function that can fail returns fv_status; on failure it
 * records a message with FV_FAIL (which adds file:line), and each caller that
 * passes the error up adds its own file:line with FV_TRY, so a failure leaves a
 * readable trail without longjmp.  Only main() turns a status into an exit code
 * (fv_status_exit_code).  The message buffer is thread-local, so worker threads
 * of the evaluator each keep their own.
 */
#ifndef FV_COMMON_STATUS_H
#define FV_COMMON_STATUS_H

#include <stdarg.h>
#include <stddef.h>

typedef enum fv_status {
    FV_OK = 0,
    FV_ERR_USAGE,       /* bad command line */
    FV_ERR_INPUT,       /* a case or sweep file that cannot be read or parsed */
    FV_ERR_UNSUPPORTED, /* valid input that this tool does not support (yet) */
    FV_ERR_NOT_FOUND,   /* a file, key or name that does not exist */
    FV_ERR_CORRUPT,     /* a stored file that fails its checks */
    FV_ERR_IO,          /* operating-system I/O failure */
    FV_ERR_NOMEM,       /* allocation failure */
    FV_ERR_HDF5,        /* an HDF5 call failed */
    FV_ERR_CUDA,        /* a CUDA driver call failed */
    FV_ERR_NVRTC,       /* NVRTC failed to compile */
    FV_ERR_MPI,         /* an MPI call failed */
    FV_ERR_INTERNAL,    /* a broken invariant: a bug in fuservalidate */
    FV_STATUS_COUNT
} fv_status;

/* Short lower-case name of a status ("io", "hdf5", ...).  Never NULL. */
const char *fv_status_name(fv_status status);

/* Records `status` with a formatted message and the location where it was
 * raised, replacing any earlier message of this thread.  Returns `status`, so
 * `return fv_error_raise(...)` passes it up.  Use through FV_FAIL. */
fv_status fv_error_raise(fv_status status, const char *file, int line,
                         const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends "file:line" to the current error's trail (called by FV_TRY as the
 * error travels up).  The trail keeps the innermost 16 frames. */
void fv_error_trace(const char *file, int line);

/* Adds context in front of the current message: "context: message".  Used
 * where a callee cannot know, e.g., which case it was working on. */
void fv_error_prefix(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* The message of the last error raised on this thread ("" if none). */
const char *fv_error_message(void);

/* The status of the last error raised on this thread (FV_OK if none). */
fv_status fv_error_status(void);

/* "raised at file:line, via file:line, ..." for the last error. */
const char *fv_error_trail(void);

/* Forgets the last error of this thread. */
void fv_error_clear(void);

/* The process exit status for a harness-level status: 0 for FV_OK, 2 for any
 * failure of the harness itself.  (Exit status 1, "some case failed", is
 * decided from case results, not from a status.) */
int fv_status_exit_code(fv_status status);

#define FV_FAIL(status, ...) return fv_error_raise((status), __FILE__, __LINE__, __VA_ARGS__)

#define FV_TRY(expr)                                                         \
    do {                                                                     \
        fv_status fv_try_status_ = (expr);                                   \
        if (fv_try_status_ != FV_OK) {                                       \
            fv_error_trace(__FILE__, __LINE__);                              \
            return fv_try_status_;                                           \
        }                                                                    \
    } while (0)

/* Like FV_TRY, but jumps to a cleanup label with the status stored in `var`. */
#define FV_TRY_GOTO(var, expr, label)                                        \
    do {                                                                     \
        (var) = (expr);                                                      \
        if ((var) != FV_OK) {                                                \
            fv_error_trace(__FILE__, __LINE__);                              \
            goto label;                                                      \
        }                                                                    \
    } while (0)

/* Checks an allocation result. */
#define FV_CHECK_ALLOC(pointer)                                              \
    do {                                                                     \
        if ((pointer) == NULL)                                               \
            FV_FAIL(FV_ERR_NOMEM, "out of memory");                          \
    } while (0)

#endif /* FV_COMMON_STATUS_H */
