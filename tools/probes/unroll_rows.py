# unroll_rows.py: rewrites the row loop of a generated LN bwd kernel (block 128 x 1) to take U rows per step
# with one grouped block reduction, in PS slots of U rows.  Usage: python3 unroll_rows.py KERNEL.cu OUT.cu U PS H BATCH
# (prints the dynamic shared bytes to launch it with)
import sys
src, out, U, PS, H, BATCH = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
text = open(src).read()
head, rest = text.split('extern "C" __global__', 1)
tail = rest[rest.index('    fv_async_wait<0>();'):]
ROWB = H * 2  # bytes per row per input
B1 = PS * U * ROWB
S3 = 2 * PS * U * ROWB
S4 = S3 + PS * U * 512
SMEM = S4 + PS * U * 512
body = f'''extern "C" __global__ void __launch_bounds__(128, 1) fv_segment0_inner_outer_persistent(
    const __nv_bfloat16 *__restrict__ in0, const __nv_bfloat16 *__restrict__ in1, const __nv_bfloat16 *__restrict__ in2,
    const float *__restrict__ in3, const float *__restrict__ in4,
    __nv_bfloat16 *__restrict__ out0, __nv_bfloat16 *__restrict__ out1, __nv_bfloat16 *__restrict__ out2,
    double scalar0, long long outer, long long inner,
    float *__restrict__ workspace, unsigned *__restrict__ semaphores)
{{
    constexpr int U = {U}, PS = {PS}, H = {H}, BATCH = {BATCH};
    extern __shared__ __align__(16) unsigned char row_buffers[];
    __shared__ float reduction_scratch[32 * 2 * U];
    const long long row_stride = (long long)gridDim.x * 1;
    float partial0[BATCH][8], partial1[BATCH][8];
    #pragma unroll
    for (int b = 0; b < BATCH; ++b)
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {{ partial0[b][lane] = 0.0f; partial1[b][lane] = 0.0f; }}
    __nv_bfloat16 *const buffer0_slots = reinterpret_cast<__nv_bfloat16 *>(row_buffers + 0);
    __nv_bfloat16 *const buffer1_slots = reinterpret_cast<__nv_bfloat16 *>(row_buffers + {B1});
    float *const stat3_slots = reinterpret_cast<float *>(row_buffers + {S3}) + threadIdx.x;
    float *const stat4_slots = reinterpret_cast<float *>(row_buffers + {S4}) + threadIdx.x;
    float weight2[BATCH][8];
    #pragma unroll
    for (int b = 0; b < BATCH; ++b) {{
        const int column = (b * 128 + (int)threadIdx.x) * 8;
        if (column < inner) fv_load<8>(in2 + column, weight2[b]);
    }}
    auto fetch_pair = [&](int pair_slot, long long first_row) {{
        #pragma unroll
        for (int u = 0; u < U; ++u) {{
            const long long fetch_row = first_row + u * row_stride;
            const bool fetch_active = fetch_row < outer;
            const auto *const fetch0 = in0 + fetch_row * inner;
            const auto *const fetch1 = in1 + fetch_row * inner;
            const int s = pair_slot * U + u;
            #pragma unroll
            for (int b = 0; b < BATCH; ++b) {{
                const int column = (b * 128 + (int)threadIdx.x) * 8;
                const bool copy_active = fetch_active && column < inner;
                fv_copy_async_if<8>(buffer0_slots + s * H + column, fetch0 + column, copy_active);
                fv_copy_async_if<8>(buffer1_slots + s * H + column, fetch1 + column, copy_active);
            }}
            fv_copy_async_if<1>(stat3_slots + s * 128, in3 + fetch_row, fetch_active);
            fv_copy_async_if<1>(stat4_slots + s * 128, in4 + fetch_row, fetch_active);
        }}
    }};
    #pragma unroll
    for (int p = 0; p < PS - 1; ++p) {{
        fetch_pair(p, (long long)blockIdx.x + p * U * row_stride);
        fv_async_commit();
    }}
    int slot = 0;
    const float inv_h = (float)scalar0;
    for (long long row_base = (long long)blockIdx.x; row_base < outer; row_base += U * row_stride) {{
        fetch_pair(slot == 0 ? PS - 1 : slot - 1, row_base + (PS - 1) * U * row_stride);
        fv_async_commit();
        fv_async_wait<PS - 1>();
        float xs[U][BATCH][8], dys[U][BATCH][8];
        float mean[U], invstd[U];
        bool active[U];
        float sums[2 * U];
        #pragma unroll
        for (int u = 0; u < U; ++u) {{
            const long long row = row_base + u * row_stride;
            active[u] = row < outer;
            const int s = slot * U + u;
            mean[u] = stat3_slots[s * 128];
            invstd[u] = stat4_slots[s * 128];
            sums[2 * u] = 0.0f; sums[2 * u + 1] = 0.0f;
            #pragma unroll
            for (int b = 0; b < BATCH; ++b) {{
                const int column = (b * 128 + (int)threadIdx.x) * 8;
                if (active[u] && column < inner) {{
                    fv_load<8>(buffer0_slots + s * H + column, xs[u][b]);
                    fv_load<8>(buffer1_slots + s * H + column, dys[u][b]);
                    #pragma unroll
                    for (int lane = 0; lane < 8; ++lane) {{
                        const float g = dys[u][b][lane] * weight2[b][lane];
                        const float xhat = (xs[u][b][lane] - mean[u]) * invstd[u];
                        sums[2 * u] += g;
                        sums[2 * u + 1] += g * xhat;
                    }}
                }}
            }}
        }}
        fv_row_sum_group<128, 2 * U>(sums, reduction_scratch);
        #pragma unroll
        for (int u = 0; u < U; ++u) {{
            const long long row = row_base + u * row_stride;
            if (!active[u]) continue;
            const float mean_g = sums[2 * u] * inv_h, mean_g_xhat = sums[2 * u + 1] * inv_h;
            #pragma unroll
            for (int b = 0; b < BATCH; ++b) {{
                const int column = (b * 128 + (int)threadIdx.x) * 8;
                if (column < inner) {{
                    float dx[8];
                    #pragma unroll
                    for (int lane = 0; lane < 8; ++lane) {{
                        const float dyf = dys[u][b][lane];
                        const float g = dyf * weight2[b][lane];
                        const float xhat = (xs[u][b][lane] - mean[u]) * invstd[u];
                        dx[lane] = ((g - mean_g) - xhat * mean_g_xhat) * invstd[u];
                        partial0[b][lane] += dyf * xhat;
                        partial1[b][lane] += dyf;
                    }}
                    fv_store<8>(out0 + row * inner + column, dx);
                }}
            }}
        }}
        slot = slot == PS - 1 ? 0 : slot + 1;
    }}
'''
open(out, 'w').write(head + body + tail)
print(SMEM)
