/*
 * test_cuda_math.cu - the CUDA kernels' element arithmetic
 * (lib/kernels/kernels_cuda.cuh, __host__ __device__) run on the CPU and
 * compared bit for bit with the host kernels (lib/kernels) for every
 * dtype x op, 1 to 8 inputs, PREMUL_SUM factors and AVG: special values
 * (NaN, infinities, signed zeros, denormals, extremes) included. Needs no
 * GPU: it proves the math the device runs, not the device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels_cuda.cuh"
extern "C" {
#include "kernels/kernels.h"
}

#define N 4096
#define MAXS 8

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return g_rng;
}

/* Random bits, with a share of special values for the float types. */
static void fill(cc_dtype_t t, void *buf, size_t n)
{
    size_t es = cc_dtype_size(t);
    static const uint16_t h16[] = {0x7e00, 0x7c01, 0xfc00, 0x7c00, 0x8000, 0x0000, 0x0001, 0x03ff,
                                   0x7bff, 0x3c00};
    static const uint16_t b16[] = {0x7fc0, 0x7f81, 0xff80, 0x7f80, 0x8000, 0x0000, 0x0001, 0x007f,
                                   0x7f7f, 0x3f80};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        unsigned char *p = (unsigned char *)buf + i * es;
        memcpy(p, &r, es);
        if ((r >> 60) != 0) continue; /* 1 in 16 is special */
        int k = (int)((r >> 8) % 10);
        if (t == CC_FLOAT16) memcpy(p, &h16[k], 2);
        if (t == CC_BFLOAT16) memcpy(p, &b16[k], 2);
        if (t == CC_FLOAT32) {
            const float f[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-45f, 3.4e38f, 1.0f, -2.5f};
            memcpy(p, &f[k], 4);
        }
        if (t == CC_FLOAT64) {
            const double d[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0, 0.0, 5e-324, 1.7e308, 1.0, -2.5};
            memcpy(p, &d[k], 8);
        }
    }
}

template <typename K, int O>
static void device_math(void *dst, const void *const *src, int nsrc, size_t n, bool premul,
                        double f, unsigned avg)
{
    typedef typename K::storage S;
    for (size_t i = 0; i < n; i++) {
        S v[MAXS];
        for (int k = 0; k < nsrc; k++) v[k] = ((const S *)src[k])[i];
        ((S *)dst)[i] = ccd::combine<K, O>(v, nsrc, premul, f, avg);
    }
}

template <typename K>
static bool by_op(cc_redop_t op, void *dst, const void *const *src, int nsrc, size_t n, bool premul,
                  double f, unsigned avg)
{
    switch (op) {
    case CC_SUM:
    case CC_AVG:
    case CC_PREMUL_SUM: device_math<K, ccd::SUM>(dst, src, nsrc, n, premul, f, avg); return true;
    case CC_PROD: device_math<K, ccd::PROD>(dst, src, nsrc, n, premul, f, avg); return true;
    case CC_MIN: device_math<K, ccd::MIN>(dst, src, nsrc, n, premul, f, avg); return true;
    case CC_MAX: device_math<K, ccd::MAX>(dst, src, nsrc, n, premul, f, avg); return true;
    case CC_BAND: device_math<K, ccd::BAND>(dst, src, nsrc, n, premul, f, avg); return true;
    case CC_BOR: device_math<K, ccd::BOR>(dst, src, nsrc, n, premul, f, avg); return true;
    case CC_BXOR: device_math<K, ccd::BXOR>(dst, src, nsrc, n, premul, f, avg); return true;
    default: return false;
    }
}

static void device(cc_dtype_t t, cc_redop_t op, void *dst, const void *const *src, int nsrc,
                   size_t n, bool premul, double f, unsigned avg)
{
    switch (t) {
    case CC_INT8: by_op<ccd::k_i8>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_UINT8: by_op<ccd::k_u8>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_INT16: by_op<ccd::k_i16>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_UINT16: by_op<ccd::k_u16>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_INT32: by_op<ccd::k_i32>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_UINT32: by_op<ccd::k_u32>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_INT64: by_op<ccd::k_i64>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_UINT64: by_op<ccd::k_u64>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_FLOAT16: by_op<ccd::k_f16>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_BFLOAT16: by_op<ccd::k_bf16>(op, dst, src, nsrc, n, premul, f, avg); break;
    case CC_FLOAT32: by_op<ccd::k_f32>(op, dst, src, nsrc, n, premul, f, avg); break;
    default: by_op<ccd::k_f64>(op, dst, src, nsrc, n, premul, f, avg); break;
    }
}

/* Is this element a NaN (any payload)? */
static bool is_nan(cc_dtype_t t, const void *p)
{
    uint64_t x = 0;
    memcpy(&x, p, cc_dtype_size(t));
    switch (t) {
    case CC_FLOAT16: return (x & 0x7c00) == 0x7c00 && (x & 0x3ff);
    case CC_BFLOAT16: return (x & 0x7f80) == 0x7f80 && (x & 0x7f);
    case CC_FLOAT32: return (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu);
    case CC_FLOAT64: return (x >> 52 & 0x7ff) == 0x7ff && (x & 0xfffffffffffffull);
    default: return false;
    }
}

/*
 * Equal bits, or (SUM, PROD and their AVG / PREMUL_SUM forms on floats) both NaN: which NaN
 * payload and sign an IEEE sum or product of NaNs keeps is not specified (docs/kernels.md),
 * and x86 gives invalid operations a negative default NaN where others may not.
 */
static bool same(cc_dtype_t t, cc_redop_t op, const void *a, const void *b)
{
    if (!memcmp(a, b, cc_dtype_size(t))) return true;
    return op != CC_MIN && op != CC_MAX && is_nan(t, a) && is_nan(t, b);
}

/* The host engine's way: scale each input (PREMUL_SUM), reduce all, divide (AVG). */
static void host(cc_dtype_t t, cc_redop_t op, void *dst, void *const *src, int nsrc, size_t n,
                 double f)
{
    size_t es = cc_dtype_size(t);
    void *scaled[MAXS];
    for (int k = 0; k < nsrc; k++) {
        scaled[k] = malloc(n * es);
        if (op == CC_PREMUL_SUM) cc__kernel_scale(t, scaled[k], src[k], n, f);
        else memcpy(scaled[k], src[k], n * es);
    }
    cc__reduce_multi_fn fn;
    if (cc__kernel_reduce_multi_get(t, op, &fn) != CC_OK) abort();
    fn(dst, (const void *const *)scaled, nsrc, n);
    if (op == CC_AVG) cc__kernel_div(t, dst, dst, n, (unsigned)nsrc);
    for (int k = 0; k < nsrc; k++) free(scaled[k]);
}

int main(void)
{
    static const double factors[] = {1.0, 0.5, -3.25, 1e-3, 7.0};
    static const int nsrcs[] = {1, 2, 3, 5, 8};
    int failures = 0, cases = 0;
    void *src[MAXS], *a = malloc(N * 8), *b = malloc(N * 8);
    for (int k = 0; k < MAXS; k++) src[k] = malloc(N * 8);
    for (int t = 0; t < CC_DTYPE_COUNT; t++) {
        for (int op = 0; op < CC_REDOP_COUNT; op++) {
            if (cc__kernel_check((cc_dtype_t)t, (cc_redop_t)op) != CC_OK) continue;
            for (int ni = 0; ni < 5; ni++) {
                int nsrc = nsrcs[ni];
                double f = factors[(t + op + ni) % 5];
                for (int k = 0; k < nsrc; k++) fill((cc_dtype_t)t, src[k], N);
                host((cc_dtype_t)t, (cc_redop_t)op, a, src, nsrc, N, f);
                device((cc_dtype_t)t, (cc_redop_t)op, b, (const void *const *)src, nsrc, N,
                       op == CC_PREMUL_SUM, f, op == CC_AVG ? (unsigned)nsrc : 0u);
                cases++;
                size_t es = cc_dtype_size((cc_dtype_t)t);
                for (size_t i = 0; i < N; i++)
                    if (!same((cc_dtype_t)t, (cc_redop_t)op, (char *)a + i * es,
                              (char *)b + i * es)) {
                        uint64_t x = 0, y = 0;
                        memcpy(&x, (char *)a + i * es, es);
                        memcpy(&y, (char *)b + i * es, es);
                        fprintf(stderr, "%s %s nsrc %d factor %g [%zu]: host 0x%llx, cuda 0x%llx\n",
                                cc_dtype_name((cc_dtype_t)t), cc_redop_name((cc_redop_t)op), nsrc,
                                f, i, (unsigned long long)x, (unsigned long long)y);
                        failures++;
                        break;
                    }
            }
        }
    }
    printf("cuda element math vs host kernels: %d cases, %d differ\n", cases, failures);
    for (int k = 0; k < MAXS; k++) free(src[k]);
    free(a);
    free(b);
    return failures ? 1 : 0;
}
