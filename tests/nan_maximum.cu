// nan_maximum.cu: on a GPU, fv_maximum / fv_minimum on floats (one max.NaN /
// min.NaN instruction on sm_80 and newer) against the compare-and-select
// form every other type uses, over every pair of special and ordinary
// values: a NaN operand gives NaN, otherwise the larger / smaller value
// (+0 and -0 compare equal, so either is right).  test_gpu_cases.sh builds
// and runs it; it prints each mismatch and exits 1 if there is one, and
// prints SKIP (exit 0) on a GPU under sm_80, where fv_maximum keeps the
// compare-and-select form and there is nothing to compare.
//   nvcc -O3 -arch=sm_90 -I src/codegen tests/nan_maximum.cu -o nan_maximum
#include <cmath>
#include <cstdio>

#include "common.cuh"

static const float kValues[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 3.5e38f, -3.5e38f,
    1e-45f, -1e-45f, 1.17549435e-38f, 65504.0f, -2.5f, 0.1f,
};
constexpr int kCount = sizeof kValues / sizeof kValues[0];

__global__ void combine_pairs(const float *values, float *maximum, float *minimum,
                              float *generic_maximum, float *generic_minimum, int *arch)
{
#ifdef __CUDA_ARCH__
    if (threadIdx.x == 0)
        *arch = __CUDA_ARCH__;
#endif
    const int a = threadIdx.x / kCount, b = threadIdx.x % kCount;
    const float x = values[a], y = values[b];
    maximum[threadIdx.x] = fv_maximum<float>(x, y);
    minimum[threadIdx.x] = fv_minimum<float>(x, y);
    generic_maximum[threadIdx.x] = (x != x || y != y) ? x + y : (x >= y ? x : y);
    generic_minimum[threadIdx.x] = (x != x || y != y) ? x + y : (x <= y ? x : y);
}

static bool same(float got, float want)
{
    return (std::isnan(got) && std::isnan(want)) || got == want;
}

static int check(cudaError_t status, const char *what)
{
    if (status == cudaSuccess)
        return 0;
    std::fprintf(stderr, "nan_maximum: %s: %s\n", what, cudaGetErrorString(status));
    return 1;
}

int main()
{
    constexpr int pairs = kCount * kCount;
    float *device = nullptr;
    int *device_arch = nullptr;
    if (check(cudaMalloc(&device, sizeof(float) * (kCount + 4 * pairs)), "cudaMalloc") ||
        check(cudaMalloc(&device_arch, sizeof(int)), "cudaMalloc"))
        return 1;
    float host[kCount + 4 * pairs];
    if (check(cudaMemcpy(device, kValues, sizeof kValues, cudaMemcpyHostToDevice), "copy in"))
        return 1;
    float *out = device + kCount;
    combine_pairs<<<1, pairs>>>(device, out, out + pairs, out + 2 * pairs, out + 3 * pairs,
                                device_arch);
    int arch = 0;
    if (check(cudaGetLastError(), "launch") ||
        check(cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost), "copy out") ||
        check(cudaMemcpy(&arch, device_arch, sizeof arch, cudaMemcpyDeviceToHost), "copy out"))
        return 1;
    if (arch < 800) {
        std::printf("SKIP: nan_maximum: compiled for sm_%d, under sm_80: no max.NaN to check\n",
                    arch / 10);
        return 0;
    }
    const float *maximum = host + kCount, *minimum = maximum + pairs;
    const float *generic_maximum = minimum + pairs, *generic_minimum = generic_maximum + pairs;
    int mismatches = 0;
    for (int i = 0; i < pairs; ++i) {
        const float x = kValues[i / kCount], y = kValues[i % kCount];
        if (!same(maximum[i], generic_maximum[i]) || !same(minimum[i], generic_minimum[i])) {
            std::printf("mismatch: (%g, %g): max %g (want %g), min %g (want %g)\n", x, y,
                        maximum[i], generic_maximum[i], minimum[i], generic_minimum[i]);
            ++mismatches;
        }
    }
    cudaFree(device);
    cudaFree(device_arch);
    std::printf("nan_maximum: sm_%d, %d pairs, %d mismatches\n", arch / 10, pairs, mismatches);
    return mismatches == 0 ? 0 : 1;
}
