/*
 * kernels_cuda.cu - the CUDA reduction, copy and flag kernels (see
 * kernels_cuda.h).
 *
 * Reduction: one kernel per (dtype kind, op), a grid-stride loop; when
 * every pointer is 16-byte aligned each thread moves 16 bytes per source
 * per step (uint4 loads), the rest go element by element. The grid is
 * sized for the device (a few blocks per SM), not for n: large arrays are
 * strided over, which keeps loads in flight without launching millions of
 * blocks.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <time.h>

#include "kernels/kernels_cuda.cuh"
#include "kernels/kernels_cuda.h"

namespace {

struct args {
    void *dst;
    const void *src[CC__CUDA_MAX_SRC];
    int nsrc;
    size_t n;
    unsigned scale_mask;
    double premul;
    unsigned avg;
};

/*
 * The reductions combine left to right as ccd::combine does (one input is copied bit for
 * bit; more are widened to K::compute, combined and rounded once; premul on the inputs of
 * scale_mask; AVG divides the rounded result), but one source at a time into a running
 * value: an array of all the sources' values, indexed by the runtime source count, lived
 * in local memory (304 bytes of stack per thread, -Xptxas -v), and the kernel ran at
 * 0.2-0.4 of cudaMemcpy's bandwidth on an H200. The arguments are __grid_constant__ for the
 * same reason: indexing a.src by k made each thread copy them to its stack (112 bytes).
 */
template <typename K> __device__ __forceinline__ typename K::storage
input(const args &a, int k, typename K::storage v)
{
    return (a.scale_mask & (1u << k)) ? K::scale(v, a.premul) : v;
}

template <typename K, int O> __device__ __forceinline__ void one(const args &a, size_t i)
{
    typedef typename K::storage S;
    S out = input<K>(a, 0, ((const S *)a.src[0])[i]);
    if (a.nsrc > 1) {
        typename K::compute acc = K::load(out);
        for (int k = 1; k < a.nsrc; k++)
            acc = K::template op<O>(acc, K::load(input<K>(a, k, ((const S *)a.src[k])[i])));
        out = K::store(acc);
    }
    ((S *)a.dst)[i] = a.avg ? K::div(out, a.avg) : out;
}

/* VEC elements at once: 16-byte loads of each source, combined element by element. */
template <typename K, int O> __global__ void reduce_vec(const __grid_constant__ args a, size_t nvec)
{
    typedef typename K::storage S;
    constexpr int VEC = 16 / sizeof(S);
    union pack {
        uint4 q;
        S e[VEC];
    };
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < nvec; j += stride) {
        pack out;
        out.q = ((const uint4 *)a.src[0])[j];
#pragma unroll
        for (int e = 0; e < VEC; e++) out.e[e] = input<K>(a, 0, out.e[e]);
        if (a.nsrc > 1) {
            typename K::compute acc[VEC];
#pragma unroll
            for (int e = 0; e < VEC; e++) acc[e] = K::load(out.e[e]);
            for (int k = 1; k < a.nsrc; k++) {
                pack in;
                in.q = ((const uint4 *)a.src[k])[j];
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    acc[e] = K::template op<O>(acc[e], K::load(input<K>(a, k, in.e[e])));
            }
#pragma unroll
            for (int e = 0; e < VEC; e++) out.e[e] = K::store(acc[e]);
        }
        if (a.avg) {
#pragma unroll
            for (int e = 0; e < VEC; e++) out.e[e] = K::div(out.e[e], a.avg);
        }
        ((uint4 *)a.dst)[j] = out.q;
    }
    /* The tail (n not a multiple of VEC). */
    size_t first = nvec * VEC;
    for (size_t i = first + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        one<K, O>(a, i);
}

template <typename K, int O> __global__ void reduce_scalar(const __grid_constant__ args a)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        one<K, O>(a, i);
}

int g_blocks; /* per launch: 4 x SMs of the first device asked (set once) */

int blocks_for(size_t work)
{
    if (!g_blocks) {
        int dev = 0, sms = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 80;
        g_blocks = 4 * (sms > 0 ? sms : 80);
    }
    size_t need = (work + 255) / 256;
    return need < (size_t)g_blocks ? (int)(need ? need : 1) : g_blocks;
}

cc_status_t check_launch(const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return CC_OK;
    cc__kcuda_error("launch of %s failed: %s", what, cudaGetErrorString(e));
    return CC_ERR_INTERNAL;
}

bool aligned16(const args &a)
{
    uintptr_t bits = (uintptr_t)a.dst;
    for (int k = 0; k < a.nsrc; k++) bits |= (uintptr_t)a.src[k];
    return (bits & 15u) == 0;
}

template <typename K, int O> cc_status_t launch(const args &a, cudaStream_t s)
{
    typedef typename K::storage S;
    constexpr int VEC = 16 / sizeof(S);
    if (aligned16(a)) {
        size_t nvec = a.n / VEC;
        reduce_vec<K, O><<<blocks_for(nvec ? nvec : a.n), 256, 0, s>>>(a, nvec);
    } else {
        reduce_scalar<K, O><<<blocks_for(a.n), 256, 0, s>>>(a);
    }
    return check_launch("reduction kernel");
}

/* Op dispatch: AVG and PREMUL_SUM combine as SUM; bitwise ops exist for integers only. */
template <typename K, bool INT> cc_status_t by_op(cc_redop_t op, const args &a, cudaStream_t s)
{
    switch (op) {
    case CC_SUM:
    case CC_AVG:
    case CC_PREMUL_SUM: return launch<K, ccd::SUM>(a, s);
    case CC_PROD: return launch<K, ccd::PROD>(a, s);
    case CC_MIN: return launch<K, ccd::MIN>(a, s);
    case CC_MAX: return launch<K, ccd::MAX>(a, s);
    default: break;
    }
    if (INT) {
        if (op == CC_BAND) return launch<K, ccd::BAND>(a, s);
        if (op == CC_BOR) return launch<K, ccd::BOR>(a, s);
        if (op == CC_BXOR) return launch<K, ccd::BXOR>(a, s);
    }
    cc__kcuda_error("cuda reduction %s has no kernel for this dtype",
                 cc_redop_name(op));
    return CC_ERR_NOT_SUPPORTED;
}

/* ---- copy, flags, clock --------------------------------------------------------- */

__global__ void copy_vec(uint4 *dst, const uint4 *src, size_t nvec)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < nvec; j += stride)
        dst[j] = src[j];
}

__global__ void copy_bytes(unsigned char *dst, const unsigned char *src, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride)
        dst[j] = src[j];
}

struct words {
    uint64_t *w[CC__CUDA_MAX_SRC];
};

__global__ void signal_k(words ws, int n, uint64_t value)
{
    int k = threadIdx.x;
    /* Every earlier write of this stream is visible system-wide before a peer sees the flag. */
    __threadfence_system();
    if (k < n) *(volatile uint64_t *)ws.w[k] = value;
    __threadfence_system();
}

__device__ __forceinline__ uint64_t gtime()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void wait_k(const uint64_t *w, int n, uint64_t value, const volatile int *abort,
                       int *fault, uint64_t deadline)
{
    int k = threadIdx.x;
    if (k < n) {
        unsigned spins = 0;
        while (*(const volatile uint64_t *)&w[k] < value) {
            if ((++spins & 1023u) == 0) {
                if (*abort) {
                    atomicExch(fault, 1);
                    break;
                }
                if (deadline && gtime() > deadline) {
                    atomicExch(fault, 2);
                    break;
                }
                __nanosleep(1000);
            }
        }
    }
    __threadfence_system(); /* what the peers wrote before their flags is seen after this */
}

__global__ void clock_k(uint64_t *out)
{
    *out = gtime();
}

} /* namespace */

extern "C" cc_status_t cc__cuda_reduce(const cc__cuda_reduce_t *r, void *stream)
{
    if (r->nsrc < 1 || r->nsrc > CC__CUDA_MAX_SRC || (unsigned)r->dtype >= CC_DTYPE_COUNT) {
        cc__kcuda_error("cuda reduction: %d sources (1..%d), dtype %d", r->nsrc,
                     CC__CUDA_MAX_SRC, (int)r->dtype);
        return CC_ERR_INVALID_ARG;
    }
    if (!r->n) return CC_OK;
    args a;
    a.dst = r->dst;
    for (int k = 0; k < CC__CUDA_MAX_SRC; k++) a.src[k] = k < r->nsrc ? r->src[k] : nullptr;
    a.nsrc = r->nsrc;
    a.n = r->n;
    a.scale_mask = r->op == CC_PREMUL_SUM ? r->scale_mask : 0u;
    a.premul = r->premul;
    a.avg = r->op == CC_AVG ? r->avg : 0u;
    cudaStream_t s = (cudaStream_t)stream;
    switch (r->dtype) {
    case CC_INT8: return by_op<ccd::k_i8, true>(r->op, a, s);
    case CC_UINT8: return by_op<ccd::k_u8, true>(r->op, a, s);
    case CC_INT16: return by_op<ccd::k_i16, true>(r->op, a, s);
    case CC_UINT16: return by_op<ccd::k_u16, true>(r->op, a, s);
    case CC_INT32: return by_op<ccd::k_i32, true>(r->op, a, s);
    case CC_UINT32: return by_op<ccd::k_u32, true>(r->op, a, s);
    case CC_INT64: return by_op<ccd::k_i64, true>(r->op, a, s);
    case CC_UINT64: return by_op<ccd::k_u64, true>(r->op, a, s);
    case CC_FLOAT16: return by_op<ccd::k_f16, false>(r->op, a, s);
    case CC_BFLOAT16: return by_op<ccd::k_bf16, false>(r->op, a, s);
    case CC_FLOAT32: return by_op<ccd::k_f32, false>(r->op, a, s);
    default: return by_op<ccd::k_f64, false>(r->op, a, s);
    }
}

extern "C" cc_status_t cc__cuda_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    if (!bytes || dst == src) return CC_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if ((((uintptr_t)dst | (uintptr_t)src) & 15u) == 0) {
        size_t nvec = bytes / 16;
        if (nvec) copy_vec<<<blocks_for(nvec), 256, 0, s>>>((uint4 *)dst, (const uint4 *)src, nvec);
        if (bytes % 16)
            copy_bytes<<<1, 32, 0, s>>>((unsigned char *)dst + nvec * 16,
                                        (const unsigned char *)src + nvec * 16, bytes % 16);
    } else {
        copy_bytes<<<blocks_for(bytes), 256, 0, s>>>((unsigned char *)dst,
                                                     (const unsigned char *)src, bytes);
    }
    return check_launch("copy kernel");
}

extern "C" cc_status_t cc__cuda_signal(uint64_t *const *w, int n, uint64_t value, void *stream)
{
    if (n <= 0) return CC_OK;
    words ws;
    for (int k = 0; k < CC__CUDA_MAX_SRC; k++) ws.w[k] = k < n ? w[k] : nullptr;
    signal_k<<<1, 32, 0, (cudaStream_t)stream>>>(ws, n < CC__CUDA_MAX_SRC ? n : CC__CUDA_MAX_SRC,
                                                 value);
    return check_launch("signal kernel");
}

extern "C" cc_status_t cc__cuda_wait(const uint64_t *w, int n, uint64_t value,
                                     const volatile int *abort, int *fault, uint64_t deadline_gt,
                                     void *stream)
{
    if (n <= 0) return CC_OK;
    wait_k<<<1, 32, 0, (cudaStream_t)stream>>>(w, n, value, abort, fault, deadline_gt);
    return check_launch("wait kernel");
}

/* Best of five: the launch-to-sync window around the kernel's read bounds the error. */
extern "C" cc_status_t cc__cuda_globaltimer_offset(int64_t *offset)
{
    uint64_t *d = nullptr, gt = 0, best = UINT64_MAX;
    if (cudaMalloc(&d, sizeof(*d)) != cudaSuccess) return CC_ERR_NOT_SUPPORTED;
    cc_status_t st = CC_ERR_INTERNAL;
    for (int i = 0; i < 5; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_k<<<1, 1>>>(d);
        if (cudaDeviceSynchronize() != cudaSuccess) break;
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (cudaMemcpy(&gt, d, sizeof(gt), cudaMemcpyDeviceToHost) != cudaSuccess) break;
        uint64_t t0 = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
        uint64_t t1 = (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec;
        if (t1 - t0 < best) {
            best = t1 - t0;
            *offset = (int64_t)gt - (int64_t)(t0 + (t1 - t0) / 2);
            st = CC_OK;
        }
    }
    cudaFree(d);
    return st;
}
