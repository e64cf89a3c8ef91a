/* check_store.c: tests of the reference store (validate/store.h) and of the
 * HDF5 helpers it is built on (common/h5util.h). */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/h5util.h"
#include "test_support.h"
#include "validate/store.h"

enum { OUTPUT_COUNT = 7, WRITER_PROCESSES = 4 };

/* ------------------------------------------------------------- fixtures */

static void make_key(unsigned long long number, char key[FV_STORE_KEY_LENGTH + 1])
{
    snprintf(key, FV_STORE_KEY_LENGTH + 1, "%064llx", number * 0x9e3779b97f4a7c15ULL);
}

static fv_store_output make_output(const char *name, int rank, const int64_t *extents,
                                   fv_dtype dtype, int64_t reduction_length)
{
    fv_store_output output = {.rank = rank, .dtype = dtype,
                              .reduction_length = reduction_length};
    snprintf(output.name, sizeof output.name, "%s", name);
    for (int d = 0; d < rank; d++)
        output.extents[d] = extents[d];
    return output;
}

/* Ranks 0..3 with odd extents: a scalar, a vector, small and multi-chunk
 * matrices, a rank-3 output whose rows are larger than one chunk, and two
 * empty outputs (rows without elements, no rows). */
static void sample_outputs(fv_store_output outputs[OUTPUT_COUNT])
{
    outputs[0] = make_output("S0", 0, NULL, FV_F32, 1);
    outputs[1] = make_output("T1", 1, (int64_t[]){1001}, FV_BF16, 1);
    outputs[2] = make_output("T2", 2, (int64_t[]){37, 13}, FV_F16, 13);
    outputs[3] = make_output("T3", 2, (int64_t[]){300, 1000}, FV_F32, 1000);
    outputs[4] = make_output("T4", 3, (int64_t[]){3, 4, 40000}, FV_BF16, 40000);
    outputs[5] = make_output("E5", 2, (int64_t[]){4, 0}, FV_F32, 0);
    outputs[6] = make_output("E6", 1, (int64_t[]){0}, FV_F64, 1);
}

static fv_store_provenance sample_provenance(const char *key)
{
    return (fv_store_provenance){
        .key = key,
        .case_id = "layer_norm_bwd/bf16/300x1000/s7",
        .canonical_fusion = "v0 = input tensor [s0, s1] bf16\nv1 = sum(v0, [1])\n",
        .sizes = "s0=300 s1=1000",
        .dtypes = "bf16",
        .seed = 0xfedcba9876543210ULL,
        .generator_version = 3,
        .evaluator_version = 5,
        .bound_policy = "gamma_n * sum|x|",
        .tool_version = "0.1.0",
        .git_revision = "abcdef012345",
        .host = "ignored",
        .created = "ignored",
    };
}

static int64_t rows_of(const fv_store_output *output)
{
    return output->rank == 0 ? 1 : output->extents[0];
}

static int64_t row_elements_of(const fv_store_output *output)
{
    int64_t elements = 1;
    for (int d = 1; d < output->rank; d++)
        elements *= output->extents[d];
    return elements;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Element `index` of output `output`: arbitrary bit patterns (NaNs with
 * payloads, infinities, subnormals, -0.0 included), so that a round trip
 * must be bit-exact. `salt` tells values (0) from bounds (1). */
static double pattern(int output, int64_t index, int salt)
{
    uint64_t bits = mix(((uint64_t)output << 48) ^ ((uint64_t)salt << 47) ^ (uint64_t)index);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static double *pattern_rows(int output_index, const fv_store_output *output, int64_t first_row,
                            int64_t row_count, int salt)
{
    int64_t per_row = row_elements_of(output);
    size_t count = (size_t)(row_count * per_row);
    double *buffer = malloc((count ? count : 1) * sizeof *buffer);
    ck_assert_ptr_nonnull(buffer);
    for (size_t i = 0; i < count; i++)
        buffer[i] = pattern(output_index, first_row * per_row + (int64_t)i, salt);
    return buffer;
}

typedef struct row_block {
    int output;
    int64_t first_row, row_count;
} row_block;

static uint64_t next_random(uint64_t *state)
{
    *state = mix(*state);
    return *state;
}

/* Splits every output into blocks of random sizes and shuffles all blocks. */
static int shuffled_blocks(const fv_store_output *outputs, int output_count, uint64_t seed,
                           row_block **blocks)
{
    int count = 0, capacity = 64;
    row_block *list = malloc((size_t)capacity * sizeof *list);
    ck_assert_ptr_nonnull(list);
    for (int i = 0; i < output_count; i++) {
        int64_t rows = rows_of(&outputs[i]);
        for (int64_t row = 0; row < rows;) {
            int64_t largest = rows / 4 > 1 ? rows / 4 : 1;
            int64_t size = 1 + (int64_t)(next_random(&seed) % (uint64_t)largest);
            if (size > rows - row)
                size = rows - row;
            if (count == capacity) {
                capacity *= 2;
                list = realloc(list, (size_t)capacity * sizeof *list);
                ck_assert_ptr_nonnull(list);
            }
            list[count++] = (row_block){i, row, size};
            row += size;
        }
    }
    for (int i = count - 1; i > 0; i--) {
        int j = (int)(next_random(&seed) % (uint64_t)(i + 1));
        row_block swap = list[i];
        list[i] = list[j];
        list[j] = swap;
    }
    *blocks = list;
    return count;
}

static fv_status write_block(fv_store_writer *writer, const fv_store_output *outputs,
                             row_block block)
{
    const fv_store_output *output = &outputs[block.output];
    double *values = pattern_rows(block.output, output, block.first_row, block.row_count, 0);
    double *bounds = pattern_rows(block.output, output, block.first_row, block.row_count, 1);
    fv_status status = fv_store_write_rows(writer, block.output, block.first_row,
                                           block.row_count, values, bounds);
    free(values);
    free(bounds);
    return status;
}

/* Begins the sample entry of key `number`; fills `key` and `outputs`. */
static fv_store_writer *begin_sample_entry(fv_store *store, unsigned long long number,
                                           char key[FV_STORE_KEY_LENGTH + 1],
                                           fv_store_output outputs[OUTPUT_COUNT])
{
    make_key(number, key);
    sample_outputs(outputs);
    fv_store_provenance provenance = sample_provenance(key);
    fv_store_writer *writer = NULL;
    FV_ASSERT_OK(fv_store_begin(store, &provenance, OUTPUT_COUNT, outputs, &writer));
    return writer;
}

/* Writes and commits a whole sample entry (blocks shuffled by `seed`). */
static fv_status build_entry(fv_store *store, const char *key, uint64_t seed)
{
    fv_store_output outputs[OUTPUT_COUNT];
    sample_outputs(outputs);
    fv_store_provenance provenance = sample_provenance(key);
    fv_store_writer *writer;
    fv_status status = fv_store_begin(store, &provenance, OUTPUT_COUNT, outputs, &writer);
    if (status != FV_OK)
        return status;
    row_block *blocks;
    int block_count = shuffled_blocks(outputs, OUTPUT_COUNT, seed, &blocks);
    for (int i = 0; i < block_count && status == FV_OK; i++)
        status = write_block(writer, outputs, blocks[i]);
    free(blocks);
    if (status != FV_OK) {
        fv_store_abort(writer);
        return status;
    }
    return fv_store_commit(writer);
}

/* Reads every output back in blocks of `block_rows` and compares bit for bit. */
static void check_contents(fv_store_reader *reader, int64_t block_rows)
{
    int output_count;
    const fv_store_output *outputs;
    fv_store_entry_outputs(reader, &output_count, &outputs);
    ck_assert_int_eq(output_count, OUTPUT_COUNT);
    for (int i = 0; i < output_count; i++) {
        int64_t rows = rows_of(&outputs[i]);
        size_t per_row = (size_t)row_elements_of(&outputs[i]);
        for (int64_t row = 0; row < rows; row += block_rows) {
            int64_t count = rows - row < block_rows ? rows - row : block_rows;
            size_t elements = (size_t)count * per_row;
            double *values = malloc((elements ? elements : 1) * sizeof(double));
            double *bounds = malloc((elements ? elements : 1) * sizeof(double));
            ck_assert(values != NULL && bounds != NULL);
            FV_ASSERT_OK(fv_store_read_rows(reader, i, row, count, values, bounds));
            double *expected_values = pattern_rows(i, &outputs[i], row, count, 0);
            double *expected_bounds = pattern_rows(i, &outputs[i], row, count, 1);
            ck_assert_msg(memcmp(values, expected_values, elements * sizeof(double)) == 0,
                          "values of output %d rows [%lld, +%lld) differ", i, (long long)row,
                          (long long)count);
            ck_assert_msg(memcmp(bounds, expected_bounds, elements * sizeof(double)) == 0,
                          "bounds of output %d rows [%lld, +%lld) differ", i, (long long)row,
                          (long long)count);
            free(expected_values);
            free(expected_bounds);
            free(values);
            free(bounds);
        }
    }
}

/* Counts KEY.h5 entries and temporary files in a directory. */
static void count_files(const char *directory, int *entries, int *temporaries)
{
    *entries = 0;
    *temporaries = 0;
    DIR *listing = opendir(directory);
    ck_assert_ptr_nonnull(listing);
    struct dirent *item;
    while ((item = readdir(listing)) != NULL) {
        size_t length = strlen(item->d_name);
        if (length > 4 && strcmp(item->d_name + length - 4, ".tmp") == 0)
            (*temporaries)++;
        else if (length == FV_STORE_KEY_LENGTH + 3 &&
                 strcmp(item->d_name + FV_STORE_KEY_LENGTH, ".h5") == 0)
            (*entries)++;
    }
    closedir(listing);
}

static void assert_directory_holds(const char *directory, int entries, int temporaries)
{
    int found_entries, found_temporaries;
    count_files(directory, &found_entries, &found_temporaries);
    ck_assert_int_eq(found_entries, entries);
    ck_assert_int_eq(found_temporaries, temporaries);
}

static char store_directory[1024];

static fv_store *open_test_store(void)
{
    snprintf(store_directory, sizeof store_directory, "%s", fv_test_path("store/nested"));
    fv_store *store;
    FV_ASSERT_OK(fv_store_open(store_directory, FV_STORE_DEFAULT_MAX_BYTES, &store));
    return store;
}

static void entry_path(fv_store *store, const char *key, char path[1024])
{
    FV_ASSERT_OK(fv_store_entry_path(store, key, path, 1024));
}

static void assert_message_contains(const char *text)
{
    ck_assert_msg(strstr(fv_error_message(), text) != NULL, "message '%s' lacks '%s'",
                  fv_error_message(), text);
}

/* Opens an entry's file with HDF5 directly, read-write. */
static hid_t open_raw(const char *path)
{
    hid_t access;
    FV_ASSERT_OK(fv_h5_file_access(&access));
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, access);
    H5Pclose(access);
    ck_assert_int_ge(file, 0);
    return file;
}

/* ----------------------------------------------------------- round trip */

START_TEST(test_round_trip)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    make_key(1, key);
    FV_ASSERT_OK(build_entry(store, key, 42));
    assert_directory_holds(store_directory, 1, 0);

    fv_store_reader *reader;
    FV_ASSERT_OK(fv_store_open_entry(store, key, &reader));
    int output_count;
    const fv_store_output *outputs;
    fv_store_entry_outputs(reader, &output_count, &outputs);
    fv_store_output expected[OUTPUT_COUNT];
    sample_outputs(expected);
    ck_assert_int_eq(output_count, OUTPUT_COUNT);
    for (int i = 0; i < OUTPUT_COUNT; i++) {
        ck_assert_str_eq(outputs[i].name, expected[i].name);
        ck_assert_int_eq(outputs[i].rank, expected[i].rank);
        for (int d = 0; d < expected[i].rank; d++)
            ck_assert_int_eq(outputs[i].extents[d], expected[i].extents[d]);
        ck_assert_int_eq(outputs[i].dtype, expected[i].dtype);
        ck_assert_int_eq(outputs[i].reduction_length, expected[i].reduction_length);
    }

    const fv_store_provenance *provenance = fv_store_entry_provenance(reader);
    fv_store_provenance written = sample_provenance(key);
    ck_assert_str_eq(provenance->key, key);
    ck_assert_str_eq(provenance->case_id, written.case_id);
    ck_assert_str_eq(provenance->canonical_fusion, written.canonical_fusion);
    ck_assert_str_eq(provenance->sizes, written.sizes);
    ck_assert_str_eq(provenance->dtypes, written.dtypes);
    ck_assert_str_eq(provenance->bound_policy, written.bound_policy);
    ck_assert_str_eq(provenance->tool_version, written.tool_version);
    ck_assert_str_eq(provenance->git_revision, written.git_revision);
    ck_assert(provenance->seed == written.seed);
    ck_assert_int_eq(provenance->generator_version, 3);
    ck_assert_int_eq(provenance->evaluator_version, 5);
    ck_assert_str_ne(provenance->host, "ignored");
    ck_assert_int_gt((int)strlen(provenance->host), 0);
    ck_assert_int_eq((int)strlen(provenance->created), 20);
    ck_assert(provenance->created[4] == '-' && provenance->created[10] == 'T' &&
              provenance->created[19] == 'Z');

    check_contents(reader, 7);
    check_contents(reader, 1);
    check_contents(reader, 1 << 20);
    /* Either buffer may be skipped. */
    double value, bound;
    FV_ASSERT_OK(fv_store_read_rows(reader, 0, 0, 1, &value, NULL));
    FV_ASSERT_OK(fv_store_read_rows(reader, 0, 0, 1, NULL, &bound));
    double expected_value = pattern(0, 0, 0), expected_bound = pattern(0, 0, 1);
    ck_assert(memcmp(&value, &expected_value, sizeof value) == 0);
    ck_assert(memcmp(&bound, &expected_bound, sizeof bound) == 0);
    FV_ASSERT_OK(fv_store_verify(reader));

    ck_assert_int_eq(fv_store_read_rows(reader, 3, 299, 2, NULL, NULL), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_store_read_rows(reader, 7, 0, 1, NULL, NULL), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_store_read_rows(reader, 1, -1, 1, NULL, NULL), FV_ERR_INTERNAL);
    fv_store_close_entry(reader);
    fv_store_close(store);
}
END_TEST

START_TEST(test_commit_rejects_missing_rows)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    fv_store_output outputs[OUTPUT_COUNT];
    fv_store_writer *writer = begin_sample_entry(store, 2, key, outputs);
    assert_directory_holds(store_directory, 0, 1);
    for (int i = 0; i < OUTPUT_COUNT; i++) {
        int64_t rows = rows_of(&outputs[i]);
        if (i == 2) { /* leave out rows [5, 7) of T2 */
            FV_ASSERT_OK(write_block(writer, outputs, (row_block){i, 0, 5}));
            FV_ASSERT_OK(write_block(writer, outputs, (row_block){i, 7, rows - 7}));
        } else if (rows > 0) {
            FV_ASSERT_OK(write_block(writer, outputs, (row_block){i, 0, rows}));
        }
    }
    ck_assert_int_eq(fv_store_commit(writer), FV_ERR_INTERNAL);
    assert_message_contains("missing rows [5, 7)");
    assert_message_contains("'T2'");
    assert_directory_holds(store_directory, 0, 0);
    fv_store_reader *reader;
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_NOT_FOUND);
    fv_store_close(store);
}
END_TEST

START_TEST(test_write_rejects_bad_rows)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    make_key(3, key);
    fv_store_output outputs[OUTPUT_COUNT];
    sample_outputs(outputs);
    fv_store_provenance provenance = sample_provenance(key);
    fv_store_writer *writer;
    FV_ASSERT_OK(fv_store_begin(store, &provenance, OUTPUT_COUNT, outputs, &writer));
    FV_ASSERT_OK(write_block(writer, outputs, (row_block){3, 10, 20}));
    ck_assert_int_eq(write_block(writer, outputs, (row_block){3, 29, 5}), FV_ERR_INTERNAL);
    assert_message_contains("already written");
    ck_assert_int_eq(write_block(writer, outputs, (row_block){3, 0, 11}), FV_ERR_INTERNAL);
    ck_assert_int_eq(write_block(writer, outputs, (row_block){3, 295, 6}), FV_ERR_INTERNAL);
    assert_message_contains("outside output 3");
    FV_ASSERT_OK(write_block(writer, outputs, (row_block){3, 0, 10}));  /* adjacent: fine */
    FV_ASSERT_OK(write_block(writer, outputs, (row_block){3, 30, 270}));
    ck_assert_int_eq(fv_store_write_rows(writer, OUTPUT_COUNT, 0, 1, NULL, NULL),
                     FV_ERR_INTERNAL);
    fv_store_abort(writer);
    assert_directory_holds(store_directory, 0, 0);

    /* Bad descriptions are refused before any file is made. */
    fv_store_output bad = outputs[2];
    bad.rank = 5;
    ck_assert_int_eq(fv_store_begin(store, &provenance, 1, &bad, &writer), FV_ERR_INPUT);
    bad = outputs[2];
    bad.extents[1] = -3;
    ck_assert_int_eq(fv_store_begin(store, &provenance, 1, &bad, &writer), FV_ERR_INPUT);
    provenance.key = "not-a-key";
    ck_assert_int_eq(fv_store_begin(store, &provenance, 1, outputs, &writer), FV_ERR_INPUT);
    assert_directory_holds(store_directory, 0, 0);
    fv_store_close(store);
}
END_TEST

/* -------------------------------------------------------- concurrency */

static int writer_process(const char *directory, const char *key, int barrier, uint64_t seed)
{
    char byte;
    if (read(barrier, &byte, 1) != 0) /* released together when the pipe closes */
        return 3;
    fv_store *store;
    if (fv_store_open(directory, FV_STORE_DEFAULT_MAX_BYTES, &store) != FV_OK)
        return 1;
    fv_status status = build_entry(store, key, seed);
    if (status != FV_OK)
        fprintf(stderr, "writer %d: %s\n", (int)getpid(), fv_error_message());
    fv_store_close(store);
    return status == FV_OK ? 0 : 2;
}

START_TEST(test_concurrent_writers)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    make_key(4, key);
    int barrier[2];
    ck_assert_int_eq(pipe(barrier), 0);
    pid_t children[WRITER_PROCESSES];
    for (int i = 0; i < WRITER_PROCESSES; i++) {
        children[i] = fork();
        ck_assert_int_ge(children[i], 0);
        if (children[i] == 0) {
            close(barrier[1]);
            _exit(writer_process(store_directory, key, barrier[0], 100 + (uint64_t)i));
        }
    }
    close(barrier[0]);
    close(barrier[1]);
    for (int i = 0; i < WRITER_PROCESSES; i++) {
        int wait_status;
        ck_assert_int_eq(waitpid(children[i], &wait_status, 0), children[i]);
        ck_assert(WIFEXITED(wait_status));
        ck_assert_int_eq(WEXITSTATUS(wait_status), 0);
    }
    assert_directory_holds(store_directory, 1, 0);
    fv_store_reader *reader;
    FV_ASSERT_OK(fv_store_open_entry(store, key, &reader));
    FV_ASSERT_OK(fv_store_verify(reader));
    check_contents(reader, 64);
    fv_store_close_entry(reader);
    fv_store_close(store);
}
END_TEST

/* A reader that opened an entry keeps reading it while a new one replaces it. */
START_TEST(test_reader_survives_replacement)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    make_key(5, key);
    FV_ASSERT_OK(build_entry(store, key, 1));
    fv_store_reader *reader;
    FV_ASSERT_OK(fv_store_open_entry(store, key, &reader));
    FV_ASSERT_OK(build_entry(store, key, 2));
    check_contents(reader, 50);
    FV_ASSERT_OK(fv_store_verify(reader));
    fv_store_close_entry(reader);
    assert_directory_holds(store_directory, 1, 0);
    fv_store_close(store);
}
END_TEST

/* ---------------------------------------------------------- corruption */

/* Flips one byte in the middle of chunk `chunk_index` of /outputs/<output>/value. */
static void flip_chunk_byte(const char *path, int output, hsize_t chunk_index)
{
    hid_t file = open_raw(path);
    char name[64];
    snprintf(name, sizeof name, "/outputs/%d/value", output);
    hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
    ck_assert_int_ge(dataset, 0);
    hid_t space = H5Dget_space(dataset);
    ck_assert_int_ge(space, 0);
    hsize_t chunks = 0;
    ck_assert_int_ge(H5Dget_num_chunks(dataset, space, &chunks), 0);
    ck_assert(chunk_index < chunks);
    hsize_t offset[FV_MAX_RANK];
    unsigned filter_mask;
    haddr_t address;
    hsize_t size;
    ck_assert_int_ge(H5Dget_chunk_info(dataset, space, chunk_index, offset, &filter_mask,
                                       &address, &size), 0);
    H5Sclose(space);
    ck_assert_int_eq((int)offset[0], 131 * (int)chunk_index); /* 131 rows of 1000 */
    H5Dclose(dataset);
    H5Fclose(file);

    FILE *stream = fopen(path, "r+b");
    ck_assert_ptr_nonnull(stream);
    long position = (long)(address + size / 2);
    ck_assert_int_eq(fseek(stream, position, SEEK_SET), 0);
    int byte = fgetc(stream);
    ck_assert_int_ne(byte, EOF);
    ck_assert_int_eq(fseek(stream, position, SEEK_SET), 0);
    ck_assert_int_ne(fputc(byte ^ 0x5a, stream), EOF);
    ck_assert_int_eq(fclose(stream), 0);
}

START_TEST(test_flipped_byte_detected_and_rebuilt)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1], path[1024];
    make_key(6, key);
    entry_path(store, key, path);
    FV_ASSERT_OK(build_entry(store, key, 3));
    flip_chunk_byte(path, 3, 1); /* rows [131, 262) of T3 */

    fv_store_reader *reader;
    FV_ASSERT_OK(fv_store_open_entry(store, key, &reader)); /* metadata is intact */
    double *values = malloc(300 * 1000 * sizeof(double));
    double *bounds = malloc(300 * 1000 * sizeof(double));
    ck_assert(values != NULL && bounds != NULL);
    FV_ASSERT_OK(fv_store_read_rows(reader, 3, 0, 131, values, bounds));
    FV_ASSERT_OK(fv_store_read_rows(reader, 3, 100, 100, NULL, bounds));
    ck_assert_int_eq(fv_store_read_rows(reader, 3, 100, 100, values, bounds), FV_ERR_CORRUPT);
    assert_message_contains(path);
    assert_message_contains("/outputs/3/value");
    ck_assert_int_eq(fv_store_verify(reader), FV_ERR_CORRUPT);
    assert_message_contains(path);
    fv_store_close_entry(reader);

    FV_ASSERT_OK(fv_store_remove(store, key));
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_NOT_FOUND);
    FV_ASSERT_OK(fv_store_remove(store, key)); /* already gone: fine */
    FV_ASSERT_OK(build_entry(store, key, 4));
    FV_ASSERT_OK(fv_store_open_entry(store, key, &reader));
    FV_ASSERT_OK(fv_store_verify(reader));
    check_contents(reader, 100);
    fv_store_close_entry(reader);
    free(values);
    free(bounds);
    fv_store_close(store);
}
END_TEST

START_TEST(test_truncated_file_detected)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1], path[1024];
    make_key(7, key);
    entry_path(store, key, path);
    FV_ASSERT_OK(build_entry(store, key, 5));
    struct stat info;
    ck_assert_int_eq(stat(path, &info), 0);
    ck_assert_int_eq(truncate(path, info.st_size / 2), 0);
    fv_store_reader *reader = NULL;
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_CORRUPT);
    assert_message_contains(path);
    ck_assert_ptr_null(reader);

    ck_assert_int_eq(fv_test_write_file(path, "not an HDF5 file\n"), 0);
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_CORRUPT);
    assert_message_contains(path);
    ck_assert_int_eq(fv_test_write_file(path, ""), 0);
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_CORRUPT);
    fv_store_close(store);
}
END_TEST

START_TEST(test_format_version_mismatch_detected)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1], path[1024];
    make_key(8, key);
    entry_path(store, key, path);
    FV_ASSERT_OK(build_entry(store, key, 6));
    hid_t file = open_raw(path);
    FV_ASSERT_OK(fv_h5_write_int64_attribute(file, "format_version", 2, path));
    ck_assert_int_ge(H5Fclose(file), 0);
    fv_store_reader *reader;
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_CORRUPT);
    assert_message_contains(path);
    assert_message_contains("format version 2");
    fv_store_close(store);
}
END_TEST

START_TEST(test_key_mismatch_detected)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1], other[FV_STORE_KEY_LENGTH + 1];
    char path[1024], other_path[1024];
    make_key(9, key);
    make_key(10, other);
    entry_path(store, key, path);
    entry_path(store, other, other_path);
    FV_ASSERT_OK(build_entry(store, key, 7));
    ck_assert_int_eq(rename(path, other_path), 0);
    fv_store_reader *reader;
    ck_assert_int_eq(fv_store_open_entry(store, other, &reader), FV_ERR_CORRUPT);
    assert_message_contains(other_path);
    assert_message_contains("stored key");
    fv_store_close(store);
}
END_TEST

START_TEST(test_structure_damage_detected)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1], path[1024];
    make_key(11, key);
    entry_path(store, key, path);
    FV_ASSERT_OK(build_entry(store, key, 8));
    hid_t file = open_raw(path);
    ck_assert_int_ge(H5Ldelete(file, "/outputs/1/bound", H5P_DEFAULT), 0);
    ck_assert_int_ge(H5Fclose(file), 0);
    fv_store_reader *reader;
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_CORRUPT);
    assert_message_contains("/outputs/1/bound");

    FV_ASSERT_OK(build_entry(store, key, 9));
    file = open_raw(path);
    hid_t group = H5Gopen2(file, "/outputs/2", H5P_DEFAULT);
    ck_assert_int_ge(group, 0);
    FV_ASSERT_OK(fv_h5_write_string_attribute(group, "rank", "two", path));
    H5Gclose(group);
    ck_assert_int_ge(H5Fclose(file), 0);
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_CORRUPT);
    assert_message_contains("'rank'");
    fv_store_close(store);
}
END_TEST

/* --------------------------------------------------- policy and errors */

START_TEST(test_size_policy)
{
    fv_store_output big = make_output("T", 2, (int64_t[]){16384, 32768}, FV_BF16, 32768);
    fv_store_output small = make_output("T", 2, (int64_t[]){16384, 2048}, FV_BF16, 2048);
    fv_store_output scalar = make_output("S", 0, NULL, FV_F32, 1);
    ck_assert_int_eq(fv_store_case_bytes(1, &big), (int64_t)16384 * 32768 * 16);
    ck_assert_int_eq(fv_store_case_bytes(1, &scalar), 16);
    fv_store_output pair[2] = {small, scalar};
    ck_assert_int_eq(fv_store_case_bytes(2, pair), (int64_t)16384 * 2048 * 16 + 16);
    ck_assert_int_eq(fv_store_case_bytes(0, NULL), 0);
    fv_store_output huge = make_output("H", 4, (int64_t[]){1 << 20, 1 << 20, 1 << 20, 4},
                                       FV_F32, 1);
    ck_assert_int_eq(fv_store_case_bytes(1, &huge), INT64_MAX);
    fv_store_output negative = make_output("N", 1, (int64_t[]){-1}, FV_F32, 1);
    ck_assert_int_eq(fv_store_case_bytes(1, &negative), INT64_MAX);

    fv_store *store = open_test_store();
    ck_assert(!fv_store_keeps(store, fv_store_case_bytes(1, &big)));
    ck_assert(fv_store_keeps(store, fv_store_case_bytes(1, &small)));
    ck_assert(fv_store_keeps(store, FV_STORE_DEFAULT_MAX_BYTES));
    ck_assert(!fv_store_keeps(store, FV_STORE_DEFAULT_MAX_BYTES + 1));
    ck_assert(!fv_store_keeps(store, INT64_MAX));
    fv_store_close(store);
    FV_ASSERT_OK(fv_store_open(fv_test_path("unlimited"), -1, &store));
    ck_assert(fv_store_keeps(store, fv_store_case_bytes(1, &big)));
    fv_store_close(store);
    FV_ASSERT_OK(fv_store_open(fv_test_path("nothing"), 0, &store));
    ck_assert(!fv_store_keeps(store, 16));
    fv_store_close(store);
}
END_TEST

START_TEST(test_unwritable_directory)
{
    const char *blocker = fv_test_path("plain-file");
    ck_assert_int_eq(fv_test_write_file(blocker, "x"), 0);
    char directory[1024];
    snprintf(directory, sizeof directory, "%s/store", blocker);
    fv_store *store;
    ck_assert_int_eq(fv_store_open(directory, FV_STORE_DEFAULT_MAX_BYTES, &store), FV_ERR_IO);
    assert_message_contains(directory);
    ck_assert_int_eq(fv_store_open(blocker, FV_STORE_DEFAULT_MAX_BYTES, &store), FV_ERR_IO);
    assert_message_contains("not a directory");

    /* A directory that disappears (or becomes unwritable) after opening. */
    store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    make_key(12, key);
    ck_assert_int_eq(rmdir(store_directory), 0);
    ck_assert_int_eq(build_entry(store, key, 1), FV_ERR_IO);
    assert_message_contains(store_directory);
    fv_store_close(store);

    if (geteuid() != 0) { /* root ignores permissions */
        store = open_test_store();
        ck_assert_int_eq(chmod(store_directory, 0555), 0);
        ck_assert_int_eq(build_entry(store, key, 1), FV_ERR_IO);
        assert_message_contains(store_directory);
        ck_assert_int_eq(chmod(store_directory, 0755), 0);
        fv_store_close(store);
    }
}
END_TEST

START_TEST(test_missing_and_invalid_keys)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    make_key(13, key);
    fv_store_reader *reader = NULL;
    ck_assert_int_eq(fv_store_open_entry(store, key, &reader), FV_ERR_NOT_FOUND);
    assert_message_contains(key);
    ck_assert_ptr_null(reader);
    const char *bad_keys[] = {"", "abc", "../../etc/passwd",
                              "ABCDEF0000000000000000000000000000000000000000000000000000000000",
                              "0000000000000000000000000000000000000000000000000000000000000000a"};
    for (size_t i = 0; i < sizeof bad_keys / sizeof *bad_keys; i++) {
        ck_assert_int_eq(fv_store_open_entry(store, bad_keys[i], &reader), FV_ERR_INPUT);
        ck_assert_int_eq(fv_store_remove(store, bad_keys[i]), FV_ERR_INPUT);
    }
    char small[16];
    ck_assert_int_eq(fv_store_entry_path(store, key, small, sizeof small), FV_ERR_INTERNAL);
    char path[1024];
    entry_path(store, key, path);
    ck_assert(strstr(path, store_directory) == path);
    ck_assert_str_eq(path + strlen(path) - 3, ".h5");
    fv_store_close(store);
}
END_TEST

/* ------------------------------------------------------------- h5util */

/* A thread other than the first to call fv_h5_init gets HDF5's printing
 * turned off too (thread-safe builds keep it per thread), and its failures
 * still carry the innermost HDF5 description (printing consumes the stack). */
static void *quiet_thread(void *unused)
{
    (void)unused;
    bool *quiet = malloc(sizeof *quiet);
    if (quiet == NULL || fv_h5_init() != FV_OK)
        return quiet;
    H5E_auto2_t printer = NULL;
    void *data = NULL;
    *quiet = H5Eget_auto2(H5E_DEFAULT, &printer, &data) >= 0 && printer == NULL;
    const char *missing = fv_test_path("no-such-file-either.h5");
    hid_t file = H5Fopen(missing, H5F_ACC_RDONLY, H5P_DEFAULT);
    fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, missing, "opening %s", "from a thread");
    *quiet = *quiet && file < 0 && strstr(fv_error_message(), "unable to open file") != NULL;
    return quiet;
}

START_TEST(test_h5_quiet_in_every_thread)
{
    FV_ASSERT_OK(fv_h5_init());
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, quiet_thread, NULL), 0);
    void *result = NULL;
    ck_assert_int_eq(pthread_join(thread, &result), 0);
    ck_assert_ptr_nonnull(result);
    ck_assert(*(bool *)result);
    free(result);
}
END_TEST

/* Evaluator threads write reference rows without calling fv_h5_init
 * themselves: fv_store_write_rows turns HDF5's printing off in the thread
 * it runs in (a full disk printed HDF5's whole error stack from there). */
typedef struct writer_thread_work {
    fv_store_writer *writer;
    const fv_store_output *outputs;
    fv_status status;
    bool quiet;
} writer_thread_work;

static void *writer_thread(void *argument)
{
    writer_thread_work *work = argument;
    for (int i = 0; i < OUTPUT_COUNT && work->status == FV_OK; i++)
        if (rows_of(&work->outputs[i]) > 0)
            work->status = write_block(work->writer, work->outputs,
                                       (row_block){i, 0, rows_of(&work->outputs[i])});
    H5E_auto2_t printer = NULL;
    void *data = NULL;
    work->quiet = H5Eget_auto2(H5E_DEFAULT, &printer, &data) >= 0 && printer == NULL;
    return NULL;
}

START_TEST(test_rows_written_quietly_from_any_thread)
{
    fv_store *store = open_test_store();
    char key[FV_STORE_KEY_LENGTH + 1];
    fv_store_output outputs[OUTPUT_COUNT];
    fv_store_writer *writer = begin_sample_entry(store, 9, key, outputs);
    writer_thread_work work = {.writer = writer, .outputs = outputs, .status = FV_OK};
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, writer_thread, &work), 0);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
    FV_ASSERT_OK(work.status);
    ck_assert(work.quiet);
    FV_ASSERT_OK(fv_store_commit(writer));
    fv_store_close(store);
}
END_TEST

START_TEST(test_h5_errors_and_attributes)
{
    FV_ASSERT_OK(fv_h5_init());
    const char *missing = fv_test_path("no-such-file.h5");
    hid_t file = H5Fopen(missing, H5F_ACC_RDONLY, H5P_DEFAULT);
    ck_assert_int_lt(file, 0);
    fv_status status = fv_h5_raise(FV_ERR_HDF5, __FILE__, __LINE__, missing, "opening %s",
                                   "a test file");
    ck_assert_int_eq(status, FV_ERR_HDF5);
    assert_message_contains("opening a test file in ");
    assert_message_contains(missing);
    assert_message_contains("unable to open file"); /* the innermost HDF5 description */
    ck_assert(!fv_h5_last_failure_was_checksum());

    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("attributes.h5"));
    hid_t access;
    FV_ASSERT_OK(fv_h5_file_access(&access));
    file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, access);
    ck_assert_int_ge(file, 0);
    FV_ASSERT_OK(fv_h5_write_string_attribute(file, "text", "first", path));
    FV_ASSERT_OK(fv_h5_write_string_attribute(file, "text", "second \xc3\xa9", path));
    FV_ASSERT_OK(fv_h5_write_string_attribute(file, "empty", NULL, path));
    FV_ASSERT_OK(fv_h5_write_int64_attribute(file, "signed", INT64_MIN, path));
    FV_ASSERT_OK(fv_h5_write_uint64_attribute(file, "unsigned", UINT64_MAX, path));
    FV_ASSERT_OK(fv_h5_write_double_attribute(file, "real", -0.1, path));
    FV_ASSERT_OK(fv_h5_write_int64_array_attribute(file, "array", 3, (int64_t[]){4, 5, 6},
                                                   path));
    FV_ASSERT_OK(fv_h5_write_int64_array_attribute(file, "none", 0, NULL, path));
    ck_assert_int_ge(H5Fclose(file), 0);

    file = H5Fopen(path, H5F_ACC_RDONLY, access);
    ck_assert_int_ge(file, 0);
    char *text = NULL;
    FV_ASSERT_OK(fv_h5_read_string_attribute(file, "text", path, &text));
    ck_assert_str_eq(text, "second \xc3\xa9");
    free(text);
    FV_ASSERT_OK(fv_h5_read_string_attribute(file, "empty", path, &text));
    ck_assert_str_eq(text, "");
    free(text);
    int64_t signed_value;
    uint64_t unsigned_value;
    double real;
    FV_ASSERT_OK(fv_h5_read_int64_attribute(file, "signed", path, &signed_value));
    ck_assert(signed_value == INT64_MIN);
    FV_ASSERT_OK(fv_h5_read_uint64_attribute(file, "unsigned", path, &unsigned_value));
    ck_assert(unsigned_value == UINT64_MAX);
    FV_ASSERT_OK(fv_h5_read_double_attribute(file, "real", path, &real));
    ck_assert(real == -0.1);
    int64_t array[4];
    int count = -1;
    FV_ASSERT_OK(fv_h5_read_int64_array_attribute(file, "array", path, 4, array, &count));
    ck_assert_int_eq(count, 3);
    ck_assert(array[0] == 4 && array[1] == 5 && array[2] == 6);
    FV_ASSERT_OK(fv_h5_read_int64_array_attribute(file, "none", path, 4, array, &count));
    ck_assert_int_eq(count, 0);
    ck_assert_int_eq(fv_h5_read_int64_array_attribute(file, "array", path, 2, array, &count),
                     FV_ERR_CORRUPT);
    ck_assert_int_eq(fv_h5_read_int64_attribute(file, "array", path, &signed_value),
                     FV_ERR_CORRUPT);
    ck_assert_int_eq(fv_h5_read_int64_attribute(file, "text", path, &signed_value),
                     FV_ERR_CORRUPT);
    ck_assert_int_eq(fv_h5_read_string_attribute(file, "real", path, &text), FV_ERR_CORRUPT);
    ck_assert_int_eq(fv_h5_read_double_attribute(file, "absent", path, &real),
                     FV_ERR_NOT_FOUND);
    assert_message_contains("'absent'");
    ck_assert_int_eq(fv_h5_write_int64_attribute(file, "read-only", 1, path), FV_ERR_HDF5);
    assert_message_contains(path);
    ck_assert_int_ge(H5Fclose(file), 0);
    H5Pclose(access);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("store");
    TCase *writing = tcase_create("writing");
    tcase_set_timeout(writing, 60);
    tcase_add_test(writing, test_round_trip);
    tcase_add_test(writing, test_commit_rejects_missing_rows);
    tcase_add_test(writing, test_write_rejects_bad_rows);
    tcase_add_test(writing, test_concurrent_writers);
    tcase_add_test(writing, test_reader_survives_replacement);
    suite_add_tcase(suite, writing);

    TCase *corruption = tcase_create("corruption");
    tcase_set_timeout(corruption, 60);
    tcase_add_test(corruption, test_flipped_byte_detected_and_rebuilt);
    tcase_add_test(corruption, test_truncated_file_detected);
    tcase_add_test(corruption, test_format_version_mismatch_detected);
    tcase_add_test(corruption, test_key_mismatch_detected);
    tcase_add_test(corruption, test_structure_damage_detected);
    suite_add_tcase(suite, corruption);

    TCase *policy = tcase_create("policy");
    tcase_add_test(policy, test_size_policy);
    tcase_add_test(policy, test_unwritable_directory);
    tcase_add_test(policy, test_missing_and_invalid_keys);
    suite_add_tcase(suite, policy);

    TCase *h5util = tcase_create("h5util");
    tcase_add_test(h5util, test_h5_errors_and_attributes);
    tcase_add_test(h5util, test_h5_quiet_in_every_thread);
    tcase_add_test(h5util, test_rows_written_quietly_from_any_thread);
    suite_add_tcase(suite, h5util);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
