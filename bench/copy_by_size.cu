// copy_by_size.cu: the device-to-device copy bandwidth a GPU reaches at the
// sizes of the benchmark's fusions, timed as fuservalidate times a kernel
// (a 2 x L2 memset before each run, untimed; events around the copy; the
// median of 20 runs after a warm-up).  fuservalidate's "% of copy" divides
// by the copy of 1 GiB; this shows how much of that a copy of the same
// bytes as a short fusion reaches, which bounds what its kernel can reach.
//
// It also times the same copies after a flush that only reads (2 x L2 bytes
// summed by a kernel, so the L2 is left holding clean lines, not the
// memset's dirty ones), and an empty kernel after each flush: the part of a
// short kernel's fixed cost that is the flush's write-back, not the kernel.
//
// Build and run on the GPU machine (not part of the CMake build):
//   nvcc -O3 -arch=sm_90 bench/copy_by_size.cu -o /tmp/copy_by_size && /tmp/copy_by_size
// Prints, per method and size moved each way (16 MiB to 1 GiB): microseconds,
// TB/s on the bytes read plus written, and % of the memset-flushed 1 GiB
// memcpy (fuservalidate's reference); the empty kernel's microseconds.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK_CUDA(call)                                                                 \
    do {                                                                                 \
        cudaError_t status_ = (call);                                                    \
        if (status_ != cudaSuccess) {                                                    \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                         cudaGetErrorString(status_));                                   \
            return false;                                                                \
        }                                                                                \
    } while (0)

enum flush_method { FLUSH_NONE, FLUSH_MEMSET, FLUSH_READ };
enum copy_operation { OPERATION_MEMCPY, OPERATION_KERNEL, OPERATION_EMPTY };

struct method {
    flush_method flush;
    copy_operation operation;
    const char *name;
};

static const method methods[] = {
    {FLUSH_MEMSET, OPERATION_MEMCPY, "memcpy, memset flush"},
    {FLUSH_READ, OPERATION_MEMCPY, "memcpy, read flush"},
    {FLUSH_NONE, OPERATION_MEMCPY, "memcpy, back to back"},
    {FLUSH_MEMSET, OPERATION_KERNEL, "kernel, memset flush"},
    {FLUSH_READ, OPERATION_KERNEL, "kernel, read flush"},
};

static const method empty_methods[] = {
    {FLUSH_MEMSET, OPERATION_EMPTY, "empty kernel, memset flush"},
    {FLUSH_READ, OPERATION_EMPTY, "empty kernel, read flush"},
    {FLUSH_NONE, OPERATION_EMPTY, "empty kernel, no flush"},
};

// out[i] = in[i] over `count` 16-byte vectors, grid-strided.
__global__ void copy_vectors(const int4 *__restrict__ in, int4 *__restrict__ out, size_t count)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        out[i] = in[i];
}

// Reads `count` 16-byte vectors and keeps their xor; stores it only if it is
// a value the flush buffer never holds, so the loads are not dropped and no
// line is dirtied.
__global__ void read_vectors(const int4 *__restrict__ in, size_t count, int4 *__restrict__ sink)
{
    int4 total = make_int4(0, 0, 0, 0);
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        int4 v = in[i];
        total.x ^= v.x; total.y ^= v.y; total.z ^= v.z; total.w ^= v.w;
    }
    if (total.x == 0x7eadbeef && total.y == 0x7eadbeef)
        *sink = total;
}

__global__ void empty_kernel() {}

struct buffers {
    void *source, *destination;  // max_bytes each
    void *flush;                 // flush_bytes: twice the L2
    size_t flush_bytes;
    int4 *sink;                  // one vector read_vectors may write
    int sm_count;
    cudaEvent_t start, stop;
};

static bool flush(const buffers &b, flush_method how, int run)
{
    if (how == FLUSH_MEMSET)
        CHECK_CUDA(cudaMemsetAsync(b.flush, run, b.flush_bytes));
    else if (how == FLUSH_READ)
        read_vectors<<<b.sm_count * 8, 256>>>((const int4 *)b.flush, b.flush_bytes / 16, b.sink);
    CHECK_CUDA(cudaGetLastError());
    return true;
}

static bool operate(const buffers &b, copy_operation operation, size_t bytes)
{
    if (operation == OPERATION_KERNEL)
        copy_vectors<<<b.sm_count * 8, 256>>>((const int4 *)b.source, (int4 *)b.destination,
                                              bytes / 16);
    else if (operation == OPERATION_EMPTY)
        empty_kernel<<<b.sm_count * 4, 128>>>();
    else
        CHECK_CUDA(cudaMemcpyAsync(b.destination, b.source, bytes, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaGetLastError());
    return true;
}

// Median time in ms of 20 runs of `m` on `bytes` (after one untimed) into *median_ms.
static bool time_copy(const buffers &b, const method &m, size_t bytes, float *median_ms)
{
    std::vector<float> samples;
    for (int run = 0; run <= 20; run++) {
        if (!flush(b, m.flush, run))
            return false;
        CHECK_CUDA(cudaEventRecord(b.start));
        if (!operate(b, m.operation, bytes))
            return false;
        CHECK_CUDA(cudaEventRecord(b.stop));
        CHECK_CUDA(cudaEventSynchronize(b.stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, b.start, b.stop));
        if (run > 0)
            samples.push_back(ms);
    }
    std::sort(samples.begin(), samples.end());
    *median_ms = samples[samples.size() / 2];
    return true;
}

static bool run_all()
{
    const size_t mib = (size_t)1 << 20;
    const size_t sizes[] = {16 * mib, 32 * mib, 48 * mib, 64 * mib, 96 * mib,
                            128 * mib, 256 * mib, 512 * mib, 1024 * mib};
    const size_t max_bytes = 1024 * mib;
    const int size_count = sizeof sizes / sizeof sizes[0];
    buffers b = {};
    int l2_bytes = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
    CHECK_CUDA(cudaDeviceGetAttribute(&b.sm_count, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp properties;
    CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
    std::printf("%s, L2 %d MiB, %d SMs\n", properties.name, l2_bytes >> 20, b.sm_count);
    b.flush_bytes = 2 * (size_t)l2_bytes;
    CHECK_CUDA(cudaMalloc(&b.flush, b.flush_bytes));
    CHECK_CUDA(cudaMalloc(&b.source, max_bytes));
    CHECK_CUDA(cudaMalloc(&b.destination, max_bytes));
    CHECK_CUDA(cudaMemset(b.source, 1, max_bytes));
    CHECK_CUDA(cudaMemset(b.destination, 2, max_bytes));
    CHECK_CUDA(cudaEventCreate(&b.start));
    CHECK_CUDA(cudaEventCreate(&b.stop));
    CHECK_CUDA(cudaMalloc(&b.sink, sizeof *b.sink));
    double reference = 0;  // TB/s of the memset-flushed 1 GiB memcpy (the first method)
    for (const method &m : methods) {
        float ms[size_count];
        for (int i = 0; i < size_count; i++)
            if (!time_copy(b, m, sizes[i], &ms[i]))
                return false;
        if (reference == 0)
            reference = 2.0 * sizes[size_count - 1] / (ms[size_count - 1] * 1e-3) / 1e12;
        for (int i = 0; i < size_count; i++) {
            double terabytes_per_second = 2.0 * sizes[i] / (ms[i] * 1e-3) / 1e12;
            std::printf("%-26s %5zu MiB each way: %9.2f us  %6.3f TB/s  %5.1f%% of 1 GiB\n",
                        m.name, sizes[i] / mib, ms[i] * 1e3, terabytes_per_second,
                        100.0 * terabytes_per_second / reference);
        }
    }
    for (const method &m : empty_methods) {
        float ms = 0;
        if (!time_copy(b, m, 0, &ms))
            return false;
        std::printf("%-26s %9.2f us\n", m.name, ms * 1e3);
    }
    CHECK_CUDA(cudaFree(b.sink));
    CHECK_CUDA(cudaFree(b.flush));
    CHECK_CUDA(cudaFree(b.source));
    CHECK_CUDA(cudaFree(b.destination));
    return true;
}

int main() { return run_all() ? 0 : 1; }
