# var_mean_one_merge.py: layer-norm forward with var_mean by one merge per row: each thread two-passes its
# elements, then Chan's merge of equal counts over the row.  Usage: python3 var_mean_one_merge.py KERNEL.cu OUT.cu BLOCK_X BATCH
import sys, re
src, out, BX, BATCH = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = open(src).read()
lines = t.split('\n')
start = next(i for i, l in enumerate(lines) if '// reduction level 1' in l)
end = next(i for i, l in enumerate(lines) if 'squares1[0] / ((float)inner' in l)
per = BATCH * 8
warps = BX // 32
new = f'''        // var_mean: each thread's {per} elements by two passes, then Chan's merge (equal counts)
        float local_sum = 0.0f;
        #pragma unroll
        for (int b = 0; b < {BATCH}; ++b)
            #pragma unroll
            for (int lane = 0; lane < 8; ++lane)
                local_sum += row_floats0[b][lane];
        float merged_mean = local_sum * (1.0f / {per}), merged_m2 = 0.0f;
        #pragma unroll
        for (int b = 0; b < {BATCH}; ++b)
            #pragma unroll
            for (int lane = 0; lane < 8; ++lane) {{
                const float deviation = row_floats0[b][lane] - merged_mean;
                merged_m2 += deviation * deviation;
            }}
        float half_count = {per} * 0.5f;
        #pragma unroll
        for (int offset = 1; offset < {min(BX, 32)}; offset *= 2) {{
            const float other_mean = __shfl_xor_sync(0xffffffffu, merged_mean, offset);
            const float other_m2 = __shfl_xor_sync(0xffffffffu, merged_m2, offset);
            const float delta = other_mean - merged_mean;
            merged_m2 = (merged_m2 + other_m2) + delta * delta * half_count;
            merged_mean = (merged_mean + other_mean) * 0.5f;
            half_count *= 2.0f;
        }}
'''
if warps > 1:
    new += f'''        {{
            float *const row_scratch = reduction_scratch + threadIdx.y * 64;
            __syncthreads();
            if (threadIdx.x % 32 == 0) {{
                row_scratch[threadIdx.x / 32] = merged_mean;
                row_scratch[32 + threadIdx.x / 32] = merged_m2;
            }}
            __syncthreads();
            float means[{warps}], m2s[{warps}];
            #pragma unroll
            for (int w = 0; w < {warps}; ++w) {{ means[w] = row_scratch[w]; m2s[w] = row_scratch[32 + w]; }}
            #pragma unroll
            for (int step = 1; step < {warps}; step *= 2) {{
                #pragma unroll
                for (int w = 0; w + step < {warps}; w += 2 * step) {{
                    const float delta = means[w + step] - means[w];
                    m2s[w] = (m2s[w] + m2s[w + step]) + delta * delta * half_count;
                    means[w] = (means[w] + means[w + step]) * 0.5f;
                }}
                half_count *= 2.0f;
            }}
            merged_mean = means[0];
            merged_m2 = m2s[0];
        }}
'''
new += '        const float mean0 = merged_mean;\n'
var = lines[end].replace('squares1[0]', 'merged_m2')
lines = lines[:start] + new.rstrip('\n').split('\n') + [var] + lines[end+1:]
t = '\n'.join(lines)
t = re.sub(r'__shared__ float reduction_scratch\[(\d+) \* 32\];', r'__shared__ float reduction_scratch[\1 * 64];', t)
open(out, 'w').write(t)
