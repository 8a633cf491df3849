/*
 * half.h - float16 and bfloat16 <-> float32 conversions, branch-free so that
 * GCC vectorizes the kernel loops that inline them.
 *
 * Rounding is to nearest, ties to even, done by the FPU where that is
 * simplest: the code assumes the default floating-point environment (round
 * to nearest, denormals neither flushed nor treated as zero). NaN keeps its
 * sign and as much of its payload as fits; a NaN whose payload would vanish
 * becomes the quiet NaN, so a NaN never turns into infinity. Signalling NaNs
 * are not quieted here, which makes half -> float -> half the identity on
 * all 65536 bit patterns (and likewise for bfloat16).
 */
#ifndef CC_KERNELS_HALF_H
#define CC_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

/* Bit casts; memcpy is the defined way and compiles to nothing. */
static inline float cc__kf_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t cc__kf_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/*
 * Shifting the half's exponent and mantissa into place gives a float whose
 * value is the half's times 2^-112, for normals and subnormals alike, so one
 * exact multiply by 2^112 rebiases both. Only Inf/NaN (exponent 31) need the
 * float exponent forced to 255; the payload shifts along unchanged.
 */
static inline float cc__h2f(uint16_t h)
{
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t fin = cc__kf_bits(cc__kf_from_bits(em) * 0x1p112f);
    /* Signed compare: SSE2 has no unsigned one; em < 2^28 either way. */
    uint32_t r = (int32_t)em >= (int32_t)(0x7c00u << 13) ? (em | 0x7f800000u) : fin;
    return cc__kf_from_bits(r | ((uint32_t)(h & 0x8000u) << 16));
}

/*
 * The FPU does the rounding: |f| scaled to the half's range (overflowing to
 * Inf where the half would), plus a power of two chosen so that the float
 * sum's ulp is the half's ulp at that exponent; the float adder then rounds
 * to nearest even, including into the subnormal range, and the half's bits
 * are read out of the sum. (The method of Maratyszcza's FP16 library.)
 */
static inline uint16_t cc__f2h(float f)
{
    uint32_t w = cc__kf_bits(f);
    uint32_t aw = w & 0x7fffffffu;
    float base = (cc__kf_from_bits(aw) * 0x1p112f) * 0x1p-110f;
    uint32_t bias = (w + w) & 0xff000000u;
    /* Below the half's smallest normal exponent the ulp stays 2^-24. */
    bias = (int32_t)(bias >> 1) < (int32_t)(0x71000000u >> 1) ? 0x71000000u : bias;
    base = cc__kf_from_bits((bias >> 1) + 0x07800000u) + base;
    uint32_t bits = cc__kf_bits(base);
    uint32_t nonsign = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
    /* NaN: keep the top ten payload bits, or be the quiet NaN. */
    uint32_t pay = (aw >> 13) & 0x3ffu;
    uint32_t nan = 0x7c00u | pay | (pay == 0 ? 0x200u : 0u);
    uint32_t r = (int32_t)aw > (int32_t)0x7f800000u ? nan : nonsign;
    return (uint16_t)(((w >> 16) & 0x8000u) | r);
}

/* bfloat16 is the top half of a float32: widening is a shift. */
static inline float cc__bf2f(uint16_t b)
{
    return cc__kf_from_bits((uint32_t)b << 16);
}

/* Round to nearest even on the dropped 16 bits; a carry into the exponent
 * is the correct overflow to the next binade or to Inf. */
static inline uint16_t cc__f2bf(float f)
{
    uint32_t x = cc__kf_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t hi = x >> 16;
    uint32_t nan = hi | ((hi & 0x7fu) == 0 ? 0x40u : 0u);
    return (uint16_t)((int32_t)(x & 0x7fffffffu) > (int32_t)0x7f800000u ? nan : r);
}

/*
 * The kernels' roundings: the same but for NaN, which comes out quiet (top
 * payload bits kept). Every NaN a kernel rounds is the result of a float
 * operation or of the MIN/MAX quieting, so already quiet, and both versions
 * give the same bits for it; the float compare is cheaper than the integer
 * payload test (bfloat16 SUM runs 1.5x faster in cache with AVX-512).
 */
static inline uint16_t cc__f2h_q(float f)
{
    uint32_t w = cc__kf_bits(f);
    float base = (cc__kf_from_bits(w & 0x7fffffffu) * 0x1p112f) * 0x1p-110f;
    uint32_t bias = (w + w) & 0xff000000u;
    bias = (int32_t)(bias >> 1) < (int32_t)(0x71000000u >> 1) ? 0x71000000u : bias;
    base = cc__kf_from_bits((bias >> 1) + 0x07800000u) + base;
    uint32_t bits = cc__kf_bits(base);
    uint32_t r = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
    r = f != f ? 0x7e00u | ((w >> 13) & 0x3ffu) : r;
    return (uint16_t)(((w >> 16) & 0x8000u) | r);
}

static inline uint16_t cc__f2bf_q(float f)
{
    uint32_t x = cc__kf_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    return (uint16_t)(f != f ? (x >> 16) | 0x40u : r);
}

#endif /* CC_KERNELS_HALF_H */
