/* h5util.h: small HDF5 helpers shared by the reference store and the result
 * archive: one-time library setup, HDF5 failures turned into fv_status errors
 * with readable messages, typed attributes, and the file-access property list
 * every fuservalidate file is opened with.
 *
 * Error model.  After fv_h5_init, HDF5 prints nothing by itself.  Every
 * failing HDF5 call is checked with FV_H5_CHECK / FV_H5_CHECK_GOTO, which
 * raise FV_ERR_HDF5 with "WHAT in PATH: FUNCTION: DESCRIPTION", where the
 * description is the innermost entry of HDF5's error stack (where the
 * failure started, not the API call that reported it).
 *
 * Not thread-safe beyond what the HDF5 build is: with a serial (non
 * thread-safe) HDF5, only one thread at a time may use these helpers.
 */
#ifndef FV_COMMON_H5UTIL_H
#define FV_COMMON_H5UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "common/status.h"

/* Setup, safe to call any number of times from any thread: opens the library
 * once and turns off HDF5's automatic error printing (H5Eset_auto2) for the
 * calling thread (thread-safe builds keep it per thread).  FV_ERR_HDF5 if
 * HDF5 cannot be initialized. */
fv_status fv_h5_init(void);

/* Raises `status` (normally FV_ERR_HDF5) with the message
 * "<formatted what> in <path>: <innermost HDF5 error description>" and the
 * location file:line, reading HDF5's current error stack.  Call it right
 * after the failing HDF5 call, before any other HDF5 call clears the stack.
 * `path` says where (normally the file's path; an object path such as
 * "/outputs/0" when the caller adds the file itself) and may be NULL.
 * Clears the stack once read.  Returns `status`.  Use through
 * FV_H5_CHECK / FV_H5_CHECK_GOTO. */
fv_status fv_h5_raise(fv_status status, const char *file, int line, const char *path,
                      const char *format, ...) __attribute__((format(printf, 5, 6)));

/* True if the HDF5 error stack read by the last fv_h5_raise of this thread
 * reported a checksum failure (fletcher32 on a data chunk, or a metadata
 * checksum).  Lets a caller tell corruption from other failures. */
bool fv_h5_last_failure_was_checksum(void);

/* Returns from the enclosing function with FV_ERR_HDF5 when `result` (an
 * hid_t, herr_t or htri_t) is negative.  The variadic part is a printf
 * format and arguments saying what was being done. */
#define FV_H5_CHECK(result, path, ...)                                              \
    do {                                                                            \
        if ((result) < 0)                                                           \
            return fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, (path), __VA_ARGS__); \
    } while (0)

/* Like FV_H5_CHECK, but stores the status in `var` and jumps to `label`. */
#define FV_H5_CHECK_GOTO(var, result, label, path, ...)                             \
    do {                                                                            \
        if ((result) < 0) {                                                         \
            (var) = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, (path), __VA_ARGS__); \
            goto label;                                                             \
        }                                                                           \
    } while (0)

/* Closes any HDF5 identifier (file, group, dataset, dataspace, datatype,
 * attribute, property list) and sets *id to H5I_INVALID_HID.  Does nothing
 * for a negative *id.  Returns the close call's result (negative on failure);
 * cleanup paths may ignore it. */
herr_t fv_h5_close(hid_t *id);

/* A new file-access property list for fuservalidate files (caller closes it):
 * POSIX (sec2) driver, file locking disabled (H5Pset_file_locking where the
 * HDF5 version has it, 1.10.7 and later; files are never modified after they
 * are published, and NFS/Lustre often refuse locks), format bounds
 * [1.10, 1.10] (checksummed metadata and chunk indexes, readable by HDF5 1.10
 * and later), and strong close semantics.  FV_ERR_HDF5 on failure. */
fv_status fv_h5_file_access(hid_t *access);

/* Attribute writers: create attribute `name` on `object` (a file, group or
 * dataset), replacing an existing one of that name.  Strings are stored as
 * scalar variable-length UTF-8 strings (NULL is stored as ""), integers as
 * 64-bit little-endian, doubles as IEEE 64-bit little-endian.  `path` is where,
 * for messages (as for fv_h5_raise).  FV_ERR_HDF5 on failure. */
fv_status fv_h5_write_string_attribute(hid_t object, const char *name, const char *value,
                                       const char *path);
fv_status fv_h5_write_int64_attribute(hid_t object, const char *name, int64_t value,
                                      const char *path);
fv_status fv_h5_write_uint64_attribute(hid_t object, const char *name, uint64_t value,
                                       const char *path);
fv_status fv_h5_write_double_attribute(hid_t object, const char *name, double value,
                                       const char *path);
/* A one-dimensional int64 array of `count` elements (count 0 is an empty
 * array). */
fv_status fv_h5_write_int64_array_attribute(hid_t object, const char *name, int count,
                                            const int64_t *values, const char *path);

/* Attribute readers.  Failures: FV_ERR_NOT_FOUND if the attribute does not
 * exist; FV_ERR_CORRUPT if it has the wrong class (string / integer / float)
 * or number of elements (scalars: exactly one); FV_ERR_HDF5 if HDF5 fails;
 * FV_ERR_NOMEM.  Outputs are untouched on failure.
 *
 * String: fixed- or variable-length, returned NUL-terminated in a new buffer
 * that the caller frees (free()). */
fv_status fv_h5_read_string_attribute(hid_t object, const char *name, const char *path,
                                      char **value);
fv_status fv_h5_read_int64_attribute(hid_t object, const char *name, const char *path,
                                     int64_t *value);
fv_status fv_h5_read_uint64_attribute(hid_t object, const char *name, const char *path,
                                      uint64_t *value);
fv_status fv_h5_read_double_attribute(hid_t object, const char *name, const char *path,
                                      double *value);
/* An integer array of at most `capacity` elements (FV_ERR_CORRUPT if longer);
 * *count receives its length.  `values` holds `capacity` elements. */
fv_status fv_h5_read_int64_array_attribute(hid_t object, const char *name, const char *path,
                                           int capacity, int64_t *values, int *count);

#endif /* FV_COMMON_H5UTIL_H */
