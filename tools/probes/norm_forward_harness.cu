// norm_forward_harness.cu: the same for a generated layer-norm (or, with -DRMS, RMS-norm) forward kernel.
#include KERNEL_FILE
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t status_ = (x); if (status_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); return 1; } } while (0)
__global__ void fill_bf16(__nv_bfloat16 *p, long long count, unsigned seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)i * 2654435761u ^ seed; v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
        p[i] = __float2bfloat16_rn(((v & 0xffff) / 32768.0f) - 1.0f);
    }
}
__global__ void checksum(const __nv_bfloat16 *p, long long count, double *out) {
    double s = 0; for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) s += fabs((double)__bfloat162float(p[i])) * (1 + (i % 7));
    atomicAdd(out, s);
}
__global__ void checksum_f32(const float *p, long long count, double *out) {
    double s = 0; for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) s += fabs((double)p[i]) * (1 + (i % 7));
    atomicAdd(out, s);
}
int main() {
    long long n = N_ROWS, h = H_COLS;
    __nv_bfloat16 *x, *y, *w, *b; float *s0, *s1, *ws; unsigned *sem;
    CK(cudaMalloc(&x, n*h*2)); CK(cudaMalloc(&y, n*h*2)); CK(cudaMalloc(&w, h*2)); CK(cudaMalloc(&b, h*2));
    CK(cudaMalloc(&s0, n*4)); CK(cudaMalloc(&s1, n*4)); CK(cudaMalloc(&ws, 4096)); CK(cudaMalloc(&sem, 4096));
    fill_bf16<<<1024, 256>>>(x, n*h, 1); fill_bf16<<<64, 256>>>(w, h, 3); fill_bf16<<<64, 256>>>(b, h, 4);
    char *flush; size_t flush_bytes = 256 << 20; CK(cudaMalloc(&flush, flush_bytes));
    char *copy_dst; CK(cudaMalloc(&copy_dst, n*h*2));
    CK(cudaFuncSetAttribute(fv_segment0_inner_persistent, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    double scalar0 = 1e-6;
#ifdef RMS
    void *args[] = {&x, &w, &s0, &y, &scalar0, &n, &h, &ws, &sem};
    double bytes = 2.0 * n * h * 2 + 1.0 * n * 4;
#else
    void *args[] = {&x, &w, &b, &s0, &s1, &y, &n, &h, &ws, &sem};
    double bytes = 2.0 * n * h * 2 + 2.0 * n * 4;
#endif
    cudaEvent_t a, e; cudaEventCreate(&a); cudaEventCreate(&e);
    std::vector<float> t, tc;
    for (int i = 0; i < 25; ++i) {
        float ms;
        CK(cudaMemsetAsync(flush, i, flush_bytes));
        cudaEventRecord(a);
        CK(cudaLaunchKernel((void *)fv_segment0_inner_persistent, dim3(GRID), dim3(BX, BY), args, SMEM, 0));
        cudaEventRecord(e); CK(cudaEventSynchronize(e));
        cudaEventElapsedTime(&ms, a, e); if (i >= 5) t.push_back(ms);
        CK(cudaMemsetAsync(flush, i, flush_bytes));
        cudaEventRecord(a);
        CK(cudaMemcpyAsync(copy_dst, x, n*h*2, cudaMemcpyDeviceToDevice));
        cudaEventRecord(e); CK(cudaEventSynchronize(e));
        cudaEventElapsedTime(&ms, a, e); if (i >= 5) tc.push_back(ms);
    }
    CK(cudaGetLastError());
    double *sums; CK(cudaMalloc(&sums, 24)); CK(cudaMemset(sums, 0, 24));
    checksum<<<1024, 256>>>(y, n*h, sums); checksum_f32<<<64, 256>>>(s0, n, sums + 1); checksum_f32<<<64, 256>>>(s1, n, sums + 2);
    double host[3]; CK(cudaMemcpy(host, sums, 24, cudaMemcpyDeviceToHost));
    printf("%-16s checksum y %.9e s0 %.9e s1 %.9e\n", LABEL, host[0], host[1], host[2]);
    std::sort(t.begin(), t.end()); std::sort(tc.begin(), tc.end());
    double tk = t[t.size()/2] * 1e-3, tcopy = tc[tc.size()/2] * 1e-3;
    printf("%-16s %8.2f us %6.3f TB/s   copy %8.2f us %6.3f TB/s   kernel/copy %.3f\n", LABEL, tk*1e6, bytes/tk/1e12, tcopy*1e6, 2.0*n*h*2/tcopy/1e12, tcopy/tk);
    return 0;
}
