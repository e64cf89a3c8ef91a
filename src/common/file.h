/* file.h: whole-file writes that readers never see half done. */
#ifndef FV_COMMON_FILE_H
#define FV_COMMON_FILE_H

#include <stddef.h>

#include "common/status.h"

/* Writes `size` bytes of `data` to `path` atomically: into a private
 * temporary file `.tmp-<name>-XXXXXX` in the same directory, synced, mode
 * 0644, renamed over `path`, and the directory synced, so a reader (or a
 * crash) sees the old file or the whole new one.  Failures: FV_ERR_IO naming
 * the file and the reason (too long a path, no directory, no permission, a
 * full disk); the temporary file is removed. */
fv_status fv_file_write_atomic(const char *path, const void *data, size_t size);

#endif
