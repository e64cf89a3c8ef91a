// exp_fast_accuracy.cu: on a GPU, fv_exp_fast (2^(a·log2 e) on the
// special-function unit) against exp in double, for every float a in
// [-104, 88.72]: the error model of docs/error-bounds.md ("exp in fusions whose
// outputs are all 16-bit") must hold for each one.
//
//   |fv_exp_fast(a) - e^a| <= (4 + 1.25·|a|)·u·e^a          (e^a >= 2^-126)
//   |fv_exp_fast(a) - e^a| <= e^a + (4 + 1.25·|a|)·u·e^a    (below: flushed)
//
// with u = 2^-24.  It also reports the special-function unit's own error
// (against 2^t for the float t it was given), the largest relative error and
// where it falls.  test_gpu_cases.sh builds and runs it; it exits 1 when the
// model fails for any a.
//   nvcc -O3 -arch=sm_90 -I src/codegen tests/exp_fast_accuracy.cu -o exp_fast_accuracy
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common.cuh"
#include "../validate/fast_exp_model.h"  // the model's constants, the evaluator's too

constexpr double kUnitRoundoff = 1.0 / 16777216.0;  // 2^-24

struct Worst {
    unsigned long long failures;
    unsigned long long checked;     // bit patterns examined (host count)
    double unit_error;        // max |r/2^t - 1| / u (the special-function unit alone)
    unsigned unit_error_bits; // a where it happened
    double model_slack;       // max |r - e^a| / (u e^a) - 1.25 |a| (normal results)
    unsigned model_slack_bits;
    unsigned first_failure_bits;
};

__device__ void atomic_max_double(double *address, double value, unsigned *bits, unsigned a_bits)
{
    unsigned long long *word = reinterpret_cast<unsigned long long *>(address);
    unsigned long long old = *word;
    while (__longlong_as_double(old) < value) {
        unsigned long long seen = atomicCAS(word, old, __double_as_longlong(value));
        if (seen == old) {
            *bits = a_bits;  // racy but only informative
            return;
        }
        old = seen;
    }
}

// One thread per float bit pattern in [first, first + count).
__global__ void check_range(unsigned first, unsigned long long count, Worst *worst)
{
    unsigned long long index = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (index >= count)
        return;
    const unsigned bits = first + (unsigned)index;
    const float a = __uint_as_float(bits);
    if (!(a >= -104.0f && a <= FV_FAST_EXP_HIGHEST_ARGUMENT))
        return;
    const float r = fv_exp_fast(a);
    const double exact = exp((double)a);
    const double t = (double)(a * 1.44269504088896341f);  // what the unit was given
    const double unit_exact = exp2(t);
    double unit_error = 0;
    if (unit_exact >= 0x1p-126 && r != 0)
        unit_error = fabs((double)r / unit_exact - 1) / kUnitRoundoff;
    const double allowed_relative =
        (FV_FAST_EXP_UNITS + FV_FAST_EXP_ARGUMENT_UNITS * fabs((double)a)) * kUnitRoundoff;
    const double flushed = exact < 0x1p-126 ? exact : 0;
    const double error = fabs((double)r - exact);
    const bool ok = error <= flushed + allowed_relative * exact;
    if (!ok) {
        if (atomicAdd(&worst->failures, 1ull) == 0)
            worst->first_failure_bits = bits;
    }
    if (unit_error > 0)
        atomic_max_double(&worst->unit_error, unit_error, &worst->unit_error_bits, bits);
    if (exact >= 0x1p-126) {
        const double slack =
            error / (kUnitRoundoff * exact) - FV_FAST_EXP_ARGUMENT_UNITS * fabs((double)a);
        atomic_max_double(&worst->model_slack, slack, &worst->model_slack_bits, bits);
    }
}

static bool cuda_ok(cudaError_t status, const char *what)
{
    if (status == cudaSuccess)
        return true;
    fprintf(stderr, "exp_fast_accuracy: %s: %s\n", what, cudaGetErrorString(status));
    return false;
}

// Checks the bit patterns [first, last] (inclusive); false on a CUDA error.
static bool check_patterns(unsigned first, unsigned last, Worst *device_worst)
{
    const unsigned long long count = (unsigned long long)last - first + 1;
    const unsigned threads = 256;
    const unsigned long long blocks = (count + threads - 1) / threads;
    device_worst->checked += count;
    check_range<<<(unsigned)blocks, threads>>>(first, count, device_worst);
    return cuda_ok(cudaGetLastError(), "launch") && cuda_ok(cudaDeviceSynchronize(), "kernel");
}

static unsigned float_bits(float x)
{
    unsigned bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

static float bits_float(unsigned bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

int main(void)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("exp_fast_accuracy: SKIP (no GPU)\n");
        return 0;
    }
    Worst *worst = nullptr;
    if (!cuda_ok(cudaMallocManaged(&worst, sizeof *worst), "cudaMallocManaged"))
        return 1;
    memset(worst, 0, sizeof *worst);
    // Non-negative floats 0 .. 88.72, then negative ones -0 .. -104 (sign bit set).
    if (!check_patterns(0u, float_bits(FV_FAST_EXP_HIGHEST_ARGUMENT), worst) ||
        !check_patterns(0x80000000u, float_bits(-104.0f), worst))
        return 1;
    printf("exp_fast_accuracy: %llu arguments in [-104, 88.72]; special-function unit's own "
           "error at most %.3f u (a = %.9g); |r - e^a| at most (%.3f + 1.25|a|) u e^a "
           "(a = %.9g); model: (%.0f + 1.25|a|) u e^a, flushed below 2^-126\n",
           worst->checked, worst->unit_error, bits_float(worst->unit_error_bits),
           worst->model_slack, bits_float(worst->model_slack_bits), FV_FAST_EXP_UNITS);
    if (worst->failures != 0) {
        fprintf(stderr, "exp_fast_accuracy: FAIL: %llu arguments outside the model, the first a = %.9g\n",
                worst->failures, bits_float(worst->first_failure_bits));
        return 1;
    }
    return 0;
}
