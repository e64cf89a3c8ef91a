/* store.h: the reference store, a directory of HDF5 files (one per case, named
 * KEY.h5 by a content-hash key that the caller computes) holding the float64
 * reference values and allowed-error bounds of every output of a case, plus
 * provenance.  docs/reference-store.md describes the file layout.
 *
 * Entries are written in blocks of rows (ranges along dimension 0) into a
 * private temporary file and published by an atomic rename, so concurrent
 * writers of the same key (MPI ranks, maybe on several nodes sharing the file
 * system) never disturb each other or a reader: a reader sees either no entry
 * or a complete one.  Every data chunk carries a fletcher32 checksum; a
 * corrupt entry is reported as FV_ERR_CORRUPT, and the caller removes and
 * rebuilds it.
 *
 * Not thread-safe: HDF5 is a serial build; use a store from one thread.
 */
#ifndef FV_VALIDATE_STORE_H
#define FV_VALIDATE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "ir/ir.h"

#define FV_STORE_FORMAT_VERSION 1

/* Default size policy: cases whose references take more bytes are not kept. */
#define FV_STORE_DEFAULT_MAX_BYTES ((int64_t)2 << 30) /* 2 GiB */

/* A key is exactly this many lower-case hex digits (a SHA-256). */
#define FV_STORE_KEY_LENGTH 64

/* Most outputs one entry may hold, and the capacity of an output name. */
#define FV_STORE_MAX_OUTPUTS 256
#define FV_STORE_NAME_CAPACITY 64

typedef struct fv_store fv_store;
typedef struct fv_store_writer fv_store_writer;
typedef struct fv_store_reader fv_store_reader;

/* One output of a fusion.  Row r of an output is index r of dimension 0 with
 * all of the other dimensions: rows() = extents[0] elements of
 * extents[1] x ... x extents[rank-1] each.  A rank-0 output has one row of
 * one element. */
typedef struct fv_store_output {
    char name[FV_STORE_NAME_CAPACITY]; /* "T14", "output0" */
    int rank;                          /* 0..FV_MAX_RANK */
    int64_t extents[FV_MAX_RANK];      /* the first `rank` are used, each >= 0 */
    fv_dtype dtype;                    /* dtype of the fusion output */
    int64_t reduction_length;          /* terms summed into each element (1 if none) */
} fv_store_output;

/* Where an entry came from.  The writer records every field; `host` and
 * `created` are ignored by fv_store_begin (the writer records its own host
 * name and the current UTC time) and filled in by fv_store_entry_provenance.
 * NULL strings are stored as "". */
typedef struct fv_store_provenance {
    const char *key;              /* FV_STORE_KEY_LENGTH hex digits; names the file */
    const char *case_id;          /* "layer_norm_bwd/bf16/16384x2048/s0" */
    const char *canonical_fusion; /* fv_ir_canonical_text */
    const char *sizes;            /* bound extents, as text */
    const char *dtypes;           /* dtypes, as text */
    uint64_t seed;
    int generator_version;
    int evaluator_version;
    const char *bound_policy;     /* how bounds were computed, as text */
    const char *tool_version;     /* FV_VERSION */
    const char *git_revision;     /* FV_GIT_REVISION */
    const char *host;             /* host that built the entry */
    const char *created;          /* ISO 8601 UTC, "2024-05-01T12:34:56Z" */
} fv_store_provenance;

/* ------------------------------------------------------------------ store */

/* Opens the store in `directory`, creating it (and missing parents) if needed.
 * `max_case_bytes` is the size policy used by fv_store_keeps (negative: no
 * limit).  FV_ERR_IO (with the path and strerror) if the directory cannot be
 * created or is not a directory; FV_ERR_INPUT if the path is too long;
 * FV_ERR_HDF5 if HDF5 cannot be initialized; FV_ERR_NOMEM. */
fv_status fv_store_open(const char *directory, int64_t max_case_bytes, fv_store **store);

/* Releases the store.  Open writers and readers must be finished first.
 * NULL is ok. */
void fv_store_close(fv_store *store);

/* Bytes a case's references take: the sum over outputs of elements x 16
 * (a float64 value and a float64 bound per element).  INT64_MAX if an output
 * is malformed (rank outside 0..4, negative extent) or the sum overflows. */
int64_t fv_store_case_bytes(int output_count, const fv_store_output *outputs);

/* True if the policy keeps a case of `case_bytes` bytes (case_bytes <= the
 * store's max_case_bytes, or no limit).  The store does not enforce this:
 * callers ask before fv_store_begin. */
bool fv_store_keeps(const fv_store *store, int64_t case_bytes);

/* Writes the path of `key`'s entry ("DIRECTORY/KEY.h5") into `buffer`.
 * FV_ERR_INPUT if `key` is not FV_STORE_KEY_LENGTH lower-case hex digits;
 * FV_ERR_INTERNAL if the buffer is too small. */
fv_status fv_store_entry_path(const fv_store *store, const char *key, char *buffer,
                              size_t size);

/* Deletes `key`'s entry (to rebuild a corrupt one).  FV_OK also when there
 * is none (another rank may have removed it first).  FV_ERR_INPUT for a bad
 * key, FV_ERR_IO if unlink fails otherwise. */
fv_status fv_store_remove(fv_store *store, const char *key);

/* ----------------------------------------------------------------- writer */

/* Starts a new entry for provenance->key: creates a temporary file
 * ".KEY.HOST.PID.RANDOM.tmp" in the store directory with the provenance
 * attributes and, for every output, its group and its value and bound
 * datasets.  Failures: FV_ERR_INPUT for a bad key or output description
 * (rank, extents, name, dtype, count above FV_STORE_MAX_OUTPUTS); FV_ERR_IO
 * (with the path and strerror) if the file cannot be created; FV_ERR_HDF5;
 * FV_ERR_NOMEM.  On failure no file is left and *writer is unchanged. */
fv_status fv_store_begin(fv_store *store, const fv_store_provenance *provenance,
                         int output_count, const fv_store_output *outputs,
                         fv_store_writer **writer);

/* Writes rows [first_row, first_row + row_count) of output `output_index`.
 * `values` and `bounds` each hold row_count x (elements per row) doubles,
 * row-major (shape [row_count, extents[1], ..., extents[rank-1]]); a rank-0
 * output is written as row 0 with one element.  Blocks may come in any order
 * but each row must be written once.  FV_ERR_INTERNAL (writer unchanged) for
 * a bad output index, rows outside the output, or rows already written;
 * FV_ERR_HDF5 if HDF5 fails (then abort the writer). */
fv_status fv_store_write_rows(fv_store_writer *writer, int output_index, int64_t first_row,
                              int64_t row_count, const double *values, const double *bounds);

/* Publishes the entry: checks that every row of every output was written
 * (FV_ERR_INTERNAL naming the first missing rows otherwise), closes the file,
 * fsyncs it, renames it to KEY.h5 (rename(2), atomic; an entry another
 * process committed meanwhile is replaced, both being complete) and fsyncs
 * the directory.  The writer is freed in every case; on failure the
 * temporary file is deleted (FV_ERR_HDF5, FV_ERR_IO with the path). */
fv_status fv_store_commit(fv_store_writer *writer);

/* Abandons an entry: closes and deletes the temporary file and frees the
 * writer.  NULL is ok. */
void fv_store_abort(fv_store_writer *writer);

/* ----------------------------------------------------------------- reader */

/* Opens `key`'s entry and checks its structure: the file opens as HDF5,
 * format_version is FV_STORE_FORMAT_VERSION, the stored key equals `key`,
 * every root and output attribute is present with the right type, and every
 * output has float64 value and bound datasets of its shape, chunked with
 * fletcher32.  Failures: FV_ERR_NOT_FOUND if there is no entry; FV_ERR_CORRUPT
 * (the message names the file and the problem) for everything above;
 * FV_ERR_INPUT for a bad key; FV_ERR_IO if the file exists but cannot be
 * read; FV_ERR_NOMEM. */
fv_status fv_store_open_entry(fv_store *store, const char *key, fv_store_reader **reader);

/* The outputs of an open entry (valid until fv_store_close_entry). */
void fv_store_entry_outputs(const fv_store_reader *reader, int *output_count,
                            const fv_store_output **outputs);

/* The provenance of an open entry, every field filled in (strings valid until
 * fv_store_close_entry). */
const fv_store_provenance *fv_store_entry_provenance(const fv_store_reader *reader);

/* Reads rows [first_row, first_row + row_count) of output `output_index`
 * into `values` and `bounds` (same shapes as for fv_store_write_rows; either
 * may be NULL to skip it).  FV_ERR_CORRUPT if HDF5 reports a checksum failure
 * (the message names the file, output and rows); FV_ERR_INTERNAL for a bad
 * output index or rows outside the output; FV_ERR_HDF5 for other failures. */
fv_status fv_store_read_rows(fv_store_reader *reader, int output_index, int64_t first_row,
                             int64_t row_count, double *values, double *bounds);

/* Reads every chunk of every dataset of the entry, which checks every
 * checksum, holding at most 32 MiB of data at a time.  FV_ERR_CORRUPT on any
 * failure (the message names the file, output and rows); FV_ERR_NOMEM. */
fv_status fv_store_verify(fv_store_reader *reader);

/* Closes an open entry.  NULL is ok. */
void fv_store_close_entry(fv_store_reader *reader);

#endif /* FV_VALIDATE_STORE_H */
