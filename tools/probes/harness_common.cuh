// harness_common.cuh: what both probe harnesses share: the error check, the
// fills of the inputs, the checksums of the outputs, and the timing of a
// kernel against a copy of the same bytes (the L2 flushed before each run,
// events around it, as fuservalidate times kernels; 5 untimed runs, then the
// median of 20).
#pragma once
#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t status_ = (x);                                                             \
        if (status_ != cudaSuccess) {                                                          \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(status_));             \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

// A hash of `i` and `seed` in [0, 65536).
__device__ __forceinline__ unsigned probe_hash(long long i, unsigned seed)
{
    unsigned v = (unsigned)i * 2654435761u ^ seed;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    v ^= v >> 15;
    return v & 0xffff;
}

// bf16 values in [-1, 1).
__global__ void fill_bf16(__nv_bfloat16 *p, long long count, unsigned seed)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16_rn(probe_hash(i, seed) / 32768.0f - 1.0f);
}

// float values in [base, base + scale).
__global__ void fill_f32(float *p, long long count, float base, float scale, unsigned seed)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
        p[i] = base + scale * (probe_hash(i, seed) / 65536.0f);
}

// Adds sum |p[i]| * (1 + i % 7) into *out (equal across edits that keep the result).
template <typename T>
__global__ void checksum(const T *p, long long count, double *out)
{
    double s = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
        s += fabs((double)(float)p[i]) * (1 + (i % 7));
    atomicAdd(out, s);
}

// The checksums of three outputs (`a` of `a_count` elements, then `b` and
// `c`) into host[3].
template <typename A, typename B, typename C>
int output_checksums(const A *a, long long a_count, const B *b, long long b_count, const C *c,
                     long long c_count, double host[3])
{
    double *sums;
    CK(cudaMalloc(&sums, 3 * sizeof(double)));
    CK(cudaMemset(sums, 0, 3 * sizeof(double)));
    checksum<<<1024, 256>>>(a, a_count, sums);
    checksum<<<64, 256>>>(b, b_count, sums + 1);
    checksum<<<64, 256>>>(c, c_count, sums + 2);
    CK(cudaMemcpy(host, sums, 3 * sizeof(double), cudaMemcpyDeviceToHost));
    CK(cudaFree(sums));
    return 0;
}

// Times launch_kernel() and launch_copy() alternately, 25 runs each with the
// L2 flushed before each, and leaves the medians of the last 20 (ms).
template <typename Kernel, typename Copy>
int time_against_copy(Kernel launch_kernel, Copy launch_copy, float *kernel_ms, float *copy_ms)
{
    char *flush;
    const size_t flush_bytes = 256 << 20;
    CK(cudaMalloc(&flush, flush_bytes));
    cudaEvent_t start, stop;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    std::vector<float> kernel_times, copy_times;
    for (int i = 0; i < 25; ++i) {
        for (int which = 0; which < 2; ++which) {
            CK(cudaMemsetAsync(flush, i, flush_bytes));
            CK(cudaEventRecord(start));
            CK(which == 0 ? launch_kernel() : launch_copy());
            CK(cudaEventRecord(stop));
            CK(cudaEventSynchronize(stop));
            float ms;
            CK(cudaEventElapsedTime(&ms, start, stop));
            if (i >= 5)
                (which == 0 ? kernel_times : copy_times).push_back(ms);
        }
    }
    CK(cudaGetLastError());
    std::sort(kernel_times.begin(), kernel_times.end());
    std::sort(copy_times.begin(), copy_times.end());
    *kernel_ms = kernel_times[kernel_times.size() / 2];
    *copy_ms = copy_times[copy_times.size() / 2];
    CK(cudaFree(flush));
    return 0;
}
