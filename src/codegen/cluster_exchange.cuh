// cluster_exchange.cuh: inner reductions across a thread-block cluster, for
// inner-outer persistent kernels whose rows are too long for one block: the
// blocks of a cluster take the same rows, each a slice of the columns, and
// add their block totals through distributed shared memory.  `exchange` is
// [2 phases][rows of the block][CLUSTER blocks][COUNT] floats of each block's
// shared memory; every call uses the other phase than the call before, so
// one cluster barrier per call suffices: a block writes a phase again only
// after the next call's barrier, which no block passes before it has read
// that phase.  Every thread of every block gets the same totals, added in
// rank order.
template <int CLUSTER, int COUNT>
__device__ __forceinline__ void fv_cluster_sum(float (&values)[COUNT], float *exchange, int &phase)
{
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    float *const slot = exchange + ((phase & 1) * blockDim.y + threadIdx.y) * CLUSTER * COUNT;
    if (threadIdx.x == 0) {
        const unsigned rank = cluster.block_rank();
#pragma unroll
        for (int peer = 0; peer < CLUSTER; ++peer) {
            float *const remote = cluster.map_shared_rank(slot, peer);
#pragma unroll
            for (int k = 0; k < COUNT; ++k)
                remote[rank * COUNT + k] = values[k];
        }
    }
    cluster.sync();
#pragma unroll
    for (int k = 0; k < COUNT; ++k) {
        float total = slot[k];
#pragma unroll
        for (int peer = 1; peer < CLUSTER; ++peer)
            total += slot[peer * COUNT + k];
        values[k] = total;
    }
    ++phase;
}

// The same for a maximum (NaN propagates, as in fv_maximum).
template <int CLUSTER>
__device__ __forceinline__ float fv_cluster_max(float value, float *exchange, int &phase)
{
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    float *const slot = exchange + ((phase & 1) * blockDim.y + threadIdx.y) * CLUSTER;
    if (threadIdx.x == 0) {
        const unsigned rank = cluster.block_rank();
#pragma unroll
        for (int peer = 0; peer < CLUSTER; ++peer)
            cluster.map_shared_rank(slot, peer)[rank] = value;
    }
    cluster.sync();
    float most = slot[0];
#pragma unroll
    for (int peer = 1; peer < CLUSTER; ++peer)
        most = fv_maximum(most, slot[peer]);
    ++phase;
    return most;
}
