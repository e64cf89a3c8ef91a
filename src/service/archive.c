/* archive.c: the HDF5 result archive: provenance attributes, extendible
 * compound tables mirrored from C structs and filled from in-memory pending
 * buffers at each flush, and kernel sources stored by hash. */
#include "service/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/h5util.h"
#include "service/approaches.h"

enum {
    PATH_CAPACITY = 4096,
    WHERE_CAPACITY = PATH_CAPACITY + 128,
    TIMESTAMP_CAPACITY = 32,
    STATUS_NAMES_CAPACITY = 256,
    RESULT_CHUNK_ROWS = 32,    /* about 110 KiB per chunk */
    SAMPLE_CHUNK_ROWS = 4096,  /* 80 KiB */
    DEVICE_CHUNK_ROWS = 16,    /* 4 KiB */
    PENDING_DEVICES = 1024,
    PENDING_KERNELS = 1024,
    MAX_KERNEL_SOURCE_BYTES = 64 << 20, /* a larger source is not one of ours */
    FLUSH_RESERVE_PER_KERNEL = 4096,    /* a kernel dataset's header and attributes */
    FLUSH_RESERVE_SLACK = 1 << 20       /* HDF5 metadata written by any flush */
};

#define KERNELS_GROUP "kernels"
#define ARRAY_COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* ------------------------------------------------------------ table specs */

/* One timed repeat of one case: a row of /samples. */
typedef struct sample_record {
    int64_t row;         /* index into /results */
    int32_t repeat;      /* 0-based repeat number */
    double milliseconds; /* kernel time of that repeat */
} sample_record;

#define COLUMN_OF(type, member, kind, optional)                                                  \
    {#member, offsetof(type, member), sizeof(((type *)0)->member), FV_ARCHIVE_##kind, optional}
#define COLUMN(type, member, kind) COLUMN_OF(type, member, kind, false)
#define RESULT_COLUMN(member, kind) COLUMN(fv_result, member, kind)
/* A column added to format version 2 after archives without it were written. */
#define LATER_RESULT_COLUMN(member, kind) COLUMN_OF(fv_result, member, kind, true)
#define DEVICE_COLUMN(member, kind) COLUMN(fv_archive_device, member, kind)

/* Every field of fv_result, in struct order (tests check the coverage). */
static const fv_archive_column result_columns[] = {
    RESULT_COLUMN(case_id, STRING),
    RESULT_COLUMN(family, STRING),
    RESULT_COLUMN(dtype, STRING),
    RESULT_COLUMN(sizes, STRING),
    RESULT_COLUMN(seed, UINT64),
    RESULT_COLUMN(source, STRING),
    RESULT_COLUMN(approach, STRING),
    RESULT_COLUMN(taken_approach, STRING),
    RESULT_COLUMN(auto_approach, STRING),
    RESULT_COLUMN(status, INT32),
    RESULT_COLUMN(stage, STRING),
    RESULT_COLUMN(message, STRING),
    RESULT_COLUMN(segment_count, INT32),
    RESULT_COLUMN(schedulers, STRING),
    RESULT_COLUMN(parameters, STRING),
    RESULT_COLUMN(kernel_hashes, STRING),
    RESULT_COLUMN(arch, STRING),
    RESULT_COLUMN(registers, INT32),
    RESULT_COLUMN(spill_bytes, INT32),
    RESULT_COLUMN(shared_bytes, INT32),
    RESULT_COLUMN(local_bytes, INT32),
    RESULT_COLUMN(compile_ms, DOUBLE),
    RESULT_COLUMN(kernels, INT32),
    RESULT_COLUMN(cache_hits, INT32),
    RESULT_COLUMN(tolerance, STRING),
    RESULT_COLUMN(elements, INT64),
    RESULT_COLUMN(mismatches, INT64),
    RESULT_COLUMN(worst_ratio, DOUBLE),
    RESULT_COLUMN(worst_absolute, DOUBLE),
    RESULT_COLUMN(worst_relative, DOUBLE),
    RESULT_COLUMN(reference_source, STRING),
    RESULT_COLUMN(reference_ms, DOUBLE),
    RESULT_COLUMN(repeats, INT32),
    RESULT_COLUMN(time_median_ms, DOUBLE),
    RESULT_COLUMN(time_min_ms, DOUBLE),
    RESULT_COLUMN(time_max_ms, DOUBLE),
    RESULT_COLUMN(io_bytes, DOUBLE),
    RESULT_COLUMN(bandwidth_gbs, DOUBLE),
    RESULT_COLUMN(copy_bandwidth_gbs, DOUBLE),
    RESULT_COLUMN(percent_of_copy, DOUBLE),
    RESULT_COLUMN(rank, INT32),
    RESULT_COLUMN(host, STRING),
    RESULT_COLUMN(gpu_name, STRING),
    RESULT_COLUMN(gpu_uuid, STRING),
    LATER_RESULT_COLUMN(inputs_ms, DOUBLE),
    LATER_RESULT_COLUMN(outputs_ms, DOUBLE),
    LATER_RESULT_COLUMN(timing_ms, DOUBLE),
    LATER_RESULT_COLUMN(sized_copy_gbs, DOUBLE),
    LATER_RESULT_COLUMN(percent_of_sized_copy, DOUBLE),
    RESULT_COLUMN(wall_ms, DOUBLE),
    RESULT_COLUMN(finished_at, DOUBLE),
    RESULT_COLUMN(repro, STRING),
};

static const fv_archive_column device_columns[] = {
    DEVICE_COLUMN(rank, INT32),
    DEVICE_COLUMN(host, STRING),
    DEVICE_COLUMN(gpu_name, STRING),
    DEVICE_COLUMN(gpu_uuid, STRING),
    DEVICE_COLUMN(pci_bus_id, STRING),
    DEVICE_COLUMN(compute_major, INT32),
    DEVICE_COLUMN(compute_minor, INT32),
    DEVICE_COLUMN(sm_count, INT32),
    DEVICE_COLUMN(memory_bytes, INT64),
    DEVICE_COLUMN(copy_bandwidth_gbs, DOUBLE),
};

static const fv_archive_column sample_columns[] = {
    COLUMN(sample_record, row, INT64),
    COLUMN(sample_record, repeat, INT32),
    COLUMN(sample_record, milliseconds, DOUBLE),
};

#define APPROACH_COLUMN(member, kind) COLUMN(fv_approach_row, member, kind)

/* /approaches (written whole by fv_archive_write_approaches). */
static const fv_archive_column approach_columns[] = {
    APPROACH_COLUMN(shape, STRING),         APPROACH_COLUMN(family, STRING),
    APPROACH_COLUMN(dtype, STRING),         APPROACH_COLUMN(sizes, STRING),
    APPROACH_COLUMN(multiwave_ms, DOUBLE),  APPROACH_COLUMN(ws_ms, DOUBLE),
    APPROACH_COLUMN(ws_taken, INT32),       APPROACH_COLUMN(fastest, STRING),
    APPROACH_COLUMN(auto_approach, STRING), APPROACH_COLUMN(auto_regret, DOUBLE),
};

const fv_archive_column *fv_archive_result_columns(int *count)
{
    *count = ARRAY_COUNT(result_columns);
    return result_columns;
}

const fv_archive_column *fv_archive_device_columns(int *count)
{
    *count = ARRAY_COUNT(device_columns);
    return device_columns;
}

/* A compound table: a 1-D chunked extendible dataset under the root. */
typedef struct table_spec {
    const char *name;
    const fv_archive_column *columns;
    int column_count;
    size_t record_size; /* sizeof the C struct of a record */
    hsize_t chunk_rows;
} table_spec;

enum { RESULTS, SAMPLES, DEVICES, TABLE_COUNT };

static const table_spec tables[TABLE_COUNT] = {
    [RESULTS] = {"results", result_columns, ARRAY_COUNT(result_columns), sizeof(fv_result),
                 RESULT_CHUNK_ROWS},
    [SAMPLES] = {"samples", sample_columns, ARRAY_COUNT(sample_columns), sizeof(sample_record),
                 SAMPLE_CHUNK_ROWS},
    [DEVICES] = {"devices", device_columns, ARRAY_COUNT(device_columns),
                 sizeof(fv_archive_device), DEVICE_CHUNK_ROWS},
};

/* Not one of `tables`: a fixed-size dataset replaced as a whole. */
static const table_spec approach_table = {"approaches", approach_columns,
                                          ARRAY_COUNT(approach_columns),
                                          sizeof(fv_approach_row), 0};

/* ------------------------------------------------------------- provenance */

typedef struct provenance_field {
    const char *name; /* attribute name = field name */
    size_t offset;    /* offsetof the field in fv_archive_provenance */
} provenance_field;

#define PROVENANCE_FIELD(member) {#member, offsetof(fv_archive_provenance, member)}

/* String attributes, in the order of stored_provenance.texts. */
enum {
    TEXT_TOOL_VERSION,
    TEXT_GIT_REVISION,
    TEXT_COMMAND_LINE,
    TEXT_STARTED_AT,
    TEXT_FINISHED_AT,
    TEXT_HOSTS,
    TEXT_DRIVER_VERSION,
    TEXT_NVRTC_VERSION,
    TEXT_TOLERANCE_POLICY,
    TEXT_MODE,
    TEXT_L2_FLUSH,
    TEXT_COUNT
};

static const provenance_field text_fields[TEXT_COUNT] = {
    PROVENANCE_FIELD(tool_version),   PROVENANCE_FIELD(git_revision),
    PROVENANCE_FIELD(command_line),   PROVENANCE_FIELD(started_at),
    PROVENANCE_FIELD(finished_at),    PROVENANCE_FIELD(hosts),
    PROVENANCE_FIELD(driver_version), PROVENANCE_FIELD(nvrtc_version),
    PROVENANCE_FIELD(tolerance_policy), PROVENANCE_FIELD(mode),
    PROVENANCE_FIELD(l2_flush),
};

/* Integer attributes (int fields, stored as int64), in the order of
 * stored_provenance.numbers. */
enum { NUMBER_FORMAT_VERSION, NUMBER_MPI_SIZE, NUMBER_EXIT_STATUS, NUMBER_RESUME_COUNT,
       NUMBER_COUNT };

static const provenance_field number_fields[NUMBER_COUNT] = {
    PROVENANCE_FIELD(format_version), PROVENANCE_FIELD(mpi_size),
    PROVENANCE_FIELD(exit_status),    PROVENANCE_FIELD(resume_count),
};

typedef struct stored_provenance {
    char *texts[TEXT_COUNT]; /* owned; NULL only before loading */
    int numbers[NUMBER_COUNT];
} stored_provenance;

static const char *provenance_text(const fv_archive_provenance *provenance, int field)
{
    const char *base = (const char *)provenance;
    return *(const char *const *)(base + text_fields[field].offset);
}

/* ------------------------------------------------------------- open state */

typedef struct table_types {
    hid_t memory; /* the C struct, native types at the struct's offsets */
    hid_t file;   /* packed, little-endian */
} table_types;

/* An open archive file: its tables, their record counts on disk, the
 * kernels group and the compound types. */
typedef struct archive_layout {
    hid_t file;
    hid_t tables[TABLE_COUNT];
    int64_t records[TABLE_COUNT];
    hid_t kernels;
    table_types types[TABLE_COUNT];
} archive_layout;

typedef struct pending_kernel {
    char hash[FV_ARCHIVE_HASH_CAPACITY];
    char *source;
    char arch[sizeof(((fv_archive_kernel *)0)->arch)];
    char family[sizeof(((fv_archive_kernel *)0)->family)];
    int registers, spill_bytes, shared_bytes;
} pending_kernel;

struct fv_archive {
    char path[PATH_CAPACITY];
    archive_layout layout;
    stored_provenance provenance;
    bool provenance_dirty;     /* attributes to rewrite at the next flush */
    fv_result *rows;           /* pending rows [FV_ARCHIVE_PENDING_ROWS] */
    int row_count;
    sample_record *samples;    /* pending samples of the pending rows */
    int sample_count, sample_capacity;
    fv_archive_device *devices; /* pending devices [PENDING_DEVICES] */
    int device_count;
    pending_kernel *kernels;   /* pending kernels [PENDING_KERNELS] */
    int kernel_count;
    size_t kernel_bytes;       /* source bytes of the pending kernels */
    fv_status failure;         /* status of a failed write; writes refuse after one */
};

struct fv_archive_reader {
    char path[PATH_CAPACITY];
    archive_layout layout;
    stored_provenance provenance;
    int64_t kernel_count;
    int64_t *sample_rows; /* the row column of /samples, loaded on first use */
};

/* ---------------------------------------------------------------- helpers */

static void utc_timestamp(char buffer[TIMESTAMP_CAPACITY])
{
    time_t now = time(NULL);
    struct tm parts;
    if (now == (time_t)-1 || gmtime_r(&now, &parts) == NULL ||
        strftime(buffer, TIMESTAMP_CAPACITY, "%Y-%m-%dT%H:%M:%SZ", &parts) == 0)
        snprintf(buffer, TIMESTAMP_CAPACITY, "unknown");
}

/* The length of the longest prefix of text[0, length) that does not end
 * inside a UTF-8 sequence. */
static size_t utf8_prefix(const char *text, size_t length)
{
    size_t start = length;
    while (start > 0 && length - start < 3 && ((unsigned char)text[start - 1] & 0xC0) == 0x80)
        start--;
    if (start == 0)
        return length;
    unsigned char lead = (unsigned char)text[start - 1];
    if (lead < 0xC0)
        return length; /* ASCII, or stray continuation bytes: kept as they are */
    size_t needed = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return length - (start - 1) < needed ? start - 1 : length;
}

/* Makes a fixed-size string field NUL-terminated (truncating an
 * unterminated one) and zeroes the bytes after its end. */
static void sanitize_field(char *field, size_t size)
{
    const char *end = memchr(field, '\0', size);
    size_t length = end ? (size_t)(end - field) : utf8_prefix(field, size - 1);
    memset(field + length, 0, size - length);
}

/* Copies `source` (NULL: "") into a field of `size` bytes, truncated. */
static void copy_text(char *field, size_t size, const char *source)
{
    const char *text = source ? source : "";
    size_t length = strnlen(text, size - 1);
    if (text[length] != '\0')
        length = utf8_prefix(text, length);
    memcpy(field, text, length);
    memset(field + length, 0, size - length);
}

static void sanitize_record(const table_spec *table, void *record)
{
    for (int i = 0; i < table->column_count; i++) {
        const fv_archive_column *column = &table->columns[i];
        if (column->kind == FV_ARCHIVE_STRING)
            sanitize_field((char *)record + column->offset, column->size);
    }
}

static bool valid_hash(const char *hash)
{
    if (hash == NULL)
        return false;
    size_t length = strnlen(hash, FV_ARCHIVE_HASH_MAX_LENGTH + 1);
    if (length < FV_ARCHIVE_HASH_MIN_LENGTH || length > FV_ARCHIVE_HASH_MAX_LENGTH)
        return false;
    for (size_t i = 0; i < length; i++)
        if (!((hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f')))
            return false;
    return true;
}

static fv_status check_hash(const char *hash)
{
    if (!valid_hash(hash))
        FV_FAIL(FV_ERR_INPUT, "'%.80s' is not a kernel hash (%d to %d lower-case hex digits)",
                hash ? hash : "(null)", FV_ARCHIVE_HASH_MIN_LENGTH, FV_ARCHIVE_HASH_MAX_LENGTH);
    return FV_OK;
}

static fv_status check_path(const char *path)
{
    if (path == NULL || path[0] == '\0')
        FV_FAIL(FV_ERR_INTERNAL, "no result archive path given");
    if (strlen(path) >= PATH_CAPACITY)
        FV_FAIL(FV_ERR_INTERNAL, "result archive path is too long: %.80s...", path);
    return FV_OK;
}

/* Re-raises a missing attribute or object of an archive as FV_ERR_CORRUPT. */
static fv_status missing_is_corrupt(fv_status status, const char *path)
{
    if (status != FV_ERR_NOT_FOUND)
        return status;
    char message[1024];
    snprintf(message, sizeof message, "%s", fv_error_message());
    return fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                          "%s is not a complete result archive: %s", path, message);
}

/* --------------------------------------------------------- compound types */

static size_t kind_size(fv_archive_column_kind kind)
{
    return kind == FV_ARCHIVE_INT32 ? 4 : 8;
}

static hid_t number_type(fv_archive_column_kind kind, bool file)
{
    switch (kind) {
    case FV_ARCHIVE_INT32: return file ? H5T_STD_I32LE : H5T_NATIVE_INT32;
    case FV_ARCHIVE_INT64: return file ? H5T_STD_I64LE : H5T_NATIVE_INT64;
    case FV_ARCHIVE_UINT64: return file ? H5T_STD_U64LE : H5T_NATIVE_UINT64;
    default: return file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
    }
}

static H5T_class_t column_class(fv_archive_column_kind kind)
{
    switch (kind) {
    case FV_ARCHIVE_STRING: return H5T_STRING;
    case FV_ARCHIVE_DOUBLE: return H5T_FLOAT;
    default: return H5T_INTEGER;
    }
}

/* FV_ERR_INTERNAL unless the column fits its struct and its kind. */
static fv_status check_column(const table_spec *table, const fv_archive_column *column)
{
    bool size_ok = column->kind == FV_ARCHIVE_STRING ? column->size > 0
                                                      : column->size == kind_size(column->kind);
    if (!size_ok || column->offset > table->record_size ||
        column->size > table->record_size - column->offset)
        FV_FAIL(FV_ERR_INTERNAL, "column '%s' of /%s does not match its struct field",
                column->name, table->name);
    return FV_OK;
}

/* A fixed-size UTF-8 string type of `size` bytes, NUL-terminated. */
static fv_status string_type(size_t size, hid_t *type)
{
    hid_t string = H5Tcopy(H5T_C_S1);
    FV_H5_CHECK(string, NULL, "creating a string type");
    fv_status status = FV_OK;
    FV_H5_CHECK_GOTO(status, H5Tset_size(string, size), fail, NULL, "sizing a string type");
    FV_H5_CHECK_GOTO(status, H5Tset_strpad(string, H5T_STR_NULLTERM), fail, NULL,
                     "setting string padding");
    FV_H5_CHECK_GOTO(status, H5Tset_cset(string, H5T_CSET_UTF8), fail, NULL,
                     "setting a character set");
    *type = string;
    return FV_OK;
fail:
    H5Tclose(string);
    return status;
}

static fv_status insert_column(hid_t compound, const fv_archive_column *column, size_t offset,
                               bool file)
{
    if (column->kind != FV_ARCHIVE_STRING) {
        FV_H5_CHECK(H5Tinsert(compound, column->name, offset, number_type(column->kind, file)),
                    NULL, "adding column '%s'", column->name);
        return FV_OK;
    }
    hid_t string = H5I_INVALID_HID;
    FV_TRY(string_type(column->size, &string));
    herr_t inserted = H5Tinsert(compound, column->name, offset, string);
    fv_status status = FV_OK;
    if (inserted < 0)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, NULL, "adding column '%s'",
                             column->name);
    H5Tclose(string);
    return status;
}

/* True if `stored` (a table's type in an existing file, or
 * H5I_INVALID_HID for a new table) has the column. */
static bool column_stored(hid_t stored, const fv_archive_column *column)
{
    return stored == H5I_INVALID_HID || H5Tget_member_index(stored, column->name) >= 0;
}

/* The compound type of a table's columns (of those `stored` has, for an
 * existing file: an archive written before an optional column was added
 * is read and appended to without it), packed for the file or laid out as
 * the C struct in memory. */
static fv_status build_compound_of(const table_spec *table, bool file, hid_t stored, hid_t *type)
{
    size_t packed_size = 0;
    for (int i = 0; i < table->column_count; i++) {
        FV_TRY(check_column(table, &table->columns[i]));
        if (column_stored(stored, &table->columns[i]))
            packed_size += table->columns[i].size;
    }
    hid_t compound = H5Tcreate(H5T_COMPOUND, file ? packed_size : table->record_size);
    FV_H5_CHECK(compound, NULL, "creating the compound type of /%s", table->name);
    size_t packed_offset = 0;
    for (int i = 0; i < table->column_count; i++) {
        const fv_archive_column *column = &table->columns[i];
        if (!column_stored(stored, column))
            continue;
        fv_status status = insert_column(compound, column, file ? packed_offset : column->offset,
                                         file);
        if (status != FV_OK) {
            H5Tclose(compound);
            fv_error_trace(__FILE__, __LINE__);
            return status;
        }
        packed_offset += column->size;
    }
    *type = compound;
    return FV_OK;
}

static fv_status build_compound(const table_spec *table, bool file, hid_t *type)
{
    return build_compound_of(table, file, H5I_INVALID_HID, type);
}

/* A memory compound type of one numeric column (to read a single column). */
static fv_status single_column_type(const char *name, hid_t native, hid_t *type)
{
    hid_t compound = H5Tcreate(H5T_COMPOUND, H5Tget_size(native));
    FV_H5_CHECK(compound, NULL, "creating a one-column type");
    if (H5Tinsert(compound, name, 0, native) < 0) {
        fv_status status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, NULL,
                                       "adding column '%s'", name);
        H5Tclose(compound);
        return status;
    }
    *type = compound;
    return FV_OK;
}

/* ----------------------------------------------------------------- layout */

static void layout_init(archive_layout *layout)
{
    layout->file = H5I_INVALID_HID;
    layout->kernels = H5I_INVALID_HID;
    for (int t = 0; t < TABLE_COUNT; t++) {
        layout->tables[t] = H5I_INVALID_HID;
        layout->records[t] = 0;
        layout->types[t] = (table_types){H5I_INVALID_HID, H5I_INVALID_HID};
    }
}

/* Closes everything; returns the file close's result (negative on failure). */
static herr_t layout_close(archive_layout *layout)
{
    for (int t = 0; t < TABLE_COUNT; t++) {
        fv_h5_close(&layout->tables[t]);
        fv_h5_close(&layout->types[t].memory);
        fv_h5_close(&layout->types[t].file);
    }
    fv_h5_close(&layout->kernels);
    return fv_h5_close(&layout->file);
}

static fv_status build_types(archive_layout *layout)
{
    for (int t = 0; t < TABLE_COUNT; t++) {
        FV_TRY(build_compound(&tables[t], false, &layout->types[t].memory));
        FV_TRY(build_compound(&tables[t], true, &layout->types[t].file));
    }
    return FV_OK;
}

/* The file-access property list of archives: h5util's (sec2, no locking,
 * strong close) with format bounds [1.8, 1.10] for the 1.8 superblock, which
 * has no "open for writing" mark that would lock readers out after a crash. */
static fv_status archive_file_access(hid_t *file_access)
{
    hid_t list = H5I_INVALID_HID;
    FV_TRY(fv_h5_file_access(&list));
    if (H5Pset_libver_bounds(list, H5F_LIBVER_V18, H5F_LIBVER_V110) < 0) {
        fv_status status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, NULL,
                                       "setting the file format bounds");
        H5Pclose(list);
        return status;
    }
    *file_access = list;
    return FV_OK;
}

static fv_status create_table(archive_layout *layout, int table, const char *path)
{
    const table_spec *spec = &tables[table];
    hsize_t initial = 0, maximum = H5S_UNLIMITED, chunk = spec->chunk_rows;
    hid_t space = H5Screate_simple(1, &initial, &maximum);
    FV_H5_CHECK(space, path, "creating the dataspace of /%s", spec->name);
    fv_status status = FV_OK;
    hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
    FV_H5_CHECK_GOTO(status, properties, done, path, "creating properties of /%s", spec->name);
    FV_H5_CHECK_GOTO(status, H5Pset_chunk(properties, 1, &chunk), done, path,
                     "setting the chunk size of /%s", spec->name);
    layout->tables[table] = H5Dcreate2(layout->file, spec->name, layout->types[table].file,
                                       space, H5P_DEFAULT, properties, H5P_DEFAULT);
    FV_H5_CHECK_GOTO(status, layout->tables[table], done, path, "creating /%s", spec->name);
done:
    fv_h5_close(&properties);
    fv_h5_close(&space);
    return status;
}

static fv_status write_status_names(archive_layout *layout, const char *path)
{
    char names[STATUS_NAMES_CAPACITY] = "";
    size_t used = 0;
    for (int s = 0; s < FV_RESULT_STATUS_COUNT && used < sizeof names; s++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", s ? "," : "",
                                 fv_result_status_name((fv_result_status)s));
    FV_TRY(fv_h5_write_string_attribute(layout->tables[RESULTS], "status_names", names, path));
    return FV_OK;
}

static fv_status create_layout(archive_layout *layout, const char *path)
{
    for (int t = 0; t < TABLE_COUNT; t++)
        FV_TRY(create_table(layout, t, path));
    FV_TRY(write_status_names(layout, path));
    layout->kernels = H5Gcreate2(layout->file, KERNELS_GROUP, H5P_DEFAULT, H5P_DEFAULT,
                                 H5P_DEFAULT);
    FV_H5_CHECK(layout->kernels, path, "creating group /%s", KERNELS_GROUP);
    return FV_OK;
}

/* FV_ERR_CORRUPT unless the stored type of a table has every column of this
 * build (optional ones may be missing), each of the right class. */
static fv_status check_stored_type(hid_t type, const table_spec *spec, const char *path)
{
    if (H5Tget_class(type) != H5T_COMPOUND)
        FV_FAIL(FV_ERR_CORRUPT, "/%s in %s is not a compound table", spec->name, path);
    for (int i = 0; i < spec->column_count; i++) {
        const fv_archive_column *column = &spec->columns[i];
        int member = H5Tget_member_index(type, column->name);
        if (member < 0 && column->optional)
            continue;
        if (member < 0)
            FV_FAIL(FV_ERR_CORRUPT, "/%s in %s has no column '%s'", spec->name, path,
                    column->name);
        if (H5Tget_member_class(type, (unsigned)member) != column_class(column->kind))
            FV_FAIL(FV_ERR_CORRUPT, "column '%s' of /%s in %s has an unexpected type",
                    column->name, spec->name, path);
    }
    return FV_OK;
}

static fv_status check_table_shape(archive_layout *layout, int table, const char *path)
{
    const table_spec *spec = &tables[table];
    hid_t space = H5Dget_space(layout->tables[table]);
    FV_H5_CHECK(space, path, "reading the shape of /%s", spec->name);
    fv_status status = FV_OK;
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t extent = 0;
    if (rank != 1 || H5Sget_simple_extent_dims(space, &extent, NULL) < 0 ||
        extent > (hsize_t)INT64_MAX)
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "/%s in %s is not a one-dimensional table", spec->name, path);
    else
        layout->records[table] = (int64_t)extent;
    H5Sclose(space);
    return status;
}

static fv_status open_table(archive_layout *layout, int table, const char *path)
{
    const table_spec *spec = &tables[table];
    htri_t exists = H5Lexists(layout->file, spec->name, H5P_DEFAULT);
    FV_H5_CHECK(exists, path, "looking up /%s", spec->name);
    if (exists == 0)
        FV_FAIL(FV_ERR_CORRUPT, "%s is not a complete result archive: no /%s table", path,
                spec->name);
    layout->tables[table] = H5Dopen2(layout->file, spec->name, H5P_DEFAULT);
    FV_H5_CHECK(layout->tables[table], path, "opening /%s", spec->name);
    FV_TRY(check_table_shape(layout, table, path));
    hid_t type = H5Dget_type(layout->tables[table]);
    FV_H5_CHECK(type, path, "reading the type of /%s", spec->name);
    fv_status status = check_stored_type(type, spec, path);
    if (status == FV_OK) {
        /* Rows move in the columns this file has. */
        hid_t memory = H5I_INVALID_HID;
        status = build_compound_of(spec, false, type, &memory);
        if (status == FV_OK) {
            H5Tclose(layout->types[table].memory);
            layout->types[table].memory = memory;
        }
    }
    H5Tclose(type);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

static fv_status check_format(hid_t file, const char *path)
{
    char *format = NULL;
    fv_status status = fv_h5_read_string_attribute(file, "format", path, &format);
    if (status == FV_ERR_NOT_FOUND || status == FV_ERR_CORRUPT)
        FV_FAIL(FV_ERR_CORRUPT, "%s is not a fuservalidate result archive (it has no "
                "'format' attribute '%s')", path, FV_ARCHIVE_FORMAT_NAME);
    FV_TRY(status);
    bool matches = strcmp(format, FV_ARCHIVE_FORMAT_NAME) == 0;
    free(format);
    if (!matches)
        FV_FAIL(FV_ERR_CORRUPT, "%s is not a fuservalidate result archive (its 'format' "
                "attribute is not '%s')", path, FV_ARCHIVE_FORMAT_NAME);
    int64_t version = 0;
    FV_TRY(missing_is_corrupt(
        fv_h5_read_int64_attribute(file, "format_version", path, &version), path));
    if (version != FV_ARCHIVE_FORMAT_VERSION)
        FV_FAIL(FV_ERR_CORRUPT, "%s has archive format version %lld; this build reads "
                "version %d", path, (long long)version, FV_ARCHIVE_FORMAT_VERSION);
    return FV_OK;
}

static fv_status open_layout(archive_layout *layout, const char *path)
{
    FV_TRY(check_format(layout->file, path));
    FV_TRY(build_types(layout));
    for (int t = 0; t < TABLE_COUNT; t++)
        FV_TRY(open_table(layout, t, path));
    htri_t exists = H5Lexists(layout->file, KERNELS_GROUP, H5P_DEFAULT);
    FV_H5_CHECK(exists, path, "looking up /%s", KERNELS_GROUP);
    if (exists == 0)
        FV_FAIL(FV_ERR_CORRUPT, "%s is not a complete result archive: no /%s group", path,
                KERNELS_GROUP);
    layout->kernels = H5Gopen2(layout->file, KERNELS_GROUP, H5P_DEFAULT);
    FV_H5_CHECK(layout->kernels, path, "opening /%s", KERNELS_GROUP);
    return FV_OK;
}

/* Opens an existing file: FV_ERR_NOT_FOUND if there is none, FV_ERR_IO if it
 * cannot be opened, FV_ERR_CORRUPT if HDF5 cannot open it. */
static fv_status open_file(const char *path, bool writable, hid_t *file)
{
    int descriptor = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (descriptor < 0 && errno == ENOENT)
        FV_FAIL(FV_ERR_NOT_FOUND, "no result archive at %s", path);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot open result archive %s: %s", path, strerror(errno));
    struct stat info;
    int stat_result = fstat(descriptor, &info);
    int stat_error = errno;
    if (close(descriptor) != 0)
        FV_FAIL(FV_ERR_IO, "cannot close result archive %s: %s", path, strerror(errno));
    if (stat_result != 0)
        FV_FAIL(FV_ERR_IO, "cannot inspect result archive %s: %s", path, strerror(stat_error));
    if (!S_ISREG(info.st_mode))
        FV_FAIL(FV_ERR_IO, "result archive %s is not a regular file", path);
    hid_t file_access = H5I_INVALID_HID;
    FV_TRY(archive_file_access(&file_access));
    *file = H5Fopen(path, writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, file_access);
    if (*file >= 0) {
        fv_h5_close(&file_access);
        return FV_OK;
    }
    fv_status status = fv_h5_raise(FV_ERR_CORRUPT, __FILE__, __LINE__, path,
                                   "not a result archive: cannot open it as HDF5 (not an "
                                   "HDF5 file, or damaged)");
    fv_h5_close(&file_access);
    return status;
}

/* -------------------------------------------------------- record transfer */

/* Selects records [first, first + count) of a table and makes a matching
 * memory dataspace.  On failure nothing stays open. */
static fv_status select_records(hid_t dataset, int64_t first, int64_t count, const char *path,
                                const char *name, hid_t *file_space, hid_t *memory_space)
{
    hsize_t start = (hsize_t)first, size = (hsize_t)count;
    fv_status status = FV_OK;
    *file_space = H5Dget_space(dataset);
    FV_H5_CHECK_GOTO(status, *file_space, fail, path, "reading the dataspace of /%s", name);
    FV_H5_CHECK_GOTO(status,
                     H5Sselect_hyperslab(*file_space, H5S_SELECT_SET, &start, NULL, &size, NULL),
                     fail, path, "selecting rows of /%s", name);
    *memory_space = H5Screate_simple(1, &size, NULL);
    FV_H5_CHECK_GOTO(status, *memory_space, fail, path, "creating a memory dataspace");
    return FV_OK;
fail:
    fv_h5_close(file_space);
    return status;
}

/* Appends `count` records (the table's C struct) to a table. */
static fv_status append_records(archive_layout *layout, int table, const void *records,
                                int64_t count, const char *path)
{
    if (count == 0)
        return FV_OK;
    const char *name = tables[table].name;
    int64_t first = layout->records[table];
    hsize_t extent = (hsize_t)(first + count);
    FV_H5_CHECK(H5Dset_extent(layout->tables[table], &extent), path, "extending /%s", name);
    hid_t file_space = H5I_INVALID_HID, memory_space = H5I_INVALID_HID;
    FV_TRY(select_records(layout->tables[table], first, count, path, name, &file_space,
                          &memory_space));
    herr_t written = H5Dwrite(layout->tables[table], layout->types[table].memory, memory_space,
                              file_space, H5P_DEFAULT, records);
    fv_status status = FV_OK;
    if (written < 0)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                             "writing %lld rows of /%s", (long long)count, name);
    else
        layout->records[table] = first + count;
    H5Sclose(memory_space);
    H5Sclose(file_space);
    return status;
}

/* Reads records [first, first + count) of a table into `records` in
 * `memory_type` (the table's memory type, or a subset of its columns). */
static fv_status read_records(const archive_layout *layout, int table, hid_t memory_type,
                              int64_t first, int64_t count, void *records, const char *path)
{
    const char *name = tables[table].name;
    int64_t available = layout->records[table];
    if (first < 0 || count < 0 || first > available || count > available - first)
        FV_FAIL(FV_ERR_INTERNAL, "rows [%lld, +%lld) are outside /%s of %lld rows in %s",
                (long long)first, (long long)count, name, (long long)available, path);
    if (count == 0)
        return FV_OK;
    hid_t file_space = H5I_INVALID_HID, memory_space = H5I_INVALID_HID;
    FV_TRY(select_records(layout->tables[table], first, count, path, name, &file_space,
                          &memory_space));
    fv_status status = FV_OK;
    if (H5Dread(layout->tables[table], memory_type, memory_space, file_space, H5P_DEFAULT,
                records) < 0)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path, "reading rows of /%s",
                             name);
    H5Sclose(memory_space);
    H5Sclose(file_space);
    return status;
}

/* Reads whole records and NUL-terminates their strings. */
static fv_status read_table_records(const archive_layout *layout, int table, int64_t first,
                                    int64_t count, void *records, const char *path)
{
    /* columns this file lacks read as zero */
    memset(records, 0, (size_t)count * tables[table].record_size);
    FV_TRY(read_records(layout, table, layout->types[table].memory, first, count, records,
                        path));
    for (int64_t i = 0; i < count; i++)
        sanitize_record(&tables[table], (char *)records + (size_t)i * tables[table].record_size);
    return FV_OK;
}

/* --------------------------------------------------- provenance transfer */

static void provenance_free(stored_provenance *stored)
{
    for (int i = 0; i < TEXT_COUNT; i++) {
        free(stored->texts[i]);
        stored->texts[i] = NULL;
    }
}

static fv_status provenance_set_text(stored_provenance *stored, int field, const char *value)
{
    char *copy = strdup(value ? value : "");
    FV_CHECK_ALLOC(copy);
    free(stored->texts[field]);
    stored->texts[field] = copy;
    return FV_OK;
}

static fv_status write_provenance(hid_t file, const stored_provenance *stored, const char *path)
{
    FV_TRY(fv_h5_write_string_attribute(file, "format", FV_ARCHIVE_FORMAT_NAME, path));
    for (int i = 0; i < TEXT_COUNT; i++)
        FV_TRY(fv_h5_write_string_attribute(file, text_fields[i].name, stored->texts[i], path));
    for (int i = 0; i < NUMBER_COUNT; i++)
        FV_TRY(fv_h5_write_int64_attribute(file, number_fields[i].name, stored->numbers[i],
                                           path));
    return FV_OK;
}

/* A text attribute that archives of earlier builds lack, and the value it
 * had then; NULL for a required one. */
static const char *text_default(int field)
{
    return field == TEXT_L2_FLUSH ? "memset" : NULL;
}

static fv_status read_provenance(hid_t file, stored_provenance *stored, const char *path)
{
    for (int i = 0; i < TEXT_COUNT; i++) {
        char *value = NULL;
        fv_status status = fv_h5_read_string_attribute(file, text_fields[i].name, path, &value);
        if (status == FV_ERR_NOT_FOUND && text_default(i) != NULL) {
            fv_error_clear();
            value = strdup(text_default(i));
            FV_CHECK_ALLOC(value);
            status = FV_OK;
        }
        FV_TRY(missing_is_corrupt(status, path));
        free(stored->texts[i]);
        stored->texts[i] = value;
    }
    for (int i = 0; i < NUMBER_COUNT; i++) {
        int64_t value = 0;
        FV_TRY(missing_is_corrupt(
            fv_h5_read_int64_attribute(file, number_fields[i].name, path, &value), path));
        if (value < INT_MIN || value > INT_MAX)
            FV_FAIL(FV_ERR_CORRUPT, "attribute '%s' of %s is out of range: %lld",
                    number_fields[i].name, path, (long long)value);
        stored->numbers[i] = (int)value;
    }
    return FV_OK;
}

static void export_provenance(const stored_provenance *stored, fv_archive_provenance *provenance)
{
    memset(provenance, 0, sizeof *provenance);
    char *base = (char *)provenance;
    for (int i = 0; i < TEXT_COUNT; i++)
        *(const char **)(base + text_fields[i].offset) = stored->texts[i];
    for (int i = 0; i < NUMBER_COUNT; i++)
        *(int *)(base + number_fields[i].offset) = stored->numbers[i];
}

static fv_status check_mode(const char *mode)
{
    if (mode == NULL || (strcmp(mode, "run") != 0 && strcmp(mode, "compile-only") != 0))
        FV_FAIL(FV_ERR_INTERNAL, "archive mode '%s' is not 'run' or 'compile-only'",
                mode ? mode : "(null)");
    return FV_OK;
}

/* The provenance of a new archive: the caller's, started now unless given,
 * not finished. */
static fv_status load_new_provenance(stored_provenance *stored,
                                     const fv_archive_provenance *provenance)
{
    for (int i = 0; i < TEXT_COUNT; i++)
        FV_TRY(provenance_set_text(stored, i, provenance_text(provenance, i)));
    if (stored->texts[TEXT_STARTED_AT][0] == '\0') {
        char now[TIMESTAMP_CAPACITY];
        utc_timestamp(now);
        FV_TRY(provenance_set_text(stored, TEXT_STARTED_AT, now));
    }
    FV_TRY(provenance_set_text(stored, TEXT_FINISHED_AT, ""));
    stored->numbers[NUMBER_FORMAT_VERSION] = FV_ARCHIVE_FORMAT_VERSION;
    stored->numbers[NUMBER_MPI_SIZE] = provenance->mpi_size;
    stored->numbers[NUMBER_EXIT_STATUS] = -1;
    stored->numbers[NUMBER_RESUME_COUNT] = 0;
    return FV_OK;
}

/* ----------------------------------------------------------------- writer */

static void discard_archive(fv_archive *archive)
{
    layout_close(&archive->layout);
    provenance_free(&archive->provenance);
    for (int i = 0; i < archive->kernel_count; i++)
        free(archive->kernels[i].source);
    free(archive->kernels);
    free(archive->devices);
    free(archive->samples);
    free(archive->rows);
    free(archive);
}

static fv_status allocate_archive(const char *path, fv_archive **out)
{
    fv_archive *archive = calloc(1, sizeof *archive);
    FV_CHECK_ALLOC(archive);
    layout_init(&archive->layout);
    snprintf(archive->path, sizeof archive->path, "%s", path);
    archive->rows = calloc(FV_ARCHIVE_PENDING_ROWS, sizeof *archive->rows);
    archive->devices = calloc(PENDING_DEVICES, sizeof *archive->devices);
    archive->kernels = calloc(PENDING_KERNELS, sizeof *archive->kernels);
    if (archive->rows == NULL || archive->devices == NULL || archive->kernels == NULL) {
        discard_archive(archive);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    *out = archive;
    return FV_OK;
}

/* Creates the (empty) file with open(2), so that an unusable path is
 * reported with its reason before HDF5 gets involved. */
static fv_status reserve_path(const char *path, bool replace)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (replace ? O_TRUNC : O_EXCL);
    int descriptor = open(path, flags, 0666);
    if (descriptor >= 0) {
        if (close(descriptor) != 0)
            FV_FAIL(FV_ERR_IO, "cannot create result archive %s: %s", path, strerror(errno));
        return FV_OK;
    }
    int error = errno;
    if (error == EEXIST)
        FV_FAIL(FV_ERR_USAGE, "result archive %s already exists: continue that run with "
                "--resume %s, or write to another path", path, path);
    if (error == ENOENT) {
        char directory[PATH_CAPACITY];
        snprintf(directory, sizeof directory, "%s", path);
        char *slash = strrchr(directory, '/');
        if (slash == directory)
            slash[1] = '\0';
        else if (slash != NULL)
            *slash = '\0';
        else
            snprintf(directory, sizeof directory, ".");
        FV_FAIL(FV_ERR_IO, "cannot create result archive %s: directory %s does not exist",
                path, directory);
    }
    FV_FAIL(FV_ERR_IO, "cannot create result archive %s: %s", path, strerror(error));
}

/* H5Fflush, then fsync, so that the flushed state survives a lost node. */
static fv_status sync_file(fv_archive *archive)
{
    hid_t file = archive->layout.file;
    FV_H5_CHECK(H5Fflush(file, H5F_SCOPE_LOCAL), archive->path, "flushing the archive");
    void *handle = NULL;
    FV_H5_CHECK(H5Fget_vfd_handle(file, H5P_DEFAULT, &handle), archive->path,
                "getting the file descriptor");
    if (handle == NULL)
        FV_FAIL(FV_ERR_INTERNAL, "HDF5 gave no file descriptor for %s", archive->path);
    int descriptor = *(int *)handle; /* the sec2 driver's handle is its descriptor */
    if (fsync(descriptor) != 0 && errno != EINVAL && errno != ENOTSUP)
        FV_FAIL(FV_ERR_IO, "cannot sync result archive %s: %s", archive->path, strerror(errno));
    return FV_OK;
}

static fv_status initialize_new(fv_archive *archive, const fv_archive_provenance *provenance)
{
    archive_layout *layout = &archive->layout;
    hid_t file_access = H5I_INVALID_HID;
    FV_TRY(archive_file_access(&file_access));
    layout->file = H5Fcreate(archive->path, H5F_ACC_TRUNC, H5P_DEFAULT, file_access);
    if (layout->file < 0) {
        fv_status status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, archive->path,
                                       "creating the result archive");
        fv_h5_close(&file_access);
        return status;
    }
    fv_h5_close(&file_access);
    FV_TRY(build_types(layout));
    FV_TRY(load_new_provenance(&archive->provenance, provenance));
    FV_TRY(write_provenance(layout->file, &archive->provenance, archive->path));
    FV_TRY(create_layout(layout, archive->path));
    FV_TRY(sync_file(archive));
    return FV_OK;
}

fv_status fv_archive_create(const char *path, const fv_archive_provenance *provenance,
                            fv_archive **archive)
{
    FV_TRY(check_path(path));
    FV_TRY(check_mode(provenance->mode));
    FV_TRY(fv_h5_init());
    FV_TRY(reserve_path(path, provenance->replace_existing));
    fv_archive *created = NULL;
    fv_status status = allocate_archive(path, &created);
    if (status == FV_OK)
        status = initialize_new(created, provenance);
    if (status != FV_OK) {
        fv_error_trace(__FILE__, __LINE__);
        if (created != NULL)
            discard_archive(created);
        unlink(path); /* ours: created above; a failure to remove leaves an empty file */
        return status;
    }
    *archive = created;
    return FV_OK;
}

static bool has_pending(const fv_archive *archive)
{
    return archive->row_count > 0 || archive->device_count > 0 || archive->kernel_count > 0 ||
           archive->provenance_dirty;
}

static fv_status write_kernel_dataset(hid_t group, const pending_kernel *kernel,
                                      const char *path)
{
    hid_t type = H5I_INVALID_HID;
    FV_TRY(string_type(strlen(kernel->source) + 1, &type));
    fv_status status = FV_OK;
    hid_t dataset = H5I_INVALID_HID;
    hid_t space = H5Screate(H5S_SCALAR);
    FV_H5_CHECK_GOTO(status, space, done, path, "creating a dataspace for kernel %s",
                     kernel->hash);
    dataset = H5Dcreate2(group, kernel->hash, type, space, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    FV_H5_CHECK_GOTO(status, dataset, done, path, "creating /%s/%s", KERNELS_GROUP,
                     kernel->hash);
    FV_H5_CHECK_GOTO(status, H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                      kernel->source),
                     done, path, "writing /%s/%s", KERNELS_GROUP, kernel->hash);
    char where[WHERE_CAPACITY];
    snprintf(where, sizeof where, "%s:/%s/%s", path, KERNELS_GROUP, kernel->hash);
    FV_TRY_GOTO(status, fv_h5_write_string_attribute(dataset, "arch", kernel->arch, where), done);
    FV_TRY_GOTO(status, fv_h5_write_int64_attribute(dataset, "registers", kernel->registers,
                                                    where), done);
    FV_TRY_GOTO(status, fv_h5_write_int64_attribute(dataset, "spill_bytes",
                                                    kernel->spill_bytes, where), done);
    FV_TRY_GOTO(status, fv_h5_write_int64_attribute(dataset, "shared_bytes",
                                                    kernel->shared_bytes, where), done);
    FV_TRY_GOTO(status, fv_h5_write_string_attribute(dataset, "family", kernel->family, where),
                done);
done:
    fv_h5_close(&dataset);
    fv_h5_close(&space);
    H5Tclose(type);
    return status;
}

static fv_status write_pending_kernels(fv_archive *archive)
{
    while (archive->kernel_count > 0) {
        pending_kernel *kernel = &archive->kernels[archive->kernel_count - 1];
        FV_TRY(write_kernel_dataset(archive->layout.kernels, kernel, archive->path));
        archive->kernel_bytes -= strlen(kernel->source) + 1;
        free(kernel->source);
        kernel->source = NULL;
        archive->kernel_count--;
    }
    return FV_OK;
}

static fv_status write_pending(fv_archive *archive)
{
    archive_layout *layout = &archive->layout;
    FV_TRY(write_pending_kernels(archive));
    FV_TRY(append_records(layout, DEVICES, archive->devices, archive->device_count,
                          archive->path));
    archive->device_count = 0;
    FV_TRY(append_records(layout, RESULTS, archive->rows, archive->row_count, archive->path));
    archive->row_count = 0;
    FV_TRY(append_records(layout, SAMPLES, archive->samples, archive->sample_count,
                          archive->path));
    archive->sample_count = 0;
    if (archive->provenance_dirty) {
        FV_TRY(write_provenance(layout->file, &archive->provenance, archive->path));
        archive->provenance_dirty = false;
    }
    return FV_OK;
}

/* Bytes the next flush may write past the file's current end of allocation:
 * the pending records and sources, a partly filled chunk of each table
 * rewritten, and room for HDF5's metadata (indexes, headers, heaps). */
static uint64_t flush_reserve_bytes(const fv_archive *archive)
{
    uint64_t bytes = (uint64_t)archive->row_count * sizeof(fv_result) +
                     (uint64_t)archive->sample_count * sizeof(sample_record) +
                     (uint64_t)archive->device_count * sizeof(fv_archive_device) +
                     (uint64_t)archive->kernel_bytes +
                     (uint64_t)archive->kernel_count * FLUSH_RESERVE_PER_KERNEL;
    for (int t = 0; t < TABLE_COUNT; t++)
        bytes += tables[t].chunk_rows * tables[t].record_size;
    return bytes + bytes / 4 + FLUSH_RESERVE_SLACK;
}

/* Makes the file system give the next flush its blocks before HDF5 writes
 * any of it.  A flush that fails half-way (a full disk, a quota, a file-size
 * limit) could leave metadata pointing at blocks that were never written;
 * failing here instead leaves the file exactly as the last flush left it.
 * The reserved bytes beyond HDF5's end of allocation are zeros, which
 * readers ignore and which a clean close truncates. */
static fv_status reserve_flush_space(fv_archive *archive)
{
    haddr_t end = 0;
    FV_H5_CHECK(H5Fget_eoa(archive->layout.file, &end), archive->path,
                "reading the end of the archive");
    uint64_t bytes = flush_reserve_bytes(archive);
    if (end > (haddr_t)INT64_MAX || bytes > (uint64_t)INT64_MAX - end)
        FV_FAIL(FV_ERR_INTERNAL, "result archive %s would grow past 2^63 bytes", archive->path);
    int descriptor = open(archive->path, O_WRONLY | O_CLOEXEC);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot open result archive %s to reserve space: %s", archive->path,
                strerror(errno));
    int reserved = posix_fallocate(descriptor, (off_t)end, (off_t)bytes);
    close(descriptor);
    if (reserved != 0)
        FV_FAIL(FV_ERR_IO, "no room for the next flush of result archive %s (%llu bytes): %s; "
                "the archive keeps what its last flush wrote", archive->path,
                (unsigned long long)bytes, strerror(reserved));
    return FV_OK;
}

/* After a flush: gives back what the reservation did not use, so the file
 * ends where HDF5's allocation ends.  Best effort: trailing zeros are
 * harmless, so a failure here is ignored. */
static void release_flush_space(fv_archive *archive)
{
    haddr_t end = 0;
    if (H5Fget_eoa(archive->layout.file, &end) < 0 || end > (haddr_t)INT64_MAX) {
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    int descriptor = open(archive->path, O_WRONLY | O_CLOEXEC);
    if (descriptor < 0)
        return;
    struct stat info;
    if (fstat(descriptor, &info) == 0 && info.st_size > (off_t)end &&
        ftruncate(descriptor, (off_t)end) != 0) {
        /* ignored: the zeros stay */
    }
    close(descriptor);
}

static fv_status refuse_after_failure(const fv_archive *archive)
{
    if (archive->failure != FV_OK)
        FV_FAIL(archive->failure, "result archive %s is not written to after an earlier "
                "write failure", archive->path);
    return FV_OK;
}

fv_status fv_archive_flush(fv_archive *archive)
{
    FV_TRY(refuse_after_failure(archive));
    if (!has_pending(archive))
        return FV_OK;
    fv_status status = reserve_flush_space(archive);
    if (status == FV_OK)
        status = write_pending(archive);
    if (status == FV_OK)
        status = sync_file(archive);
    if (status == FV_OK)
        release_flush_space(archive);
    if (status != FV_OK) {
        archive->failure = status;
        fv_error_trace(__FILE__, __LINE__);
    }
    return status;
}

fv_status fv_archive_open_append(const char *path, fv_archive **archive)
{
    FV_TRY(check_path(path));
    FV_TRY(fv_h5_init());
    fv_archive *opened = NULL;
    FV_TRY(allocate_archive(path, &opened));
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, open_file(path, true, &opened->layout.file), fail);
    FV_TRY_GOTO(status, open_layout(&opened->layout, path), fail);
    FV_TRY_GOTO(status, read_provenance(opened->layout.file, &opened->provenance, path), fail);
    FV_TRY_GOTO(status, provenance_set_text(&opened->provenance, TEXT_FINISHED_AT, ""), fail);
    opened->provenance.numbers[NUMBER_EXIT_STATUS] = -1;
    opened->provenance.numbers[NUMBER_RESUME_COUNT]++;
    opened->provenance_dirty = true;
    FV_TRY_GOTO(status, fv_archive_flush(opened), fail);
    *archive = opened;
    return FV_OK;
fail:
    discard_archive(opened);
    return status;
}

fv_status fv_archive_update_provenance(fv_archive *archive,
                                       const fv_archive_provenance *provenance)
{
    if (provenance->mode != NULL)
        FV_TRY(check_mode(provenance->mode));
    for (int i = 0; i < TEXT_COUNT; i++) {
        const char *value = provenance_text(provenance, i);
        if (value != NULL && i != TEXT_STARTED_AT && i != TEXT_FINISHED_AT)
            FV_TRY(provenance_set_text(&archive->provenance, i, value));
    }
    if (provenance->mpi_size > 0)
        archive->provenance.numbers[NUMBER_MPI_SIZE] = provenance->mpi_size;
    archive->provenance_dirty = true;
    return FV_OK;
}

fv_status fv_archive_add_device(fv_archive *archive, const fv_archive_device *device)
{
    FV_TRY(refuse_after_failure(archive));
    if (archive->device_count == PENDING_DEVICES)
        FV_TRY(fv_archive_flush(archive));
    fv_archive_device *copy = &archive->devices[archive->device_count];
    *copy = *device;
    sanitize_record(&tables[DEVICES], copy);
    archive->device_count++;
    return FV_OK;
}

static fv_status reserve_samples(fv_archive *archive, int needed)
{
    if (archive->sample_count + needed <= archive->sample_capacity)
        return FV_OK;
    int capacity = archive->sample_capacity ? archive->sample_capacity : 1024;
    while (capacity < archive->sample_count + needed)
        capacity *= 2;
    sample_record *grown = realloc(archive->samples, (size_t)capacity * sizeof *grown);
    FV_CHECK_ALLOC(grown);
    archive->samples = grown;
    archive->sample_capacity = capacity;
    return FV_OK;
}

fv_status fv_archive_append(fv_archive *archive, const fv_result *result,
                            const double *samples_ms, int sample_count)
{
    if (sample_count < 0 || sample_count > FV_RESULT_MAX_SAMPLES)
        FV_FAIL(FV_ERR_INTERNAL, "%d samples for one row: 0..%d expected", sample_count,
                FV_RESULT_MAX_SAMPLES);
    if (sample_count > 0 && samples_ms == NULL)
        FV_FAIL(FV_ERR_INTERNAL, "no sample times given for %d samples", sample_count);
    FV_TRY(refuse_after_failure(archive));
    if (archive->row_count == FV_ARCHIVE_PENDING_ROWS)
        FV_TRY(fv_archive_flush(archive));
    FV_TRY(reserve_samples(archive, sample_count));
    int64_t row = archive->layout.records[RESULTS] + archive->row_count;
    for (int i = 0; i < sample_count; i++)
        archive->samples[archive->sample_count + i] = (sample_record){row, i, samples_ms[i]};
    archive->sample_count += sample_count;
    fv_result *copy = &archive->rows[archive->row_count];
    *copy = *result;
    sanitize_record(&tables[RESULTS], copy);
    archive->row_count++;
    return FV_OK;
}

static bool kernel_pending(const fv_archive *archive, const char *hash)
{
    for (int i = 0; i < archive->kernel_count; i++)
        if (strcmp(archive->kernels[i].hash, hash) == 0)
            return true;
    return false;
}

fv_status fv_archive_add_kernel(fv_archive *archive, const char *hash, const char *source,
                                const char *arch, int registers, int spill_bytes,
                                int shared_bytes, const char *family)
{
    FV_TRY(check_hash(hash));
    FV_TRY(refuse_after_failure(archive));
    if (kernel_pending(archive, hash))
        return FV_OK;
    htri_t stored = H5Lexists(archive->layout.kernels, hash, H5P_DEFAULT);
    FV_H5_CHECK(stored, archive->path, "looking up kernel %s", hash);
    if (stored > 0)
        return FV_OK;
    const char *text = source ? source : "";
    size_t bytes = strlen(text) + 1;
    if (archive->kernel_count == PENDING_KERNELS ||
        (archive->kernel_count > 0 &&
         archive->kernel_bytes + bytes > FV_ARCHIVE_PENDING_KERNEL_BYTES))
        FV_TRY(fv_archive_flush(archive));
    pending_kernel *kernel = &archive->kernels[archive->kernel_count];
    kernel->source = strdup(text);
    FV_CHECK_ALLOC(kernel->source);
    snprintf(kernel->hash, sizeof kernel->hash, "%s", hash);
    copy_text(kernel->arch, sizeof kernel->arch, arch);
    copy_text(kernel->family, sizeof kernel->family, family);
    kernel->registers = registers;
    kernel->spill_bytes = spill_bytes;
    kernel->shared_bytes = shared_bytes;
    archive->kernel_bytes += bytes;
    archive->kernel_count++;
    return FV_OK;
}

static fv_status finish(fv_archive *archive, int exit_status)
{
    FV_TRY(refuse_after_failure(archive));
    char now[TIMESTAMP_CAPACITY];
    utc_timestamp(now);
    FV_TRY(provenance_set_text(&archive->provenance, TEXT_FINISHED_AT, now));
    archive->provenance.numbers[NUMBER_EXIT_STATUS] = exit_status;
    archive->provenance_dirty = true;
    FV_TRY(fv_archive_flush(archive));
    return FV_OK;
}

fv_status fv_archive_close(fv_archive *archive, int exit_status)
{
    if (archive == NULL)
        return FV_OK;
    fv_status status = finish(archive, exit_status);
    if (layout_close(&archive->layout) < 0 && status == FV_OK)
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, archive->path,
                             "closing the result archive");
    discard_archive(archive);
    return status;
}

/* ----------------------------------------------------------------- reader */

fv_status fv_archive_open_read(const char *path, fv_archive_reader **reader)
{
    FV_TRY(check_path(path));
    FV_TRY(fv_h5_init());
    fv_archive_reader *opened = calloc(1, sizeof *opened);
    FV_CHECK_ALLOC(opened);
    layout_init(&opened->layout);
    snprintf(opened->path, sizeof opened->path, "%s", path);
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, open_file(path, false, &opened->layout.file), fail);
    FV_TRY_GOTO(status, open_layout(&opened->layout, path), fail);
    FV_TRY_GOTO(status, read_provenance(opened->layout.file, &opened->provenance, path), fail);
    H5G_info_t info;
    FV_H5_CHECK_GOTO(status, H5Gget_info(opened->layout.kernels, &info), fail, path,
                     "counting the kernels");
    opened->kernel_count = (int64_t)info.nlinks;
    *reader = opened;
    return FV_OK;
fail:
    fv_archive_close_read(opened);
    return status;
}

void fv_archive_close_read(fv_archive_reader *reader)
{
    if (reader == NULL)
        return;
    layout_close(&reader->layout);
    provenance_free(&reader->provenance);
    free(reader->sample_rows);
    free(reader);
}

int64_t fv_archive_row_count(const fv_archive_reader *reader)
{
    return reader->layout.records[RESULTS];
}

fv_status fv_archive_read_rows(fv_archive_reader *reader, int64_t first, int64_t count,
                               fv_result *results)
{
    FV_TRY(read_table_records(&reader->layout, RESULTS, first, count, results, reader->path));
    return FV_OK;
}

fv_status fv_archive_read_row(fv_archive_reader *reader, int64_t row, fv_result *result)
{
    FV_TRY(fv_archive_read_rows(reader, row, 1, result));
    return FV_OK;
}

/* Reads column `name` of records [first, first + count) of a table. */
static fv_status read_column(const fv_archive_reader *reader, int table, const char *name,
                             hid_t native, int64_t first, int64_t count, void *values)
{
    hid_t type = H5I_INVALID_HID;
    FV_TRY(single_column_type(name, native, &type));
    fv_status status = read_records(&reader->layout, table, type, first, count, values,
                                    reader->path);
    H5Tclose(type);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* Loads the row column of /samples and checks that it is ordered. */
static fv_status load_sample_rows(fv_archive_reader *reader)
{
    if (reader->sample_rows != NULL)
        return FV_OK;
    int64_t count = reader->layout.records[SAMPLES];
    if ((uint64_t)count > SIZE_MAX / sizeof(int64_t) - 1)
        FV_FAIL(FV_ERR_NOMEM, "/samples of %s is too large to index", reader->path);
    int64_t *rows = malloc((size_t)(count > 0 ? count : 1) * sizeof *rows);
    FV_CHECK_ALLOC(rows);
    fv_status status = read_column(reader, SAMPLES, "row", H5T_NATIVE_INT64, 0, count, rows);
    for (int64_t i = 0; status == FV_OK && i < count; i++)
        if (rows[i] < 0 || (i > 0 && rows[i] < rows[i - 1]))
            status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                    "/samples of %s is not ordered by row (at sample %lld)",
                                    reader->path, (long long)i);
    if (status != FV_OK) {
        free(rows);
        fv_error_trace(__FILE__, __LINE__);
        return status;
    }
    reader->sample_rows = rows;
    return FV_OK;
}

/* The first index of the sorted `rows` whose value is >= `row`. */
static int64_t lower_bound(const int64_t *rows, int64_t count, int64_t row)
{
    int64_t low = 0, high = count;
    while (low < high) {
        int64_t middle = low + (high - low) / 2;
        if (rows[middle] < row)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

fv_status fv_archive_read_samples(fv_archive_reader *reader, int64_t row, double *samples_ms,
                                  int capacity, int *count)
{
    if (row < 0 || row >= reader->layout.records[RESULTS] || capacity < 0)
        FV_FAIL(FV_ERR_INTERNAL, "row %lld (capacity %d) is outside /results of %lld rows in "
                "%s", (long long)row, capacity, (long long)reader->layout.records[RESULTS],
                reader->path);
    FV_TRY(load_sample_rows(reader));
    int64_t total = reader->layout.records[SAMPLES];
    int64_t first = lower_bound(reader->sample_rows, total, row);
    int64_t end = lower_bound(reader->sample_rows, total, row + 1);
    if (end - first > capacity)
        FV_FAIL(FV_ERR_CORRUPT, "row %lld of %s has %lld samples, more than %d",
                (long long)row, reader->path, (long long)(end - first), capacity);
    FV_TRY(read_column(reader, SAMPLES, "milliseconds", H5T_NATIVE_DOUBLE, first, end - first,
                       samples_ms));
    *count = (int)(end - first);
    return FV_OK;
}

void fv_archive_read_provenance(const fv_archive_reader *reader,
                                fv_archive_provenance *provenance)
{
    export_provenance(&reader->provenance, provenance);
}

int64_t fv_archive_device_count(const fv_archive_reader *reader)
{
    return reader->layout.records[DEVICES];
}

fv_status fv_archive_read_device(fv_archive_reader *reader, int64_t index,
                                 fv_archive_device *device)
{
    FV_TRY(read_table_records(&reader->layout, DEVICES, index, 1, device, reader->path));
    return FV_OK;
}

int64_t fv_archive_kernel_count(const fv_archive_reader *reader)
{
    return reader->kernel_count;
}

fv_status fv_archive_kernel_hash(fv_archive_reader *reader, int64_t index,
                                 char hash[FV_ARCHIVE_HASH_CAPACITY])
{
    if (index < 0 || index >= reader->kernel_count)
        FV_FAIL(FV_ERR_INTERNAL, "kernel %lld is outside 0..%lld of %s", (long long)index,
                (long long)reader->kernel_count - 1, reader->path);
    char name[FV_ARCHIVE_HASH_CAPACITY + 1] = "";
    ssize_t length = H5Lget_name_by_idx(reader->layout.kernels, ".", H5_INDEX_NAME,
                                        H5_ITER_INC, (hsize_t)index, name, sizeof name,
                                        H5P_DEFAULT);
    FV_H5_CHECK(length, reader->path, "reading the name of kernel %lld", (long long)index);
    if (length > FV_ARCHIVE_HASH_MAX_LENGTH || !valid_hash(name))
        FV_FAIL(FV_ERR_CORRUPT, "/%s in %s holds '%.80s', which is not a kernel hash",
                KERNELS_GROUP, reader->path, name);
    memcpy(hash, name, (size_t)length + 1);
    return FV_OK;
}

bool fv_archive_has_kernel(fv_archive_reader *reader, const char *hash)
{
    return valid_hash(hash) && H5Lexists(reader->layout.kernels, hash, H5P_DEFAULT) > 0;
}

static fv_status read_variable_source(hid_t dataset, const char *where, char **source)
{
    hid_t type = H5I_INVALID_HID;
    FV_TRY(string_type(1, &type));
    fv_status status = FV_OK;
    char *stored = NULL;
    FV_H5_CHECK_GOTO(status, H5Tset_size(type, H5T_VARIABLE), done, where,
                     "sizing a string type");
    FV_H5_CHECK_GOTO(status, H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &stored),
                     done, where, "reading the kernel source");
    *source = strdup(stored ? stored : "");
    H5free_memory(stored);
    if (*source == NULL)
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
done:
    H5Tclose(type);
    return status;
}

static fv_status read_fixed_source(hid_t dataset, size_t size, const char *where,
                                   char **source)
{
    if (size == 0 || size > MAX_KERNEL_SOURCE_BYTES)
        FV_FAIL(FV_ERR_CORRUPT, "kernel source %s has an unexpected size", where);
    hid_t type = H5I_INVALID_HID;
    FV_TRY(string_type(size + 1, &type));
    fv_status status = FV_OK;
    char *buffer = calloc(size + 1, 1);
    if (buffer == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    FV_H5_CHECK_GOTO(status, H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer),
                     done, where, "reading the kernel source");
    buffer[size] = '\0';
    *source = buffer;
    buffer = NULL;
done:
    free(buffer);
    H5Tclose(type);
    return status;
}

/* Reads the scalar string dataset of a kernel (fixed- or variable-length). */
static fv_status read_kernel_source(hid_t dataset, const char *where, char **source)
{
    hid_t type = H5Dget_type(dataset);
    FV_H5_CHECK(type, where, "reading the type of the kernel source");
    fv_status status = FV_OK;
    hid_t space = H5Dget_space(dataset);
    FV_H5_CHECK_GOTO(status, space, done, where, "reading the shape of the kernel source");
    htri_t variable = H5Tis_variable_str(type);
    if (H5Tget_class(type) != H5T_STRING || variable < 0 ||
        H5Sget_simple_extent_npoints(space) != 1) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "kernel source %s is not a single string", where);
        goto done;
    }
    if (variable > 0)
        status = read_variable_source(dataset, where, source);
    else
        status = read_fixed_source(dataset, H5Tget_size(type), where, source);
done:
    fv_h5_close(&space);
    H5Tclose(type);
    return status;
}

static fv_status read_int32_attribute(hid_t object, const char *name, const char *where,
                                      int32_t *value)
{
    int64_t stored = 0;
    FV_TRY(missing_is_corrupt(fv_h5_read_int64_attribute(object, name, where, &stored), where));
    if (stored < INT32_MIN || stored > INT32_MAX)
        FV_FAIL(FV_ERR_CORRUPT, "attribute '%s' of %s is out of range: %lld", name, where,
                (long long)stored);
    *value = (int32_t)stored;
    return FV_OK;
}

static fv_status read_text_attribute(hid_t object, const char *name, const char *where,
                                     char *field, size_t size)
{
    char *stored = NULL;
    FV_TRY(missing_is_corrupt(fv_h5_read_string_attribute(object, name, where, &stored), where));
    copy_text(field, size, stored);
    free(stored);
    return FV_OK;
}

static fv_status read_kernel_resources(hid_t dataset, const char *where,
                                       fv_archive_kernel *kernel)
{
    FV_TRY(read_text_attribute(dataset, "arch", where, kernel->arch, sizeof kernel->arch));
    FV_TRY(read_int32_attribute(dataset, "registers", where, &kernel->registers));
    FV_TRY(read_int32_attribute(dataset, "spill_bytes", where, &kernel->spill_bytes));
    FV_TRY(read_int32_attribute(dataset, "shared_bytes", where, &kernel->shared_bytes));
    FV_TRY(read_text_attribute(dataset, "family", where, kernel->family,
                               sizeof kernel->family));
    return FV_OK;
}

fv_status fv_archive_read_kernel(fv_archive_reader *reader, const char *hash,
                                 fv_archive_kernel *kernel)
{
    FV_TRY(check_hash(hash));
    htri_t exists = H5Lexists(reader->layout.kernels, hash, H5P_DEFAULT);
    FV_H5_CHECK(exists, reader->path, "looking up kernel %s", hash);
    if (exists == 0)
        FV_FAIL(FV_ERR_NOT_FOUND, "kernel %s is not in result archive %s", hash, reader->path);
    char where[WHERE_CAPACITY];
    snprintf(where, sizeof where, "%s:/%s/%s", reader->path, KERNELS_GROUP, hash);
    hid_t dataset = H5Dopen2(reader->layout.kernels, hash, H5P_DEFAULT);
    FV_H5_CHECK(dataset, where, "opening the kernel");
    fv_archive_kernel loaded = {0};
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, read_kernel_source(dataset, where, &loaded.source), done);
    FV_TRY_GOTO(status, read_kernel_resources(dataset, where, &loaded), done);
    *kernel = loaded;
    loaded.source = NULL;
done:
    free(loaded.source);
    H5Dclose(dataset);
    return status;
}

/* ------------------------------------------------------------ approaches */

/* Writes `rows` as the dataset /approaches of `file` (replacing any). */
static fv_status replace_approaches(hid_t file, const fv_approach_row *rows, int32_t count,
                                    const char *path)
{
    htri_t exists = H5Lexists(file, approach_table.name, H5P_DEFAULT);
    FV_H5_CHECK(exists, path, "looking up /%s", approach_table.name);
    if (exists > 0)
        FV_H5_CHECK(H5Ldelete(file, approach_table.name, H5P_DEFAULT), path,
                    "removing the old /%s", approach_table.name);
    hid_t file_type = H5I_INVALID_HID, memory_type = H5I_INVALID_HID;
    hid_t space = H5I_INVALID_HID, dataset = H5I_INVALID_HID;
    fv_status status = build_compound(&approach_table, true, &file_type);
    if (status == FV_OK)
        status = build_compound(&approach_table, false, &memory_type);
    if (status != FV_OK)
        goto done;
    hsize_t extent = (hsize_t)count;
    space = H5Screate_simple(1, &extent, NULL);
    FV_H5_CHECK_GOTO(status, space, done, path, "creating the dataspace of /%s",
                     approach_table.name);
    dataset = H5Dcreate2(file, approach_table.name, file_type, space, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    FV_H5_CHECK_GOTO(status, dataset, done, path, "creating /%s", approach_table.name);
    if (count > 0)
        FV_H5_CHECK_GOTO(status, H5Dwrite(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows),
                         done, path, "writing /%s", approach_table.name);
done:
    fv_h5_close(&dataset);
    fv_h5_close(&space);
    fv_h5_close(&memory_type);
    fv_h5_close(&file_type);
    return status;
}

fv_status fv_archive_write_approaches(fv_archive *archive, const fv_approach_row *rows,
                                      int32_t count)
{
    if (count < 0 || (count > 0 && rows == NULL))
        FV_FAIL(FV_ERR_INTERNAL, "%d approach rows", (int)count);
    FV_TRY(fv_archive_flush(archive));
    fv_status status = replace_approaches(archive->layout.file, rows, count, archive->path);
    if (status == FV_OK)
        status = sync_file(archive);
    if (status != FV_OK) {
        archive->failure = status;
        fv_error_trace(__FILE__, __LINE__);
    }
    return status;
}

fv_status fv_archive_read_approaches(fv_archive_reader *reader, fv_approach_row **rows,
                                     int32_t *count)
{
    *rows = NULL;
    *count = 0;
    hid_t file = reader->layout.file;
    const char *path = reader->path;
    htri_t exists = H5Lexists(file, approach_table.name, H5P_DEFAULT);
    FV_H5_CHECK(exists, path, "looking up /%s", approach_table.name);
    if (exists == 0)
        return FV_OK;
    hid_t dataset = H5Dopen2(file, approach_table.name, H5P_DEFAULT);
    FV_H5_CHECK(dataset, path, "opening /%s", approach_table.name);
    hid_t stored = H5I_INVALID_HID, memory_type = H5I_INVALID_HID, space = H5I_INVALID_HID;
    fv_approach_row *table = NULL;
    fv_status status = FV_OK;
    stored = H5Dget_type(dataset);
    FV_H5_CHECK_GOTO(status, stored, done, path, "reading the type of /%s", approach_table.name);
    FV_TRY_GOTO(status, check_stored_type(stored, &approach_table, path), done);
    FV_TRY_GOTO(status, build_compound(&approach_table, false, &memory_type), done);
    space = H5Dget_space(dataset);
    FV_H5_CHECK_GOTO(status, space, done, path, "reading the shape of /%s", approach_table.name);
    hsize_t extent = 0;
    if (H5Sget_simple_extent_ndims(space) != 1 ||
        H5Sget_simple_extent_dims(space, &extent, NULL) < 0 || extent > INT32_MAX) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "/%s in %s is not a one-dimensional table", approach_table.name,
                                path);
        goto done;
    }
    if (extent > 0) {
        table = calloc((size_t)extent, sizeof *table);
        if (table == NULL) {
            status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__,
                                    "out of memory reading /%s", approach_table.name);
            goto done;
        }
        FV_H5_CHECK_GOTO(status, H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, table),
                         done, path, "reading /%s", approach_table.name);
        for (hsize_t i = 0; i < extent; i++)
            sanitize_record(&approach_table, &table[i]);
    }
    *rows = table;
    *count = (int32_t)extent;
    table = NULL;
done:
    free(table);
    fv_h5_close(&space);
    fv_h5_close(&memory_type);
    fv_h5_close(&stored);
    fv_h5_close(&dataset);
    return status;
}
