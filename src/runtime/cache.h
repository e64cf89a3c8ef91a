/* cache.h: the on-disk kernel cache: one file per compiled program, named by
 * a SHA-256 key over what determines the cubin, checked when read, written
 * atomically so that any number of processes may share the directory.  It
 * also keeps small text records (the measured copy bandwidth of each GPU).
 * docs/runtime.md describes the file layout. */
#ifndef FV_RUNTIME_CACHE_H
#define FV_RUNTIME_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"
#include "runtime/nvrtc.h"

typedef struct fv_rt_cache fv_rt_cache;

/* The default cache directory: $FV_KERNEL_CACHE if set and not empty, else
 * $HOME/.cache/fuservalidate/kernels.  Failure: FV_ERR_NOT_FOUND if neither
 * variable is set, FV_ERR_USAGE if the path does not fit `size`. */
fv_status fv_rt_cache_default_directory(char *path, size_t size);

/* Opens (creating it and its parents if needed) the cache in `directory`, or
 * in the default directory when `directory` is NULL.  Failure: FV_ERR_IO if
 * the directory cannot be created or is not a writable directory,
 * FV_ERR_NOT_FOUND / FV_ERR_USAGE as for the default, FV_ERR_NOMEM; *cache is
 * then NULL. */
fv_status fv_rt_cache_open(const char *directory, fv_rt_cache **cache);

/* Frees the handle (the files stay).  NULL is a no-op. */
void fv_rt_cache_close(fv_rt_cache *cache);

/* The directory the cache lives in. */
const char *fv_rt_cache_directory(const fv_rt_cache *cache);

/* The key of a compilation: lower-case hex SHA-256 over a format tag, the
 * target, the NVRTC version, the options in order and the source, each
 * length-prefixed.  Cannot fail. */
void fv_rt_cache_key(const char *source, const char *const *options, size_t option_count,
                     const char *arch, int nvrtc_major, int nvrtc_minor,
                     char key[FV_RT_CACHE_KEY_CAPACITY]);

/* Writes "<directory>/<key>.cubin" into `path`.  FV_ERR_USAGE if it does not
 * fit or `key` is not 64 hex digits. */
fv_status fv_rt_cache_entry_path(const fv_rt_cache *cache, const char *key, char *path,
                                 size_t size);

/* Looks `key` up.  On a valid entry *found is true and `compiled` receives the
 * cubin, the kernel resources, the log, the NVRTC version and nvrtc_ms (owned
 * by `compiled`; other fields untouched).  On no entry *found is false.  An
 * entry that fails any check (magic, version, key, lengths, checksum) is
 * deleted, compiled->cache_rejected is set and compiled->cache_problem says
 * why; *found is false.  An entry that cannot be read is reported in
 * cache_problem the same way.  Returns FV_ERR_NOMEM only. */
fv_status fv_rt_cache_load(fv_rt_cache *cache, const char *key, fv_rt_compiled *compiled,
                           bool *found);

/* Stores `compiled` (cubin, resources, log, NVRTC version and time) under
 * `key`: written to a temporary file in the cache directory, fsync'ed and
 * renamed over "<key>.cubin", so readers see the old entry, the new one or
 * none, never a partial one.  Failure: FV_ERR_IO (no temporary file is left),
 * FV_ERR_USAGE for a bad key, FV_ERR_NOMEM. */
fv_status fv_rt_cache_store(fv_rt_cache *cache, const char *key,
                            const fv_rt_compiled *compiled);

/* Reads the small text record "<directory>/<name>" into *text (NUL-terminated,
 * caller frees), or sets *text to NULL if there is none.  `name` is a plain
 * file name (letters, digits, '-', '_', '.').  Records over 64 KiB are treated
 * as absent.  Failure: FV_ERR_USAGE for a bad name, FV_ERR_IO, FV_ERR_NOMEM. */
fv_status fv_rt_cache_read_text(const fv_rt_cache *cache, const char *name, char **text);

/* Replaces the record "<directory>/<name>" atomically (temporary file, fsync,
 * rename).  Failure: FV_ERR_USAGE for a bad name, FV_ERR_IO. */
fv_status fv_rt_cache_write_text(const fv_rt_cache *cache, const char *name, const char *text);

#endif
