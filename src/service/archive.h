/* archive.h: the result archive, one HDF5 file per run that rank 0 appends a
 * row to for every case (fv_result), with the timing samples of each row, the
 * GPUs of the run, the generated CUDA source of every kernel by hash, and the
 * run's provenance.  docs/archive-format.md describes the layout, so h5py and
 * pandas read archives without this code.
 *
 * Durability.  Appends (rows, samples, devices, kernels, provenance updates)
 * are kept in memory and written only by fv_archive_flush, by fv_archive_close,
 * or by the append that fills the pending buffer (FV_ARCHIVE_PENDING_ROWS rows
 * or FV_ARCHIVE_PENDING_KERNEL_BYTES of kernel source), which flushes
 * automatically.  A flush writes them, flushes HDF5's caches and fsyncs the
 * file.  Between flushes HDF5 writes nothing, so a process killed at any
 * moment outside a flush (SIGKILL, a Slurm time limit, a lost node) leaves
 * the file exactly as the last flush left it: readable by h5dump, h5py and
 * fv_archive_open_read, and reopenable by fv_archive_open_append.  Readers of
 * the file see flushed data only.  The caller decides how often to flush
 * (each flush costs an fsync).
 *
 * To survive a killed writer the file uses the HDF5 1.8 superblock (library
 * version bounds [1.8, 1.10]); the 1.10 superblock marks a file open for
 * writing, and HDF5 then refuses to open it after a crash until `h5clear -s`.
 * Tables are chunked but not compressed: a flush rewrites a partly filled
 * chunk in place with its flushed bytes unchanged, so it never moves data
 * that the last flushed metadata points to.
 *
 * One writer per file (HDF5 file locking is off, see common/h5util.h: two
 * writers would corrupt it).  Not thread-safe: use an archive from one
 * thread (HDF5 is a serial build).
 */
#ifndef FV_SERVICE_ARCHIVE_H
#define FV_SERVICE_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "service/approaches.h"
#include "service/result.h"

#define FV_ARCHIVE_FORMAT_VERSION 2

/* Value of the root attribute `format`, which marks a file as an archive. */
#define FV_ARCHIVE_FORMAT_NAME "fuservalidate result archive"

/* A kernel hash: 16 to 64 lower-case hex digits (a SHA-256 prefix). */
#define FV_ARCHIVE_HASH_MIN_LENGTH 16
#define FV_ARCHIVE_HASH_MAX_LENGTH 64
#define FV_ARCHIVE_HASH_CAPACITY (FV_ARCHIVE_HASH_MAX_LENGTH + 1)

/* Pending limits: an append past them flushes first. */
#define FV_ARCHIVE_PENDING_ROWS 256
#define FV_ARCHIVE_PENDING_KERNEL_BYTES (16 << 20)

typedef struct fv_archive fv_archive;
typedef struct fv_archive_reader fv_archive_reader;

/* The run's provenance, stored as root attributes.  Writing
 * (fv_archive_create): NULL strings are stored as ""; started_at NULL or ""
 * means "now"; finished_at, exit_status, resume_count and format_version are
 * ignored (the archive keeps them).  Reading (fv_archive_read_provenance):
 * every field is filled in and replace_existing is false. */
typedef struct fv_archive_provenance {
    const char *tool_version;     /* FV_VERSION */
    const char *git_revision;     /* FV_GIT_REVISION */
    const char *command_line;     /* the command line that started the run */
    const char *started_at;       /* ISO 8601 UTC, "2024-05-01T12:34:56Z" */
    const char *finished_at;      /* ISO 8601 UTC, written at close; "" until then */
    int mpi_size;                 /* ranks of the run */
    const char *hosts;            /* host names of the ranks, ","-joined */
    const char *driver_version;   /* CUDA driver version, e.g. "12.4" */
    const char *nvrtc_version;    /* NVRTC version, e.g. "12.4" */
    const char *tolerance_policy; /* "bound" or "nvfuser", with any overrides */
    const char *mode;             /* "run" or "compile-only" */
    const char *l2_flush;         /* how the L2 was emptied before each timed run: "memset"
                                     or "read" (--flush); an archive written before this
                                     attribute existed reads as "memset", the only flush
                                     then */
    int exit_status;              /* the run's exit status, written at close; -1 until then */
    int resume_count;             /* times the archive was reopened by open_append */
    int format_version;           /* FV_ARCHIVE_FORMAT_VERSION */
    /* A creation option, not stored: let fv_archive_create replace an
     * existing file at the path (otherwise it refuses). */
    bool replace_existing;
} fv_archive_provenance;

/* One GPU of the run (a row of /devices). */
typedef struct fv_archive_device {
    int32_t rank;               /* MPI rank that uses it */
    char host[64];
    char gpu_name[64];          /* "NVIDIA H100 80GB HBM3" */
    char gpu_uuid[48];          /* "GPU-..." */
    char pci_bus_id[32];        /* "0000:18:00.0" */
    int32_t compute_major;      /* compute capability, e.g. 9 */
    int32_t compute_minor;      /* e.g. 0 */
    int32_t sm_count;
    int64_t memory_bytes;       /* total device memory */
    double copy_bandwidth_gbs;  /* measured device-to-device copy bandwidth, GB/s */
} fv_archive_device;

/* A kernel read back by fv_archive_read_kernel. */
typedef struct fv_archive_kernel {
    char *source;               /* the CUDA source, NUL-terminated; the caller frees it */
    char arch[16];              /* "sm_90a" */
    int32_t registers;          /* registers per thread */
    int32_t spill_bytes;        /* spill stores + loads */
    int32_t shared_bytes;       /* static + dynamic shared memory per block */
    char family[64];            /* scheduler family, e.g. "inner_reduction" */
} fv_archive_kernel;

/* How a compound-table column is stored. */
typedef enum fv_archive_column_kind {
    FV_ARCHIVE_STRING, /* fixed-size, NUL-terminated and NUL-padded (H5T_C_S1, UTF-8) */
    FV_ARCHIVE_INT32,
    FV_ARCHIVE_INT64,
    FV_ARCHIVE_UINT64,
    FV_ARCHIVE_DOUBLE
} fv_archive_column_kind;

/* One column of a compound table and the C struct field it mirrors. */
typedef struct fv_archive_column {
    const char *name;   /* column name = field name */
    size_t offset;      /* offsetof the field */
    size_t size;        /* sizeof the field (string capacity, NUL included) */
    fv_archive_column_kind kind;
    bool optional;      /* added after format version 2 began: an archive without it
                           is still read (the field reads as zero) and appended to */
} fv_archive_column;

/* The columns of /results (one per field of fv_result, in struct order) and
 * of /devices (one per field of fv_archive_device).  *count receives the
 * number of columns.  Static data, never NULL. */
const fv_archive_column *fv_archive_result_columns(int *count);
const fv_archive_column *fv_archive_device_columns(int *count);

/* ----------------------------------------------------------------- writer */

/* Creates a new archive at `path` with the provenance attributes
 * (exit_status -1, finished_at "") and empty tables, and flushes it, so an
 * unusable path fails here, before any case runs.  Failures: FV_ERR_USAGE
 * if `path` exists and provenance->replace_existing is false (the message
 * names the path and --resume); FV_ERR_IO naming the path and the reason if
 * the file cannot be created (missing directory, not a directory, no
 * permission, read-only file system...); FV_ERR_INTERNAL for an empty or
 * too long path or a mode other than "run" / "compile-only"; FV_ERR_HDF5;
 * FV_ERR_NOMEM.  On failure no file is left at `path` and *archive is
 * unchanged. */
fv_status fv_archive_create(const char *path, const fv_archive_provenance *provenance,
                            fv_archive **archive);

/* Reopens an existing archive to append to it (--resume): checks that it is
 * an archive of format FV_ARCHIVE_FORMAT_VERSION, then marks it as running
 * again (resume_count + 1, exit_status -1, finished_at "") and flushes.
 * Later appends continue the tables after the rows already there; kernels
 * already stored are not stored again.  Failures: FV_ERR_NOT_FOUND if there
 * is no file; FV_ERR_IO if it cannot be opened for writing; FV_ERR_CORRUPT if
 * it is not an HDF5 file, not an archive, or of another format version;
 * FV_ERR_HDF5; FV_ERR_NOMEM.  *archive is unchanged on failure. */
fv_status fv_archive_open_append(const char *path, fv_archive **archive);

/* Replaces provenance fields, e.g. once the hosts of all ranks are known:
 * every non-NULL string field except started_at and finished_at, and
 * mpi_size when positive.  Written at the next flush.  FV_ERR_INTERNAL for
 * a mode other than "run" / "compile-only" (nothing changes); FV_ERR_NOMEM
 * (fields before the failing one are replaced). */
fv_status fv_archive_update_provenance(fv_archive *archive,
                                       const fv_archive_provenance *provenance);

/* Adds a row to /devices (pending until the next flush).  Strings are
 * truncated to their capacity.  Failures: those of fv_archive_flush when the
 * pending buffer is full, FV_ERR_NOMEM. */
fv_status fv_archive_add_device(fv_archive *archive, const fv_archive_device *device);

/* Adds `result` as the next row of /results and its timed repeats
 * (`samples_ms`, sample_count kernel times in milliseconds, normally
 * result->repeats of them) to /samples; pending until the next flush.
 * String fields are copied up to their first NUL and truncated (at a UTF-8
 * character boundary) if unterminated.  Failures: FV_ERR_INTERNAL if
 * sample_count is outside 0..FV_RESULT_MAX_SAMPLES or samples_ms is NULL
 * with sample_count > 0; those of fv_archive_flush when the pending buffer
 * is full; FV_ERR_NOMEM.  Nothing is added on failure. */
fv_status fv_archive_append(fv_archive *archive, const fv_result *result,
                            const double *samples_ms, int sample_count);

/* Stores the CUDA source of a kernel as /kernels/<hash> with its resources
 * (pending until the next flush), unless a kernel of that hash is already
 * stored or pending: the first source of a hash is kept.  `arch` and
 * `family` are truncated to 15 and 63 bytes; NULL is stored as "".
 * Failures: FV_ERR_INPUT if `hash` is not 16..64 lower-case hex digits;
 * FV_ERR_HDF5 if the lookup fails; those of fv_archive_flush when the pending
 * buffer is full; FV_ERR_NOMEM. */
fv_status fv_archive_add_kernel(fv_archive *archive, const char *hash, const char *source,
                                const char *arch, int registers, int spill_bytes,
                                int shared_bytes, const char *family);

/* Writes everything pending, flushes HDF5 (H5Fflush) and fsyncs the file;
 * does nothing when nothing is pending.  Failures: FV_ERR_HDF5 (a full disk
 * shows up here), FV_ERR_IO if fsync fails.  After a failure the archive
 * refuses further writes (with the same status); close it. */
fv_status fv_archive_flush(fv_archive *archive);

/* Finishes the archive: writes what is pending, finished_at (now) and
 * `exit_status`, flushes and closes the file, and frees the archive in every
 * case (call it once).  NULL is ok (FV_OK).  Failures: those of
 * fv_archive_flush, or the status of an earlier failed write; the file then
 * keeps what the last successful flush wrote. */
fv_status fv_archive_close(fv_archive *archive, int exit_status);

/* ----------------------------------------------------------------- reader */

/* Opens an archive for reading and checks its structure: the root
 * attributes, format version, and the /results, /samples, /devices tables
 * (1-D, compound, with every column of this build) and the /kernels group.
 * Failures: FV_ERR_NOT_FOUND if there is no file; FV_ERR_IO if it cannot be
 * read; FV_ERR_CORRUPT (naming the file and the problem) if it is not an
 * HDF5 file, not an archive, or of another format version; FV_ERR_HDF5;
 * FV_ERR_NOMEM.  *reader is unchanged on failure. */
fv_status fv_archive_open_read(const char *path, fv_archive_reader **reader);

/* Number of rows in /results. */
int64_t fv_archive_row_count(const fv_archive_reader *reader);

/* Reads rows [first, first + count) of /results into `results` (count
 * records).  Every string field is NUL-terminated.  FV_ERR_INTERNAL for rows
 * outside the table; FV_ERR_HDF5. */
fv_status fv_archive_read_rows(fv_archive_reader *reader, int64_t first, int64_t count,
                               fv_result *results);

/* Reads row `row` of /results (as fv_archive_read_rows with count 1). */
fv_status fv_archive_read_row(fv_archive_reader *reader, int64_t row, fv_result *result);

/* Reads the timed repeats of row `row` in stored (repeat) order into
 * `samples_ms` (capacity doubles, milliseconds); *count receives how many
 * (0 if none).  FV_ERR_INTERNAL for a row outside /results; FV_ERR_CORRUPT
 * if the row has more than `capacity` samples or /samples is not ordered by
 * row; FV_ERR_HDF5; FV_ERR_NOMEM (the first call loads the row column of
 * /samples, 8 bytes per sample). */
fv_status fv_archive_read_samples(fv_archive_reader *reader, int64_t row, double *samples_ms,
                                  int capacity, int *count);

/* The stored provenance; strings stay valid until fv_archive_close_read. */
void fv_archive_read_provenance(const fv_archive_reader *reader,
                                fv_archive_provenance *provenance);

/* Number of rows in /devices, and row `index` of it (FV_ERR_INTERNAL for an
 * index outside the table; FV_ERR_HDF5). */
int64_t fv_archive_device_count(const fv_archive_reader *reader);
fv_status fv_archive_read_device(fv_archive_reader *reader, int64_t index,
                                 fv_archive_device *device);

/* Number of kernels in /kernels, and the hash of kernel `index` in
 * increasing hash order.  FV_ERR_INTERNAL for an index outside 0..count-1;
 * FV_ERR_CORRUPT if the stored name is not a hash; FV_ERR_HDF5. */
int64_t fv_archive_kernel_count(const fv_archive_reader *reader);
fv_status fv_archive_kernel_hash(fv_archive_reader *reader, int64_t index,
                                 char hash[FV_ARCHIVE_HASH_CAPACITY]);

/* True if the archive stores the kernel `hash` (false for an invalid hash or
 * when HDF5 fails). */
bool fv_archive_has_kernel(fv_archive_reader *reader, const char *hash);

/* Reads kernel `hash`: its source (a new buffer in kernel->source) and
 * resources.  FV_ERR_NOT_FOUND if it is not stored; FV_ERR_INPUT for an
 * invalid hash; FV_ERR_CORRUPT if the dataset or its attributes are
 * malformed; FV_ERR_HDF5; FV_ERR_NOMEM.  *kernel is unchanged on failure. */
fv_status fv_archive_read_kernel(fv_archive_reader *reader, const char *hash,
                                 fv_archive_kernel *kernel);

/* Writes the comparison of `run --approach all` (service/approaches.h) as
 * /approaches, replacing the one an earlier session of the run wrote:
 * flushes what is pending, writes the table whole and syncs the file.
 * Unlike the appended tables, a writer killed during this call can leave
 * /approaches missing (the rows it is built from are safe).  Failures:
 * FV_ERR_INTERNAL for a negative count; those of fv_archive_flush;
 * FV_ERR_HDF5; FV_ERR_IO; the archive then refuses further writes. */
fv_status fv_archive_write_approaches(fv_archive *archive, const fv_approach_row *rows,
                                      int32_t count);

/* Reads /approaches into a new array in *rows (free it) of *count rows;
 * NULL and 0 when the archive has none.  FV_ERR_CORRUPT if it lacks a
 * column of this build or is not a one-dimensional table; FV_ERR_HDF5;
 * FV_ERR_NOMEM. */
fv_status fv_archive_read_approaches(fv_archive_reader *reader, fv_approach_row **rows,
                                     int32_t *count);

/* Closes a reader.  NULL is ok. */
void fv_archive_close_read(fv_archive_reader *reader);

#endif /* FV_SERVICE_ARCHIVE_H */
