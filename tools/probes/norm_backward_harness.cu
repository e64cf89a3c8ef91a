// norm_backward_harness.cu: times one generated layer-norm backward kernel (KERNEL_FILE, as fuservalidate
// show prints it, or edited by the scripts here) against a cudaMemcpy of the same bytes, with the L2
// flushed before each run and events around it, as fuservalidate times kernels; prints the median of
// 20 runs and checksums of dx, dw and db (equal across edits that keep the result).  See README.md.
#include KERNEL_FILE
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void fill_bf16(__nv_bfloat16 *p, long long count, unsigned seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)i * 2654435761u ^ seed; v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
        p[i] = __float2bfloat16_rn(((v & 0xffff) / 32768.0f) - 1.0f);
    }
}
__global__ void fill_f32(float *p, long long count, float base, float scale, unsigned seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
        unsigned v = (unsigned)i * 2654435761u ^ seed; v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
        p[i] = base + scale * ((v & 0xffff) / 65536.0f);
    }
}
__global__ void checksum(const __nv_bfloat16 *p, long long count, double *out) {
    double s = 0; for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) s += fabs((double)__bfloat162float(p[i])) * (1 + (i % 7));
    atomicAdd(out, s);
}
int main() {
    long long n = N_ROWS, h = H_COLS;
    __nv_bfloat16 *x, *dy, *w, *dx, *dw, *db; float *mean, *invstd, *ws; unsigned *sem;
    CK(cudaMalloc(&x, n*h*2)); CK(cudaMalloc(&dy, n*h*2)); CK(cudaMalloc(&dx, n*h*2));
    CK(cudaMalloc(&w, h*2)); CK(cudaMalloc(&dw, h*2)); CK(cudaMalloc(&db, h*2));
    CK(cudaMalloc(&mean, n*4)); CK(cudaMalloc(&invstd, n*4));
    CK(cudaMalloc(&ws, WS_BYTES)); CK(cudaMalloc(&sem, 4096));
    fill_bf16<<<1024, 256>>>(x, n*h, 1); fill_bf16<<<1024, 256>>>(dy, n*h, 2); fill_bf16<<<64, 256>>>(w, h, 3);
    fill_f32<<<256, 256>>>(mean, n, -0.1f, 0.2f, 4); fill_f32<<<256, 256>>>(invstd, n, 0.5f, 1.0f, 5); CK(cudaMemset(sem, 0, 4096));
    char *flush; size_t flush_bytes = 256 << 20; CK(cudaMalloc(&flush, flush_bytes));
    char *copy_dst; CK(cudaMalloc(&copy_dst, n*h*2*3));
    CK(cudaFuncSetAttribute(fv_segment0_inner_outer_persistent, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    double scalar0 = 1.0 / h;
    void *args[] = {&x, &dy, &w, &mean, &invstd, &dx, &dw, &db, &scalar0, &n, &h, &ws, &sem};
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    std::vector<float> t, tc;
    for (int i = 0; i < 25; ++i) {
        CK(cudaMemsetAsync(flush, i, flush_bytes));
        cudaEventRecord(a);
#ifdef CLUSTER_C
        {
            cudaLaunchConfig_t config = {};
            config.gridDim = dim3(GRID); config.blockDim = dim3(BX, BY); config.dynamicSmemBytes = SMEM; config.stream = 0;
            cudaLaunchAttribute attributes[2];
            attributes[0].id = cudaLaunchAttributeClusterDimension;
            attributes[0].val.clusterDim.x = CLUSTER_C; attributes[0].val.clusterDim.y = 1; attributes[0].val.clusterDim.z = 1;
            attributes[1].id = cudaLaunchAttributeCooperative; attributes[1].val.cooperative = 1;
            config.attrs = attributes; config.numAttrs = 2;
            if (i == 0) {
                int clusters = 0;
                config.numAttrs = 1;
                CK(cudaOccupancyMaxActiveClusters(&clusters, (void *)fv_segment0_inner_outer_persistent, &config));
                config.numAttrs = 2;
                printf("%s: %d active clusters of %d (grid %d)\n", LABEL, clusters, CLUSTER_C, GRID);
            }
            CK(cudaLaunchKernelExC(&config, (void *)fv_segment0_inner_outer_persistent, args));
        }
#else
        CK(cudaLaunchCooperativeKernel((void *)fv_segment0_inner_outer_persistent, dim3(GRID), dim3(BX, BY), args, SMEM, 0));
#endif
        cudaEventRecord(b); CK(cudaEventSynchronize(b));
        float ms; cudaEventElapsedTime(&ms, a, b); if (i >= 5) t.push_back(ms);
        CK(cudaMemsetAsync(flush, i, flush_bytes));
        cudaEventRecord(a);
        CK(cudaMemcpyAsync(copy_dst, x, n*h*2, cudaMemcpyDeviceToDevice));  // copy of the fusion's bytes: 3 x n x h x 2 moved = read 1.5 + write 1.5
        CK(cudaMemcpyAsync(copy_dst + n*h*2, dy, n*h*2/2, cudaMemcpyDeviceToDevice));
        cudaEventRecord(b); CK(cudaEventSynchronize(b));
        cudaEventElapsedTime(&ms, a, b); if (i >= 5) tc.push_back(ms);
    }
    CK(cudaGetLastError());
    double *sums; CK(cudaMalloc(&sums, 24)); CK(cudaMemset(sums, 0, 24));
    checksum<<<1024, 256>>>(dx, n*h, sums); checksum<<<16, 256>>>(dw, h, sums + 1); checksum<<<16, 256>>>(db, h, sums + 2);
    double host[3]; CK(cudaMemcpy(host, sums, 24, cudaMemcpyDeviceToHost));
    printf("%-24s checksum dx %.6e dw %.6e db %.6e\n", LABEL, host[0], host[1], host[2]);
    std::sort(t.begin(), t.end()); std::sort(tc.begin(), tc.end());
    double bytes = 3.0 * n * h * 2 + 2.0 * n * 4;
    printf("%-24s %8.2f us  %6.3f TB/s   copy(1.5x n h 2B) %8.2f us  %6.3f TB/s  ratio %.3f\n", LABEL, t[t.size()/2]*1e3, bytes / (t[t.size()/2]*1e-3) / 1e12,
           tc[tc.size()/2]*1e3, 3.0*n*h*2 / (tc[tc.size()/2]*1e-3) / 1e12, tc[tc.size()/2] / t[t.size()/2]);
    return 0;
}
