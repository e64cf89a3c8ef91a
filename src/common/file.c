/* file.c: atomic whole-file writes (temporary file, fsync, rename). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"

static fv_status write_all(int descriptor, const void *data, size_t size, const char *path)
{
    const uint8_t *bytes = data;
    while (size > 0) {
        ssize_t written = write(descriptor, bytes, size);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            FV_FAIL(FV_ERR_IO, "cannot write %s: %s", path,
                    written < 0 ? strerror(errno) : "nothing written");
        bytes += written;
        size -= (size_t)written;
    }
    return FV_OK;
}

/* Makes a rename in `directory` durable (file systems that cannot sync a
 * directory are fine). */
static fv_status sync_directory(const char *directory)
{
    int descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot open directory %s: %s", directory, strerror(errno));
    int result = fsync(descriptor);
    int error = errno;
    close(descriptor);
    if (result != 0 && error != EINVAL && error != EROFS)
        FV_FAIL(FV_ERR_IO, "cannot sync directory %s: %s", directory, strerror(error));
    return FV_OK;
}

/* Splits `path` into its directory ("." if none) and file name. */
static fv_status split_path(const char *path, char *directory, size_t directory_size,
                            const char **name)
{
    const char *slash = strrchr(path, '/');
    *name = slash != NULL ? slash + 1 : path;
    int length = slash == NULL ? snprintf(directory, directory_size, ".")
                 : slash == path ? snprintf(directory, directory_size, "/")
                                 : snprintf(directory, directory_size, "%.*s", (int)(slash - path), path);
    if (length < 0 || (size_t)length >= directory_size || **name == '\0')
        FV_FAIL(FV_ERR_IO, "cannot write %s: not a file path, or too long", path);
    return FV_OK;
}

fv_status fv_file_write_atomic(const char *path, const void *data, size_t size)
{
    char directory[PATH_MAX], temporary_path[PATH_MAX];
    const char *name;
    FV_TRY(split_path(path, directory, sizeof directory, &name));
    int length = snprintf(temporary_path, sizeof temporary_path, "%s/.tmp-%s-XXXXXX", directory,
                          name);
    if (length < 0 || (size_t)length >= sizeof temporary_path)
        FV_FAIL(FV_ERR_IO, "cannot write %s: path too long", path);
    int descriptor = mkstemp(temporary_path);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot write %s: cannot create a temporary file in %s: %s", path,
                directory, strerror(errno));
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, write_all(descriptor, data, size, temporary_path), fail);
    if (fchmod(descriptor, 0644) != 0 || fsync(descriptor) != 0) {
        status = fv_error_raise(FV_ERR_IO, __FILE__, __LINE__, "cannot sync %s: %s",
                                temporary_path, strerror(errno));
        goto fail;
    }
    int closed = close(descriptor);
    descriptor = -1;
    if (closed != 0) {
        status = fv_error_raise(FV_ERR_IO, __FILE__, __LINE__, "cannot close %s: %s",
                                temporary_path, strerror(errno));
        goto fail;
    }
    if (rename(temporary_path, path) != 0) {
        status = fv_error_raise(FV_ERR_IO, __FILE__, __LINE__, "cannot rename %s to %s: %s",
                                temporary_path, path, strerror(errno));
        goto fail;
    }
    return sync_directory(directory);
fail:
    if (descriptor >= 0)
        close(descriptor);
    unlink(temporary_path);
    return status;
}
