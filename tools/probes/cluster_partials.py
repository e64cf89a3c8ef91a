# cluster_partials.py: the partial rows of C blocks of a cluster added through distributed shared memory
# before they go to the workspace (grid / C workspace rows).  Usage: python3 cluster_partials.py KERNEL.cu OUT.cu
# C H STAGING_OFFSET_FLOATS OUTER_REDUCTIONS; the harness then needs -DCLUSTER_C=C
import sys, re
src, out, C, H, staging_offset, outers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
t = open(src).read()
t = t.replace('const long long partial_rows = (long long)gridDim.x * 1;', f'const long long partial_rows = (long long)gridDim.x / {C};')
t, n = re.subn(r'fv_store<8>\(workspace \+ \(\(long long\)(\d) \* partial_rows \+ partial_row\) \* inner \+ column, (\w+(?:\[b\])?)\);',
              rf'fv_store<8>(staging + \1 * {H} + column, \2);', t)
assert n == outers, n
m = re.search(r'    const long long partial_row = .*\n', t)
t = t[:m.end()] + f'    __syncthreads();\n    float *const staging = reinterpret_cast<float *>(row_buffers) + {staging_offset};\n' + t[m.end():]
SYNC = '    cooperative_groups::this_grid().sync();'
red = f'''    {{
        cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
        cluster.sync();
        const unsigned rank = cluster.block_rank();
        const long long cluster_row = blockIdx.x / {C};
        constexpr int SLICE = {H} / {C};
        const int thread = threadIdx.y * blockDim.x + threadIdx.x;
        const int threads = blockDim.x * blockDim.y;
        for (int i = thread * 4; i < {outers} * SLICE; i += threads * 4) {{
            const int r = i / SLICE, column = rank * SLICE + i % SLICE;
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            #pragma unroll
            for (int peer = 0; peer < {C}; ++peer) {{
                const float4 v = *reinterpret_cast<const float4 *>(cluster.map_shared_rank(staging + r * {H} + column, peer));
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }}
            *reinterpret_cast<float4 *>(workspace + ((long long)r * partial_rows + cluster_row) * inner + column) = sum;
        }}
        cluster.sync();
    }}
'''
t = t.replace(SYNC, red + SYNC)
open(out, 'w').write(t)
