/* check_archive.c: tests of the HDF5 result archive (service/archive.h):
 * column coverage of the mirrored structs, round trips of rows, samples,
 * devices, kernels and provenance, resume, durability after SIGKILL, write
 * failures (a flush that does not fit is refused before it writes), and the
 * errors of unusable paths and foreign files. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/h5util.h"
#include "service/archive.h"
#include "test_support.h"

enum { MAX_TEST_SAMPLES = 40 };

/* ---------------------------------------------------------- field lists */

/* The fields of fv_result and fv_archive_device, written out by hand from
 * the headers, so that a column missing from the archive's tables fails. */
typedef struct test_field {
    const char *name;
    size_t offset, size;
    char kind; /* 's' string, 'i' int32, 'l' int64, 'u' uint64, 'd' double */
} test_field;

#define FIELD(type, member, kind)                                                     \
    {#member, offsetof(type, member), sizeof(((type *)0)->member), kind}
#define R(member, kind) FIELD(fv_result, member, kind)
#define D(member, kind) FIELD(fv_archive_device, member, kind)

static const test_field result_fields[] = {
    R(case_id, 's'),       R(family, 's'),         R(dtype, 's'),
    R(sizes, 's'),         R(seed, 'u'),           R(source, 's'),
    R(approach, 's'),      R(taken_approach, 's'), R(auto_approach, 's'),
    R(status, 'i'),        R(stage, 's'),
    R(message, 's'),       R(segment_count, 'i'),  R(schedulers, 's'),
    R(parameters, 's'),    R(kernel_hashes, 's'),  R(arch, 's'),
    R(registers, 'i'),     R(spill_bytes, 'i'),    R(shared_bytes, 'i'),
    R(local_bytes, 'i'),   R(compile_ms, 'd'),     R(kernels, 'i'),
    R(cache_hits, 'i'),    R(tolerance, 's'),      R(elements, 'l'),
    R(mismatches, 'l'),    R(worst_ratio, 'd'),    R(worst_absolute, 'd'),
    R(worst_relative, 'd'), R(reference_source, 's'), R(reference_ms, 'd'),
    R(repeats, 'i'),       R(time_median_ms, 'd'), R(time_min_ms, 'd'),
    R(time_max_ms, 'd'),   R(io_bytes, 'd'),       R(bandwidth_gbs, 'd'),
    R(copy_bandwidth_gbs, 'd'), R(percent_of_copy, 'd'), R(rank, 'i'),
    R(host, 's'),          R(gpu_name, 's'),       R(gpu_uuid, 's'),
    R(inputs_ms, 'd'),     R(outputs_ms, 'd'),     R(timing_ms, 'd'),
    R(sized_copy_gbs, 'd'), R(percent_of_sized_copy, 'd'),
    R(wall_ms, 'd'),       R(finished_at, 'd'),    R(repro, 's'),
};

static const test_field device_fields[] = {
    D(rank, 'i'),          D(host, 's'),           D(gpu_name, 's'),
    D(gpu_uuid, 's'),      D(pci_bus_id, 's'),     D(compute_major, 'i'),
    D(compute_minor, 'i'), D(sm_count, 'i'),       D(memory_bytes, 'l'),
    D(copy_bandwidth_gbs, 'd'),
};

#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

static char column_kind_letter(fv_archive_column_kind kind)
{
    switch (kind) {
    case FV_ARCHIVE_STRING: return 's';
    case FV_ARCHIVE_INT32: return 'i';
    case FV_ARCHIVE_INT64: return 'l';
    case FV_ARCHIVE_UINT64: return 'u';
    default: return 'd';
    }
}

static size_t align_up(size_t value, size_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

/* The columns tile the struct: in order, each at the next offset its
 * alignment allows (so only padding lies between them), the last one ending
 * where the struct's size, rounded to 8, ends. */
static void check_columns_tile(const fv_archive_column *columns, int count, size_t struct_size,
                               const char *what)
{
    size_t end = 0;
    for (int i = 0; i < count; i++) {
        size_t alignment = columns[i].kind == FV_ARCHIVE_STRING ? 1 : columns[i].size;
        ck_assert_msg(columns[i].offset == align_up(end, alignment),
                      "%s: a field is missing before column '%s' (offset %zu, previous end %zu)",
                      what, columns[i].name, columns[i].offset, end);
        end = columns[i].offset + columns[i].size;
    }
    ck_assert_msg(align_up(end, 8) == struct_size, "%s: fields after the last column (%zu of %zu)",
                  what, end, struct_size);
}

/* The archive's columns are exactly the hand-written fields, in order. */
static void check_columns_match(const fv_archive_column *columns, int count,
                                const test_field *fields, int field_count, const char *what)
{
    ck_assert_msg(count == field_count, "%s: %d columns for %d fields", what, count, field_count);
    for (int i = 0; i < count; i++) {
        ck_assert_str_eq(columns[i].name, fields[i].name);
        ck_assert_uint_eq(columns[i].offset, fields[i].offset);
        ck_assert_uint_eq(columns[i].size, fields[i].size);
        ck_assert_int_eq(column_kind_letter(columns[i].kind), fields[i].kind);
    }
}

START_TEST(test_columns_cover_structs)
{
    int count = 0;
    const fv_archive_column *columns = fv_archive_result_columns(&count);
    check_columns_match(columns, count, result_fields, COUNT(result_fields), "fv_result");
    check_columns_tile(columns, count, sizeof(fv_result), "fv_result");
    columns = fv_archive_device_columns(&count);
    check_columns_match(columns, count, device_fields, COUNT(device_fields), "fv_archive_device");
    check_columns_tile(columns, count, sizeof(fv_archive_device), "fv_archive_device");
}
END_TEST

/* ------------------------------------------------------------- fixtures */

/* Sets every field to a value that differs per field and per `variant`;
 * strings get their name, the variant and filler up to about half their
 * capacity. */
static void fill_fields(void *record, const test_field *fields, int count, int variant)
{
    for (int f = 0; f < count; f++) {
        char *field = (char *)record + fields[f].offset;
        switch (fields[f].kind) {
        case 's': {
            int written = snprintf(field, fields[f].size, "%s/%d/", fields[f].name, variant);
            for (size_t c = (size_t)written; c < fields[f].size / 2; c++)
                field[c] = (char)('a' + (c + (size_t)f + (size_t)variant) % 26);
            break;
        }
        case 'i': {
            int32_t value = -(int32_t)(1000 * variant + f + 1);
            memcpy(field, &value, sizeof value);
            break;
        }
        case 'l': {
            int64_t value = ((int64_t)1 << 40) * (variant + 1) + f;
            memcpy(field, &value, sizeof value);
            break;
        }
        case 'u': {
            uint64_t value = 0xF000000000000000ULL + (uint64_t)variant * 977 + (uint64_t)f;
            memcpy(field, &value, sizeof value);
            break;
        }
        default: {
            double value = (f + 1) * 1.25 + variant * 1e-3 + 1e9 * (variant % 3);
            memcpy(field, &value, sizeof value);
            break;
        }
        }
    }
}

static void check_fields_equal(const void *expected, const void *actual,
                               const test_field *fields, int count, const char *what)
{
    for (int f = 0; f < count; f++) {
        const char *want = (const char *)expected + fields[f].offset;
        const char *got = (const char *)actual + fields[f].offset;
        if (fields[f].kind == 's')
            ck_assert_msg(strcmp(want, got) == 0, "%s field %s: '%s' read back as '%s'", what,
                          fields[f].name, want, got);
        else
            ck_assert_msg(memcmp(want, got, fields[f].size) == 0, "%s field %s differs", what,
                          fields[f].name);
    }
}

static fv_result make_result(int variant)
{
    fv_result result;
    memset(&result, 0, sizeof result);
    fill_fields(&result, result_fields, COUNT(result_fields), variant);
    snprintf(result.case_id, sizeof result.case_id, "layer_norm_bwd/bf16/%dx2048/s%d",
             1024 + variant, variant);
    result.status = variant % FV_RESULT_STATUS_COUNT;
    return result;
}

static fv_archive_device make_device(int rank)
{
    fv_archive_device device;
    memset(&device, 0, sizeof device);
    fill_fields(&device, device_fields, COUNT(device_fields), rank);
    device.rank = rank;
    return device;
}

/* Repeat r of row `row` takes 0.5 + row + r / 64 ms; row r has r % 5 * 3
 * samples (row 0 none). */
static int samples_of(int row, double samples[MAX_TEST_SAMPLES])
{
    int count = row % 5 * 3;
    for (int r = 0; r < count; r++)
        samples[r] = 0.5 + row + r / 64.0;
    return count;
}

static fv_archive_provenance make_provenance(void)
{
    return (fv_archive_provenance){
        .tool_version = "0.1.0",
        .git_revision = "abcdef012345",
        .command_line = "fuservalidate run --archive run.h5 cases/",
        .started_at = "2024-05-01T12:34:56Z",
        .mpi_size = 4,
        .hosts = "node1,node2",
        .driver_version = "12.4",
        .nvrtc_version = "12.4",
        .tolerance_policy = "bound",
        .mode = "run",
        .l2_flush = "read",
        /* Ignored by create: */
        .finished_at = "1999-01-01T00:00:00Z",
        .exit_status = 77,
        .resume_count = 5,
        .format_version = 99,
    };
}

static fv_archive *create_archive(const char *path)
{
    fv_archive_provenance provenance = make_provenance();
    fv_archive *archive = NULL;
    FV_ASSERT_OK(fv_archive_create(path, &provenance, &archive));
    ck_assert_ptr_nonnull(archive);
    return archive;
}

/* Appends rows [first, first + count) made by make_result / samples_of. */
static void append_rows(fv_archive *archive, int first, int count)
{
    for (int row = first; row < first + count; row++) {
        fv_result result = make_result(row);
        double samples[MAX_TEST_SAMPLES];
        int sample_count = samples_of(row, samples);
        FV_ASSERT_OK(fv_archive_append(archive, &result, samples, sample_count));
    }
}

/* Rows [0, count) read back equal make_result / samples_of. */
static void check_rows(fv_archive_reader *reader, int count)
{
    for (int row = 0; row < count; row++) {
        fv_result expected = make_result(row), actual;
        memset(&actual, 0x5a, sizeof actual);
        FV_ASSERT_OK(fv_archive_read_row(reader, row, &actual));
        char what[32];
        snprintf(what, sizeof what, "row %d", row);
        check_fields_equal(&expected, &actual, result_fields, COUNT(result_fields), what);
        double want[MAX_TEST_SAMPLES], got[MAX_TEST_SAMPLES];
        int want_count = samples_of(row, want), got_count = -1;
        FV_ASSERT_OK(fv_archive_read_samples(reader, row, got, MAX_TEST_SAMPLES, &got_count));
        ck_assert_int_eq(got_count, want_count);
        for (int r = 0; r < want_count; r++)
            ck_assert_double_eq(got[r], want[r]);
    }
}

static fv_archive_reader *open_reader(const char *path)
{
    fv_archive_reader *reader = NULL;
    FV_ASSERT_OK(fv_archive_open_read(path, &reader));
    ck_assert_ptr_nonnull(reader);
    return reader;
}

static bool file_exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

static bool have_h5dump(void)
{
    return system("command -v h5dump > /dev/null 2>&1") == 0;
}

/* Runs `h5dump -H` on a file; returns its exit status. */
static int h5dump_header(const char *path)
{
    char command[2048];
    snprintf(command, sizeof command, "h5dump -H '%s' > /dev/null 2>&1", path);
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char KERNEL_HASH_A[] = "0123456789abcdef";
static const char KERNEL_HASH_B[] = "fedcba98765432100123456789abcdef";
static const char KERNEL_HASH_C[] =
    "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbccccccccccccccccdddddddddddddddd";
static const char SOURCE_A[] = "extern \"C\" __global__ void kernel_a(float *x) { x[0] = 1; }\n";
static const char SOURCE_B[] = "extern \"C\" __global__ void kernel_b(float *x) { x[1] = 2; }\n";

/* ---------------------------------------------------------- round trips */

START_TEST(test_round_trip)
{
    const char *path = fv_test_path("round_trip.h5");
    char saved_path[1024];
    snprintf(saved_path, sizeof saved_path, "%s", path);
    fv_archive *archive = create_archive(saved_path);
    fv_archive_device devices[3] = {make_device(0), make_device(1), make_device(2)};
    for (int i = 0; i < 3; i++)
        FV_ASSERT_OK(fv_archive_add_device(archive, &devices[i]));
    append_rows(archive, 0, 7);
    FV_ASSERT_OK(fv_archive_flush(archive));
    append_rows(archive, 7, 4);
    fv_archive_provenance update = {.hosts = "node1,node2,node3", .mpi_size = 6,
                                    .driver_version = "12.5", .started_at = "ignored"};
    FV_ASSERT_OK(fv_archive_update_provenance(archive, &update));
    fv_archive_provenance bad_mode = {.mode = "fast"};
    ck_assert_int_eq(fv_archive_update_provenance(archive, &bad_mode), FV_ERR_INTERNAL);
    FV_ASSERT_OK(fv_archive_close(archive, 1));

    fv_archive_reader *reader = open_reader(saved_path);
    ck_assert_int_eq(fv_archive_row_count(reader), 11);
    check_rows(reader, 11);
    fv_result bulk[11];
    FV_ASSERT_OK(fv_archive_read_rows(reader, 0, 11, bulk));
    ck_assert_str_eq(bulk[10].case_id, "layer_norm_bwd/bf16/1034x2048/s10");
    ck_assert_uint_eq(bulk[3].seed, make_result(3).seed);
    ck_assert_double_eq(bulk[4].worst_ratio, make_result(4).worst_ratio);
    ck_assert_int_eq(bulk[5].status, 5);

    ck_assert_int_eq(fv_archive_device_count(reader), 3);
    for (int i = 0; i < 3; i++) {
        fv_archive_device device;
        FV_ASSERT_OK(fv_archive_read_device(reader, i, &device));
        check_fields_equal(&devices[i], &device, device_fields, COUNT(device_fields), "device");
    }

    fv_archive_provenance provenance;
    fv_archive_read_provenance(reader, &provenance);
    ck_assert_int_eq(provenance.format_version, FV_ARCHIVE_FORMAT_VERSION);
    ck_assert_str_eq(provenance.tool_version, "0.1.0");
    ck_assert_str_eq(provenance.git_revision, "abcdef012345");
    ck_assert_str_eq(provenance.command_line, "fuservalidate run --archive run.h5 cases/");
    ck_assert_str_eq(provenance.started_at, "2024-05-01T12:34:56Z");
    ck_assert_str_eq(provenance.hosts, "node1,node2,node3");
    ck_assert_int_eq(provenance.mpi_size, 6);
    ck_assert_str_eq(provenance.driver_version, "12.5");
    ck_assert_str_eq(provenance.nvrtc_version, "12.4");
    ck_assert_str_eq(provenance.tolerance_policy, "bound");
    ck_assert_str_eq(provenance.mode, "run");
    ck_assert_str_eq(provenance.l2_flush, "read");
    ck_assert_int_eq(provenance.exit_status, 1);
    ck_assert_int_eq(provenance.resume_count, 0);
    ck_assert(!provenance.replace_existing);
    /* finished_at is now, "YYYY-MM-DDTHH:MM:SSZ". */
    ck_assert_uint_eq(strlen(provenance.finished_at), 20);
    ck_assert_int_eq(provenance.finished_at[10], 'T');
    ck_assert_int_eq(provenance.finished_at[19], 'Z');
    ck_assert_str_ne(provenance.finished_at, "1999-01-01T00:00:00Z");

    fv_result outside;
    ck_assert_int_eq(fv_archive_read_row(reader, 11, &outside), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_archive_read_row(reader, -1, &outside), FV_ERR_INTERNAL);
    double samples[2];
    int count = 0;
    ck_assert_int_eq(fv_archive_read_samples(reader, 11, samples, 2, &count), FV_ERR_INTERNAL);
    /* Row 4 has 12 samples: too many for two. */
    ck_assert_int_eq(fv_archive_read_samples(reader, 4, samples, 2, &count), FV_ERR_CORRUPT);
    fv_archive_close_read(reader);
    ck_assert_int_eq(fv_archive_close(NULL, 0), FV_OK);
    fv_archive_close_read(NULL);
}
END_TEST

START_TEST(test_empty_archive_and_start_time)
{
    const char *path = fv_test_path("empty.h5");
    fv_archive_provenance provenance = make_provenance();
    provenance.started_at = NULL;
    provenance.hosts = NULL;
    provenance.mode = "compile-only";
    fv_archive *archive = NULL;
    FV_ASSERT_OK(fv_archive_create(path, &provenance, &archive));
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), 0);
    ck_assert_int_eq(fv_archive_device_count(reader), 0);
    ck_assert_int_eq(fv_archive_kernel_count(reader), 0);
    fv_archive_provenance stored;
    fv_archive_read_provenance(reader, &stored);
    ck_assert_uint_eq(strlen(stored.started_at), 20);
    ck_assert_str_eq(stored.hosts, "");
    ck_assert_str_eq(stored.mode, "compile-only");
    ck_assert_int_eq(stored.exit_status, 0);
    fv_archive_close_read(reader);
}
END_TEST

START_TEST(test_strings_truncated)
{
    const char *path = fv_test_path("strings.h5");
    fv_archive *archive = create_archive(path);
    fv_result result = make_result(0);
    memset(result.case_id, 'x', sizeof result.case_id);  /* unterminated */
    memset(result.family, 'a', sizeof result.family - 2); /* ...then a cut "é" */
    result.family[sizeof result.family - 2] = (char)0xC3;
    result.family[sizeof result.family - 1] = (char)0xA9;
    snprintf(result.host, sizeof result.host, "h\xC3\xA9te"); /* complete UTF-8 kept */
    memcpy(result.stage, "ok\0garbage", 11);
    FV_ASSERT_OK(fv_archive_append(archive, &result, NULL, 0));
    fv_archive_device device = make_device(0);
    memset(device.pci_bus_id, '7', sizeof device.pci_bus_id);
    FV_ASSERT_OK(fv_archive_add_device(archive, &device));
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    fv_archive_reader *reader = open_reader(path);
    fv_result read;
    FV_ASSERT_OK(fv_archive_read_row(reader, 0, &read));
    ck_assert_uint_eq(strlen(read.case_id), sizeof read.case_id - 1);
    ck_assert_uint_eq(strlen(read.family), sizeof read.family - 2);
    ck_assert_str_eq(read.host, "h\xC3\xA9te");
    ck_assert_str_eq(read.stage, "ok");
    for (size_t i = 2; i < sizeof read.stage; i++)
        ck_assert_int_eq(read.stage[i], 0);
    fv_archive_device stored;
    FV_ASSERT_OK(fv_archive_read_device(reader, 0, &stored));
    ck_assert_uint_eq(strlen(stored.pci_bus_id), sizeof stored.pci_bus_id - 1);
    fv_archive_close_read(reader);
}
END_TEST

START_TEST(test_append_rejects_bad_samples)
{
    fv_archive *archive = create_archive(fv_test_path("bad_samples.h5"));
    fv_result result = make_result(1);
    double samples[1] = {1.0};
    ck_assert_int_eq(fv_archive_append(archive, &result, samples, -1), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_archive_append(archive, &result, samples, FV_RESULT_MAX_SAMPLES + 1),
                     FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_archive_append(archive, &result, NULL, 1), FV_ERR_INTERNAL);
    FV_ASSERT_OK(fv_archive_append(archive, &result, samples, 1));
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    fv_archive_reader *reader = open_reader(fv_test_path("bad_samples.h5"));
    ck_assert_int_eq(fv_archive_row_count(reader), 1);
    fv_archive_close_read(reader);
}
END_TEST

START_TEST(test_many_rows_flush_automatically)
{
    /* More rows than the pending buffer holds, with the most samples each,
     * and no explicit flush. */
    const char *path = fv_test_path("many.h5");
    fv_archive *archive = create_archive(path);
    enum { ROWS = FV_ARCHIVE_PENDING_ROWS * 2 + 17 };
    static double samples[FV_RESULT_MAX_SAMPLES];
    for (int row = 0; row < ROWS; row++) {
        fv_result result = make_result(row);
        for (int r = 0; r < FV_RESULT_MAX_SAMPLES; r++)
            samples[r] = row * 1000.0 + r;
        FV_ASSERT_OK(fv_archive_append(archive, &result, samples, FV_RESULT_MAX_SAMPLES));
    }
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), ROWS);
    for (int row = 0; row < ROWS; row += 97) {
        fv_result result;
        FV_ASSERT_OK(fv_archive_read_row(reader, row, &result));
        ck_assert_str_eq(result.case_id, make_result(row).case_id);
        int count = 0;
        FV_ASSERT_OK(fv_archive_read_samples(reader, row, samples, FV_RESULT_MAX_SAMPLES,
                                             &count));
        ck_assert_int_eq(count, FV_RESULT_MAX_SAMPLES);
        ck_assert_double_eq(samples[0], row * 1000.0);
        ck_assert_double_eq(samples[count - 1], row * 1000.0 + count - 1);
    }
    fv_archive_close_read(reader);
}
END_TEST

/* --------------------------------------------------------------- kernels */

static void add_kernel(fv_archive *archive, const char *hash, const char *source, int registers)
{
    FV_ASSERT_OK(fv_archive_add_kernel(archive, hash, source, "sm_90a", registers, 8, 4096,
                                       "inner_reduction"));
}

static void check_kernel(fv_archive_reader *reader, const char *hash, const char *source,
                         int registers)
{
    fv_archive_kernel kernel;
    FV_ASSERT_OK(fv_archive_read_kernel(reader, hash, &kernel));
    ck_assert_str_eq(kernel.source, source);
    ck_assert_str_eq(kernel.arch, "sm_90a");
    ck_assert_int_eq(kernel.registers, registers);
    ck_assert_int_eq(kernel.spill_bytes, 8);
    ck_assert_int_eq(kernel.shared_bytes, 4096);
    ck_assert_str_eq(kernel.family, "inner_reduction");
    free(kernel.source);
}

START_TEST(test_kernels_deduplicated)
{
    const char *name = "kernels.h5";
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path(name));
    fv_archive *archive = create_archive(path);
    add_kernel(archive, KERNEL_HASH_A, SOURCE_A, 40);
    add_kernel(archive, KERNEL_HASH_A, SOURCE_B, 41); /* pending duplicate: ignored */
    FV_ASSERT_OK(fv_archive_flush(archive));
    add_kernel(archive, KERNEL_HASH_A, SOURCE_B, 42); /* stored duplicate: ignored */
    add_kernel(archive, KERNEL_HASH_B, SOURCE_B, 64);
    add_kernel(archive, KERNEL_HASH_C, "", 0);
    ck_assert_int_eq(fv_archive_add_kernel(archive, "0123", SOURCE_A, "sm_90a", 1, 0, 0, "x"),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_archive_add_kernel(archive, "0123456789ABCDEF", SOURCE_A, "sm_90a", 1,
                                           0, 0, "x"),
                     FV_ERR_INPUT);
    ck_assert_int_eq(fv_archive_add_kernel(archive, "../../0123456789abcdef", SOURCE_A, "sm_90a",
                                           1, 0, 0, "x"),
                     FV_ERR_INPUT);
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    /* A resumed run does not store known kernels again. */
    FV_ASSERT_OK(fv_archive_open_append(path, &archive));
    add_kernel(archive, KERNEL_HASH_B, SOURCE_A, 99);
    add_kernel(archive, "00000000000000000000", SOURCE_A, 12);
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_kernel_count(reader), 4);
    check_kernel(reader, KERNEL_HASH_A, SOURCE_A, 40);
    check_kernel(reader, KERNEL_HASH_B, SOURCE_B, 64);
    check_kernel(reader, KERNEL_HASH_C, "", 0);
    check_kernel(reader, "00000000000000000000", SOURCE_A, 12);
    const char *sorted[4] = {"00000000000000000000", KERNEL_HASH_A, KERNEL_HASH_C,
                             KERNEL_HASH_B};
    for (int i = 0; i < 4; i++) {
        char hash[FV_ARCHIVE_HASH_CAPACITY];
        FV_ASSERT_OK(fv_archive_kernel_hash(reader, i, hash));
        ck_assert_str_eq(hash, sorted[i]);
    }
    char hash[FV_ARCHIVE_HASH_CAPACITY];
    ck_assert_int_eq(fv_archive_kernel_hash(reader, 4, hash), FV_ERR_INTERNAL);
    ck_assert(fv_archive_has_kernel(reader, KERNEL_HASH_B));
    ck_assert(!fv_archive_has_kernel(reader, "1111111111111111"));
    ck_assert(!fv_archive_has_kernel(reader, "not a hash"));
    fv_archive_kernel kernel;
    ck_assert_int_eq(fv_archive_read_kernel(reader, "1111111111111111", &kernel),
                     FV_ERR_NOT_FOUND);
    ck_assert_int_eq(fv_archive_read_kernel(reader, "xyz", &kernel), FV_ERR_INPUT);
    fv_archive_close_read(reader);
}
END_TEST

/* ---------------------------------------------------------------- resume */

START_TEST(test_resume_appends)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("resume.h5"));
    fv_archive *archive = create_archive(path);
    fv_archive_device device = make_device(0);
    FV_ASSERT_OK(fv_archive_add_device(archive, &device));
    append_rows(archive, 0, 4);
    FV_ASSERT_OK(fv_archive_close(archive, 2));

    FV_ASSERT_OK(fv_archive_open_append(path, &archive));
    append_rows(archive, 4, 3);
    FV_ASSERT_OK(fv_archive_flush(archive));
    append_rows(archive, 7, 2);
    device = make_device(1);
    FV_ASSERT_OK(fv_archive_add_device(archive, &device));
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    FV_ASSERT_OK(fv_archive_open_append(path, &archive));
    append_rows(archive, 9, 1);
    FV_ASSERT_OK(fv_archive_close(archive, 1));

    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), 10);
    check_rows(reader, 10); /* order, values and samples of every row */
    ck_assert_int_eq(fv_archive_device_count(reader), 2);
    fv_archive_provenance provenance;
    fv_archive_read_provenance(reader, &provenance);
    ck_assert_int_eq(provenance.resume_count, 2);
    ck_assert_int_eq(provenance.exit_status, 1);
    ck_assert_str_eq(provenance.started_at, "2024-05-01T12:34:56Z");
    ck_assert_uint_eq(strlen(provenance.finished_at), 20);
    fv_archive_close_read(reader);
}
END_TEST

/* Child of the durability test: 10 rows flushed, 3 more pending, killed. */
static void write_and_die(const char *path)
{
    fv_archive_provenance provenance = make_provenance();
    fv_archive *archive = NULL;
    if (fv_archive_create(path, &provenance, &archive) != FV_OK)
        _exit(3);
    if (fv_archive_add_kernel(archive, KERNEL_HASH_A, SOURCE_A, "sm_90a", 40, 8, 4096,
                              "inner_reduction") != FV_OK)
        _exit(4);
    for (int row = 0; row < 13; row++) {
        fv_result result = make_result(row);
        double samples[MAX_TEST_SAMPLES];
        int count = samples_of(row, samples);
        if (fv_archive_append(archive, &result, samples, count) != FV_OK)
            _exit(5);
        if (row == 9 && fv_archive_flush(archive) != FV_OK)
            _exit(6);
    }
    if (fv_archive_add_kernel(archive, KERNEL_HASH_B, SOURCE_B, "sm_90a", 64, 8, 4096,
                              "inner_reduction") != FV_OK)
        _exit(7);
    raise(SIGKILL);
    _exit(8);
}

START_TEST(test_sigkill_after_flush)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("killed.h5"));
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        write_and_die(path);
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "the writer did not die by SIGKILL (status %#x)", status);

    if (have_h5dump())
        ck_assert_int_eq(h5dump_header(path), 0);
    fv_archive_reader *reader = open_reader(path);
    int64_t rows = fv_archive_row_count(reader);
    ck_assert_int_ge(rows, 10);
    ck_assert_int_le(rows, 13);
    check_rows(reader, 10);
    ck_assert(fv_archive_has_kernel(reader, KERNEL_HASH_A));
    fv_archive_provenance provenance;
    fv_archive_read_provenance(reader, &provenance);
    ck_assert_int_eq(provenance.exit_status, -1);
    ck_assert_str_eq(provenance.finished_at, "");
    fv_archive_close_read(reader);

    /* --resume continues the killed run. */
    fv_archive *archive = NULL;
    FV_ASSERT_OK(fv_archive_open_append(path, &archive));
    append_rows(archive, (int)rows, 3);
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), rows + 3);
    check_rows(reader, (int)rows + 3);
    fv_archive_close_read(reader);
}
END_TEST

/* Child of the write-failure test: the file may grow by only a little
 * (RLIMIT_FSIZE, as a full disk), so a flush must fail with a status, and
 * the archive must refuse later writes.  Exits 0 if all of that holds. */
static void write_past_limit(const char *path)
{
    fv_archive_provenance provenance = make_provenance();
    fv_archive *archive = NULL;
    if (fv_archive_create(path, &provenance, &archive) != FV_OK)
        _exit(3);
    struct stat info;
    if (stat(path, &info) != 0 || signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
        _exit(4);
    struct rlimit limit = {.rlim_cur = (rlim_t)info.st_size + 64 * 1024,
                           .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0)
        _exit(5);
    fv_status failure = FV_OK;
    for (int row = 0; row < 400 && failure == FV_OK; row++) {
        fv_result result = make_result(row);
        double samples[MAX_TEST_SAMPLES];
        int count = samples_of(row, samples);
        failure = fv_archive_append(archive, &result, samples, count);
        if (failure == FV_OK)
            failure = fv_archive_flush(archive);
    }
    if (failure != FV_ERR_HDF5 && failure != FV_ERR_IO)
        _exit(6);
    if (strstr(fv_error_message(), path) == NULL)
        _exit(7);
    fv_result result = make_result(0);
    if (fv_archive_append(archive, &result, NULL, 0) != failure)
        _exit(8);
    if (fv_archive_close(archive, 0) == FV_OK)
        _exit(9);
    _exit(0);
}

START_TEST(test_write_failure_reported)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("full.h5"));
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        write_past_limit(path);
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the writer past its file size limit failed check %d (status %#x)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
}
END_TEST

/* Child of the full-disk test: ten rows are flushed, then the file may grow
 * by only 64 KiB (RLIMIT_FSIZE, as a full disk).  The next flush must be
 * refused (FV_ERR_IO, naming the path) before HDF5 writes any of it, and so
 * must the close.  Exits 0 if all of that holds. */
static void refuse_flush_past_limit(const char *path)
{
    fv_archive_provenance provenance = make_provenance();
    fv_archive *archive = NULL;
    if (fv_archive_create(path, &provenance, &archive) != FV_OK)
        _exit(3);
    for (int row = 0; row < 10; row++) {
        fv_result result = make_result(row);
        double samples[MAX_TEST_SAMPLES];
        if (fv_archive_append(archive, &result, samples, samples_of(row, samples)) != FV_OK)
            _exit(4);
    }
    struct stat info;
    if (fv_archive_flush(archive) != FV_OK || stat(path, &info) != 0 ||
        signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
        _exit(5);
    struct rlimit limit = {.rlim_cur = (rlim_t)info.st_size + 64 * 1024,
                           .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0)
        _exit(6);
    for (int row = 10; row < 110; row++) {
        fv_result result = make_result(row);
        double samples[MAX_TEST_SAMPLES];
        if (fv_archive_append(archive, &result, samples, samples_of(row, samples)) != FV_OK)
            _exit(7);
    }
    if (fv_archive_flush(archive) != FV_ERR_IO || strstr(fv_error_message(), path) == NULL ||
        strstr(fv_error_message(), "no room") == NULL)
        _exit(8);
    if (fv_archive_close(archive, 0) == FV_OK)
        _exit(9);
    _exit(0);
}

/* A flush that does not fit leaves the archive as the last flush wrote it. */
START_TEST(test_full_disk_keeps_last_flush)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("full-disk.h5"));
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        refuse_flush_past_limit(path);
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the writer past its file size limit failed check %d (status %#x)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), 10);
    check_rows(reader, 10);
    fv_archive_provenance provenance;
    fv_archive_read_provenance(reader, &provenance);
    ck_assert_int_eq(provenance.exit_status, -1); /* the close could not write it */
    fv_archive_close_read(reader);
}
END_TEST

/* A flush gives back the space it reserved but did not use. */
START_TEST(test_flush_leaves_no_reserve_behind)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("trimmed.h5"));
    fv_archive *archive = create_archive(path);
    append_rows(archive, 0, 5);
    FV_ASSERT_OK(fv_archive_flush(archive));
    struct stat flushed;
    ck_assert_int_eq(stat(path, &flushed), 0);
    ck_assert_int_lt(flushed.st_size, 512 * 1024); /* 5 rows, not the 1 MiB reserve */
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), 5);
    check_rows(reader, 5);
    fv_archive_close_read(reader);
}
END_TEST

/* ------------------------------------------------------- errors at open */

START_TEST(test_create_fails_early_for_unusable_paths)
{
    fv_archive_provenance provenance = make_provenance();
    fv_archive *archive = NULL;
    char path[1024];

    snprintf(path, sizeof path, "%s", fv_test_path("no-such-directory/run.h5"));
    ck_assert_int_eq(fv_archive_create(path, &provenance, &archive), FV_ERR_IO);
    ck_assert_msg(strstr(fv_error_message(), path) != NULL, "message: %s", fv_error_message());
    ck_assert_msg(strstr(fv_error_message(), "does not exist") != NULL, "message: %s",
                  fv_error_message());
    ck_assert_ptr_null(archive);

    char file[1024];
    snprintf(file, sizeof file, "%s", fv_test_path("plain.txt"));
    ck_assert_int_eq(fv_test_write_file(file, "not a directory\n"), 0);
    snprintf(path, sizeof path, "%s/run.h5", file);
    ck_assert_int_eq(fv_archive_create(path, &provenance, &archive), FV_ERR_IO);
    ck_assert_msg(strstr(fv_error_message(), path) != NULL, "message: %s", fv_error_message());
    ck_assert_ptr_null(archive);

    /* A directory in the way. */
    snprintf(path, sizeof path, "%s", fv_test_path("a-directory"));
    ck_assert_int_eq(mkdir(path, 0777), 0);
    provenance.replace_existing = true;
    ck_assert_int_eq(fv_archive_create(path, &provenance, &archive), FV_ERR_IO);
    ck_assert_msg(strstr(fv_error_message(), path) != NULL, "message: %s", fv_error_message());
    provenance.replace_existing = false;

    provenance.mode = "fast";
    snprintf(path, sizeof path, "%s", fv_test_path("bad-mode.h5"));
    ck_assert_int_eq(fv_archive_create(path, &provenance, &archive), FV_ERR_INTERNAL);
    ck_assert(!file_exists(path));
    ck_assert_ptr_null(archive);
}
END_TEST

START_TEST(test_create_refuses_to_overwrite)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("existing.h5"));
    fv_archive *archive = create_archive(path);
    append_rows(archive, 0, 2);
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    fv_archive_provenance provenance = make_provenance();
    archive = NULL;
    ck_assert_int_eq(fv_archive_create(path, &provenance, &archive), FV_ERR_USAGE);
    ck_assert_msg(strstr(fv_error_message(), path) != NULL, "message: %s", fv_error_message());
    ck_assert_msg(strstr(fv_error_message(), "--resume") != NULL, "message: %s",
                  fv_error_message());
    ck_assert_ptr_null(archive);
    fv_archive_reader *reader = open_reader(path); /* untouched */
    ck_assert_int_eq(fv_archive_row_count(reader), 2);
    fv_archive_close_read(reader);

    provenance.replace_existing = true;
    FV_ASSERT_OK(fv_archive_create(path, &provenance, &archive));
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), 0);
    fv_archive_close_read(reader);
}
END_TEST

/* A plain HDF5 file with a compound dataset /results, but no archive
 * attributes. */
static void write_foreign_hdf5(const char *path)
{
    FV_ASSERT_OK(fv_h5_init());
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(file, 0);
    hsize_t extent = 3;
    hid_t space = H5Screate_simple(1, &extent, NULL);
    hid_t dataset = H5Dcreate2(file, "results", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    ck_assert_int_ge(dataset, 0);
    FV_ASSERT_OK(fv_h5_write_int64_attribute(file, "format_version", 1, path));
    ck_assert_int_ge(H5Dclose(dataset), 0);
    ck_assert_int_ge(H5Sclose(space), 0);
    ck_assert_int_ge(H5Fclose(file), 0);
}

static void check_open_fails(const char *path, fv_status expected)
{
    fv_archive_reader *reader = NULL;
    ck_assert_int_eq(fv_archive_open_read(path, &reader), expected);
    ck_assert_msg(strstr(fv_error_message(), path) != NULL, "message: %s", fv_error_message());
    ck_assert_ptr_null(reader);
    fv_archive *archive = NULL;
    ck_assert_int_eq(fv_archive_open_append(path, &archive), expected);
    ck_assert_ptr_null(archive);
}

/* Opens an archive with plain HDF5 calls and applies `change` to it. */
static void tamper(const char *path, void (*change)(hid_t file, const char *path))
{
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    ck_assert_int_ge(file, 0);
    change(file, path);
    ck_assert_int_ge(H5Fclose(file), 0);
}

static void set_future_version(hid_t file, const char *path)
{
    FV_ASSERT_OK(fv_h5_write_int64_attribute(file, "format_version", FV_ARCHIVE_FORMAT_VERSION + 1, path));
}

static void remove_samples(hid_t file, const char *path)
{
    ck_assert_int_ge(H5Ldelete(file, "samples", H5P_DEFAULT), 0);
}

static void remove_hosts(hid_t file, const char *path)
{
    ck_assert_int_ge(H5Adelete(file, "hosts"), 0);
}

/* Replaces /results by an empty table of the columns archives had before
 * the optional ones were added (as an archive of an earlier build). */
static void drop_later_columns(hid_t file, const char *path)
{
    (void)path;
    int count = 0;
    const fv_archive_column *columns = fv_archive_result_columns(&count);
    size_t size = 0;
    for (int i = 0; i < count; i++)
        size += columns[i].optional ? 0 : columns[i].size;
    hid_t type = H5Tcreate(H5T_COMPOUND, size);
    ck_assert_int_ge(type, 0);
    size_t offset = 0;
    int optional = 0;
    for (int i = 0; i < count; i++) {
        if (columns[i].optional) {
            optional++;
            continue;
        }
        hid_t member = columns[i].kind == FV_ARCHIVE_STRING ? H5Tcopy(H5T_C_S1)
                       : columns[i].kind == FV_ARCHIVE_INT32 ? H5Tcopy(H5T_STD_I32LE)
                       : columns[i].kind == FV_ARCHIVE_INT64 ? H5Tcopy(H5T_STD_I64LE)
                       : columns[i].kind == FV_ARCHIVE_UINT64 ? H5Tcopy(H5T_STD_U64LE)
                                                               : H5Tcopy(H5T_IEEE_F64LE);
        if (columns[i].kind == FV_ARCHIVE_STRING) {
            ck_assert_int_ge(H5Tset_size(member, columns[i].size), 0);
            ck_assert_int_ge(H5Tset_cset(member, H5T_CSET_UTF8), 0); /* as the archive's */
        }
        ck_assert_int_ge(H5Tinsert(type, columns[i].name, offset, member), 0);
        H5Tclose(member);
        offset += columns[i].size;
    }
    ck_assert_int_eq(optional, 5); /* inputs_ms, outputs_ms, timing_ms, the sized copy's two */
    ck_assert_int_ge(H5Ldelete(file, "results", H5P_DEFAULT), 0);
    hsize_t initial = 0, maximum = H5S_UNLIMITED, chunk = 16;
    hid_t space = H5Screate_simple(1, &initial, &maximum);
    hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
    ck_assert_int_ge(H5Pset_chunk(properties, 1, &chunk), 0);
    hid_t dataset = H5Dcreate2(file, "results", type, space, H5P_DEFAULT, properties, H5P_DEFAULT);
    ck_assert_int_ge(dataset, 0);
    H5Dclose(dataset);
    H5Pclose(properties);
    H5Sclose(space);
    H5Tclose(type);
}

/* An archive written before the optional columns were added is read (they
 * read as zero) and resumed (new rows keep the columns it has). */
START_TEST(test_archive_without_later_columns)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("earlier-build.h5"));
    fv_archive *archive = create_archive(path);
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    tamper(path, drop_later_columns);

    FV_ASSERT_OK(fv_archive_open_append(path, &archive));
    append_rows(archive, 0, 3);
    FV_ASSERT_OK(fv_archive_close(archive, 0));

    fv_archive_reader *reader = open_reader(path);
    ck_assert_int_eq(fv_archive_row_count(reader), 3);
    for (int row = 0; row < 3; row++) {
        fv_result expected = make_result(row), actual;
        ck_assert(expected.inputs_ms != 0 && expected.timing_ms != 0 &&
                  expected.percent_of_sized_copy != 0);
        expected.inputs_ms = expected.outputs_ms = expected.timing_ms = 0;
        expected.sized_copy_gbs = expected.percent_of_sized_copy = 0;
        memset(&actual, 0x5a, sizeof actual);
        FV_ASSERT_OK(fv_archive_read_row(reader, row, &actual));
        check_fields_equal(&expected, &actual, result_fields, COUNT(result_fields), "row");
    }
    fv_archive_close_read(reader);
}
END_TEST

static void remove_l2_flush(hid_t file, const char *path)
{
    (void)path;
    ck_assert_int_ge(H5Adelete(file, "l2_flush"), 0);
}

/* An archive of a build before the l2_flush attribute (every run then
 * flushed with a memset) opens, and reads as "memset". */
START_TEST(test_archive_without_l2_flush_reads_as_memset)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/no-flush-attribute.h5", fv_test_scratch_dir());
    fv_archive *archive = create_archive(path);
    append_rows(archive, 0, 2);
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    tamper(path, remove_l2_flush);
    fv_archive_reader *reader = open_reader(path);
    fv_archive_provenance provenance;
    fv_archive_read_provenance(reader, &provenance);
    ck_assert_str_eq(provenance.l2_flush, "memset");
    ck_assert_str_eq(provenance.mode, "run");
    fv_archive_close_read(reader);
}
END_TEST

START_TEST(test_foreign_files_rejected)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("missing.h5"));
    check_open_fails(path, FV_ERR_NOT_FOUND);

    snprintf(path, sizeof path, "%s", fv_test_path("text.h5"));
    ck_assert_int_eq(fv_test_write_file(path, "this is not HDF5\n"), 0);
    check_open_fails(path, FV_ERR_CORRUPT);

    snprintf(path, sizeof path, "%s", fv_test_path("foreign.h5"));
    write_foreign_hdf5(path);
    check_open_fails(path, FV_ERR_CORRUPT);
    ck_assert_msg(strstr(fv_error_message(), "not a fuservalidate result archive") != NULL,
                  "message: %s", fv_error_message());

    void (*changes[3])(hid_t, const char *) = {set_future_version, remove_samples,
                                                 remove_hosts};
    const char *expected_words[3] = {"version 2", "/samples", "hosts"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/tampered-%d.h5", fv_test_scratch_dir(), i);
        fv_archive *archive = create_archive(path);
        append_rows(archive, 0, 2);
        FV_ASSERT_OK(fv_archive_close(archive, 0));
        tamper(path, changes[i]);
        check_open_fails(path, FV_ERR_CORRUPT);
        ck_assert_msg(strstr(fv_error_message(), expected_words[i]) != NULL, "message: %s",
                      fv_error_message());
    }
}
END_TEST

START_TEST(test_h5dump_reads_archive)
{
    if (!have_h5dump()) {
        fprintf(stderr, "check_archive: h5dump is not on PATH: skipping the h5dump test\n");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("dump.h5"));
    fv_archive *archive = create_archive(path);
    fv_archive_device device = make_device(0);
    FV_ASSERT_OK(fv_archive_add_device(archive, &device));
    append_rows(archive, 0, 3);
    add_kernel(archive, KERNEL_HASH_A, SOURCE_A, 40);
    FV_ASSERT_OK(fv_archive_close(archive, 0));
    ck_assert_int_eq(h5dump_header(path), 0);
    /* The whole content too, and the kernel's source is in it. */
    char command[2048];
    snprintf(command, sizeof command, "h5dump -d /kernels/%s '%s' | grep -q kernel_a",
             KERNEL_HASH_A, path);
    ck_assert_int_eq(system(command), 0);
    snprintf(command, sizeof command, "h5dump '%s' > /dev/null 2>&1", path);
    ck_assert_int_eq(system(command), 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("archive");
    TCase *layout = tcase_create("layout");
    tcase_add_test(layout, test_columns_cover_structs);
    suite_add_tcase(suite, layout);

    TCase *round_trip = tcase_create("round_trip");
    tcase_set_timeout(round_trip, 60);
    tcase_add_test(round_trip, test_round_trip);
    tcase_add_test(round_trip, test_empty_archive_and_start_time);
    tcase_add_test(round_trip, test_strings_truncated);
    tcase_add_test(round_trip, test_append_rejects_bad_samples);
    tcase_add_test(round_trip, test_many_rows_flush_automatically);
    tcase_add_test(round_trip, test_kernels_deduplicated);
    tcase_add_test(round_trip, test_resume_appends);
    suite_add_tcase(suite, round_trip);

    TCase *durability = tcase_create("durability");
    tcase_set_timeout(durability, 60);
    tcase_add_test(durability, test_sigkill_after_flush);
    tcase_add_test(durability, test_write_failure_reported);
    tcase_add_test(durability, test_full_disk_keeps_last_flush);
    tcase_add_test(durability, test_flush_leaves_no_reserve_behind);
    suite_add_tcase(suite, durability);

    TCase *errors = tcase_create("errors");
    tcase_set_timeout(errors, 60);
    tcase_add_test(errors, test_create_fails_early_for_unusable_paths);
    tcase_add_test(errors, test_create_refuses_to_overwrite);
    tcase_add_test(errors, test_foreign_files_rejected);
    tcase_add_test(errors, test_archive_without_l2_flush_reads_as_memset);
    tcase_add_test(errors, test_archive_without_later_columns);
    tcase_add_test(errors, test_h5dump_reads_archive);
    suite_add_tcase(suite, errors);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
