// common.cuh: device helpers every generated kernel includes: element types,
// 16-byte vector loads and stores, rounding to half precision, reductions
// within a warp and within a group of threads, and Welford's merge.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// NVRTC compiles without the C math headers.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// A vector of N elements, aligned to its size so that one load or store
// instruction moves it (16 bytes at most).
template <typename T, int N>
struct alignas(sizeof(T) * N) fv_vector {
    T element[N];
};

__device__ __forceinline__ float fv_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float fv_to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float fv_to_float(float x) { return x; }

template <typename T>
__device__ __forceinline__ T fv_from_float(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 fv_from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half fv_from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ float fv_from_float<float>(float x) { return x; }

// Rounds a float to the nearest bf16 / fp16 value (ties to even), kept as float.
__device__ __forceinline__ float fv_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float fv_round_f16(float x) { return __half2float(__float2half_rn(x)); }

// Copies N consecutive elements starting at p (aligned to N elements) into a
// vector of their own type, to be converted where read (fv_vector_to_floats).
template <int N, typename T>
__device__ __forceinline__ void fv_load_vector(const T *__restrict__ p, fv_vector<T, N> &out)
{
    out = *reinterpret_cast<const fv_vector<T, N> *>(p);
}

// The N elements of a vector as floats.
template <int N, typename T>
__device__ __forceinline__ void fv_vector_to_floats(const fv_vector<T, N> &in, float (&out)[N])
{
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        out[lane] = fv_to_float(in.element[lane]);
}

// The same for bf16 pairs, exactly: a bf16 is the high half of its float,
// so a 32-bit word of two yields them by a shift and a mask (two
// instructions; element by element the high one took an extract and a
// shift).
template <int N>
__device__ __forceinline__ void fv_vector_to_floats(const fv_vector<__nv_bfloat16, N> &in, float (&out)[N])
{
    if constexpr (N % 2 == 0) {
        const unsigned *pairs = reinterpret_cast<const unsigned *>(&in);
#pragma unroll
        for (int pair = 0; pair < N / 2; ++pair) {
            out[2 * pair] = __uint_as_float(pairs[pair] << 16);
            out[2 * pair + 1] = __uint_as_float(pairs[pair] & 0xffff0000u);
        }
    } else {
        fv_vector_to_floats<N, __nv_bfloat16>(in, out);  // the generic loop
    }
}

// Loads N consecutive elements starting at p (aligned to N elements) as floats.
template <int N, typename T>
__device__ __forceinline__ void fv_load(const T *__restrict__ p, float (&out)[N])
{
    fv_vector<T, N> raw;
    fv_load_vector(p, raw);
    fv_vector_to_floats(raw, out);
}

// N floats rounded to a vector of type T, as the stores write it.
template <int N, typename T>
__device__ __forceinline__ fv_vector<T, N> fv_to_vector(const float (&in)[N])
{
    fv_vector<T, N> raw;
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        raw.element[lane] = fv_from_float<T>(in[lane]);
    return raw;
}

// Stores N floats as consecutive elements of type T starting at p (aligned).
template <int N, typename T>
__device__ __forceinline__ void fv_store(T *__restrict__ p, const float (&in)[N])
{
    *reinterpret_cast<fv_vector<T, N> *>(p) = fv_to_vector<N, T>(in);
}

// fv_load for data that every row reads again (a weight read from device
// memory in every pass): 16-byte loads ask L1 to keep the line
// (ld.global.nc.L1::evict_last); other sizes are plain loads.
template <int N, typename T>
__device__ __forceinline__ void fv_load_kept_in_l1(const T *__restrict__ p, float (&out)[N])
{
    if constexpr (sizeof(T) * N == 16) {
        uint4 bits;
        asm volatile("ld.global.nc.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w)
                     : "l"(p));
        fv_vector_to_floats(*reinterpret_cast<const fv_vector<T, N> *>(&bits), out);
    } else {
        fv_load<N>(p, out);
    }
}

// fv_store for row outputs of kernels that read their inputs again from L2
// (inner_multipass's passes): 16-byte stores are streaming (st.global.cs:
// their lines are evicted from L2 before the inputs' are); other sizes are
// plain stores.
template <int N, typename T>
__device__ __forceinline__ void fv_store_streaming(T *__restrict__ p, const float (&in)[N])
{
    if constexpr (sizeof(T) * N == 16) {
        const fv_vector<T, N> raw = fv_to_vector<N, T>(in);
        __stcs(reinterpret_cast<uint4 *>(p), *reinterpret_cast<const uint4 *>(&raw));
    } else {
        fv_store<N>(p, in);
    }
}

// fv_store for row outputs that no thread reads again: 16-byte stores do
// not allocate in L1 (st.global.L1::no_allocate), which keeps the lines of
// fv_load_kept_in_l1, and ran faster in kernels launched in clusters; other
// sizes are plain stores.
template <int N, typename T>
__device__ __forceinline__ void fv_store_around_l1(T *__restrict__ p, const float (&in)[N])
{
    if constexpr (sizeof(T) * N == 16) {
        const fv_vector<T, N> raw = fv_to_vector<N, T>(in);
        const uint4 bits = *reinterpret_cast<const uint4 *>(&raw);
        asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1, %2, %3, %4};\n"
                     ::"l"(p), "r"(bits.x), "r"(bits.y), "r"(bits.z), "r"(bits.w)
                     : "memory");
    } else {
        fv_store<N>(p, in);
    }
}

// Copies N elements (aligned to N) from global to shared memory.  Copies of
// 4, 8 or 16 bytes are asynchronous (cp.async: they do not pass through
// registers and complete at fv_async_wait); smaller ones are plain copies.
// Only the issuing thread may read the copy after fv_async_wait; other
// threads of the block, after a block barrier that follows it.
template <int N, typename T>
__device__ __forceinline__ void fv_copy_async(T *shared, const T *__restrict__ global)
{
    constexpr int bytes = (int)sizeof(T) * N;
    if constexpr (bytes == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(shared)),
                     "l"(global));
    } else if constexpr (bytes == 8 || bytes == 4) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(shared)),
                     "l"(global), "n"(bytes));
    } else {
        *reinterpret_cast<fv_vector<T, N> *>(shared) = *reinterpret_cast<const fv_vector<T, N> *>(global);
    }
}

// fv_copy_async when `active`, else nothing.  The copy is predicated, so a
// guarded copy needs no branch around it; an inactive copy does not touch
// `global`.
template <int N, typename T>
__device__ __forceinline__ void fv_copy_async_if(T *shared, const T *__restrict__ global, bool active)
{
    constexpr int bytes = (int)sizeof(T) * N;
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    if constexpr (bytes == 16) {
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n"
                     " @p cp.async.cg.shared.global [%0], [%1], 16;\n}\n" ::"r"(address),
                     "l"(global), "r"((int)active));
    } else if constexpr (bytes == 8 || bytes == 4) {
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n"
                     " @p cp.async.ca.shared.global [%0], [%1], %3;\n}\n" ::"r"(address),
                     "l"(global), "r"((int)active), "n"(bytes));
    } else if (active) {
        *reinterpret_cast<fv_vector<T, N> *>(shared) = *reinterpret_cast<const fv_vector<T, N> *>(global);
    }
}

// Copies `count` elements from `global` to `shared` one by one,
// synchronously: the part of a 16-byte chunk that lies in the tensor, at its
// end.  Kept rolled: it sits after unrolled copy loops, and the kernel's code
// must stay in the instruction cache.
template <typename T>
__device__ __forceinline__ void fv_copy_elements(T *shared, const T *__restrict__ global, int count)
{
#pragma unroll 1
    for (int i = 0; i < count; ++i)
        shared[i] = global[i];
}

// Copies elements [column, column + N) of a row-constant tensor of `length`
// elements (global: its element `column`, 16-byte aligned) to shared[0..N),
// which need not be aligned (the rows' shift on span chunks): one 16-byte load
// (an explicit non-coherent vector load, which the compiler cannot split) and
// N element stores; the tensor's last chunk, if short, element by element.
template <int N, typename T>
__device__ __forceinline__ void fv_copy_chunk_to_shift(T *shared, const T *__restrict__ global,
                                                       int column, int length)
{
    static_assert(sizeof(T) * N == 16, "a chunk is 16 bytes");
    if (column + N <= length) {
        const uint4 bits = __ldg(reinterpret_cast<const uint4 *>(global));
        const T *const elements = reinterpret_cast<const T *>(&bits);
#pragma unroll
        for (int lane = 0; lane < N; ++lane)
            shared[lane] = elements[lane];
    } else {
        fv_copy_elements(shared, global, length - column);
    }
}

// Keeps the compiler from moving memory accesses across this point (no
// instruction): a thread's shared-memory reads stay before the copies it
// then issues into the same entries.
__device__ __forceinline__ void fv_compiler_fence() { asm volatile("" ::: "memory"); }

// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void fv_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most PENDING of this thread's committed groups are in flight.
template <int PENDING>
__device__ __forceinline__ void fv_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory"); }

// The two halves of a cluster barrier, for blocks that arrive long before
// they need to wait (every thread of the block calls each, once per phase):
// arriving orders nothing; waiting returns once every block of the cluster
// has arrived.
__device__ __forceinline__ void fv_cluster_arrive_relaxed()
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void fv_cluster_wait()
{
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

// mbarriers and 1-D bulk copies (TMA) of the warp-specialized kernels.  A
// full barrier completes when its expected bytes have landed; an empty one
// when every thread of its compute group has arrived.  Waits name the phase
// parity to wait for (a fresh barrier counts its previous phase, parity 1, as
// complete).
__device__ __forceinline__ unsigned fv_shared_address(const void *pointer)
{
    return (unsigned)__cvta_generic_to_shared(pointer);
}

__device__ __forceinline__ void fv_barrier_init(unsigned long long *barrier, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(fv_shared_address(barrier)), "r"(count));
}

// Makes the initialized barriers visible to the async proxy (the TMA unit).
__device__ __forceinline__ void fv_barrier_fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void fv_barrier_wait(unsigned long long *barrier, unsigned parity)
{
    unsigned ready = 0;
    while (!ready)
        asm volatile("{\n .reg .pred done;\n mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, done;\n}\n"
                     : "=r"(ready)
                     : "r"(fv_shared_address(barrier)), "r"(parity)
                     : "memory");
}

__device__ __forceinline__ void fv_barrier_arrive(unsigned long long *barrier)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n"
                 : "=l"(state)
                 : "r"(fv_shared_address(barrier))
                 : "memory");
    (void)state;
}

// The producer's arrival: the phase completes when `bytes` more have landed.
__device__ __forceinline__ void fv_barrier_expect_bytes(unsigned long long *barrier, unsigned bytes)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
                 : "=l"(state)
                 : "r"(fv_shared_address(barrier)), "r"(bytes)
                 : "memory");
    (void)state;
}

// Register sharing between warp groups (setmaxnreg, sm_90a and newer): the
// producer group gives registers back, the compute groups wait for them.
// Every warp of a warp group must call it; N = 0 means no sharing.
template <int N>
__device__ __forceinline__ void fv_release_registers()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <>
__device__ __forceinline__ void fv_release_registers<0>()
{
}

template <int N>
__device__ __forceinline__ void fv_claim_registers()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <>
__device__ __forceinline__ void fv_claim_registers<0>()
{
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from
// global to shared memory with the TMA unit; completes on `barrier`.
__device__ __forceinline__ void fv_bulk_copy(void *shared, const void *global, unsigned bytes,
                                             unsigned long long *barrier)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(fv_shared_address(shared)), "l"(global), "r"(bytes), "r"(fv_shared_address(barrier))
                 : "memory");
}

// Loads N floats (N = 1, 2 or 4, aligned to N) past L1 (ld.global.cg): data
// that other blocks wrote before a grid sync.
template <int N>
__device__ __forceinline__ void fv_load_past_l1(const float *p, float (&out)[N])
{
    if constexpr (N == 4) {
        const float4 v = __ldcg(reinterpret_cast<const float4 *>(p));
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    } else if constexpr (N == 2) {
        const float2 v = __ldcg(reinterpret_cast<const float2 *>(p));
        out[0] = v.x, out[1] = v.y;
    } else {
#pragma unroll
        for (int lane = 0; lane < N; ++lane)
            out[lane] = __ldcg(p + lane);
    }
}

// Double-precision and integer tensors are moved element by element.
template <int N, typename T, typename R>
__device__ __forceinline__ void fv_load_exact(const T *__restrict__ p, R (&out)[N])
{
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        out[lane] = static_cast<R>(p[lane]);
}

template <int N, typename T, typename R>
__device__ __forceinline__ void fv_store_exact(T *__restrict__ p, const R (&in)[N])
{
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        p[lane] = static_cast<T>(in[lane]);
}

// Rows of an odd length computed on the 16-byte chunks of their aligned span
// (EXTRA_SPAN_LANES): lane `lane` of a chunk is the row's element `first +
// lane`, which may lie before the row (first < 0) or past its end.  Such lanes
// are never accumulated or stored.
template <typename I>
__device__ __forceinline__ bool fv_in_row(I column, I length)
{
    return column >= 0 && column < length;
}

// Loads as floats, one element at a time, the lanes of p[0..N) that lie in a
// row of `length` elements, p[0] being its element `first`; other lanes are 0.
template <int N, typename T, typename I>
__device__ __forceinline__ void fv_load_lanes(const T *__restrict__ p, I first, I length,
                                              float (&out)[N])
{
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        out[lane] = fv_in_row(first + lane, length) ? fv_to_float(p[lane]) : 0.0f;
}

// Loads a chunk of a tensor along both axes as floats, the chunk being
// aligned to its N elements (p = the tensor + a multiple of N): a chunk wholly
// in the row as one vector, a chunk at the row's ends lane by lane (lanes
// outside the row are 0 and not read).
template <int N, typename T, typename I>
__device__ __forceinline__ void fv_load_chunk(const T *__restrict__ p, I first, I length,
                                              float (&out)[N])
{
    if (first >= 0 && first + N <= length)
        fv_load<N>(p, out);
    else
        fv_load_lanes<N>(p, first, length, out);
}

// fv_load_lanes for double-precision and integer tensors.
template <int N, typename T, typename R, typename I>
__device__ __forceinline__ void fv_load_lanes_exact(const T *__restrict__ p, I first, I length,
                                                    R (&out)[N])
{
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        out[lane] = fv_in_row(first + lane, length) ? static_cast<R>(p[lane]) : static_cast<R>(0);
}

// Stores the lanes of a chunk that lie in a row of `length` elements, p[0]
// being its element `first`: a chunk wholly in the row as 16-byte vectors
// (one for 16 bytes of output, two for the 32 of 8 floats; p is then aligned,
// the span starting on a chunk boundary), else lane by lane.
// The vector stores are explicit instructions: with a plain vector store in
// one branch and the lane stores in the other, the compiler merged the two
// into 2-byte stores (RMS fwd bf16 16384 x 1987 ran at 23% of copy so).
// `whole`: the caller knows the chunk lies wholly in the row (a condition
// that is a constant once the batch loop is unrolled), so no test is left.
template <int N, typename T, typename I>
__device__ __forceinline__ void fv_store_lanes(T *__restrict__ p, I first, I length,
                                               const float (&in)[N], bool whole = false)
{
    if (whole || (first >= 0 && first + N <= length)) {
        if constexpr (sizeof(T) * N % 16 == 0) {
            const fv_vector<T, N> raw = fv_to_vector<N, T>(in);
            const uint4 *bits = reinterpret_cast<const uint4 *>(&raw);
#pragma unroll
            for (int piece = 0; piece < (int)(sizeof(T) * N / 16); ++piece)
                asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n"
                             ::"l"(reinterpret_cast<uint4 *>(p) + piece), "r"(bits[piece].x),
                             "r"(bits[piece].y), "r"(bits[piece].z), "r"(bits[piece].w)
                             : "memory");
        } else {
            fv_store<N>(p, in);
        }
        return;
    }
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        if (fv_in_row(first + lane, length))
            p[lane] = fv_from_float<T>(in[lane]);
}

// fv_store_lanes for double-precision and integer tensors.
template <int N, typename T, typename R, typename I>
__device__ __forceinline__ void fv_store_lanes_exact(T *__restrict__ p, I first, I length,
                                                     const R (&in)[N])
{
#pragma unroll
    for (int lane = 0; lane < N; ++lane)
        if (fv_in_row(first + lane, length))
            p[lane] = static_cast<T>(in[lane]);
}

// exp(a) as 2^(a·log2 e) on the special-function unit: a multiply and one
// ex2.approx.ftz (expf takes eight instructions).  Relative error at most
// (4 + 1.25·|a|)·2^-24, results under 2^-126 flushed to zero (fv-bound-v2's
// model, docs/error-bounds.md; tests/exp_fast_accuracy.cu checks it on a GPU).
// Emitted only for fusions whose outputs are all 16-bit.
__device__ __forceinline__ float fv_exp_fast(float a)
{
    float result;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(a * 1.44269504088896341f));
    return result;
}

// max/min that propagate NaN, as the reference does.  For floats on
// sm_80 and newer, one max.NaN / min.NaN instruction (a NaN operand gives the
// canonical NaN) instead of two compares, a select and an add: softmax's
// max pass is issue-bound.
template <typename T>
__device__ __forceinline__ T fv_maximum(T a, T b) { return (a != a || b != b) ? a + b : (a >= b ? a : b); }
template <typename T>
__device__ __forceinline__ T fv_minimum(T a, T b) { return (a != a || b != b) ? a + b : (a <= b ? a : b); }
#if __CUDA_ARCH__ >= 800
template <>
__device__ __forceinline__ float fv_maximum<float>(float a, float b)
{
    float result;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
}
template <>
__device__ __forceinline__ float fv_minimum<float>(float a, float b)
{
    float result;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
}
#endif

struct fv_add {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

struct fv_max {
    template <typename T>
    __device__ __forceinline__ T operator()(T a, T b) const { return fv_maximum(a, b); }
};

// Combines a value over the `width` lanes of each aligned group of a warp
// (width a power of two <= 32) by butterfly shuffles; every lane of the
// group gets the result.
template <typename T, typename Combine>
__device__ __forceinline__ T fv_warp_reduce(T value, int width, Combine combine)
{
    for (int offset = width / 2; offset > 0; offset /= 2)
        value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset, width));
    return value;
}

template <typename T>
__device__ __forceinline__ T fv_warp_sum(T value, int width) { return fv_warp_reduce(value, width, fv_add()); }

template <typename T>
__device__ __forceinline__ T fv_warp_max(T value, int width) { return fv_warp_reduce(value, width, fv_max()); }

// Welford state: count, mean and sum of squared deviations.
struct fv_welford {
    float count, mean, m2;
};

__device__ __forceinline__ void fv_welford_add(fv_welford &state, float x)
{
    state.count += 1.0f;
    float delta = x - state.mean;
    state.mean += delta / state.count;
    state.m2 += delta * (x - state.mean);
}

__device__ __forceinline__ fv_welford fv_welford_merge(fv_welford a, fv_welford b)
{
    float count = a.count + b.count;
    if (count == 0.0f)
        return a;
    float delta = b.mean - a.mean;
    float share = b.count / count;
    fv_welford merged;
    merged.count = count;
    merged.mean = a.mean + delta * share;
    merged.m2 = a.m2 + b.m2 + delta * delta * a.count * share;
    return merged;
}

__device__ __forceinline__ fv_welford fv_warp_welford(fv_welford state, int width)
{
    for (int offset = width / 2; offset > 0; offset /= 2) {
        fv_welford other;
        other.count = __shfl_xor_sync(0xffffffffu, state.count, offset, width);
        other.mean = __shfl_xor_sync(0xffffffffu, state.mean, offset, width);
        other.m2 = __shfl_xor_sync(0xffffffffu, state.m2, offset, width);
        state = fv_welford_merge(state, other);
    }
    return state;
}

// Combines the WARPS values a row's warps left in `row` (shared memory),
// every thread getting the result.  Up to SHARED_READ_WARPS warps, each
// thread reads them all in warp order (broadcast reads), which is shorter
// than a second round of shuffles: LN bwd bf16 16384 x 2048-4096 (4 warps
// per row) ran 2.1-3.3% faster so on an H200.  With 8 and 16 warps per row
// (LN bwd bf16 12288-20480) the reads ran 1.1-4.1% slower than 5ac1cd9's
// shuffles, the shuffles -0.8..+1.6% (bench/results/h200-2026-11-22.md,
// "Fewer instructions per row").
constexpr int SHARED_READ_WARPS = 4;

template <int WARPS, typename T, typename Combine>
__device__ __forceinline__ T fv_combine_warp_values(const T *row, T identity, Combine combine)
{
    if constexpr (WARPS <= SHARED_READ_WARPS) {
        T value = row[0];
#pragma unroll
        for (int w = 1; w < WARPS; ++w)
            value = combine(value, row[w]);
        return value;
    } else {
        const int lane = threadIdx.x % 32;
        return fv_warp_reduce(lane < WARPS ? row[lane] : identity, 32, combine);
    }
}

// Reduces a value over the BLOCK_X threads of this thread's row of the block
// (threadIdx.y), every one of them getting the result.  Rows of at most 32
// threads reduce within their warp; longer rows go through `scratch`
// (BLOCK_Y * 32 entries), so every thread of the block must call this.
template <int BLOCK_X, typename T, typename Combine>
__device__ __forceinline__ T fv_row_reduce(T value, T identity, T *scratch, Combine combine)
{
    value = fv_warp_reduce(value, BLOCK_X < 32 ? BLOCK_X : 32, combine);
    if (BLOCK_X <= 32)
        return value;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    T *row = scratch + threadIdx.y * 32;
    __syncthreads(); // the scratch may still be read by a previous reduction
    if (lane == 0)
        row[warp] = value;
    __syncthreads();
    return fv_combine_warp_values<BLOCK_X / 32>(row, identity, combine);
}

template <int BLOCK_X, typename T>
__device__ __forceinline__ T fv_row_sum(T value, T *scratch)
{
    return fv_row_reduce<BLOCK_X>(value, T(0), scratch, fv_add());
}

template <int BLOCK_X, typename T>
__device__ __forceinline__ T fv_row_max(T value, T *scratch)
{
    return fv_row_reduce<BLOCK_X>(value, T(-INFINITY), scratch, fv_max());
}

// Online softmax (inner_multipass): a running maximum and the sum of
// exp(x - maximum) over the elements seen so far.  Merging two such pairs
// rescales each sum to the larger maximum; a pair that has seen nothing
// (-INFINITY, 0) leaves the other as it is, and a NaN maximum propagates.
__device__ __forceinline__ void fv_online_merge(float &maximum, float &sum, float other_maximum,
                                                float other_sum)
{
    const float merged = fv_maximum(maximum, other_maximum);
    if (merged == -INFINITY)
        return;
    sum = sum * expf(maximum - merged) + other_sum * expf(other_maximum - merged);
    maximum = merged;
}

// The row's maximum and its sum of exp(x - maximum), from each thread's
// running pair, over the BLOCK_X threads of a one-row block; every thread
// gets the result.  A row of -INFINITY sums exp(-inf - -inf) = NaN, as the
// two passes would.  `scratch` holds 64 floats.
template <int BLOCK_X>
__device__ __forceinline__ void fv_row_online_max_sum(float &maximum, float &sum, float *scratch)
{
    const int width = BLOCK_X < 32 ? BLOCK_X : 32;
    for (int offset = width / 2; offset > 0; offset /= 2)
        fv_online_merge(maximum, sum, __shfl_xor_sync(0xffffffffu, maximum, offset, width),
                        __shfl_xor_sync(0xffffffffu, sum, offset, width));
    if (BLOCK_X <= 32) {
        if (maximum == -INFINITY)
            sum = __int_as_float(0x7fffffff);
        return;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads(); // the scratch may still be read by a previous reduction
    if (lane == 0) {
        scratch[warp] = maximum;
        scratch[32 + warp] = sum;
    }
    __syncthreads();
    maximum = lane < BLOCK_X / 32 ? scratch[lane] : -INFINITY;
    sum = lane < BLOCK_X / 32 ? scratch[32 + lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
        fv_online_merge(maximum, sum, __shfl_xor_sync(0xffffffffu, maximum, offset),
                        __shfl_xor_sync(0xffffffffu, sum, offset));
    if (maximum == -INFINITY)
        sum = __int_as_float(0x7fffffff);
}

// Sums COUNT values at once over the BLOCK_X threads of this thread's row
// (grouped reduction: one pass through `scratch`, BLOCK_Y * 32 * COUNT
// floats, for all of them).  Every thread of the block must call this.
template <int BLOCK_X, int COUNT>
__device__ __forceinline__ void fv_row_sum_group(float (&values)[COUNT], float *scratch)
{
#pragma unroll
    for (int k = 0; k < COUNT; ++k)
        values[k] = fv_warp_sum(values[k], BLOCK_X < 32 ? BLOCK_X : 32);
    if (BLOCK_X <= 32)
        return;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *row = scratch + threadIdx.y * 32 * COUNT;
    __syncthreads(); // the scratch may still be read by a previous reduction
    if (lane == 0) {
#pragma unroll
        for (int k = 0; k < COUNT; ++k)
            row[k * 32 + warp] = values[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < COUNT; ++k)
        values[k] = fv_combine_warp_values<BLOCK_X / 32>(row + k * 32, 0.0f, fv_add());
}

// Reduces COUNT values at once within one compute group of a
// warp-specialized kernel (grouped: one pass through `scratch`, the group's
// own slice of at least 32 * COUNT floats, so that groups reducing at
// different times, over different counts, never share an entry): the
// BLOCK_X threads of this threadIdx.y synchronize on named barrier `barrier`
// (1 + the group), not the whole block, whose producer warps do not take
// part.
template <int BLOCK_X, int COUNT, typename Combine>
__device__ __forceinline__ void fv_group_reduce(float (&values)[COUNT], float identity, float *scratch,
                                                int barrier, Combine combine)
{
#pragma unroll
    for (int k = 0; k < COUNT; ++k)
        values[k] = fv_warp_reduce(values[k], BLOCK_X < 32 ? BLOCK_X : 32, combine);
    if (BLOCK_X <= 32)
        return;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *row = scratch;
    asm volatile("bar.sync %0, %1;\n" ::"r"(barrier), "n"(BLOCK_X) : "memory");
    if (lane == 0) {
#pragma unroll
        for (int k = 0; k < COUNT; ++k)
            row[k * 32 + warp] = values[k];
    }
    asm volatile("bar.sync %0, %1;\n" ::"r"(barrier), "n"(BLOCK_X) : "memory");
#pragma unroll
    for (int k = 0; k < COUNT; ++k)
        values[k] = fv_warp_reduce(lane < BLOCK_X / 32 ? row[k * 32 + lane] : identity, 32, combine);
}

// The sums of COUNT values within one compute group (fv_group_reduce).
template <int BLOCK_X, int COUNT>
__device__ __forceinline__ void fv_group_sum(float (&values)[COUNT], float *scratch, int barrier)
{
    fv_group_reduce<BLOCK_X>(values, 0.0f, scratch, barrier, fv_add());
}

// The maxima of COUNT values within one compute group (fv_group_reduce):
// a grouped step's rows' maxima in one pass.
template <int BLOCK_X, int COUNT>
__device__ __forceinline__ void fv_group_maxima(float (&values)[COUNT], float *scratch, int barrier)
{
    fv_group_reduce<BLOCK_X>(values, -INFINITY, scratch, barrier, fv_max());
}

// The maximum of one value within one compute group (fv_group_reduce).
template <int BLOCK_X>
__device__ __forceinline__ float fv_group_max(float value, float *scratch, int barrier)
{
    float values[1] = {value};
    fv_group_reduce<BLOCK_X>(values, -INFINITY, scratch, barrier, fv_max());
    return values[0];
}

// Welford merge over the BLOCK_X threads of a row; `scratch` holds
// BLOCK_Y * 96 floats (count, mean and m2 of up to 32 warps per row).
template <int BLOCK_X>
__device__ __forceinline__ fv_welford fv_row_welford(fv_welford state, float *scratch)
{
    state = fv_warp_welford(state, BLOCK_X < 32 ? BLOCK_X : 32);
    if (BLOCK_X <= 32)
        return state;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *row = scratch + threadIdx.y * 96;
    __syncthreads();
    if (lane == 0) {
        row[warp] = state.count;
        row[32 + warp] = state.mean;
        row[64 + warp] = state.m2;
    }
    __syncthreads();
    fv_welford partial = {0.0f, 0.0f, 0.0f};
    if (lane < BLOCK_X / 32) {
        partial.count = row[lane];
        partial.mean = row[32 + lane];
        partial.m2 = row[64 + lane];
    }
    return fv_warp_welford(partial, 32);
}
