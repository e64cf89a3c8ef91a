/* store.c: the reference store: one checksummed HDF5 file per case, written
 * in row blocks into a private temporary file and published by rename(2). */
#include "validate/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/h5util.h"

enum {
    PATH_CAPACITY = 4096,
    HOST_CAPACITY = 64,
    CHUNK_TARGET_BYTES = 1 << 20,       /* about 1 MiB per chunk */
    CHUNK_CACHE_BYTES = 2 << 20,        /* per dataset: two chunks */
    MAX_CHUNK_BYTES = 64 << 20,         /* larger chunks are not ours */
    VERIFY_BUDGET_BYTES = 32 << 20,     /* data held at a time by verify */
    MESSAGE_COPY_CAPACITY = 2048
};

#define OUTPUTS_GROUP "outputs"
#define VALUE_DATASET "value"
#define BOUND_DATASET "bound"

/* The two datasets of an output, in the order of the per-output handle pairs. */
enum { VALUE = 0, BOUND = 1, DATASETS_PER_OUTPUT = 2 };
static const char *const dataset_names[DATASETS_PER_OUTPUT] = {VALUE_DATASET, BOUND_DATASET};

struct fv_store {
    char *directory;
    int64_t max_case_bytes; /* negative: no limit */
};

/* Written rows of one output: sorted, disjoint, non-adjacent [begin, end). */
typedef struct row_range {
    int64_t begin, end;
} row_range;

typedef struct row_coverage {
    row_range *ranges;
    int count, capacity;
} row_coverage;

struct fv_store_writer {
    char key[FV_STORE_KEY_LENGTH + 1];
    char directory[PATH_CAPACITY];
    char temporary_path[PATH_CAPACITY];
    char final_path[PATH_CAPACITY];
    bool temporary_exists;  /* the temporary file was created and not yet renamed */
    hid_t file;
    int output_count;
    fv_store_output *outputs;
    hid_t *datasets;        /* [output * 2 + VALUE/BOUND] */
    row_coverage *written;  /* per output */
};

/* Provenance strings, in the order of reader->strings. */
enum {
    FIELD_KEY,
    FIELD_CASE_ID,
    FIELD_CANONICAL_FUSION,
    FIELD_SIZES,
    FIELD_DTYPES,
    FIELD_BOUND_POLICY,
    FIELD_TOOL_VERSION,
    FIELD_GIT_REVISION,
    FIELD_HOST,
    FIELD_CREATED,
    STRING_FIELD_COUNT
};

static const char *const string_field_names[STRING_FIELD_COUNT] = {
    "key", "case_id", "canonical_fusion", "sizes", "dtypes",
    "bound_policy", "tool_version", "git_revision", "host", "created",
};

struct fv_store_reader {
    char path[PATH_CAPACITY];
    hid_t file;
    int output_count;
    fv_store_output *outputs;
    hid_t *datasets; /* [output * 2 + VALUE/BOUND] */
    char *strings[STRING_FIELD_COUNT];
    fv_store_provenance provenance; /* strings point into `strings` */
};

/* ------------------------------------------------------------ output shapes */

static int64_t output_rows(const fv_store_output *output)
{
    return output->rank == 0 ? 1 : output->extents[0];
}

static int64_t elements_per_row(const fv_store_output *output)
{
    int64_t elements = 1;
    for (int d = 1; d < output->rank; d++)
        elements *= output->extents[d];
    return elements;
}

static int64_t output_elements(const fv_store_output *output)
{
    return output_rows(output) * elements_per_row(output);
}

/* Datasets have rank max(rank, 1): a rank-0 output is stored as shape [1]. */
static int storage_rank(const fv_store_output *output)
{
    return output->rank == 0 ? 1 : output->rank;
}

static void storage_dims(const fv_store_output *output, hsize_t dims[FV_MAX_RANK])
{
    dims[0] = 1;
    for (int d = 0; d < output->rank; d++)
        dims[d] = (hsize_t)output->extents[d];
}

/* Elements of one output, or -1 if malformed or larger than INT64_MAX. */
static int64_t checked_elements(const fv_store_output *output)
{
    if (output->rank < 0 || output->rank > FV_MAX_RANK)
        return -1;
    int64_t elements = 1;
    for (int d = 0; d < output->rank; d++) {
        int64_t extent = output->extents[d];
        if (extent < 0)
            return -1;
        if (extent != 0 && elements > INT64_MAX / extent)
            return -1;
        elements *= extent;
    }
    return elements;
}

int64_t fv_store_case_bytes(int output_count, const fv_store_output *outputs)
{
    const int64_t bytes_per_element = 2 * (int64_t)sizeof(double); /* value + bound */
    int64_t total = 0;
    for (int i = 0; i < output_count; i++) {
        int64_t elements = checked_elements(&outputs[i]);
        if (elements < 0 || elements > (INT64_MAX - total) / bytes_per_element)
            return INT64_MAX;
        total += elements * bytes_per_element;
    }
    return total;
}

/* FV_ERR_INPUT unless the output can be stored. */
static fv_status check_output(const fv_store_output *output, int index)
{
    if (memchr(output->name, '\0', sizeof output->name) == NULL || output->name[0] == '\0')
        FV_FAIL(FV_ERR_INPUT, "output %d has an empty or unterminated name", index);
    if (output->rank < 0 || output->rank > FV_MAX_RANK)
        FV_FAIL(FV_ERR_INPUT, "output %d ('%s') has rank %d, outside 0..%d", index,
                output->name, output->rank, FV_MAX_RANK);
    if (checked_elements(output) < 0)
        FV_FAIL(FV_ERR_INPUT, "output %d ('%s') has a negative or too large extent", index,
                output->name);
    if ((int)output->dtype < 0 || output->dtype >= FV_DTYPE_COUNT)
        FV_FAIL(FV_ERR_INPUT, "output %d ('%s') has an invalid dtype", index, output->name);
    if (output->reduction_length < 0)
        FV_FAIL(FV_ERR_INPUT, "output %d ('%s') has a negative reduction length", index,
                output->name);
    return FV_OK;
}

static fv_status check_outputs(int output_count, const fv_store_output *outputs)
{
    if (output_count < 0 || output_count > FV_STORE_MAX_OUTPUTS)
        FV_FAIL(FV_ERR_INPUT, "%d outputs: a store entry holds 0..%d", output_count,
                FV_STORE_MAX_OUTPUTS);
    for (int i = 0; i < output_count; i++)
        FV_TRY(check_output(&outputs[i], i));
    if (fv_store_case_bytes(output_count, outputs) == INT64_MAX)
        FV_FAIL(FV_ERR_INPUT, "the outputs are too large to store");
    return FV_OK;
}

/* FV_ERR_INTERNAL unless rows [first_row, first_row + row_count) lie in the output. */
static fv_status check_rows(const fv_store_output *output, int output_index,
                            int64_t first_row, int64_t row_count)
{
    int64_t rows = output_rows(output);
    if (first_row < 0 || row_count < 0 || first_row > rows || row_count > rows - first_row)
        FV_FAIL(FV_ERR_INTERNAL, "rows [%lld, +%lld) are outside output %d ('%s') of %lld rows",
                (long long)first_row, (long long)row_count, output_index, output->name,
                (long long)rows);
    return FV_OK;
}

/* ------------------------------------------------------------------- keys */

static bool valid_key(const char *key)
{
    if (key == NULL)
        return false;
    for (int i = 0; i < FV_STORE_KEY_LENGTH; i++) {
        char c = key[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return key[FV_STORE_KEY_LENGTH] == '\0';
}

static fv_status check_key(const char *key)
{
    if (!valid_key(key))
        FV_FAIL(FV_ERR_INPUT, "'%.80s' is not a store key (%d lower-case hex digits)",
                key ? key : "(null)", FV_STORE_KEY_LENGTH);
    return FV_OK;
}

fv_status fv_store_entry_path(const fv_store *store, const char *key, char *buffer,
                              size_t size)
{
    FV_TRY(check_key(key));
    int length = snprintf(buffer, size, "%s/%s.h5", store->directory, key);
    if (length < 0 || (size_t)length >= size)
        FV_FAIL(FV_ERR_INTERNAL, "the entry path in %s does not fit %zu bytes",
                store->directory, size);
    return FV_OK;
}

/* ------------------------------------------------------------------ store */

/* mkdir -p: creates `directory` and its missing parents. */
static fv_status make_directories(const char *directory)
{
    char path[PATH_CAPACITY];
    size_t length = strlen(directory);
    if (length == 0 || length >= sizeof path)
        FV_FAIL(FV_ERR_INPUT, "store directory '%.80s' is empty or too long", directory);
    memcpy(path, directory, length + 1);
    for (size_t i = 1; i <= length; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            FV_FAIL(FV_ERR_IO, "cannot create store directory %s (at %s): %s", directory, path,
                    strerror(errno));
        path[i] = saved;
    }
    struct stat info;
    if (stat(directory, &info) != 0)
        FV_FAIL(FV_ERR_IO, "cannot access store directory %s: %s", directory, strerror(errno));
    if (!S_ISDIR(info.st_mode))
        FV_FAIL(FV_ERR_IO, "store directory %s is not a directory", directory);
    return FV_OK;
}

fv_status fv_store_open(const char *directory, int64_t max_case_bytes, fv_store **store)
{
    FV_TRY(fv_h5_init());
    /* Leave room for "/.KEY.HOST.PID.RANDOM.tmp" in PATH_CAPACITY. */
    if (strlen(directory) > PATH_CAPACITY - 256)
        FV_FAIL(FV_ERR_INPUT, "store directory path is too long: %.80s...", directory);
    FV_TRY(make_directories(directory));
    fv_store *opened = calloc(1, sizeof *opened);
    FV_CHECK_ALLOC(opened);
    opened->directory = strdup(directory);
    if (opened->directory == NULL) {
        free(opened);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    size_t length = strlen(opened->directory);
    while (length > 1 && opened->directory[length - 1] == '/')
        opened->directory[--length] = '\0';
    opened->max_case_bytes = max_case_bytes;
    *store = opened;
    return FV_OK;
}

void fv_store_close(fv_store *store)
{
    if (store == NULL)
        return;
    free(store->directory);
    free(store);
}

bool fv_store_keeps(const fv_store *store, int64_t case_bytes)
{
    if (case_bytes < 0)
        return false;
    return store->max_case_bytes < 0 || case_bytes <= store->max_case_bytes;
}

fv_status fv_store_remove(fv_store *store, const char *key)
{
    char path[PATH_CAPACITY];
    FV_TRY(fv_store_entry_path(store, key, path, sizeof path));
    if (unlink(path) != 0 && errno != ENOENT)
        FV_FAIL(FV_ERR_IO, "cannot remove reference store entry %s: %s", path, strerror(errno));
    return FV_OK;
}

/* --------------------------------------------------------- row coverage */

/* Index of the first range that begins after `row`. */
static int first_range_after(const row_coverage *coverage, int64_t row)
{
    int low = 0, high = coverage->count;
    while (low < high) {
        int middle = low + (high - low) / 2;
        if (coverage->ranges[middle].begin > row)
            high = middle;
        else
            low = middle + 1;
    }
    return low;
}

/* True if [begin, end) shares a row with a recorded range. */
static bool coverage_overlaps(const row_coverage *coverage, int64_t begin, int64_t end)
{
    int next = first_range_after(coverage, begin);
    if (next > 0 && coverage->ranges[next - 1].end > begin)
        return true;
    return next < coverage->count && coverage->ranges[next].begin < end;
}

static fv_status coverage_reserve(row_coverage *coverage)
{
    if (coverage->count < coverage->capacity)
        return FV_OK;
    int capacity = coverage->capacity ? coverage->capacity * 2 : 16;
    row_range *grown = realloc(coverage->ranges, (size_t)capacity * sizeof *grown);
    FV_CHECK_ALLOC(grown);
    coverage->ranges = grown;
    coverage->capacity = capacity;
    return FV_OK;
}

/* Records [begin, end) (not overlapping, capacity reserved), merging neighbours. */
static void coverage_add(row_coverage *coverage, int64_t begin, int64_t end)
{
    int next = first_range_after(coverage, begin);
    bool joins_previous = next > 0 && coverage->ranges[next - 1].end == begin;
    bool joins_next = next < coverage->count && coverage->ranges[next].begin == end;
    row_range *ranges = coverage->ranges;
    if (joins_previous && joins_next) {
        ranges[next - 1].end = ranges[next].end;
        memmove(&ranges[next], &ranges[next + 1],
                (size_t)(coverage->count - next - 1) * sizeof *ranges);
        coverage->count--;
    } else if (joins_previous) {
        ranges[next - 1].end = end;
    } else if (joins_next) {
        ranges[next].begin = begin;
    } else {
        memmove(&ranges[next + 1], &ranges[next],
                (size_t)(coverage->count - next) * sizeof *ranges);
        ranges[next] = (row_range){begin, end};
        coverage->count++;
    }
}

/* The first rows of [0, rows) not covered, as [*begin, *end); false if none. */
static bool coverage_first_gap(const row_coverage *coverage, int64_t rows, int64_t *begin,
                               int64_t *end)
{
    int64_t position = 0;
    for (int i = 0; i < coverage->count; i++) {
        if (coverage->ranges[i].begin > position) {
            *begin = position;
            *end = coverage->ranges[i].begin;
            return true;
        }
        position = coverage->ranges[i].end;
    }
    if (position < rows) {
        *begin = position;
        *end = rows;
        return true;
    }
    return false;
}

/* ------------------------------------------------------------ selections */

/* Selects the block start[] + count[] of `dataset` (rank `rank`) and makes a
 * matching contiguous memory space.  On failure nothing stays open. */
static fv_status select_block(hid_t dataset, int rank, const hsize_t *start,
                              const hsize_t *count, const char *path, hid_t *file_space,
                              hid_t *memory_space)
{
    fv_status status = FV_OK;
    *file_space = H5Dget_space(dataset);
    FV_H5_CHECK_GOTO(status, *file_space, fail, path, "reading a dataspace");
    FV_H5_CHECK_GOTO(status,
                     H5Sselect_hyperslab(*file_space, H5S_SELECT_SET, start, NULL, count, NULL),
                     fail, path, "selecting rows");
    *memory_space = H5Screate_simple(rank, count, NULL);
    FV_H5_CHECK_GOTO(status, *memory_space, fail, path, "creating a memory dataspace");
    return FV_OK;
fail:
    fv_h5_close(file_space);
    return status;
}

/* Selects whole rows [first_row, first_row + row_count) of an output's dataset. */
static fv_status select_rows(hid_t dataset, const fv_store_output *output, int64_t first_row,
                             int64_t row_count, const char *path, hid_t *file_space,
                             hid_t *memory_space)
{
    hsize_t start[FV_MAX_RANK] = {0};
    hsize_t count[FV_MAX_RANK];
    storage_dims(output, count);
    start[0] = (hsize_t)first_row;
    count[0] = (hsize_t)row_count;
    FV_TRY(select_block(dataset, storage_rank(output), start, count, path, file_space,
                        memory_space));
    return FV_OK;
}

/* ------------------------------------------------------------ temp names */

static void host_name(char buffer[HOST_CAPACITY])
{
    if (gethostname(buffer, HOST_CAPACITY) != 0)
        snprintf(buffer, HOST_CAPACITY, "unknown-host");
    buffer[HOST_CAPACITY - 1] = '\0';
    for (char *c = buffer; *c != '\0'; c++) {
        bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                     (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == '_';
        if (!plain)
            *c = '_';
    }
    if (buffer[0] == '\0')
        snprintf(buffer, HOST_CAPACITY, "unknown-host");
}

static uint64_t random_tag(void)
{
    uint64_t tag = 0;
    if (getrandom(&tag, sizeof tag, GRND_NONBLOCK) == (ssize_t)sizeof tag)
        return tag;
    /* No entropy yet: time and address bits still make a collision unlikely,
     * and O_EXCL turns one into an error instead of a shared file. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return ((uint64_t)now.tv_sec << 30) ^ (uint64_t)now.tv_nsec ^ (uint64_t)(uintptr_t)&tag;
}

static void utc_timestamp(char *buffer, size_t size)
{
    time_t now = time(NULL);
    struct tm parts;
    if (now == (time_t)-1 || gmtime_r(&now, &parts) == NULL ||
        strftime(buffer, size, "%Y-%m-%dT%H:%M:%SZ", &parts) == 0)
        snprintf(buffer, size, "unknown");
}

/* ----------------------------------------------------------------- writer */

static void discard_writer(fv_store_writer *writer)
{
    for (int i = 0; i < writer->output_count * DATASETS_PER_OUTPUT; i++)
        fv_h5_close(&writer->datasets[i]);
    fv_h5_close(&writer->file);
    if (writer->temporary_exists)
        unlink(writer->temporary_path);
    for (int i = 0; i < writer->output_count; i++)
        free(writer->written[i].ranges);
    free(writer->written);
    free(writer->datasets);
    free(writer->outputs);
    free(writer);
}

static fv_status allocate_writer(const fv_store *store, const char *key, int output_count,
                                 const fv_store_output *outputs, fv_store_writer **out)
{
    fv_store_writer *writer = calloc(1, sizeof *writer);
    FV_CHECK_ALLOC(writer);
    writer->file = H5I_INVALID_HID;
    size_t count = output_count > 0 ? (size_t)output_count : 1;
    writer->outputs = calloc(count, sizeof *writer->outputs);
    writer->datasets = calloc(count * DATASETS_PER_OUTPUT, sizeof *writer->datasets);
    writer->written = calloc(count, sizeof *writer->written);
    if (writer->outputs == NULL || writer->datasets == NULL || writer->written == NULL) {
        discard_writer(writer);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    writer->output_count = output_count;
    if (output_count > 0)
        memcpy(writer->outputs, outputs, (size_t)output_count * sizeof *outputs);
    for (int i = 0; i < output_count * DATASETS_PER_OUTPUT; i++)
        writer->datasets[i] = H5I_INVALID_HID;
    memcpy(writer->key, key, FV_STORE_KEY_LENGTH + 1);
    snprintf(writer->directory, sizeof writer->directory, "%s", store->directory);
    *out = writer;
    return FV_OK;
}

/* Picks the temporary name and creates the file with O_EXCL, so that the
 * name is ours and permission problems are reported with errno. */
static fv_status reserve_temporary(fv_store_writer *writer)
{
    char host[HOST_CAPACITY];
    host_name(host);
    snprintf(writer->final_path, sizeof writer->final_path, "%s/%s.h5", writer->directory,
             writer->key);
    int length = snprintf(writer->temporary_path, sizeof writer->temporary_path,
                          "%s/.%s.%s.%ld.%016llx.tmp", writer->directory, writer->key, host,
                          (long)getpid(), (unsigned long long)random_tag());
    if (length < 0 || (size_t)length >= sizeof writer->temporary_path)
        FV_FAIL(FV_ERR_INPUT, "temporary file path in %s is too long", writer->directory);
    int descriptor = open(writer->temporary_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot create temporary file %s: %s", writer->temporary_path,
                strerror(errno));
    writer->temporary_exists = true;
    if (close(descriptor) != 0)
        FV_FAIL(FV_ERR_IO, "cannot close temporary file %s: %s", writer->temporary_path,
                strerror(errno));
    return FV_OK;
}

static fv_status write_provenance(fv_store_writer *writer, const fv_store_provenance *p)
{
    hid_t file = writer->file;
    const char *path = writer->temporary_path;
    char host[HOST_CAPACITY];
    char created[32];
    host_name(host);
    utc_timestamp(created, sizeof created);
    const char *strings[STRING_FIELD_COUNT] = {
        [FIELD_KEY] = writer->key,
        [FIELD_CASE_ID] = p->case_id,
        [FIELD_CANONICAL_FUSION] = p->canonical_fusion,
        [FIELD_SIZES] = p->sizes,
        [FIELD_DTYPES] = p->dtypes,
        [FIELD_BOUND_POLICY] = p->bound_policy,
        [FIELD_TOOL_VERSION] = p->tool_version,
        [FIELD_GIT_REVISION] = p->git_revision,
        [FIELD_HOST] = host,
        [FIELD_CREATED] = created,
    };
    FV_TRY(fv_h5_write_int64_attribute(file, "format_version", FV_STORE_FORMAT_VERSION, path));
    for (int field = 0; field < STRING_FIELD_COUNT; field++)
        FV_TRY(fv_h5_write_string_attribute(file, string_field_names[field], strings[field],
                                            path));
    FV_TRY(fv_h5_write_uint64_attribute(file, "seed", p->seed, path));
    FV_TRY(fv_h5_write_int64_attribute(file, "generator_version", p->generator_version, path));
    FV_TRY(fv_h5_write_int64_attribute(file, "evaluator_version", p->evaluator_version, path));
    FV_TRY(fv_h5_write_int64_attribute(file, "output_count", writer->output_count, path));
    return FV_OK;
}

/* Chunk shape of about CHUNK_TARGET_BYTES: whole rows (as many as fit, at
 * least one), or, where one row is larger, part of one row. */
static void choose_chunk(int rank, const hsize_t *dims, hsize_t *chunk)
{
    const hsize_t target = CHUNK_TARGET_BYTES / sizeof(double);
    for (int d = 0; d < rank; d++)
        chunk[d] = dims[d];
    for (int d = 0; d < rank; d++) {
        hsize_t inner = 1; /* elements of one step along dim d */
        for (int e = d + 1; e < rank; e++)
            inner *= dims[e];
        if (inner <= target) {
            hsize_t steps = target / inner;
            chunk[d] = steps < 1 ? 1 : (steps > dims[d] ? dims[d] : steps);
            return;
        }
        chunk[d] = 1;
    }
}

/* Dataset creation list: chunked with fletcher32 for non-empty outputs,
 * contiguous (nothing to checksum) for empty ones. */
static fv_status make_creation_list(const fv_store_output *output, const char *path,
                                    hid_t *list)
{
    fv_status status = FV_OK;
    *list = H5Pcreate(H5P_DATASET_CREATE);
    FV_H5_CHECK(*list, path, "creating a dataset-creation property list");
    if (output_elements(output) == 0)
        return FV_OK;
    hsize_t dims[FV_MAX_RANK], chunk[FV_MAX_RANK];
    storage_dims(output, dims);
    choose_chunk(storage_rank(output), dims, chunk);
    FV_H5_CHECK_GOTO(status, H5Pset_chunk(*list, storage_rank(output), chunk), fail, path,
                     "setting the chunk shape of output '%s'", output->name);
    FV_H5_CHECK_GOTO(status, H5Pset_fletcher32(*list), fail, path,
                     "adding the fletcher32 filter to output '%s'", output->name);
    return FV_OK;
fail:
    fv_h5_close(list);
    return status;
}

static fv_status make_access_list(const char *path, hid_t *list)
{
    *list = H5Pcreate(H5P_DATASET_ACCESS);
    FV_H5_CHECK(*list, path, "creating a dataset-access property list");
    if (H5Pset_chunk_cache(*list, H5D_CHUNK_CACHE_NSLOTS_DEFAULT, CHUNK_CACHE_BYTES, 1.0) < 0) {
        fv_status status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, path,
                                       "setting the chunk cache");
        fv_h5_close(list);
        return status;
    }
    return FV_OK;
}

static fv_status write_output_attributes(hid_t group, const fv_store_output *output,
                                         const char *path)
{
    FV_TRY(fv_h5_write_string_attribute(group, "name", output->name, path));
    FV_TRY(fv_h5_write_int64_attribute(group, "rank", output->rank, path));
    FV_TRY(fv_h5_write_int64_array_attribute(group, "shape", output->rank, output->extents,
                                             path));
    FV_TRY(fv_h5_write_string_attribute(group, "dtype", fv_dtype_name(output->dtype), path));
    FV_TRY(fv_h5_write_int64_attribute(group, "reduction_length", output->reduction_length,
                                       path));
    return FV_OK;
}

/* Creates /outputs/<index> with its attributes and its two datasets. */
static fv_status create_output(fv_store_writer *writer, hid_t outputs_group, int index)
{
    const fv_store_output *output = &writer->outputs[index];
    const char *path = writer->temporary_path;
    fv_status status = FV_OK;
    hid_t space = H5I_INVALID_HID, creation = H5I_INVALID_HID;
    hid_t dataset_access = H5I_INVALID_HID;
    char group_name[16];
    snprintf(group_name, sizeof group_name, "%d", index);
    hid_t group = H5Gcreate2(outputs_group, group_name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    FV_H5_CHECK_GOTO(status, group, done, path, "creating group /outputs/%d", index);
    FV_TRY_GOTO(status, write_output_attributes(group, output, path), done);
    hsize_t dims[FV_MAX_RANK];
    storage_dims(output, dims);
    space = H5Screate_simple(storage_rank(output), dims, NULL);
    FV_H5_CHECK_GOTO(status, space, done, path, "creating the dataspace of output %d", index);
    FV_TRY_GOTO(status, make_creation_list(output, path, &creation), done);
    FV_TRY_GOTO(status, make_access_list(path, &dataset_access), done);
    for (int which = 0; which < DATASETS_PER_OUTPUT; which++) {
        hid_t dataset = H5Dcreate2(group, dataset_names[which], H5T_IEEE_F64LE, space,
                                   H5P_DEFAULT, creation, dataset_access);
        FV_H5_CHECK_GOTO(status, dataset, done, path, "creating dataset /outputs/%d/%s", index,
                         dataset_names[which]);
        writer->datasets[index * DATASETS_PER_OUTPUT + which] = dataset;
    }
done:
    fv_h5_close(&dataset_access);
    fv_h5_close(&creation);
    fv_h5_close(&space);
    fv_h5_close(&group);
    return status;
}

static fv_status create_file(fv_store_writer *writer, const fv_store_provenance *provenance)
{
    const char *path = writer->temporary_path;
    hid_t file_access;
    FV_TRY(fv_h5_file_access(&file_access));
    writer->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, file_access);
    fv_h5_close(&file_access);
    FV_H5_CHECK(writer->file, path, "creating the HDF5 file");
    FV_TRY(write_provenance(writer, provenance));
    hid_t group = H5Gcreate2(writer->file, OUTPUTS_GROUP, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT);
    FV_H5_CHECK(group, path, "creating group /%s", OUTPUTS_GROUP);
    fv_status status = FV_OK;
    for (int i = 0; i < writer->output_count && status == FV_OK; i++)
        status = create_output(writer, group, i);
    fv_h5_close(&group);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

fv_status fv_store_begin(fv_store *store, const fv_store_provenance *provenance,
                         int output_count, const fv_store_output *outputs,
                         fv_store_writer **writer)
{
    FV_TRY(check_key(provenance->key));
    FV_TRY(check_outputs(output_count, outputs));
    fv_store_writer *created = NULL;
    FV_TRY(allocate_writer(store, provenance->key, output_count, outputs, &created));
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, reserve_temporary(created), fail);
    FV_TRY_GOTO(status, create_file(created, provenance), fail);
    *writer = created;
    return FV_OK;
fail:
    discard_writer(created);
    return status;
}

fv_status fv_store_write_rows(fv_store_writer *writer, int output_index, int64_t first_row,
                              int64_t row_count, const double *values, const double *bounds)
{
    FV_TRY(fv_h5_init()); /* HDF5's error printing off in this thread (an evaluator's) */
    if (output_index < 0 || output_index >= writer->output_count)
        FV_FAIL(FV_ERR_INTERNAL, "output index %d outside 0..%d", output_index,
                writer->output_count - 1);
    const fv_store_output *output = &writer->outputs[output_index];
    row_coverage *written = &writer->written[output_index];
    FV_TRY(check_rows(output, output_index, first_row, row_count));
    int64_t end = first_row + row_count;
    if (row_count == 0)
        return FV_OK;
    if (coverage_overlaps(written, first_row, end))
        FV_FAIL(FV_ERR_INTERNAL, "rows [%lld, %lld) of output %d ('%s') were already written",
                (long long)first_row, (long long)end, output_index, output->name);
    FV_TRY(coverage_reserve(written));
    if (elements_per_row(output) > 0) {
        if (values == NULL || bounds == NULL)
            FV_FAIL(FV_ERR_INTERNAL, "no values or bounds given for output %d", output_index);
        const double *buffers[DATASETS_PER_OUTPUT] = {values, bounds};
        for (int which = 0; which < DATASETS_PER_OUTPUT; which++) {
            hid_t dataset = writer->datasets[output_index * DATASETS_PER_OUTPUT + which];
            hid_t file_space = H5I_INVALID_HID, memory_space = H5I_INVALID_HID;
            FV_TRY(select_rows(dataset, output, first_row, row_count, writer->temporary_path,
                               &file_space, &memory_space));
            herr_t result = H5Dwrite(dataset, H5T_NATIVE_DOUBLE, memory_space, file_space,
                                     H5P_DEFAULT, buffers[which]);
            /* read HDF5's error stack before the closes clear it */
            fv_status status = FV_OK;
            if (result < 0)
                status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, writer->temporary_path,
                                     "writing rows [%lld, %lld) of /outputs/%d/%s",
                                     (long long)first_row, (long long)end, output_index,
                                     dataset_names[which]);
            H5Sclose(memory_space);
            H5Sclose(file_space);
            FV_TRY(status);
        }
    }
    coverage_add(written, first_row, end);
    return FV_OK;
}

static fv_status check_complete(const fv_store_writer *writer)
{
    for (int i = 0; i < writer->output_count; i++) {
        const fv_store_output *output = &writer->outputs[i];
        int64_t rows = output_rows(output), begin, end;
        if (coverage_first_gap(&writer->written[i], rows, &begin, &end))
            FV_FAIL(FV_ERR_INTERNAL,
                    "output %d ('%s') of entry %s is missing rows [%lld, %lld) of %lld: "
                    "nothing was published", i, output->name, writer->key,
                    (long long)begin, (long long)end, (long long)rows);
    }
    return FV_OK;
}

static fv_status close_file(fv_store_writer *writer)
{
    const char *path = writer->temporary_path;
    for (int i = 0; i < writer->output_count * DATASETS_PER_OUTPUT; i++)
        FV_H5_CHECK(fv_h5_close(&writer->datasets[i]), path, "closing a dataset");
    FV_H5_CHECK(H5Fflush(writer->file, H5F_SCOPE_GLOBAL), path, "flushing the file");
    FV_H5_CHECK(fv_h5_close(&writer->file), path, "closing the file");
    return FV_OK;
}

static fv_status sync_path(const char *path, int flags, const char *what)
{
    int descriptor = open(path, flags | O_CLOEXEC);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot open %s %s to sync it: %s", what, path, strerror(errno));
    int result = fsync(descriptor);
    int saved = errno;
    close(descriptor);
    /* Some file systems cannot sync a directory (EINVAL); that only weakens
     * durability after a crash, never atomicity. */
    if (result != 0 && !(saved == EINVAL && (flags & O_DIRECTORY)))
        FV_FAIL(FV_ERR_IO, "cannot sync %s %s: %s", what, path, strerror(saved));
    return FV_OK;
}

static fv_status publish(fv_store_writer *writer)
{
    FV_TRY(sync_path(writer->temporary_path, O_RDONLY, "file"));
    if (rename(writer->temporary_path, writer->final_path) != 0)
        FV_FAIL(FV_ERR_IO, "cannot rename %s to %s: %s", writer->temporary_path,
                writer->final_path, strerror(errno));
    writer->temporary_exists = false;
    FV_TRY(sync_path(writer->directory, O_RDONLY | O_DIRECTORY, "directory"));
    return FV_OK;
}

fv_status fv_store_commit(fv_store_writer *writer)
{
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, check_complete(writer), done);
    FV_TRY_GOTO(status, close_file(writer), done);
    FV_TRY_GOTO(status, publish(writer), done);
done:
    discard_writer(writer);
    return status;
}

void fv_store_abort(fv_store_writer *writer)
{
    if (writer != NULL)
        discard_writer(writer);
}

/* ----------------------------------------------------------------- reader */

/* Re-raises a failure found while checking an entry as FV_ERR_CORRUPT that
 * names the file (allocation failures stay FV_ERR_NOMEM). */
static fv_status as_corrupt(fv_status status, const char *path)
{
    if (status == FV_OK || status == FV_ERR_NOMEM)
        return status;
    char message[MESSAGE_COPY_CAPACITY];
    snprintf(message, sizeof message, "%s", fv_error_message());
    bool names_file = strstr(message, path) != NULL;
    if (status == FV_ERR_CORRUPT && names_file)
        return status;
    if (names_file)
        return fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                              "corrupt reference store entry: %s", message);
    return fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                          "corrupt reference store entry %s: %s", path, message);
}

static fv_status read_int_attribute(hid_t object, const char *name, const char *where,
                                    int64_t low, int64_t high, int64_t *value)
{
    int64_t read;
    FV_TRY(fv_h5_read_int64_attribute(object, name, where, &read));
    if (read < low || read > high)
        FV_FAIL(FV_ERR_CORRUPT, "attribute '%s' in %s is %lld, outside %lld..%lld", name, where,
                (long long)read, (long long)low, (long long)high);
    *value = read;
    return FV_OK;
}

static fv_status read_root(fv_store_reader *reader, const char *key)
{
    hid_t file = reader->file;
    int64_t format_version;
    FV_TRY(fv_h5_read_int64_attribute(file, "format_version", "/", &format_version));
    if (format_version != FV_STORE_FORMAT_VERSION)
        FV_FAIL(FV_ERR_CORRUPT, "format version %lld, this build reads version %d",
                (long long)format_version, FV_STORE_FORMAT_VERSION);
    for (int field = 0; field < STRING_FIELD_COUNT; field++)
        FV_TRY(fv_h5_read_string_attribute(file, string_field_names[field], "/",
                                           &reader->strings[field]));
    if (strcmp(reader->strings[FIELD_KEY], key) != 0)
        FV_FAIL(FV_ERR_CORRUPT, "stored key %.80s differs from the key %s in the file name",
                reader->strings[FIELD_KEY], key);
    fv_store_provenance *p = &reader->provenance;
    int64_t generator_version = 0, evaluator_version = 0, output_count = 0;
    FV_TRY(fv_h5_read_uint64_attribute(file, "seed", "/", &p->seed));
    FV_TRY(read_int_attribute(file, "generator_version", "/", INT32_MIN, INT32_MAX,
                              &generator_version));
    FV_TRY(read_int_attribute(file, "evaluator_version", "/", INT32_MIN, INT32_MAX,
                              &evaluator_version));
    FV_TRY(read_int_attribute(file, "output_count", "/", 0, FV_STORE_MAX_OUTPUTS,
                              &output_count));
    p->generator_version = (int)generator_version;
    p->evaluator_version = (int)evaluator_version;
    p->key = reader->strings[FIELD_KEY];
    p->case_id = reader->strings[FIELD_CASE_ID];
    p->canonical_fusion = reader->strings[FIELD_CANONICAL_FUSION];
    p->sizes = reader->strings[FIELD_SIZES];
    p->dtypes = reader->strings[FIELD_DTYPES];
    p->bound_policy = reader->strings[FIELD_BOUND_POLICY];
    p->tool_version = reader->strings[FIELD_TOOL_VERSION];
    p->git_revision = reader->strings[FIELD_GIT_REVISION];
    p->host = reader->strings[FIELD_HOST];
    p->created = reader->strings[FIELD_CREATED];
    reader->output_count = (int)output_count;
    return FV_OK;
}

static fv_status read_output_attributes(hid_t group, const char *where,
                                        fv_store_output *output)
{
    char *text = NULL;
    FV_TRY(fv_h5_read_string_attribute(group, "name", where, &text));
    size_t length = strlen(text);
    if (length > 0 && length < sizeof output->name)
        memcpy(output->name, text, length + 1);
    free(text);
    if (length == 0 || length >= sizeof output->name)
        FV_FAIL(FV_ERR_CORRUPT, "attribute 'name' in %s is empty or too long", where);
    int64_t rank = 0;
    FV_TRY(read_int_attribute(group, "rank", where, 0, FV_MAX_RANK, &rank));
    output->rank = (int)rank;
    int shape_length = 0;
    FV_TRY(fv_h5_read_int64_array_attribute(group, "shape", where, FV_MAX_RANK,
                                            output->extents, &shape_length));
    if (shape_length != output->rank)
        FV_FAIL(FV_ERR_CORRUPT, "attribute 'shape' in %s has %d extents for rank %d", where,
                shape_length, output->rank);
    if (checked_elements(output) < 0)
        FV_FAIL(FV_ERR_CORRUPT, "attribute 'shape' in %s has a negative or too large extent",
                where);
    FV_TRY(fv_h5_read_string_attribute(group, "dtype", where, &text));
    bool known = fv_dtype_parse(text, &output->dtype);
    free(text);
    if (!known)
        FV_FAIL(FV_ERR_CORRUPT, "attribute 'dtype' in %s is not a known dtype", where);
    FV_TRY(read_int_attribute(group, "reduction_length", where, 0, INT64_MAX,
                              &output->reduction_length));
    return FV_OK;
}

/* Checks that a dataset is float64 of the output's storage shape and, when
 * not empty, chunked (chunks at most MAX_CHUNK_BYTES) with fletcher32. */
static fv_status check_dataset(hid_t dataset, const fv_store_output *output, const char *where)
{
    fv_status status = FV_OK;
    hid_t type = H5Dget_type(dataset);
    hid_t space = H5Dget_space(dataset);
    hid_t creation = H5Dget_create_plist(dataset);
    if (type < 0 || space < 0 || creation < 0) {
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, where, "inspecting the dataset");
        goto done;
    }
    if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != sizeof(double)) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__, "%s is not float64", where);
        goto done;
    }
    int rank = storage_rank(output);
    hsize_t expected[FV_MAX_RANK], dims[FV_MAX_RANK], chunk[FV_MAX_RANK];
    storage_dims(output, expected);
    if (H5Sget_simple_extent_ndims(space) != rank ||
        H5Sget_simple_extent_dims(space, dims, NULL) != rank ||
        memcmp(dims, expected, (size_t)rank * sizeof *dims) != 0) {
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "%s does not have the shape of its output", where);
        goto done;
    }
    if (output_elements(output) == 0)
        goto done;
    bool chunked = H5Pget_layout(creation) == H5D_CHUNKED &&
                   H5Pget_chunk(creation, rank, chunk) == rank;
    hsize_t chunk_elements = 1;
    for (int d = 0; chunked && d < rank; d++) {
        chunked = chunk[d] >= 1 && chunk[d] <= dims[d];
        chunk_elements *= chunk[d];
    }
    unsigned flags, filter_config;
    size_t value_count = 0;
    bool checksummed =
        H5Pget_filter_by_id2(creation, H5Z_FILTER_FLETCHER32, &flags, &value_count, NULL, 0,
                             NULL, &filter_config) >= 0;
    if (!chunked || chunk_elements > MAX_CHUNK_BYTES / sizeof(double) || !checksummed)
        status = fv_error_raise(FV_ERR_CORRUPT, __FILE__, __LINE__,
                                "%s is not chunked with fletcher32 as expected", where);
done:
    fv_h5_close(&creation);
    fv_h5_close(&space);
    fv_h5_close(&type);
    return status;
}

static fv_status open_output(fv_store_reader *reader, int index)
{
    fv_store_output *output = &reader->outputs[index];
    char where[64];
    snprintf(where, sizeof where, "/%s/%d", OUTPUTS_GROUP, index);
    fv_status status = FV_OK;
    hid_t dataset_access = H5I_INVALID_HID;
    hid_t group = H5Gopen2(reader->file, where, H5P_DEFAULT);
    FV_H5_CHECK(group, where, "opening the group");
    FV_TRY_GOTO(status, read_output_attributes(group, where, output), done);
    FV_TRY_GOTO(status, make_access_list(where, &dataset_access), done);
    for (int which = 0; which < DATASETS_PER_OUTPUT; which++) {
        char dataset_where[96];
        snprintf(dataset_where, sizeof dataset_where, "%s/%s", where, dataset_names[which]);
        hid_t dataset = H5Dopen2(group, dataset_names[which], dataset_access);
        FV_H5_CHECK_GOTO(status, dataset, done, dataset_where, "opening the dataset");
        reader->datasets[index * DATASETS_PER_OUTPUT + which] = dataset;
        FV_TRY_GOTO(status, check_dataset(dataset, output, dataset_where), done);
    }
done:
    fv_h5_close(&dataset_access);
    fv_h5_close(&group);
    return status;
}

static fv_status check_structure(fv_store_reader *reader, const char *key)
{
    FV_TRY(read_root(reader, key));
    size_t count = reader->output_count > 0 ? (size_t)reader->output_count : 1;
    reader->outputs = calloc(count, sizeof *reader->outputs);
    reader->datasets = malloc(count * DATASETS_PER_OUTPUT * sizeof *reader->datasets);
    if (reader->outputs == NULL || reader->datasets == NULL)
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < count * DATASETS_PER_OUTPUT; i++)
        reader->datasets[i] = H5I_INVALID_HID;
    for (int i = 0; i < reader->output_count; i++)
        FV_TRY(open_output(reader, i));
    if (fv_store_case_bytes(reader->output_count, reader->outputs) == INT64_MAX)
        FV_FAIL(FV_ERR_CORRUPT, "the outputs are too large");
    return FV_OK;
}

/* FV_ERR_NOT_FOUND if there is no entry file, FV_ERR_IO if it cannot be read. */
static fv_status check_readable(const char *path, const char *key, const char *directory)
{
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0 && errno == ENOENT)
        FV_FAIL(FV_ERR_NOT_FOUND, "no reference store entry for key %s in %s", key, directory);
    if (descriptor < 0)
        FV_FAIL(FV_ERR_IO, "cannot read reference store entry %s: %s", path, strerror(errno));
    close(descriptor);
    return FV_OK;
}

static fv_status open_file(fv_store_reader *reader, const char *key, const char *directory)
{
    hid_t file_access;
    FV_TRY(fv_h5_file_access(&file_access));
    reader->file = H5Fopen(reader->path, H5F_ACC_RDONLY, file_access);
    if (reader->file >= 0) {
        fv_h5_close(&file_access);
        return FV_OK;
    }
    fv_status status = fv_h5_raise(FV_ERR_CORRUPT, __FILE__, __LINE__, reader->path,
                                   "corrupt reference store entry: cannot open it as "
                                   "HDF5 (truncated or not an HDF5 file)");
    fv_h5_close(&file_access);
    /* Another rank may have removed the entry since it was found. */
    if (access(reader->path, F_OK) != 0 && errno == ENOENT)
        FV_FAIL(FV_ERR_NOT_FOUND, "no reference store entry for key %s in %s", key, directory);
    return status;
}

fv_status fv_store_open_entry(fv_store *store, const char *key, fv_store_reader **reader)
{
    fv_store_reader *opened = calloc(1, sizeof *opened);
    FV_CHECK_ALLOC(opened);
    opened->file = H5I_INVALID_HID;
    fv_status status = FV_OK;
    FV_TRY_GOTO(status, fv_store_entry_path(store, key, opened->path, sizeof opened->path),
                fail);
    FV_TRY_GOTO(status, check_readable(opened->path, key, store->directory), fail);
    FV_TRY_GOTO(status, open_file(opened, key, store->directory), fail);
    FV_TRY_GOTO(status, as_corrupt(check_structure(opened, key), opened->path), fail);
    *reader = opened;
    return FV_OK;
fail:
    fv_store_close_entry(opened);
    return status;
}

void fv_store_entry_outputs(const fv_store_reader *reader, int *output_count,
                            const fv_store_output **outputs)
{
    *output_count = reader->output_count;
    *outputs = reader->outputs;
}

const fv_store_provenance *fv_store_entry_provenance(const fv_store_reader *reader)
{
    return &reader->provenance;
}

/* Reads a block of one dataset.  A checksum failure becomes FV_ERR_CORRUPT. */
static fv_status read_block(fv_store_reader *reader, int output_index, int which,
                            const hsize_t *start, const hsize_t *count, double *buffer)
{
    const fv_store_output *output = &reader->outputs[output_index];
    hid_t dataset = reader->datasets[output_index * DATASETS_PER_OUTPUT + which];
    hid_t file_space = H5I_INVALID_HID, memory_space = H5I_INVALID_HID;
    FV_TRY(select_block(dataset, storage_rank(output), start, count, reader->path, &file_space,
                        &memory_space));
    herr_t result = H5Dread(dataset, H5T_NATIVE_DOUBLE, memory_space, file_space, H5P_DEFAULT,
                            buffer);
    fv_status status = FV_OK;
    if (result < 0) {
        status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, reader->path,
                             "reading rows [%llu, %llu) of /%s/%d/%s ('%s')",
                             (unsigned long long)start[0],
                             (unsigned long long)(start[0] + count[0]), OUTPUTS_GROUP,
                             output_index, dataset_names[which], output->name);
        if (fv_h5_last_failure_was_checksum())
            status = as_corrupt(status, reader->path);
    }
    H5Sclose(memory_space);
    H5Sclose(file_space);
    return status;
}

fv_status fv_store_read_rows(fv_store_reader *reader, int output_index, int64_t first_row,
                             int64_t row_count, double *values, double *bounds)
{
    FV_TRY(fv_h5_init()); /* HDF5's error printing off in this thread */
    if (output_index < 0 || output_index >= reader->output_count)
        FV_FAIL(FV_ERR_INTERNAL, "output index %d outside 0..%d", output_index,
                reader->output_count - 1);
    const fv_store_output *output = &reader->outputs[output_index];
    FV_TRY(check_rows(output, output_index, first_row, row_count));
    if (row_count == 0 || elements_per_row(output) == 0)
        return FV_OK;
    hsize_t start[FV_MAX_RANK] = {0};
    hsize_t count[FV_MAX_RANK];
    storage_dims(output, count);
    start[0] = (hsize_t)first_row;
    count[0] = (hsize_t)row_count;
    double *buffers[DATASETS_PER_OUTPUT] = {values, bounds};
    for (int which = 0; which < DATASETS_PER_OUTPUT; which++) {
        if (buffers[which] != NULL)
            FV_TRY(read_block(reader, output_index, which, start, count, buffers[which]));
    }
    return FV_OK;
}

/* Reads one dataset block by block: bands of whole chunk rows along dim 0,
 * each band chunk by chunk along the other dims. */
static fv_status verify_dataset(fv_store_reader *reader, int output_index, int which)
{
    const fv_store_output *output = &reader->outputs[output_index];
    if (output_elements(output) == 0)
        return FV_OK;
    hid_t dataset = reader->datasets[output_index * DATASETS_PER_OUTPUT + which];
    int rank = storage_rank(output);
    hsize_t dims[FV_MAX_RANK], chunk[FV_MAX_RANK];
    storage_dims(output, dims);
    hid_t creation = H5Dget_create_plist(dataset);
    FV_H5_CHECK(creation, reader->path, "reading the chunk shape of output %d", output_index);
    int chunk_rank = H5Pget_chunk(creation, rank, chunk);
    if (chunk_rank < 0) { /* read HDF5's error stack before the close clears it */
        fv_status status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, reader->path,
                                       "reading the chunk shape of output %d", output_index);
        fv_h5_close(&creation);
        return status;
    }
    fv_h5_close(&creation);
    hsize_t block_elements = 1; /* one chunk's extent along dims 1.. */
    for (int d = 1; d < rank; d++)
        block_elements *= chunk[d];
    hsize_t budget = VERIFY_BUDGET_BYTES / sizeof(double);
    hsize_t band_chunks = budget / (chunk[0] * block_elements);
    hsize_t band_rows = chunk[0] * (band_chunks < 1 ? 1 : band_chunks);
    if (band_rows > dims[0])
        band_rows = dims[0];
    double *buffer = malloc(band_rows * block_elements * sizeof *buffer);
    FV_CHECK_ALLOC(buffer);
    fv_status status = FV_OK;
    hsize_t start[FV_MAX_RANK] = {0}, count[FV_MAX_RANK];
    while (status == FV_OK && start[0] < dims[0]) {
        for (int d = 0; d < rank; d++) {
            hsize_t step = d == 0 ? band_rows : chunk[d];
            count[d] = dims[d] - start[d] < step ? dims[d] - start[d] : step;
        }
        status = read_block(reader, output_index, which, start, count, buffer);
        /* Odometer over the chunk grid of dims rank-1 .. 1, then the next band. */
        int d = rank - 1;
        for (; d > 0; d--) {
            start[d] += chunk[d];
            if (start[d] < dims[d])
                break;
            start[d] = 0;
        }
        if (d == 0)
            start[0] += band_rows;
    }
    free(buffer);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

fv_status fv_store_verify(fv_store_reader *reader)
{
    for (int i = 0; i < reader->output_count; i++) {
        for (int which = 0; which < DATASETS_PER_OUTPUT; which++)
            FV_TRY(as_corrupt(verify_dataset(reader, i, which), reader->path));
    }
    return FV_OK;
}

void fv_store_close_entry(fv_store_reader *reader)
{
    if (reader == NULL)
        return;
    if (reader->datasets != NULL) {
        int count = reader->output_count > 0 ? reader->output_count : 1;
        for (int i = 0; i < count * DATASETS_PER_OUTPUT; i++)
            fv_h5_close(&reader->datasets[i]);
    }
    fv_h5_close(&reader->file);
    for (int field = 0; field < STRING_FIELD_COUNT; field++)
        free(reader->strings[field]);
    free(reader->datasets);
    free(reader->outputs);
    free(reader);
}
