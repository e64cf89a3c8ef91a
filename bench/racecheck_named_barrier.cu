// racecheck_named_barrier.cu: a race-free kernel on which compute-sanitizer's
// racecheck reports a race.  It shaped how the warp-specialized kernels' racecheck
// reports are read (bench/results/h200-2026-11-27.md, "compute-sanitizer on the
// warp-specialized backward kernels").  A block of 512 threads is laid out as the
// 512-thread warp-specialized kernels are: 384 compute threads and 128 producer
// threads.  It ends in a shared-memory exchange between thread t and t + 256,
// ordered by __syncthreads().  Three optional parts come before it:
//   bit 0: the 384 compute threads pass a named barrier (bar.sync 1, 384) twice,
//          as the compute group's reductions do;
//   bit 1: thread 384 alone spins for a while (the producer leader);
//   bit 2: thread 384 bulk-copies a row on a full mbarrier, the compute threads
//          wait on it and arrive on an empty mbarrier that thread 384 waits on;
//   bit 3: the 128 producer threads pass a named barrier of their own
//          (bar.sync 2, 128) twice, so every thread has passed as many barriers
//          when it reaches the __syncthreads() before the exchange.
// On an H200 (CUDA 13.0) racecheck reports the exchange, one race each, in
// exactly the variants where bits 0 and 3 differ (1, 3, 5, 7, 8, 10, 12, 14):
// whichever group passed named barriers the other did not.  With both set (9,
// 11, 13, 15), every thread has passed two named barriers and none is
// reported; the mbarrier handshake and the spinning thread change nothing.
// racecheck seems to order threads by how many barriers each has passed,
// whatever their id, not by the __syncthreads() they share.
//
// Build and run on the GPU machine (not part of the CMake build):
//   nvcc -O3 -arch=sm_90a -lineinfo bench/racecheck_named_barrier.cu -o /tmp/nb
//   for v in $(seq 0 15); do compute-sanitizer --tool racecheck /tmp/nb $v; done
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// The generated kernels' device helpers: the mbarrier and bulk-copy wrappers.
#include "../src/codegen/common.cuh"

__device__ __forceinline__ void named_sync(int id, int count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}


// variant bit 0: warps 0-11 pass named barrier 1 (384 threads) twice, around a scratch write;
// variant bit 1: thread 384 alone loops for a while first (the producer leader);
// variant bit 2: thread 384 bulk-copies a row into shared memory on a full mbarrier, the 384
// compute threads wait on it, read the row and arrive on an empty mbarrier that thread 384
// waits on (the warp-specialized kernels' handshake).
// Every variant ends in a 256 columns x 2 slices exchange (thread t and t + 256 share a column).
__global__ void exchange(int variant, const float *row, float *out, int spin)
{
    __shared__ float scratch[2][256];
    __shared__ float group_scratch[32];
    __shared__ __align__(16) float stage[1024];
    __shared__ __align__(8) unsigned long long full, empty;
    const int t = threadIdx.x;
    float value = (float)t;
    if (t == 0) {
        fv_barrier_init(&full, 1);
        fv_barrier_init(&empty, 384);
        fv_barrier_fence_init();
    }
    __syncthreads();
    if (variant & 4) {
        if (t == 384) {
            fv_barrier_expect_bytes(&full, 4096);
            fv_bulk_copy(stage, row, 4096, &full);
            fv_barrier_wait(&empty, 0);
        } else if (t < 384) {
            fv_barrier_wait(&full, 0);
            value += stage[t] + stage[t + 384 < 1024 ? t + 384 : t];
            fv_barrier_arrive(&empty);
        }
        __syncwarp();
    }
    if (variant & 1) {
        if (t < 384) {
            named_sync(1, 384);
            if (t % 32 == 0)
                group_scratch[t / 32] = value;
            named_sync(1, 384);
            value += group_scratch[(t / 32 + 1) % 12];
        }
    }
    if (variant & 8) {
        if (t >= 384) {
            named_sync(2, 128);
            named_sync(2, 128);
        }
    }
    if (variant & 2) {
        if (t == 384) {
            volatile float sink = 0;
            for (int i = 0; i < spin; ++i)
                sink = sink + 1.0f;
            value += sink;
        }
    }
    __syncthreads();
    const int slice = t / 256, column = t % 256;
    scratch[slice][column] = value;
    __syncthreads();
    float total = scratch[0][column] + scratch[1][column];
    __syncthreads();
    if (slice == 0)
        out[blockIdx.x * 256 + column] = total;
}

int main(int argc, char **argv)
{
    int only = argc > 1 ? atoi(argv[1]) : -1;
    float *out = nullptr, *row = nullptr;
    if (cudaMalloc(&out, 8 * 256 * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&row, 1024 * sizeof(float)) != cudaSuccess ||
        cudaMemset(row, 0, 1024 * sizeof(float)) != cudaSuccess)
        return 1;
    for (int variant = 0; variant < 16; ++variant) {
        if (only >= 0 && variant != only)
            continue;
        exchange<<<8, 512>>>(variant, row, out, 10000);
        cudaError_t status = cudaDeviceSynchronize();
        std::printf("variant %d (named barrier %d, lone spinning thread %d, mbarrier handshake %d, "
                    "producer's own named barrier %d): %s\n",
                    variant, variant & 1, (variant >> 1) & 1, (variant >> 2) & 1, (variant >> 3) & 1,
                    cudaGetErrorString(status));
    }
    cudaFree(row);
    cudaFree(out);
    return 0;
}
