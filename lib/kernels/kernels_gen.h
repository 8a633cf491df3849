/*
 * kernels_gen.h - macros that generate one function per (kind, op): the
 * pairwise kernel, the multi-input kernels and the scale/div kernels, and
 * the table that lists them. Included once per instruction-set variant
 * (kernels_generic.c, kernels_avx2.c, kernels_avx512.c), which compiles the
 * same loops for wider vectors.
 *
 * Why the loops look the way they do:
 * - One loop per function, element-wise, no calls left after inlining, so
 *   GCC vectorizes each one (tests/unit/kernels/check_vectorized.sh checks
 *   every CC__KV_ instantiation line; CC__KS_ ones are known scalar).
 * - dst may equal a source exactly, so dst and the sources are not
 *   restrict: GCC versions each loop with a run-time overlap test that
 *   admits exact aliasing (distance 0) and only sends partial overlap to
 *   the scalar copy. restrict is used where it is legal: the private
 *   accumulator blocks.
 * - Reduction order is fixed by the code, never by the vectorizer: every
 *   loop combines inputs of one index i, there is no reduction across i.
 */
#ifndef CC_KERNELS_GEN_H
#define CC_KERNELS_GEN_H

#include <stddef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_ops.h"
#include "kernels/kernels_table.h"

/* Elements per block of the blocked multi-input kernels: 8 KiB of float64
 * accumulator plus the sources' blocks stay in L1. */
#define CC__KBLK 1024

#define CC__KS(K)     CC__K_##K##_S
#define CC__KC(K)     CC__K_##K##_C
#define CC__KLD(K, x) CC__K_##K##_LD(x)
#define CC__KST(K, x) CC__K_##K##_ST(x)

/* ---- pairwise: dst[i] = a[i] op b[i] ----------------------------------------- */
#define CC__KV_PAIR(K, OP)                                                                         \
    static void pair_##K##_##OP(void *dst, const void *a, const void *b, size_t n)                 \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        const CC__KS(K) *x = a, *y = b;                                                            \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = CC__KST(K, CC__KOP(K, OP)(CC__KLD(K, x[i]), CC__KLD(K, y[i])));                 \
    }

/* ---- blocked multi-input: any nsrc, any exact aliasing ------------------------ */

/* acc = widen(s) */
#define CC__KV_LOAD(K)                                                                             \
    static void load_##K(CC__KC(K) *restrict acc, const CC__KS(K) *restrict s, size_t m)           \
    {                                                                                              \
        for (size_t j = 0; j < m; j++)                                                             \
            acc[j] = CC__KLD(K, s[j]);                                                             \
    }

/* d = round(acc) */
#define CC__KV_STORE(K)                                                                            \
    static void store_##K(CC__KS(K) *restrict d, const CC__KC(K) *restrict acc, size_t m)          \
    {                                                                                              \
        for (size_t j = 0; j < m; j++)                                                             \
            d[j] = CC__KST(K, acc[j]);                                                             \
    }

/* Kinds computed in their storage type: a copy (GCC would call memcpy anyway). */
#define CC__KD_LOAD_COPY(K)                                                                        \
    static void load_##K(CC__KC(K) *restrict acc, const CC__KS(K) *restrict s, size_t m)           \
    {                                                                                              \
        memcpy(acc, s, m * sizeof *s);                                                             \
    }
#define CC__KD_STORE_COPY(K)                                                                       \
    static void store_##K(CC__KS(K) *restrict d, const CC__KC(K) *restrict acc, size_t m)          \
    {                                                                                              \
        memcpy(d, acc, m * sizeof *d);                                                             \
    }

/* acc = acc op widen(s) */
#define CC__KV_ACC(K, OP)                                                                          \
    static void acc_##K##_##OP(CC__KC(K) *restrict acc, const CC__KS(K) *restrict s, size_t m)     \
    {                                                                                              \
        for (size_t j = 0; j < m; j++)                                                             \
            acc[j] = CC__KOP(K, OP)(acc[j], CC__KLD(K, s[j]));                                     \
    }

/*
 * Handles what every multi-input kernel handles the same way: nothing to do
 * (n == 0, nsrc < 1) or one input (a copy). Returns 1 if it did the job.
 */
static inline int cc__kmulti_trivial(void *dst, const void *const *src, int nsrc, size_t n,
                                     size_t esize)
{
    if (n == 0 || nsrc < 1) return 1;
    if (nsrc > 1) return 0;
    if (dst != src[0]) memmove(dst, src[0], n * esize);
    return 1;
}

/* The whole block of every input is read before the block of dst is
 * written, so dst may equal any source. */
#define CC__KD_BLOCKED(K, OP)                                                                      \
    static void blocked_##K##_##OP(void *dst, const void *const *src, int nsrc, size_t n)          \
    {                                                                                              \
        CC__KC(K) acc[CC__KBLK];                                                                   \
        CC__KS(K) *d = dst;                                                                        \
        if (cc__kmulti_trivial(dst, src, nsrc, n, sizeof *d)) return;                              \
        for (size_t o = 0; o < n; o += CC__KBLK) {                                                 \
            size_t m = n - o < CC__KBLK ? n - o : CC__KBLK;                                        \
            load_##K(acc, (const CC__KS(K) *)src[0] + o, m);                                       \
            for (int k = 1; k < nsrc; k++)                                                         \
                acc_##K##_##OP(acc, (const CC__KS(K) *)src[k] + o, m);                             \
            store_##K(d + o, acc, m);                                                              \
        }                                                                                          \
    }

/* ---- fused multi-input SUM, 2..8 inputs: one pass over memory ------------------ */
#define CC__KLDI(K, k)    CC__KLD(K, s##k[i])
#define CC__KADD(K, x, y) CC__KOP(K, SUM)(x, y)
#define CC__KACC2(K)      CC__KADD(K, CC__KLDI(K, 0), CC__KLDI(K, 1))
#define CC__KACC3(K)      CC__KADD(K, CC__KACC2(K), CC__KLDI(K, 2))
#define CC__KACC4(K)      CC__KADD(K, CC__KACC3(K), CC__KLDI(K, 3))
#define CC__KACC5(K)      CC__KADD(K, CC__KACC4(K), CC__KLDI(K, 4))
#define CC__KACC6(K)      CC__KADD(K, CC__KACC5(K), CC__KLDI(K, 5))
#define CC__KACC7(K)      CC__KADD(K, CC__KACC6(K), CC__KLDI(K, 6))
#define CC__KACC8(K)      CC__KADD(K, CC__KACC7(K), CC__KLDI(K, 7))
/* The sources as one declaration: s0 .. s(N-1). */
#define CC__KSRC2(K) const CC__KS(K) *s0 = src[0], *s1 = src[1]
#define CC__KSRC3(K) CC__KSRC2(K), *s2 = src[2]
#define CC__KSRC4(K) CC__KSRC3(K), *s3 = src[3]
#define CC__KSRC5(K) CC__KSRC4(K), *s4 = src[4]
#define CC__KSRC6(K) CC__KSRC5(K), *s5 = src[5]
#define CC__KSRC7(K) CC__KSRC6(K), *s6 = src[6]
#define CC__KSRC8(K) CC__KSRC7(K), *s7 = src[7]

/* Left to right in compute type, rounded to storage once per element. */
#define CC__KV_MSUM(K, N)                                                                          \
    static void msum_##K##_##N(void *dst, const void *const *src, size_t n)                        \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        CC__KSRC##N(K);                                                                            \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = CC__KST(K, CC__KACC##N(K));                                                     \
    }

/* 2..8 inputs fused, the rest blocked; both give the same bits (same order,
 * one rounding). */
#define CC__KD_MULTI_SUM(K)                                                                        \
    static void multi_##K##_SUM(void *dst, const void *const *src, int nsrc, size_t n)             \
    {                                                                                              \
        static void (*const fused[9])(void *, const void *const *, size_t) = {                     \
            NULL,         NULL,         msum_##K##_2, msum_##K##_3, msum_##K##_4,                  \
            msum_##K##_5, msum_##K##_6, msum_##K##_7, msum_##K##_8};                               \
        if (nsrc >= 2 && nsrc <= 8 && n > 0)                                                       \
            fused[nsrc](dst, src, n);                                                              \
        else                                                                                       \
            blocked_##K##_SUM(dst, src, nsrc, n);                                                  \
    }

/* ---- scale (PREMUL_SUM) and div (AVG) --------------------------------------- */

/* Floats: the factor rounded to the compute type, one product, one rounding. */
#define CC__KV_SCALE_F(K)                                                                          \
    static void scale_##K(void *dst, const void *src, size_t n, double factor)                     \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        const CC__KS(K) *s = src;                                                                  \
        const CC__KC(K) f = (CC__KC(K))factor;                                                     \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = CC__KST(K, CC__KLD(K, s[i]) * f);                                               \
    }

/*
 * Integers: the product rounded to double, NaN taken as 0, saturated to
 * [LO, MAX], truncated toward zero. TOP is the first double above the range
 * (MAX + 1, exact for every dtype: INT64_MAX and UINT64_MAX are not doubles,
 * 2^63 and 2^64 are); the conversion only runs for values in range.
 */
#define CC__KV_SCALE_I(K, LO, TOP, MAX)                                                            \
    static void scale_##K(void *dst, const void *src, size_t n, double factor)                     \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        const CC__KS(K) *s = src;                                                                  \
        for (size_t i = 0; i < n; i++) {                                                           \
            double p = (double)s[i] * factor;                                                      \
            p = p != p ? 0.0 : p;                                                                  \
            p = p < (LO) ? (LO) : p;                                                               \
            d[i] = p >= (TOP) ? (MAX) : (CC__KS(K))p;                                              \
        }                                                                                          \
    }

/* Floats divide (no reciprocal), in the compute type. */
#define CC__KV_DIV_F(K)                                                                            \
    static void div_##K(void *dst, const void *src, size_t n, unsigned divisor)                    \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        const CC__KS(K) *s = src;                                                                  \
        const CC__KC(K) v = (CC__KC(K))divisor;                                                    \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = CC__KST(K, CC__KLD(K, s[i]) / v);                                               \
    }

/*
 * 8-, 16- and 32-bit integers divide in double, which vectorizes where integer
 * division does not, and is exact: for |x| < 2^32 the rounding error of x/v
 * is below 2^-21/v, less than the 1/v that separates a non-integer quotient
 * from the next integer, so truncation gives x / v as C computes it.
 */
#define CC__KV_DIV_I(K)                                                                            \
    static void div_##K(void *dst, const void *src, size_t n, unsigned divisor)                    \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        const CC__KS(K) *s = src;                                                                  \
        const double v = (double)divisor;                                                          \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = (CC__KS(K))((double)s[i] / v);                                                  \
    }

/* 64-bit integers: C division (truncates toward zero); x86 has no vector
 * integer divide, so this loop stays scalar. */
#define CC__KS_DIV64(K)                                                                            \
    static void div_##K(void *dst, const void *src, size_t n, unsigned divisor)                    \
    {                                                                                              \
        CC__KS(K) *d = dst;                                                                        \
        const CC__KS(K) *s = src;                                                                  \
        const CC__KS(K) v = (CC__KS(K))divisor;                                                    \
        for (size_t i = 0; i < n; i++)                                                             \
            d[i] = s[i] / v;                                                                       \
    }

/* ---- the table ------------------------------------------------------------- */

/* Row of one integer dtype: S = its signed-or-not kind for MIN/MAX, U = the
 * unsigned kind for the rest. PS names the SUM function, PO the others. */
#define CC__KROW_INT(PS, PO, S, U)                                                                 \
    {                                                                                              \
        [CC_SUM] = PS##_##U##_SUM, [CC_PROD] = PO##_##U##_PROD, [CC_MIN] = PO##_##S##_MIN,         \
        [CC_MAX] = PO##_##S##_MAX, [CC_AVG] = PS##_##U##_SUM, [CC_PREMUL_SUM] = PS##_##U##_SUM,    \
        [CC_BAND] = PO##_##U##_BAND, [CC_BOR] = PO##_##U##_BOR, [CC_BXOR] = PO##_##U##_BXOR,       \
    }

/* Floats: no bitwise ops (NULL means CC_ERR_NOT_SUPPORTED). */
#define CC__KROW_FLT(PS, PO, F)                                                                    \
    {                                                                                              \
        [CC_SUM] = PS##_##F##_SUM, [CC_PROD] = PO##_##F##_PROD, [CC_MIN] = PO##_##F##_MIN,         \
        [CC_MAX] = PO##_##F##_MAX, [CC_AVG] = PS##_##F##_SUM, [CC_PREMUL_SUM] = PS##_##F##_SUM,    \
    }

#define CC__KROWS(PS, PO)                                                                          \
    {                                                                                              \
        [CC_INT8] = CC__KROW_INT(PS, PO, i8, u8), [CC_UINT8] = CC__KROW_INT(PS, PO, u8, u8),       \
        [CC_INT32] = CC__KROW_INT(PS, PO, i32, u32), [CC_UINT32] = CC__KROW_INT(PS, PO, u32, u32), \
        [CC_INT64] = CC__KROW_INT(PS, PO, i64, u64), [CC_UINT64] = CC__KROW_INT(PS, PO, u64, u64), \
        [CC_FLOAT16] = CC__KROW_FLT(PS, PO, f16), [CC_BFLOAT16] = CC__KROW_FLT(PS, PO, bf16),      \
        [CC_FLOAT32] = CC__KROW_FLT(PS, PO, f32), [CC_FLOAT64] = CC__KROW_FLT(PS, PO, f64),        \
        [CC_INT16] = CC__KROW_INT(PS, PO, i16, u16), [CC_UINT16] = CC__KROW_INT(PS, PO, u16, u16), \
    }

#define CC__KPER_DTYPE(P)                                                                          \
    {                                                                                              \
        [CC_INT8] = P##_i8, [CC_UINT8] = P##_u8, [CC_INT32] = P##_i32, [CC_UINT32] = P##_u32,      \
        [CC_INT64] = P##_i64, [CC_UINT64] = P##_u64, [CC_FLOAT16] = P##_f16,                       \
        [CC_BFLOAT16] = P##_bf16, [CC_FLOAT32] = P##_f32, [CC_FLOAT64] = P##_f64,                  \
        [CC_INT16] = P##_i16, [CC_UINT16] = P##_u16,                                               \
    }

/* Defines the variant's table; every generated function is reached from it. */
#define CC__KDEFINE_TABLE(name)                                                                    \
    const cc__kernel_table_t name = {                                                              \
        .pair = CC__KROWS(pair, pair),                                                             \
        .multi = CC__KROWS(multi, blocked),                                                        \
        .scale = CC__KPER_DTYPE(scale),                                                            \
        .div = CC__KPER_DTYPE(div),                                                                \
    }

#endif /* CC_KERNELS_GEN_H */
