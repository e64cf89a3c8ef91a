/* check_runtime.c: NVRTC compilation and resource capture, the on-disk
 * kernel cache (hits, keys, corruption, concurrent writers), and, where a GPU
 * and its driver are present, launches, timing and copy bandwidth.  Without a
 * GPU the GPU tests print "SKIP: no CUDA driver/GPU" and pass. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/status.h"
#include "common/stats.h"
#include "runtime/cache.h"
#include "runtime/device.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/nvrtc.h"
#include "test_support.h"

/* ------------------------------------------------------------ kernels */

/* bf16 x bf16 -> bf16, eight elements per thread through one 16-byte load. */
static const char BF16_SOURCE[] =
    "#include <cuda_bf16.h>\n"
    "extern \"C\" __global__ void scale_bf16(const __nv_bfloat16 *__restrict__ input,\n"
    "                                        __nv_bfloat16 *__restrict__ output, int n)\n"
    "{\n"
    "    int first = (blockIdx.x * blockDim.x + threadIdx.x) * 8;\n"
    "    if (first + 8 > n) return;\n"
    "    uint4 packed = *reinterpret_cast<const uint4 *>(input + first);\n"
    "    __nv_bfloat162 *pairs = reinterpret_cast<__nv_bfloat162 *>(&packed);\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < 4; i++) pairs[i] = __hmul2(pairs[i], pairs[i]);\n"
    "    *reinterpret_cast<uint4 *>(output + first) = packed;\n"
    "}\n";

/* A dynamically indexed local array lives in local memory (stack frame). */
static const char LOCAL_ARRAY_SOURCE[] =
    "extern \"C\" __global__ void local_array(float *out, int n)\n"
    "{\n"
    "    float values[512];\n"
    "    for (int i = 0; i < 512; i++) values[i] = out[(i * n) % 1000];\n"
    "    out[threadIdx.x] = values[n & 511];\n"
    "}\n";

/* Twelve float4 values live at once; with -maxrregcount=16 they spill. */
static const char SPILL_SOURCE[] =
    "extern \"C\" __global__ void spill(const float4 *in, float4 *out)\n"
    "{\n"
    "    float4 v[12];\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < 12; i++) v[i] = in[threadIdx.x + i * 256];\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < 12; i++)\n"
    "        out[threadIdx.x + i * 256] =\n"
    "            make_float4(v[i].x * v[11 - i].y, v[i].y, v[i].z, v[(i + 3) % 12].w);\n"
    "}\n";

static const char SHARED_SOURCE[] =
    "extern \"C\" __global__ void reverse_tile(float *data)\n"
    "{\n"
    "    __shared__ float tile[1024];\n"
    "    tile[threadIdx.x] = data[threadIdx.x];\n"
    "    __syncthreads();\n"
    "    data[threadIdx.x] = tile[1023 - threadIdx.x];\n"
    "}\n";

static const char BROKEN_SOURCE[] =
    "extern \"C\" __global__ void broken(float *out)\n"
    "{\n"
    "    out[0] = 1.0f\n"
    "}\n";

static const char VECTOR_ADD_SOURCE[] =
    "extern \"C\" __global__ void vector_add(const float *a, const float *b, float *c, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

/* Block partial sums, a grid-wide sync, then block 0 adds the partials:
 * needs a cooperative launch.  Also copies through > 48 KiB of dynamic shared
 * memory. */
static const char COOPERATIVE_SOURCE[] =
    "#include <cooperative_groups.h>\n"
    "namespace cg = cooperative_groups;\n"
    "extern \"C\" __global__ void grid_sum(const float *in, float *partial, float *out, int n)\n"
    "{\n"
    "    cg::grid_group grid = cg::this_grid();\n"
    "    __shared__ float block_sum;\n"
    "    if (threadIdx.x == 0) block_sum = 0.0f;\n"
    "    __syncthreads();\n"
    "    float sum = 0.0f;\n"
    "    for (int i = (int)grid.thread_rank(); i < n; i += (int)grid.size()) sum += in[i];\n"
    "    atomicAdd(&block_sum, sum);\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) partial[blockIdx.x] = block_sum;\n"
    "    grid.sync();\n"
    "    if (grid.thread_rank() == 0) {\n"
    "        float total = 0.0f;\n"
    "        for (unsigned b = 0; b < gridDim.x; b++) total += partial[b];\n"
    "        *out = total;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void shared_copy(const float *in, float *out, int n)\n"
    "{\n"
    "    extern __shared__ float staging[];\n"
    "    for (int i = threadIdx.x; i < n; i += blockDim.x) staging[i] = in[i];\n"
    "    __syncthreads();\n"
    "    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = staging[n - 1 - i] + 1.0f;\n"
    "}\n";

/* ------------------------------------------------------------ helpers */

static fv_rt_compile_request request_for(const char *source, const char *const *kernels,
                                         const char *arch)
{
    fv_rt_compile_request request = {
        .source = source, .kernel_names = kernels, .kernel_count = 1, .arch = arch};
    return request;
}

static void assert_cubin(const fv_rt_compiled *compiled)
{
    ck_assert_ptr_nonnull(compiled->cubin);
    ck_assert_uint_gt(compiled->cubin_size, 64);
    ck_assert(memcmp(compiled->cubin, "\177ELF", 4) == 0);
    /* e_machine (bytes 18-19, little-endian) is EM_CUDA = 190 */
    ck_assert_int_eq(compiled->cubin[18] | compiled->cubin[19] << 8, 190);
}

static const char *make_cache_directory(const char *name)
{
    static char directory[1024];
    snprintf(directory, sizeof directory, "%s", fv_test_path(name));
    return directory;
}

typedef struct directory_census {
    int entries;     /* *.cubin */
    int temporaries; /* .tmp-* */
    int others;
} directory_census;

static directory_census count_files(const char *directory)
{
    directory_census census = {0};
    DIR *listing = opendir(directory);
    ck_assert_ptr_nonnull(listing);
    struct dirent *item;
    while ((item = readdir(listing)) != NULL) {
        const char *name = item->d_name;
        size_t length = strlen(name);
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (strncmp(name, ".tmp-", 5) == 0)
            census.temporaries++;
        else if (length > 6 && strcmp(name + length - 6, ".cubin") == 0)
            census.entries++;
        else
            census.others++;
    }
    closedir(listing);
    return census;
}

static void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    ck_assert_ptr_nonnull(file);
    ck_assert_uint_eq(fwrite(data, 1, size, file), size);
    ck_assert_int_eq(fclose(file), 0);
}

/* ------------------------------------------------------ compile tests */

START_TEST(compiles_bf16_vector_kernel_for_hopper_and_blackwell)
{
    const char *kernels[] = {"scale_bf16"};
    /* each target twice: NVRTC's own cache (where a driver is installed) must
     * not swallow the ptxas report of the second compilation */
    const char *arches[] = {"sm_90a", "sm_100a", "sm_90a", "sm_100a"};
    int major = 0, minor = 0;
    FV_ASSERT_OK(fv_rt_nvrtc_version(&major, &minor));
    ck_assert_int_ge(major, 12);
    for (int a = 0; a < 4; a++) {
        fv_rt_compile_request request = request_for(BF16_SOURCE, kernels, arches[a]);
        fv_rt_compiled compiled;
        FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
        assert_cubin(&compiled);
        const fv_rt_kernel_resources *kernel = fv_rt_compiled_kernel(&compiled, "scale_bf16");
        ck_assert_ptr_nonnull(kernel);
        ck_assert_int_gt(kernel->registers, 0);
        ck_assert_int_le(kernel->registers, 255);
        ck_assert_int_eq(kernel->spill_store_bytes, 0);
        ck_assert_int_eq(kernel->spill_load_bytes, 0);
        ck_assert_int_eq(kernel->local_bytes, 0);
        ck_assert_int_eq(kernel->static_shared_bytes, 0);
        ck_assert_int_eq(compiled.nvrtc_major, major);
        ck_assert_int_eq(compiled.nvrtc_minor, minor);
        ck_assert(!compiled.cache_hit);
        ck_assert_str_eq(compiled.cache_key, "");
        ck_assert_ptr_nonnull(strstr(compiled.log, "scale_bf16"));
        ck_assert(compiled.nvrtc_ms > 0 && compiled.compile_ms >= compiled.nvrtc_ms);
        printf("NVRTC %d.%d %s: scale_bf16 %d registers, %zu-byte cubin, %.1f ms\n", major,
               minor, arches[a], kernel->registers, compiled.cubin_size, compiled.nvrtc_ms);
        fv_rt_compiled_free(&compiled);
        ck_assert_ptr_null(compiled.cubin);
    }
}
END_TEST

/* The read flush's kernel (fv_rt_time, FV_RT_FLUSH_READ) compiles for both
 * targets, without spills or local memory, and is the entry it names. */
START_TEST(read_flush_kernel_compiles_for_hopper_and_blackwell)
{
    const char *kernels[] = {"fv_l2_read_flush"};
    const char *arches[] = {"sm_90a", "sm_100a"};
    for (int a = 0; a < 2; a++) {
        fv_rt_compile_request request = request_for(fv_rt_read_flush_source(), kernels, arches[a]);
        fv_rt_compiled compiled;
        FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
        const fv_rt_kernel_resources *kernel =
            fv_rt_compiled_kernel(&compiled, "fv_l2_read_flush");
        ck_assert_ptr_nonnull(kernel);
        ck_assert_int_eq(kernel->spill_store_bytes + kernel->spill_load_bytes, 0);
        ck_assert_int_eq(kernel->local_bytes, 0);
        fv_rt_compiled_free(&compiled);
    }
}
END_TEST

START_TEST(local_memory_spills_and_shared_memory_are_reported)
{
    const char *local_kernel[] = {"local_array"};
    fv_rt_compile_request request = request_for(LOCAL_ARRAY_SOURCE, local_kernel, "sm_90a");
    fv_rt_compiled compiled;
    FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
    const fv_rt_kernel_resources *kernel = fv_rt_compiled_kernel(&compiled, "local_array");
    ck_assert_ptr_nonnull(kernel);
    ck_assert_int_ge(kernel->local_bytes, 2048); /* 512 floats */
    fv_rt_compiled_free(&compiled);

    const char *spill_kernel[] = {"spill"};
    const char *tight[] = {"-maxrregcount=16"};
    request = request_for(SPILL_SOURCE, spill_kernel, "sm_90a");
    request.options = tight;
    request.option_count = 1;
    FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
    kernel = fv_rt_compiled_kernel(&compiled, "spill");
    ck_assert_ptr_nonnull(kernel);
    ck_assert_int_gt(kernel->spill_store_bytes, 0);
    ck_assert_int_gt(kernel->spill_load_bytes, 0);
    ck_assert_int_ge(kernel->local_bytes, kernel->spill_store_bytes);
    ck_assert_int_le(kernel->registers, 32);
    fv_rt_compiled_free(&compiled);

    const char *shared_kernel[] = {"reverse_tile"};
    request = request_for(SHARED_SOURCE, shared_kernel, "sm_90a");
    FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
    kernel = fv_rt_compiled_kernel(&compiled, "reverse_tile");
    ck_assert_ptr_nonnull(kernel);
    ck_assert_int_eq(kernel->static_shared_bytes, 4096);
    ck_assert_int_ge(kernel->barriers, 1);
    ck_assert_int_eq(kernel->spill_store_bytes, 0);
    fv_rt_compiled_free(&compiled);
}
END_TEST

START_TEST(syntax_error_gives_nvrtc_error_with_log_line)
{
    const char *kernels[] = {"broken"};
    fv_rt_compile_request request = request_for(BROKEN_SOURCE, kernels, "sm_90a");
    request.program_name = "broken.cu";
    fv_rt_compiled compiled;
    ck_assert_int_eq(fv_rt_compile(&request, &compiled), FV_ERR_NVRTC);
    const char *message = fv_error_message();
    ck_assert_ptr_nonnull(strstr(message, "broken.cu(4): error"));
    ck_assert_ptr_nonnull(strstr(message, "expected a \";\""));
    ck_assert_ptr_nonnull(strstr(message, "kernel broken"));
    ck_assert_ptr_nonnull(strstr(message, "sm_90a"));
    ck_assert_ptr_null(compiled.cubin);
    ck_assert_ptr_nonnull(compiled.log);
    ck_assert_ptr_nonnull(strstr(compiled.log, "1 error detected"));
    fv_rt_compiled_free(&compiled);
}
END_TEST

START_TEST(bad_requests_are_refused)
{
    fv_rt_compiled compiled;
    const char *missing[] = {"not_there"};
    fv_rt_compile_request request = request_for(VECTOR_ADD_SOURCE, missing, "sm_90a");
    ck_assert_int_eq(fv_rt_compile(&request, &compiled), FV_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "not_there"));
    fv_rt_compiled_free(&compiled);

    const char *kernels[] = {"vector_add"};
    request = request_for(VECTOR_ADD_SOURCE, kernels, "compute_90");
    ck_assert_int_eq(fv_rt_compile(&request, &compiled), FV_ERR_UNSUPPORTED);
    fv_rt_compiled_free(&compiled);

    request = request_for(VECTOR_ADD_SOURCE, kernels, "sm_90a");
    const char *bad_option[] = {"--no-such-option"};
    request.options = bad_option;
    request.option_count = 1;
    ck_assert_int_eq(fv_rt_compile(&request, &compiled), FV_ERR_NVRTC);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "NVRTC_ERROR_INVALID_OPTION"));
    fv_rt_compiled_free(&compiled);

    request = request_for(VECTOR_ADD_SOURCE, kernels, "sm_90a");
    request.kernel_count = 0;
    ck_assert_int_eq(fv_rt_compile(&request, &compiled), FV_ERR_USAGE);
    fv_rt_compiled_free(&compiled);
}
END_TEST

START_TEST(cooperative_groups_header_is_found)
{
    const char *directory = NULL;
    FV_ASSERT_OK(fv_rt_nvrtc_include_dir(&directory));
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/cuda_bf16.h", directory);
    ck_assert_int_eq(access(probe, R_OK), 0);
    const char *kernels[] = {"grid_sum", "shared_copy"};
    fv_rt_compile_request request = request_for(COOPERATIVE_SOURCE, kernels, "sm_90a");
    request.kernel_count = 2;
    fv_rt_compiled compiled;
    FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
    ck_assert_uint_eq(compiled.kernel_count, 2);
    ck_assert_int_gt(fv_rt_compiled_kernel(&compiled, "grid_sum")->registers, 0);
    /* block_sum, plus what cooperative groups keeps in shared memory */
    ck_assert_int_ge(fv_rt_compiled_kernel(&compiled, "grid_sum")->static_shared_bytes, 4);
    fv_rt_compiled_free(&compiled);
}
END_TEST

#define TEN_X "xxxxxxxxxx"
#define HUNDRED_X TEN_X TEN_X TEN_X TEN_X TEN_X TEN_X TEN_X TEN_X TEN_X TEN_X
#define LONG_NAME "too_long_" HUNDRED_X HUNDRED_X HUNDRED_X /* 309 characters */

START_TEST(ptxas_report_is_parsed)
{
    const char *log =
        "ptxas info    : Overriding maximum register limit 256 for 'first' with  32 of "
        "maxrregcount option\r\n"
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'first' for 'sm_90a'\n"
        "ptxas info    : Function properties for first\n"
        "ptxas         .     208 bytes stack frame, 188 bytes spill stores, 180 bytes spill "
        "loads\n"
        "ptxas info    : Used 24 registers, used 1 barriers, 208 bytes cumulative stack size, "
        "4096 bytes smem, 360 bytes cmem[0]\n"
        "ptxas info    : Compile time = 5.862 ms\n"
        "ptxas info    : Function properties for _Z6helperPfi\n"
        "ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'second' for 'sm_90a'\n"
        "ptxas info    : Function properties for second\n"
        "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 14 registers, used 0 barriers\n"
        "ptxas info    : Compiling entry function '"
        LONG_NAME "' "
        "for 'sm_90a'\n"
        "ptxas info    : Used 99 registers, used 0 barriers\n"
        "ptxas info    : Compiling entry function 'third' for 'sm_90a'\n"
        "ptxas info    : Used 99999999999 registers";
    fv_rt_kernel_resources *kernels = NULL;
    size_t count = 0;
    FV_ASSERT_OK(fv_rt_parse_ptxas_log(log, &kernels, &count));
    ck_assert_uint_eq(count, 3);
    ck_assert_str_eq(kernels[0].name, "first");
    ck_assert_int_eq(kernels[0].registers, 24);
    ck_assert_int_eq(kernels[0].barriers, 1);
    ck_assert_int_eq(kernels[0].local_bytes, 208);
    ck_assert_int_eq(kernels[0].spill_store_bytes, 188);
    ck_assert_int_eq(kernels[0].spill_load_bytes, 180);
    ck_assert_int_eq(kernels[0].static_shared_bytes, 4096);
    ck_assert_str_eq(kernels[1].name, "second");
    ck_assert_int_eq(kernels[1].registers, 14);
    ck_assert_int_eq(kernels[1].local_bytes, 0);
    ck_assert_int_eq(kernels[1].spill_store_bytes, 0);
    ck_assert_int_eq(kernels[1].static_shared_bytes, 0);
    ck_assert_str_eq(kernels[2].name, "third");
    ck_assert_int_eq(kernels[2].registers, 2147483647); /* clamped, not overflowed */
    ck_assert_int_eq(kernels[2].local_bytes, -1);       /* never reported */
    free(kernels);
    FV_ASSERT_OK(fv_rt_parse_ptxas_log("", &kernels, &count));
    ck_assert_uint_eq(count, 0);
    free(kernels);
}
END_TEST

START_TEST(architecture_names_follow_compute_capability)
{
    char arch[FV_RT_ARCH_CAPACITY];
    FV_ASSERT_OK(fv_rt_device_arch(9, 0, arch, sizeof arch));
    ck_assert_str_eq(arch, "sm_90a");
    FV_ASSERT_OK(fv_rt_device_arch(10, 0, arch, sizeof arch));
    ck_assert_str_eq(arch, "sm_100a");
    FV_ASSERT_OK(fv_rt_device_arch(8, 6, arch, sizeof arch));
    ck_assert_str_eq(arch, "sm_86");
    ck_assert_int_eq(fv_rt_device_arch(9, 0, arch, 4), FV_ERR_INTERNAL);
    ck_assert_int_eq(fv_rt_device_arch(0, 0, arch, sizeof arch), FV_ERR_INTERNAL);
    fv_rt_device_info info = {.memory_clock_khz = 2619000, .memory_bus_width_bits = 5120};
    ck_assert(fabs(fv_rt_device_peak_bandwidth(&info) - 3352.32) < 0.01);
}
END_TEST

START_TEST(driver_opens_or_says_why_not)
{
    fv_rt_driver *driver = (fv_rt_driver *)&driver; /* must be overwritten */
    fv_status status = fv_rt_driver_open(&driver);
    if (status == FV_OK) {
        ck_assert_int_ge(fv_rt_driver_device_count(driver), 1);
        ck_assert_int_ge(fv_rt_driver_version(driver), 12000);
        fv_rt_driver_close(driver);
    } else {
        ck_assert_int_eq(status, FV_ERR_NOT_FOUND);
        ck_assert_ptr_null(driver);
        ck_assert_ptr_nonnull(strstr(fv_error_message(), "CUDA"));
        printf("no GPU here: %s\n", fv_error_message());
    }
}
END_TEST

/* -------------------------------------------------------- cache tests */

START_TEST(cache_miss_then_hit)
{
    fv_rt_cache *cache = NULL;
    FV_ASSERT_OK(fv_rt_cache_open(make_cache_directory("kernels/nested"), &cache));
    const char *kernels[] = {"scale_bf16"};
    fv_rt_compile_request request = request_for(BF16_SOURCE, kernels, "sm_90a");
    request.cache = cache;
    fv_rt_compiled miss;
    fv_rt_compiled hit;
    FV_ASSERT_OK(fv_rt_compile(&request, &miss));
    ck_assert(!miss.cache_hit && !miss.cache_rejected);
    ck_assert_str_eq(miss.cache_problem, "");
    ck_assert_uint_eq(strlen(miss.cache_key), 64);
    char path[1200];
    FV_ASSERT_OK(fv_rt_cache_entry_path(cache, miss.cache_key, path, sizeof path));
    ck_assert_int_eq(access(path, R_OK), 0);

    FV_ASSERT_OK(fv_rt_compile(&request, &hit));
    ck_assert(hit.cache_hit);
    ck_assert_str_eq(hit.cache_key, miss.cache_key);
    ck_assert_uint_eq(hit.cubin_size, miss.cubin_size);
    ck_assert(memcmp(hit.cubin, miss.cubin, miss.cubin_size) == 0);
    ck_assert_uint_eq(hit.kernel_count, miss.kernel_count);
    ck_assert(memcmp(hit.kernels, miss.kernels, miss.kernel_count * sizeof *miss.kernels) == 0);
    ck_assert_str_eq(hit.log, miss.log);
    ck_assert(fabs(hit.nvrtc_ms - miss.nvrtc_ms) < 0.01);
    ck_assert(hit.compile_ms * 4 < miss.compile_ms);
    printf("cache: miss %.2f ms, hit %.2f ms\n", miss.compile_ms, hit.compile_ms);
    ck_assert_int_eq(count_files(fv_rt_cache_directory(cache)).entries, 1);
    fv_rt_compiled_free(&miss);
    fv_rt_compiled_free(&hit);
    fv_rt_cache_close(cache);
}
END_TEST

START_TEST(cache_keys_depend_on_everything_that_shapes_the_cubin)
{
    const char *options[] = {"-DA=1", "-DB=2"};
    const char *swapped[] = {"-DB=2", "-DA=1"};
    const char *joined[] = {"-DA=1-DB=2"};
    char base[65], other[65];
    fv_rt_cache_key("src", options, 2, "sm_90a", 13, 0, base);
    fv_rt_cache_key("src", options, 2, "sm_90a", 13, 0, other);
    ck_assert_str_eq(base, other);
    fv_rt_cache_key("src", options, 2, "sm_100a", 13, 0, other);
    ck_assert_str_ne(base, other);
    fv_rt_cache_key("src", swapped, 2, "sm_90a", 13, 0, other);
    ck_assert_str_ne(base, other);
    fv_rt_cache_key("src", joined, 1, "sm_90a", 13, 0, other);
    ck_assert_str_ne(base, other);
    fv_rt_cache_key("src", options, 1, "sm_90a", 13, 0, other);
    ck_assert_str_ne(base, other);
    fv_rt_cache_key("src", options, 2, "sm_90a", 13, 1, other);
    ck_assert_str_ne(base, other);
    fv_rt_cache_key("src ", options, 2, "sm_90a", 13, 0, other);
    ck_assert_str_ne(base, other);

    fv_rt_cache *cache = NULL;
    FV_ASSERT_OK(fv_rt_cache_open(make_cache_directory("keys"), &cache));
    const char *kernels[] = {"vector_add"};
    fv_rt_compile_request request = request_for(VECTOR_ADD_SOURCE, kernels, "sm_90a");
    request.cache = cache;
    fv_rt_compiled hopper, blackwell, with_option;
    FV_ASSERT_OK(fv_rt_compile(&request, &hopper));
    request.arch = "sm_100a";
    FV_ASSERT_OK(fv_rt_compile(&request, &blackwell));
    request.arch = "sm_90a";
    const char *fast[] = {"--use_fast_math"};
    request.options = fast;
    request.option_count = 1;
    FV_ASSERT_OK(fv_rt_compile(&request, &with_option));
    ck_assert(!blackwell.cache_hit && !with_option.cache_hit);
    ck_assert_str_ne(hopper.cache_key, blackwell.cache_key);
    ck_assert_str_ne(hopper.cache_key, with_option.cache_key);
    ck_assert_int_eq(count_files(fv_rt_cache_directory(cache)).entries, 3);
    fv_rt_compiled_free(&hopper);
    fv_rt_compiled_free(&blackwell);
    fv_rt_compiled_free(&with_option);
    fv_rt_cache_close(cache);
}
END_TEST

/* Damages the entry with `damage`, then checks that the next compilation
 * rejects it (saying `expected`), recompiles, and leaves a valid entry. */
typedef void (*damage_function)(const char *path, unsigned char *bytes, size_t size);

static void flip_payload_byte(const char *path, unsigned char *bytes, size_t size)
{
    bytes[size - 100] ^= 0x01;
    write_bytes(path, bytes, size);
}

static void truncate_entry(const char *path, unsigned char *bytes, size_t size)
{
    write_bytes(path, bytes, size / 2);
}

static void break_magic(const char *path, unsigned char *bytes, size_t size)
{
    bytes[0] = 'X';
    write_bytes(path, bytes, size);
}

static void empty_entry(const char *path, unsigned char *bytes, size_t size)
{
    write_bytes(path, bytes, 0);
}

static void check_rejection(fv_rt_cache *cache, damage_function damage, const char *expected)
{
    const char *kernels[] = {"vector_add"};
    fv_rt_compile_request request = request_for(VECTOR_ADD_SOURCE, kernels, "sm_90a");
    request.cache = cache;
    fv_rt_compiled first, second, third;
    FV_ASSERT_OK(fv_rt_compile(&request, &first));
    char path[1200];
    FV_ASSERT_OK(fv_rt_cache_entry_path(cache, first.cache_key, path, sizeof path));
    size_t size = 0;
    unsigned char *bytes = (unsigned char *)fv_test_read_file(path, &size);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_uint_gt(size, 200);
    damage(path, bytes, size);
    free(bytes);

    FV_ASSERT_OK(fv_rt_compile(&request, &second));
    ck_assert(!second.cache_hit);
    ck_assert(second.cache_rejected);
    ck_assert_msg(strstr(second.cache_problem, expected) != NULL, "problem \"%s\" lacks \"%s\"",
                  second.cache_problem, expected);
    ck_assert_uint_eq(second.cubin_size, first.cubin_size);
    ck_assert(memcmp(second.cubin, first.cubin, first.cubin_size) == 0);

    FV_ASSERT_OK(fv_rt_compile(&request, &third));
    ck_assert(third.cache_hit && !third.cache_rejected);
    ck_assert_str_eq(third.cache_problem, "");
    fv_rt_compiled_free(&first);
    fv_rt_compiled_free(&second);
    fv_rt_compiled_free(&third);
}

START_TEST(corrupt_entries_are_detected_and_recompiled)
{
    fv_rt_cache *cache = NULL;
    FV_ASSERT_OK(fv_rt_cache_open(make_cache_directory("corrupt"), &cache));
    check_rejection(cache, flip_payload_byte, "checksum mismatch");
    check_rejection(cache, truncate_entry, "truncated");
    check_rejection(cache, break_magic, "bad magic");
    check_rejection(cache, empty_entry, "truncated header");
    directory_census census = count_files(fv_rt_cache_directory(cache));
    ck_assert_int_eq(census.entries, 1);
    ck_assert_int_eq(census.temporaries, 0);
    fv_rt_cache_close(cache);
}
END_TEST

START_TEST(concurrent_writers_leave_one_valid_entry)
{
    const char *directory = make_cache_directory("shared");
    fv_rt_cache *cache = NULL;
    FV_ASSERT_OK(fv_rt_cache_open(directory, &cache));
    int start[2];
    ck_assert_int_eq(pipe(start), 0);
    pid_t children[4];
    for (int i = 0; i < 4; i++) {
        children[i] = fork();
        ck_assert_int_ge(children[i], 0);
        if (children[i] == 0) {
            char go;
            close(start[1]);
            if (read(start[0], &go, 1) != 0) /* released when the parent closes the pipe */
                _exit(3);
            const char *kernels[] = {"scale_bf16"};
            fv_rt_compile_request request = request_for(BF16_SOURCE, kernels, "sm_90a");
            request.cache = cache;
            fv_rt_compiled compiled;
            if (fv_rt_compile(&request, &compiled) != FV_OK)
                _exit(1);
            bool valid = compiled.cubin_size > 4 && memcmp(compiled.cubin, "\177ELF", 4) == 0 &&
                         !compiled.cache_rejected;
            fv_rt_compiled_free(&compiled);
            _exit(valid ? 0 : 2);
        }
    }
    close(start[0]);
    close(start[1]); /* all four start now */
    for (int i = 0; i < 4; i++) {
        int child_status = 0;
        ck_assert_int_eq(waitpid(children[i], &child_status, 0), children[i]);
        ck_assert(WIFEXITED(child_status));
        ck_assert_int_eq(WEXITSTATUS(child_status), 0);
    }
    directory_census census = count_files(directory);
    ck_assert_int_eq(census.entries, 1);
    ck_assert_int_eq(census.temporaries, 0);
    ck_assert_int_eq(census.others, 0);
    const char *kernels[] = {"scale_bf16"};
    fv_rt_compile_request request = request_for(BF16_SOURCE, kernels, "sm_90a");
    request.cache = cache;
    fv_rt_compiled compiled;
    FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
    ck_assert(compiled.cache_hit);
    assert_cubin(&compiled);
    fv_rt_compiled_free(&compiled);
    fv_rt_cache_close(cache);
}
END_TEST

START_TEST(cache_directory_records_and_disabled_cache)
{
    char path[1024];
    setenv("FV_KERNEL_CACHE", "/somewhere/kernels", 1);
    FV_ASSERT_OK(fv_rt_cache_default_directory(path, sizeof path));
    ck_assert_str_eq(path, "/somewhere/kernels");
    unsetenv("FV_KERNEL_CACHE");
    setenv("HOME", "/home/someone", 1);
    FV_ASSERT_OK(fv_rt_cache_default_directory(path, sizeof path));
    ck_assert_str_eq(path, "/home/someone/.cache/fuservalidate/kernels");
    ck_assert_int_eq(fv_rt_cache_default_directory(path, 8), FV_ERR_USAGE);

    fv_rt_cache *cache = NULL;
    FV_ASSERT_OK(fv_rt_cache_open(make_cache_directory("records"), &cache));
    char *text = (char *)"not touched";
    FV_ASSERT_OK(fv_rt_cache_read_text(cache, "absent.txt", &text));
    ck_assert_ptr_null(text);
    FV_ASSERT_OK(fv_rt_cache_write_text(cache, "copy-bandwidth-GPU-1.txt", "first\n"));
    FV_ASSERT_OK(fv_rt_cache_write_text(cache, "copy-bandwidth-GPU-1.txt", "second\n"));
    FV_ASSERT_OK(fv_rt_cache_read_text(cache, "copy-bandwidth-GPU-1.txt", &text));
    ck_assert_str_eq(text, "second\n");
    free(text);
    ck_assert_int_eq(fv_rt_cache_write_text(cache, "../escape", "x"), FV_ERR_USAGE);
    ck_assert_int_eq(fv_rt_cache_write_text(cache, ".hidden", "x"), FV_ERR_USAGE);
    ck_assert_int_eq(fv_rt_cache_read_text(cache, "a/b", &text), FV_ERR_USAGE);
    ck_assert_int_eq(count_files(fv_rt_cache_directory(cache)).temporaries, 0);
    fv_rt_cache_close(cache);

    /* a regular file where the directory should be */
    ck_assert_int_eq(fv_test_write_file(fv_test_path("plain-file"), "x"), 0);
    ck_assert_int_eq(fv_rt_cache_open(fv_test_path("plain-file"), &cache), FV_ERR_IO);
    ck_assert_ptr_null(cache);

    const char *kernels[] = {"vector_add"};
    fv_rt_compile_request request = request_for(VECTOR_ADD_SOURCE, kernels, "sm_90a");
    fv_rt_compiled compiled;
    FV_ASSERT_OK(fv_rt_compile(&request, &compiled));
    ck_assert(!compiled.cache_hit);
    ck_assert_str_eq(compiled.cache_key, "");
    fv_rt_compiled_free(&compiled);
}
END_TEST

/* ---------------------------------------------------------- GPU tests */

static bool open_gpu(fv_rt_driver **driver)
{
    fv_status status = fv_rt_driver_open(driver);
    if (status == FV_ERR_NOT_FOUND) {
        printf("SKIP: no CUDA driver/GPU (%s)\n", fv_error_message());
        return false;
    }
    FV_ASSERT_OK(status);
    return true;
}

typedef struct gpu_fixture {
    fv_rt_driver *driver;
    fv_rt_context *context;
    fv_rt_cache *cache;
    char arch[FV_RT_ARCH_CAPACITY];
} gpu_fixture;

static bool gpu_setup(gpu_fixture *gpu)
{
    memset(gpu, 0, sizeof *gpu);
    if (!open_gpu(&gpu->driver))
        return false;
    FV_ASSERT_OK(fv_rt_context_open(gpu->driver, 0, &gpu->context));
    const fv_rt_device_info *info = fv_rt_context_device(gpu->context);
    FV_ASSERT_OK(fv_rt_device_arch(info->compute_major, info->compute_minor, gpu->arch,
                                   sizeof gpu->arch));
    FV_ASSERT_OK(fv_rt_cache_open(make_cache_directory("gpu-cache"), &gpu->cache));
    return true;
}

static void gpu_teardown(gpu_fixture *gpu)
{
    fv_rt_cache_close(gpu->cache);
    FV_ASSERT_OK(fv_rt_context_close(gpu->context));
    fv_rt_driver_close(gpu->driver);
}

static fv_rt_module *load_kernels(gpu_fixture *gpu, const char *source,
                                  const char *const *names, size_t count,
                                  fv_rt_compiled *compiled)
{
    fv_rt_compile_request request = request_for(source, names, gpu->arch);
    request.kernel_count = count;
    request.cache = gpu->cache;
    FV_ASSERT_OK(fv_rt_compile(&request, compiled));
    fv_rt_module *module = NULL;
    FV_ASSERT_OK(fv_rt_module_load(gpu->context, compiled->cubin, compiled->cubin_size, &module));
    return module;
}

typedef struct vector_add_launch {
    fv_rt_function *function;
    fv_rt_device_pointer a, b, c;
    int n;
} vector_add_launch;

static fv_status launch_vector_add(fv_rt_context *context, void *user_data)
{
    vector_add_launch *launch = user_data;
    fv_rt_launch_config config = {.grid = {(unsigned)(launch->n + 255) / 256, 1, 1},
                                  .block = {256, 1, 1}};
    void *arguments[] = {&launch->a, &launch->b, &launch->c, &launch->n};
    FV_TRY(fv_rt_launch(launch->function, &config, arguments));
    return FV_OK;
}

START_TEST(gpu_device_vector_add_and_timing)
{
    gpu_fixture gpu;
    if (!gpu_setup(&gpu))
        return;
    const fv_rt_device_info *info = fv_rt_context_device(gpu.context);
    ck_assert(info->name[0] != '\0');
    ck_assert_int_eq(strncmp(info->uuid, "GPU-", 4), 0);
    ck_assert_uint_eq(strlen(info->uuid), 40);
    ck_assert_int_gt(info->sm_count, 0);
    ck_assert_int_gt(info->l2_size, 0);
    ck_assert_int_ge(info->shared_memory_per_block_optin, 48 * 1024);
    ck_assert_uint_gt(info->total_memory, 0);
    printf("GPU %d: %s %s %s sm_%d%d, %d SMs, L2 %d KiB, %d KiB smem opt-in, %.0f GB/s peak, "
           "driver %d\n",
           info->ordinal, info->name, info->uuid, info->pci_bus_id, info->compute_major,
           info->compute_minor, info->sm_count, info->l2_size / 1024,
           info->shared_memory_per_block_optin / 1024, fv_rt_device_peak_bandwidth(info),
           info->driver_version);

    const char *names[] = {"vector_add"};
    fv_rt_compiled compiled;
    fv_rt_module *module = load_kernels(&gpu, VECTOR_ADD_SOURCE, names, 1, &compiled);
    vector_add_launch launch = {.n = 1 << 24};
    FV_ASSERT_OK(fv_rt_module_function(module, "vector_add", &launch.function));
    fv_rt_function *again = NULL;
    FV_ASSERT_OK(fv_rt_module_function(module, "vector_add", &again));
    ck_assert_ptr_eq(again, launch.function);
    fv_rt_function_attributes attributes;
    FV_ASSERT_OK(fv_rt_function_attributes_get(launch.function, &attributes));
    /* the driver agrees with what ptxas reported at compile time */
    const fv_rt_kernel_resources *reported = fv_rt_compiled_kernel(&compiled, "vector_add");
    ck_assert_int_eq(attributes.registers, reported->registers);
    ck_assert_int_eq(attributes.local_bytes, reported->local_bytes);

    fv_rt_function *missing = (fv_rt_function *)&missing;
    ck_assert_int_eq(fv_rt_module_function(module, "no_such_kernel", &missing), FV_ERR_CUDA);
    ck_assert_ptr_null(missing);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "CUDA_ERROR_NOT_FOUND"));
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "no_such_kernel"));

    size_t n = (size_t)launch.n;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    ck_assert(a && b && c);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(i % 1000);
        b[i] = 0.5f * (float)(i % 77);
    }
    FV_ASSERT_OK(fv_rt_alloc(gpu.context, n * sizeof(float), &launch.a));
    FV_ASSERT_OK(fv_rt_alloc(gpu.context, n * sizeof(float), &launch.b));
    FV_ASSERT_OK(fv_rt_alloc(gpu.context, n * sizeof(float), &launch.c));
    FV_ASSERT_OK(fv_rt_memset(gpu.context, launch.c, 0xff, n * sizeof(float)));
    FV_ASSERT_OK(fv_rt_copy_to_device(gpu.context, launch.a, a, n * sizeof(float)));
    FV_ASSERT_OK(fv_rt_copy_to_device(gpu.context, launch.b, b, n * sizeof(float)));
    FV_ASSERT_OK(launch_vector_add(gpu.context, &launch));
    FV_ASSERT_OK(fv_rt_copy_to_host(gpu.context, c, launch.c, n * sizeof(float)));
    for (size_t i = 0; i < n; i++)
        if (c[i] != a[i] + b[i])
            ck_abort_msg("c[%zu] = %g, expected %g", i, (double)c[i], (double)(a[i] + b[i]));

    int blocks_per_sm = 0;
    FV_ASSERT_OK(fv_rt_occupancy(launch.function, 256, 0, &blocks_per_sm));
    ck_assert_int_ge(blocks_per_sm, 1);

    float samples[20];
    fv_rt_timing timing = {.warmup = 3, .repeats = 20, .flush = FV_RT_FLUSH_MEMSET};
    FV_ASSERT_OK(fv_rt_time(gpu.context, launch_vector_add, &launch, &timing, samples));
    float fastest = samples[0];
    for (int i = 0; i < 20; i++) {
        ck_assert(samples[i] > 0 && samples[i] < 1000);
        fastest = samples[i] < fastest ? samples[i] : fastest;
    }
    printf("vector_add of %zu floats: fastest %.4f ms = %.0f GB/s\n", n, (double)fastest,
           3.0 * (double)n * sizeof(float) / (fastest * 1e-3) / 1e9);
    /* the read flush: compiled on first use, then timed like the memset's */
    timing.flush = FV_RT_FLUSH_READ;
    FV_ASSERT_OK(fv_rt_time(gpu.context, launch_vector_add, &launch, &timing, samples));
    for (int i = 0; i < 20; i++)
        ck_assert(samples[i] > 0 && samples[i] < 1000);
    FV_ASSERT_OK(fv_rt_copy_to_host(gpu.context, c, launch.c, n * sizeof(float)));
    ck_assert(c[n - 1] == a[n - 1] + b[n - 1]);
    timing.flush = (fv_rt_flush)7;
    ck_assert_int_eq(fv_rt_time(gpu.context, launch_vector_add, &launch, &timing, samples),
                     FV_ERR_USAGE);
    timing.flush = FV_RT_FLUSH_NONE;
    timing.repeats = 0;
    ck_assert_int_eq(fv_rt_time(gpu.context, launch_vector_add, &launch, &timing, samples),
                     FV_ERR_USAGE);

    FV_ASSERT_OK(fv_rt_free(gpu.context, launch.a));
    FV_ASSERT_OK(fv_rt_free(gpu.context, launch.b));
    FV_ASSERT_OK(fv_rt_free(gpu.context, launch.c));
    free(a);
    free(b);
    free(c);
    FV_ASSERT_OK(fv_rt_module_unload(module));
    fv_rt_compiled_free(&compiled);
    gpu_teardown(&gpu);
}
END_TEST

START_TEST(gpu_cooperative_grid_sync_and_large_shared_memory)
{
    gpu_fixture gpu;
    if (!gpu_setup(&gpu))
        return;
    const fv_rt_device_info *info = fv_rt_context_device(gpu.context);
    const char *names[] = {"grid_sum", "shared_copy"};
    fv_rt_compiled compiled;
    fv_rt_module *module = load_kernels(&gpu, COOPERATIVE_SOURCE, names, 2, &compiled);
    fv_rt_function *grid_sum = NULL;
    fv_rt_function *shared_copy = NULL;
    FV_ASSERT_OK(fv_rt_module_function(module, "grid_sum", &grid_sum));
    FV_ASSERT_OK(fv_rt_module_function(module, "shared_copy", &shared_copy));

    int n = 1 << 22;
    float *host = malloc((size_t)n * sizeof *host);
    ck_assert_ptr_nonnull(host);
    double expected = 0;
    for (int i = 0; i < n; i++) {
        host[i] = (float)(i % 3);
        expected += host[i];
    }
    int blocks_per_sm = 0;
    FV_ASSERT_OK(fv_rt_occupancy(grid_sum, 256, 0, &blocks_per_sm));
    ck_assert_int_ge(blocks_per_sm, 1);
    unsigned blocks = (unsigned)(blocks_per_sm * info->sm_count);
    fv_rt_device_pointer input = 0, partial = 0, output = 0;
    FV_ASSERT_OK(fv_rt_alloc(gpu.context, (size_t)n * sizeof(float), &input));
    FV_ASSERT_OK(fv_rt_alloc(gpu.context, blocks * sizeof(float), &partial));
    FV_ASSERT_OK(fv_rt_alloc(gpu.context, (size_t)n * sizeof(float), &output));
    FV_ASSERT_OK(fv_rt_copy_to_device(gpu.context, input, host, (size_t)n * sizeof(float)));
    fv_rt_launch_config config = {
        .grid = {blocks, 1, 1}, .block = {256, 1, 1}, .cooperative = true};
    void *sum_arguments[] = {&input, &partial, &output, &n};
    FV_ASSERT_OK(fv_rt_launch(grid_sum, &config, sum_arguments));
    float total = 0;
    FV_ASSERT_OK(fv_rt_copy_to_host(gpu.context, &total, output, sizeof total));
    ck_assert_msg((double)total == expected, "grid sum %g, expected %g", (double)total,
                  expected);
    config.grid[0] = blocks * 4 + 1; /* cannot be co-resident */
    ck_assert_int_eq(fv_rt_launch(grid_sum, &config, sum_arguments), FV_ERR_CUDA);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "grid_sum"));

    int staged = 100 * 1024 / (int)sizeof(float); /* 100 KiB of dynamic shared memory */
    fv_rt_launch_config copy_config = {.grid = {1, 1, 1}, .block = {512, 1, 1},
                                       .dynamic_shared_bytes = 100 * 1024};
    void *copy_arguments[] = {&input, &output, &staged};
    FV_ASSERT_OK(fv_rt_launch(shared_copy, &copy_config, copy_arguments));
    float *copied = malloc((size_t)staged * sizeof *copied);
    ck_assert_ptr_nonnull(copied);
    FV_ASSERT_OK(fv_rt_copy_to_host(gpu.context, copied, output, (size_t)staged * sizeof(float)));
    for (int i = 0; i < staged; i++)
        ck_assert(copied[i] == host[staged - 1 - i] + 1.0f);
    fv_rt_function_attributes attributes;
    FV_ASSERT_OK(fv_rt_function_attributes_get(shared_copy, &attributes));
    ck_assert_int_ge(attributes.max_dynamic_shared_bytes, 100 * 1024);

    FV_ASSERT_OK(fv_rt_free(gpu.context, input));
    FV_ASSERT_OK(fv_rt_free(gpu.context, partial));
    FV_ASSERT_OK(fv_rt_free(gpu.context, output));
    free(host);
    free(copied);
    FV_ASSERT_OK(fv_rt_module_unload(module));
    fv_rt_compiled_free(&compiled);
    gpu_teardown(&gpu);
}
END_TEST

START_TEST(gpu_copy_bandwidth_is_measured_once)
{
    gpu_fixture gpu;
    if (!gpu_setup(&gpu))
        return;
    fv_rt_copy_bandwidth_result measured, cached, uncached;
    FV_ASSERT_OK(fv_rt_copy_bandwidth(gpu.context, gpu.cache, &measured));
    ck_assert(!measured.from_cache);
    ck_assert_str_eq(measured.cache_problem, "");
    ck_assert(measured.gigabytes_per_second > 100 && measured.gigabytes_per_second < 100000);
    ck_assert_uint_ge(measured.bytes, 64u << 20);
    FV_ASSERT_OK(fv_rt_copy_bandwidth(gpu.context, gpu.cache, &cached));
    ck_assert(cached.from_cache);
    ck_assert(fabs(cached.gigabytes_per_second - measured.gigabytes_per_second) < 0.001);
    ck_assert_uint_eq(cached.bytes, measured.bytes);
    FV_ASSERT_OK(fv_rt_copy_bandwidth(gpu.context, NULL, &uncached));
    ck_assert(!uncached.from_cache);
    printf("copy bandwidth (read + write): %.0f GB/s over %llu-byte copies; again %.0f GB/s\n",
           measured.gigabytes_per_second, (unsigned long long)measured.bytes,
           uncached.gigabytes_per_second);
    gpu_teardown(&gpu);
}
END_TEST

/* A copy timed as a case is: every sample positive, a large copy under the
 * flush no faster than the 1 GiB copy (a little noise allowed), a tiny one
 * slower than that rate (its launch dominates); a copy the device cannot hold
 * is refused without harm to the context. */
START_TEST(gpu_copies_of_a_given_size_are_timed_like_cases)
{
    gpu_fixture gpu;
    if (!gpu_setup(&gpu))
        return;
    fv_rt_copy_bandwidth_result reference;
    FV_ASSERT_OK(fv_rt_copy_bandwidth(gpu.context, NULL, &reference));
    float samples[20];
    fv_rt_timing timing = {.warmup = 2, .repeats = 20, .flush = FV_RT_FLUSH_MEMSET};
    const uint64_t sizes[] = {4096, 64u << 20};
    double gigabytes_per_second[2];
    for (int s = 0; s < 2; s++) {
        FV_ASSERT_OK(fv_rt_time_copy(gpu.context, sizes[s], &timing, samples));
        double sorted[20];
        for (int i = 0; i < 20; i++) {
            ck_assert(samples[i] > 0 && samples[i] < 1000);
            sorted[i] = samples[i];
        }
        fv_sort_doubles(sorted, 20);
        double median_ms = fv_sorted_median(sorted, 20);
        gigabytes_per_second[s] = 2.0 * (double)sizes[s] / (median_ms * 1e-3) / 1e9;
        printf("copy of %llu bytes each way, memset flush: median %.4f ms = %.0f GB/s "
               "(%.1f%% of the %llu-byte copy's %.0f GB/s)\n",
               (unsigned long long)sizes[s], median_ms, gigabytes_per_second[s],
               100 * gigabytes_per_second[s] / reference.gigabytes_per_second,
               (unsigned long long)reference.bytes, reference.gigabytes_per_second);
    }
    ck_assert(gigabytes_per_second[0] < 0.5 * reference.gigabytes_per_second);
    ck_assert(gigabytes_per_second[1] < 1.1 * reference.gigabytes_per_second);
    ck_assert(gigabytes_per_second[1] > gigabytes_per_second[0]);

    ck_assert_int_eq(fv_rt_time_copy(gpu.context, 1ull << 50, &timing, samples),
                     FV_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "free on device"));
    fv_error_clear();
    ck_assert_int_eq(fv_rt_time_copy(gpu.context, 0, &timing, samples), FV_ERR_USAGE);
    fv_error_clear();
    timing.flush = FV_RT_FLUSH_READ;
    FV_ASSERT_OK(fv_rt_time_copy(gpu.context, 1u << 20, &timing, samples));
    FV_ASSERT_OK(fv_rt_synchronize(gpu.context));
    gpu_teardown(&gpu);
}
END_TEST

static Suite *runtime_suite(void)
{
    Suite *suite = suite_create("runtime");
    TCase *compile = tcase_create("compile");
    tcase_set_timeout(compile, 120);
    tcase_add_test(compile, compiles_bf16_vector_kernel_for_hopper_and_blackwell);
    tcase_add_test(compile, read_flush_kernel_compiles_for_hopper_and_blackwell);
    tcase_add_test(compile, local_memory_spills_and_shared_memory_are_reported);
    tcase_add_test(compile, syntax_error_gives_nvrtc_error_with_log_line);
    tcase_add_test(compile, bad_requests_are_refused);
    tcase_add_test(compile, cooperative_groups_header_is_found);
    tcase_add_test(compile, ptxas_report_is_parsed);
    tcase_add_test(compile, architecture_names_follow_compute_capability);
    tcase_add_test(compile, driver_opens_or_says_why_not);
    suite_add_tcase(suite, compile);

    TCase *cache = tcase_create("cache");
    tcase_set_timeout(cache, 120);
    tcase_add_test(cache, cache_miss_then_hit);
    tcase_add_test(cache, cache_keys_depend_on_everything_that_shapes_the_cubin);
    tcase_add_test(cache, corrupt_entries_are_detected_and_recompiled);
    tcase_add_test(cache, concurrent_writers_leave_one_valid_entry);
    tcase_add_test(cache, cache_directory_records_and_disabled_cache);
    suite_add_tcase(suite, cache);

    TCase *gpu = tcase_create("gpu");
    tcase_set_timeout(gpu, 300);
    tcase_add_test(gpu, gpu_device_vector_add_and_timing);
    tcase_add_test(gpu, gpu_cooperative_grid_sync_and_large_shared_memory);
    tcase_add_test(gpu, gpu_copy_bandwidth_is_measured_once);
    tcase_add_test(gpu, gpu_copies_of_a_given_size_are_timed_like_cases);
    suite_add_tcase(suite, gpu);
    return suite;
}

int main(void) { return fv_test_run_suite(runtime_suite()); }
