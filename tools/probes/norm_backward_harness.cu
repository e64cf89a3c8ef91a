// norm_backward_harness.cu: times one generated layer-norm backward kernel (KERNEL_FILE, as fuservalidate
// show prints it, or edited by the scripts here) against a cudaMemcpy of the same bytes, with the L2
// flushed before each run and events around it, as fuservalidate times kernels; prints the median of
// 20 runs and checksums of dx, dw and db (equal across edits that keep the result).  See README.md.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -DKERNEL_FILE='"k.cu"' -DN_ROWS=.. -DH_COLS=.. -DGRID=..
// -DBX=.. -DBY=.. -DSMEM=.. -DWS_BYTES=.. -DLABEL='".."' [-DCLUSTER_C=C] norm_backward_harness.cu
#include KERNEL_FILE
#include "harness_common.cuh"

int main()
{
    long long n = N_ROWS, h = H_COLS;
    __nv_bfloat16 *x, *dy, *w, *dx, *dw, *db;  // [n, h], [n, h], [h], [n, h], [h], [h]
    float *mean, *invstd, *ws;                 // [n], [n], workspace
    unsigned *sem;
    CK(cudaMalloc(&x, n * h * 2));
    CK(cudaMalloc(&dy, n * h * 2));
    CK(cudaMalloc(&dx, n * h * 2));
    CK(cudaMalloc(&w, h * 2));
    CK(cudaMalloc(&dw, h * 2));
    CK(cudaMalloc(&db, h * 2));
    CK(cudaMalloc(&mean, n * 4));
    CK(cudaMalloc(&invstd, n * 4));
    CK(cudaMalloc(&ws, WS_BYTES));
    CK(cudaMalloc(&sem, 4096));
    fill_bf16<<<1024, 256>>>(x, n * h, 1);
    fill_bf16<<<1024, 256>>>(dy, n * h, 2);
    fill_bf16<<<64, 256>>>(w, h, 3);
    fill_f32<<<256, 256>>>(mean, n, -0.1f, 0.2f, 4);
    fill_f32<<<256, 256>>>(invstd, n, 0.5f, 1.0f, 5);
    CK(cudaMemset(sem, 0, 4096));
    char *copy_dst;
    CK(cudaMalloc(&copy_dst, n * h * 2 * 3));
    CK(cudaFuncSetAttribute(fv_segment0_inner_outer_persistent,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    double scalar0 = 1.0 / h;
    void *args[] = {&x, &dy, &w, &mean, &invstd, &dx, &dw, &db, &scalar0, &n, &h, &ws, &sem};
#ifdef CLUSTER_C
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(GRID);
    config.blockDim = dim3(BX, BY);
    config.dynamicSmemBytes = SMEM;
    cudaLaunchAttribute attributes[2];
    attributes[0].id = cudaLaunchAttributeClusterDimension;
    attributes[0].val.clusterDim.x = CLUSTER_C;
    attributes[0].val.clusterDim.y = 1;
    attributes[0].val.clusterDim.z = 1;
    attributes[1].id = cudaLaunchAttributeCooperative;
    attributes[1].val.cooperative = 1;
    config.attrs = attributes;
    config.numAttrs = 1;
    int clusters = 0;
    CK(cudaOccupancyMaxActiveClusters(&clusters, (void *)fv_segment0_inner_outer_persistent, &config));
    printf("%s: %d active clusters of %d (grid %d)\n", LABEL, clusters, CLUSTER_C, GRID);
    config.numAttrs = 2;
    auto launch_kernel = [&] {
        return cudaLaunchKernelExC(&config, (void *)fv_segment0_inner_outer_persistent, args);
    };
#else
    auto launch_kernel = [&] {
        return cudaLaunchCooperativeKernel((void *)fv_segment0_inner_outer_persistent, dim3(GRID),
                                           dim3(BX, BY), args, SMEM, 0);
    };
#endif
    // A copy moving the fusion's bytes: 1.5 x n x h x 2 read and as many written.
    auto launch_copy = [&] {
        cudaError_t status = cudaMemcpyAsync(copy_dst, x, n * h * 2, cudaMemcpyDeviceToDevice);
        return status != cudaSuccess ? status
                                     : cudaMemcpyAsync(copy_dst + n * h * 2, dy, n * h * 2 / 2,
                                                       cudaMemcpyDeviceToDevice);
    };
    float kernel_ms, copy_ms;
    if (time_against_copy(launch_kernel, launch_copy, &kernel_ms, &copy_ms) != 0)
        return 1;
    double host[3];
    if (output_checksums(dx, n * h, dw, h, db, h, host) != 0)
        return 1;
    printf("%-24s checksum dx %.6e dw %.6e db %.6e\n", LABEL, host[0], host[1], host[2]);
    double bytes = 3.0 * n * h * 2 + 2.0 * n * 4;
    printf("%-24s %8.2f us  %6.3f TB/s   copy(1.5x n h 2B) %8.2f us  %6.3f TB/s  ratio %.3f\n",
           LABEL, kernel_ms * 1e3, bytes / (kernel_ms * 1e-3) / 1e12, copy_ms * 1e3,
           3.0 * n * h * 2 / (copy_ms * 1e-3) / 1e12, copy_ms / kernel_ms);
    return 0;
}
