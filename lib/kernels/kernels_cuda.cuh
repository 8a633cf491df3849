/*
 * kernels_cuda.cuh - the element arithmetic of the CUDA reduction kernels,
 * as __host__ __device__ code: the same source runs in the kernels and in
 * tests/gpu/test_cuda_math (on the CPU), which checks it bit for bit
 * against the host kernels (lib/kernels) for every dtype x op.
 *
 * The results are the host kernels' (docs/kernels.md): integers wrap
 * (computed unsigned), MIN/MAX propagate the first NaN quieted and keep the
 * first operand on ties, float16 and bfloat16 accumulate in float32 across
 * all inputs and round once to nearest even, PREMUL_SUM scales each input
 * (rounded to the dtype) before it is combined, AVG divides the rounded
 * sum. Compiled with --fmad=false: no FMA contraction, so every rounding is
 * the one written here.
 */
#ifndef CC_KERNELS_KERNELS_CUDA_CUH
#define CC_KERNELS_KERNELS_CUDA_CUH

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CC_HD __host__ __device__ __forceinline__
#else
#define CC_HD static inline
#endif

namespace ccd {

/* ---- bit views and the 16-bit float conversions (half.h's algorithms) ------- */

CC_HD float f_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

CC_HD uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

CC_HD float h2f(uint16_t h)
{
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t fin = f_bits(f_from_bits(em) * 0x1p112f);
    uint32_t r = (int32_t)em >= (int32_t)(0x7c00u << 13) ? (em | 0x7f800000u) : fin;
    return f_from_bits(r | ((uint32_t)(h & 0x8000u) << 16));
}

/* Round to nearest even through the FPU; NaN comes out quiet with its top payload bits. */
CC_HD uint16_t f2h(float f)
{
    uint32_t w = f_bits(f);
    float base = (f_from_bits(w & 0x7fffffffu) * 0x1p112f) * 0x1p-110f;
    uint32_t bias = (w + w) & 0xff000000u;
    bias = (int32_t)(bias >> 1) < (int32_t)(0x71000000u >> 1) ? 0x71000000u : bias;
    base = f_from_bits((bias >> 1) + 0x07800000u) + base;
    uint32_t bits = f_bits(base);
    uint32_t r = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
    r = f != f ? 0x7e00u | ((w >> 13) & 0x3ffu) : r;
    return (uint16_t)(((w >> 16) & 0x8000u) | r);
}

CC_HD float bf2f(uint16_t b)
{
    return f_from_bits((uint32_t)b << 16);
}

CC_HD uint16_t f2bf(float f)
{
    uint32_t x = f_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    return (uint16_t)(f != f ? (x >> 16) | 0x40u : r);
}

/* ---- operations -------------------------------------------------------------- */

enum op { SUM, PROD, MIN, MAX, BAND, BOR, BXOR }; /* AVG and PREMUL_SUM reduce as SUM */

template <typename C> CC_HD C quiet(C r)
{
    return r != r ? r + r : r;
}

/* Floats (compute types float and double). */
template <int O, typename C> CC_HD C fop(C x, C y)
{
    if (O == SUM) return x + y;
    if (O == PROD) return x * y;
    if (O == MIN) return quiet<C>(x != x ? x : (x <= y ? x : y));
    return quiet<C>(x != x ? x : (x >= y ? x : y)); /* MAX */
}

/* Integers: U is the unsigned type (wrapping arithmetic), S the signed one for MIN/MAX.
 * PROD multiplies in unsigned at least (1u * x): uint16_t promotes to int, where
 * 65535 * 65535 overflows. */
template <int O, typename U, typename S> CC_HD U iop(U x, U y)
{
    if (O == SUM) return (U)(x + y);
    if (O == PROD) return (U)(1u * x * y);
    if (O == BAND) return (U)(x & y);
    if (O == BOR) return (U)(x | y);
    if (O == BXOR) return (U)(x ^ y);
    S a = (S)x, b = (S)y;
    if (O == MIN) return (U)(b < a ? b : a);
    return (U)(b > a ? b : a); /* MAX */
}

/* ---- element kinds: storage, compute, conversions, scale, div ----------------- */

/*
 * Integer premul: the product rounded to double, NaN as 0, saturated to
 * [LO, MAX] - TOP is MAX + 1, a double exactly (INT64_MAX is not) - and
 * truncated toward zero. Factor 1.0 copies (exact for 64-bit values too).
 */
template <typename S> CC_HD S iscale(S x, double f, double lo, double top, S max)
{
    if (f == 1.0) return x;
    double p = (double)x * f;
    p = p != p ? 0.0 : p;
    p = p < lo ? lo : p;
    return p >= top ? max : (S)p;
}

/* S storage, U unsigned (arithmetic), W wide (division: C's, toward zero). */
#define CCD_INT_KIND(NAME, S, U, W, LO, TOP, MAX)                                                  \
    struct NAME {                                                                                  \
        typedef S storage;                                                                         \
        typedef U compute;                                                                         \
        static CC_HD U load(S v) { return (U)v; }                                                  \
        static CC_HD S store(U v) { return (S)v; }                                                 \
        static CC_HD S scale(S v, double f) { return iscale<S>(v, f, LO, TOP, MAX); }              \
        static CC_HD S div(S v, unsigned n) { return (S)((W)v / (W)n); }                           \
        template <int O> static CC_HD U op(U x, U y) { return iop<O, U, S>(x, y); }                \
    };
CCD_INT_KIND(k_i8, int8_t, uint8_t, int64_t, -128.0, 128.0, INT8_MAX)
CCD_INT_KIND(k_u8, uint8_t, uint8_t, uint64_t, 0.0, 256.0, UINT8_MAX)
CCD_INT_KIND(k_i16, int16_t, uint16_t, int64_t, -32768.0, 32768.0, INT16_MAX)
CCD_INT_KIND(k_u16, uint16_t, uint16_t, uint64_t, 0.0, 65536.0, UINT16_MAX)
CCD_INT_KIND(k_i32, int32_t, uint32_t, int64_t, -2147483648.0, 2147483648.0, INT32_MAX)
CCD_INT_KIND(k_u32, uint32_t, uint32_t, uint64_t, 0.0, 4294967296.0, UINT32_MAX)
CCD_INT_KIND(k_i64, int64_t, uint64_t, int64_t, -9223372036854775808.0, 9223372036854775808.0,
             INT64_MAX)
CCD_INT_KIND(k_u64, uint64_t, uint64_t, uint64_t, 0.0, 18446744073709551616.0, UINT64_MAX)
#undef CCD_INT_KIND

/* (The host divides 8-, 16- and 32-bit integers in double, which it proves exact: the same
 * results.) */

struct k_f32 {
    typedef float storage;
    typedef float compute;
    static CC_HD float load(float v) { return v; }
    static CC_HD float store(float v) { return v; }
    static CC_HD float scale(float v, double f) { return f == 1.0 ? v : v * (float)f; }
    static CC_HD float div(float v, unsigned n) { return v / (float)n; }
    template <int O> static CC_HD float op(float x, float y) { return fop<O, float>(x, y); }
};

struct k_f64 {
    typedef double storage;
    typedef double compute;
    static CC_HD double load(double v) { return v; }
    static CC_HD double store(double v) { return v; }
    static CC_HD double scale(double v, double f) { return f == 1.0 ? v : v * f; }
    static CC_HD double div(double v, unsigned n) { return v / (double)n; }
    template <int O> static CC_HD double op(double x, double y) { return fop<O, double>(x, y); }
};

/* 16-bit floats: widened to float32, combined, rounded once at the end. */
#define CCD_HALF_KIND(NAME, TOF, FROMF)                                                            \
    struct NAME {                                                                                  \
        typedef uint16_t storage;                                                                  \
        typedef float compute;                                                                     \
        static CC_HD float load(uint16_t v) { return TOF(v); }                                     \
        static CC_HD uint16_t store(float v) { return FROMF(v); }                                  \
        static CC_HD uint16_t scale(uint16_t v, double f)                                          \
        {                                                                                          \
            return f == 1.0 ? v : FROMF(TOF(v) * (float)f);                                        \
        }                                                                                          \
        static CC_HD uint16_t div(uint16_t v, unsigned n) { return FROMF(TOF(v) / (float)n); }     \
        template <int O> static CC_HD float op(float x, float y) { return fop<O, float>(x, y); }   \
    };
CCD_HALF_KIND(k_f16, h2f, f2h)
CCD_HALF_KIND(k_bf16, bf2f, f2bf)
#undef CCD_HALF_KIND

/*
 * One output element from nsrc inputs (nsrc >= 1): left to right, premul
 * applied to each input first when `premul`, the division by `avg` (0 =
 * none) applied to the rounded result.
 */
template <typename K, int O>
CC_HD typename K::storage combine(const typename K::storage *v, int nsrc, bool premul, double f,
                                  unsigned avg)
{
    typedef typename K::storage S;
    S first = premul ? K::scale(v[0], f) : v[0];
    S out = first; /* one input is copied bit for bit, as the host's multi kernel does */
    if (nsrc > 1) {
        typename K::compute acc = K::load(first);
        for (int k = 1; k < nsrc; k++)
            acc = K::template op<O>(acc, K::load(premul ? K::scale(v[k], f) : v[k]));
        out = K::store(acc);
    }
    return avg ? K::div(out, avg) : out;
}

} /* namespace ccd */

#endif /* CC_KERNELS_KERNELS_CUDA_CUH */
