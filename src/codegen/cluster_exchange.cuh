// cluster_exchange.cuh: inner reductions across a thread-block cluster, for
// kernels whose rows are split over the blocks of a cluster (inner-outer
// persistent kernels whose rows are too long for one block; inner-multipass
// kernels, to keep the rows in flight within the L2): the blocks of a
// cluster take the same rows, each a slice of the columns, and add their
// block totals through distributed shared memory.
//
// Each row's thread 0 sends its block's totals to every block of the
// cluster (itself included) with st.async, which completes on the
// receiver's mbarrier; a block waits only on its own barrier, for the bytes
// of all the cluster's blocks.  No cluster-wide barrier per reduction, and
// no thread waits for its global stores to be visible (a release at
// cluster scope would).  `exchange` is [2 halves][rows of the block]
// [CLUSTER blocks][COUNT] floats and `arrived` one mbarrier per half; calls
// alternate the halves.  A block cannot send into a half its peer is still
// reading: it sends call k + 2 only after receiving the peer's call k + 1,
// which the peer sends after a block-wide __syncthreads (in its row
// reduction, as block_x >= 64 with clusters) that follows its reads of k.
// Every thread of every block gets the same totals, added in rank order.
// The halves lie CLUSTER * COUNT floats apart, so all the exchanges of one
// array must use the same COUNT.

// Initializes the two barriers; every thread of the cluster's blocks must
// call it before any exchange (it ends with a cluster barrier, so that no
// block sends to a barrier not yet initialized).
__device__ __forceinline__ void fv_cluster_exchange_init(unsigned long long *arrived)
{
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        fv_barrier_init(&arrived[0], 1);
        fv_barrier_init(&arrived[1], 1);
        fv_barrier_fence_init();
    }
    cooperative_groups::this_cluster().sync();
}

// The shared::cluster address of `local` (a shared::cta address) in block `rank`.
__device__ __forceinline__ unsigned fv_cluster_address(unsigned local, unsigned rank)
{
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

// Stores `value` at `remote` and counts its 4 bytes on the barrier `barrier`
// of the same block (both shared::cluster addresses).
__device__ __forceinline__ void fv_cluster_send(unsigned remote, float value, unsigned barrier)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];\n"
                 ::"r"(remote), "f"(value), "r"(barrier)
                 : "memory");
}

// Sends this block's COUNT values of this row to every block of the
// cluster and waits until all of the cluster's have arrived here.  Returns
// this row's slot: [CLUSTER][COUNT] floats.
template <int CLUSTER, int COUNT>
__device__ __forceinline__ const float *fv_cluster_gather(const float (&values)[COUNT],
                                                          float *exchange,
                                                          unsigned long long *arrived, int &phase)
{
    const int half = phase & 1;
    float *const slot = exchange + (half * blockDim.y + threadIdx.y) * CLUSTER * COUNT;
    unsigned long long *const barrier = &arrived[half];
    if (threadIdx.x == 0 && threadIdx.y == 0)
        fv_barrier_expect_bytes(barrier, CLUSTER * COUNT * 4 * blockDim.y);
    if (threadIdx.x == 0) {
        const unsigned rank = cooperative_groups::this_cluster().block_rank();
        const unsigned mine = fv_shared_address(slot + rank * COUNT);
        const unsigned local_barrier = fv_shared_address(barrier);
#pragma unroll
        for (int peer = 0; peer < CLUSTER; ++peer) {
            const unsigned remote = fv_cluster_address(mine, peer);
            const unsigned remote_barrier = fv_cluster_address(local_barrier, peer);
#pragma unroll
            for (int k = 0; k < COUNT; ++k)
                fv_cluster_send(remote + 4 * k, values[k], remote_barrier);
        }
    }
    fv_barrier_wait(barrier, (phase >> 1) & 1);
    ++phase;
    return slot;
}

template <int CLUSTER, int COUNT>
__device__ __forceinline__ void fv_cluster_sum(float (&values)[COUNT], float *exchange,
                                               unsigned long long *arrived, int &phase)
{
    const float *const slot = fv_cluster_gather<CLUSTER, COUNT>(values, exchange, arrived, phase);
#pragma unroll
    for (int k = 0; k < COUNT; ++k) {
        float total = slot[k];
#pragma unroll
        for (int peer = 1; peer < CLUSTER; ++peer)
            total += slot[peer * COUNT + k];
        values[k] = total;
    }
}

// fv_cluster_sum of one value, returned.
template <int CLUSTER>
__device__ __forceinline__ float fv_cluster_total(float value, float *exchange,
                                                  unsigned long long *arrived, int &phase)
{
    float values[1] = {value};
    fv_cluster_sum<CLUSTER, 1>(values, exchange, arrived, phase);
    return values[0];
}

// The same for a maximum (NaN propagates, as in fv_maximum).
template <int CLUSTER>
__device__ __forceinline__ float fv_cluster_max(float value, float *exchange,
                                                unsigned long long *arrived, int &phase)
{
    const float values[1] = {value};
    const float *const slot = fv_cluster_gather<CLUSTER, 1>(values, exchange, arrived, phase);
    float most = slot[0];
#pragma unroll
    for (int peer = 1; peer < CLUSTER; ++peer)
        most = fv_maximum(most, slot[peer]);
    return most;
}
