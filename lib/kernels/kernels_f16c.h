/*
 * kernels_f16c.h - float16 kernels for the x86 variants. F16C converts 8
 * halves per instruction (AVX-512: 16), where the software conversion of
 * half.h costs some thirty; but GCC does not vectorize F16C from plain C,
 * so the conversions are written with intrinsics and work on blocks: widen
 * each input block into float32, run the float32 loops of kernels_inst.h
 * on the block (they stay in L1), round the result block back.
 *
 * The results are the software path's bit for bit: both round to nearest
 * even, and the one difference of the conversions (F16C quiets a
 * signalling NaN, half.h keeps it) cannot reach an output, because every
 * operation quiets NaN (see kernels_ops.h). Included after kernels_inst.h.
 */
#include <immintrin.h>

#define CC__KF16_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* d = widen(s), m elements */
static void cvt_h2f_blk(float *restrict d, const uint16_t *restrict s, size_t m)
{
    size_t j = 0;
#ifdef __AVX512F__
    for (; j + 16 <= m; j += 16)
        _mm512_storeu_ps(d + j, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + j))));
#endif
    for (; j + 8 <= m; j += 8)
        _mm256_storeu_ps(d + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + j))));
    for (; j < m; j++)
        d[j] = _cvtsh_ss(s[j]);
}

/* d = round(s), m elements */
static void cvt_f2h_blk(uint16_t *restrict d, const float *restrict s, size_t m)
{
    size_t j = 0;
#ifdef __AVX512F__
    for (; j + 16 <= m; j += 16)
        _mm256_storeu_si256((__m256i *)(d + j),
                            _mm512_cvtps_ph(_mm512_loadu_ps(s + j), CC__KF16_RNE));
#endif
    for (; j + 8 <= m; j += 8)
        _mm_storeu_si128((__m128i *)(d + j), _mm256_cvtps_ph(_mm256_loadu_ps(s + j), CC__KF16_RNE));
    for (; j < m; j++)
        d[j] = _cvtss_sh(s[j], CC__KF16_RNE);
}

/* Both inputs' blocks are widened before dst's block is written: dst may
 * equal either input. */
#define CC__KF16C_PAIR(OP)                                                                         \
    static void pair_f16_##OP(void *dst, const void *a, const void *b, size_t n)                   \
    {                                                                                              \
        float fa[CC__KBLK], fb[CC__KBLK];                                                          \
        uint16_t *d = dst;                                                                         \
        const uint16_t *x = a, *y = b;                                                             \
        for (size_t o = 0; o < n; o += CC__KBLK) {                                                 \
            size_t m = n - o < CC__KBLK ? n - o : CC__KBLK;                                        \
            cvt_h2f_blk(fa, x + o, m);                                                             \
            cvt_h2f_blk(fb, y + o, m);                                                             \
            acc_f32_##OP(fa, fb, m);                                                               \
            cvt_f2h_blk(d + o, fa, m);                                                             \
        }                                                                                          \
    }

/* Accumulates in float32 across all inputs, rounds once: as the software
 * path's fused and blocked kernels do. */
#define CC__KF16C_MULTI(NAME, OP)                                                                  \
    static void NAME(void *dst, const void *const *src, int nsrc, size_t n)                        \
    {                                                                                              \
        float acc[CC__KBLK], tmp[CC__KBLK];                                                        \
        uint16_t *d = dst;                                                                         \
        if (cc__kmulti_trivial(dst, src, nsrc, n, sizeof *d)) return;                              \
        for (size_t o = 0; o < n; o += CC__KBLK) {                                                 \
            size_t m = n - o < CC__KBLK ? n - o : CC__KBLK;                                        \
            cvt_h2f_blk(acc, (const uint16_t *)src[0] + o, m);                                     \
            for (int k = 1; k < nsrc; k++) {                                                       \
                cvt_h2f_blk(tmp, (const uint16_t *)src[k] + o, m);                                 \
                acc_f32_##OP(acc, tmp, m);                                                         \
            }                                                                                      \
            cvt_f2h_blk(d + o, acc, m);                                                            \
        }                                                                                          \
    }

/* scale and div: the float32 kernel, in place on the widened block. */
#define CC__KF16C_UNARY(NAME, F32FN, ARGT)                                                         \
    static void NAME(void *dst, const void *src, size_t n, ARGT arg)                               \
    {                                                                                              \
        float f[CC__KBLK];                                                                         \
        uint16_t *d = dst;                                                                         \
        const uint16_t *s = src;                                                                   \
        for (size_t o = 0; o < n; o += CC__KBLK) {                                                 \
            size_t m = n - o < CC__KBLK ? n - o : CC__KBLK;                                        \
            cvt_h2f_blk(f, s + o, m);                                                              \
            F32FN(f, f, m, arg);                                                                   \
            cvt_f2h_blk(d + o, f, m);                                                              \
        }                                                                                          \
    }

/* clang-format off */
CC__KF16C_PAIR(SUM)
CC__KF16C_PAIR(PROD)
CC__KF16C_PAIR(MIN)
CC__KF16C_PAIR(MAX)
CC__KF16C_MULTI(multi_f16_SUM, SUM)
CC__KF16C_MULTI(blocked_f16_PROD, PROD)
CC__KF16C_MULTI(blocked_f16_MIN, MIN)
CC__KF16C_MULTI(blocked_f16_MAX, MAX)
CC__KF16C_UNARY(scale_f16, scale_f32, double)
CC__KF16C_UNARY(div_f16, div_f32, unsigned)
/* clang-format on */
