/*
 * kernels.h - host reduction and copy kernels for every dtype x op.
 *
 * Loops are written so that GCC vectorizes them (checked with
 * -fopt-info-vec in tests/unit/kernels), and compiled three times (generic,
 * AVX2, AVX-512; chosen at run time, see below). float16 and bfloat16 are
 * widened to float32, combined, and rounded back to nearest-even, one
 * element at a time: a result is bitwise the same whatever the vector width
 * or variant. docs/kernels.md states the rounding and NaN rules exactly.
 *
 * Which pairs exist: SUM, PROD, MIN, MAX, AVG, PREMUL_SUM on every dtype;
 * BAND, BOR, BXOR on integer dtypes only. AVG and PREMUL_SUM reduce as SUM;
 * the algorithm applies the division (cc__kernel_div by n after the sum,
 * integers truncate toward zero) or the premultiplication (cc__kernel_scale
 * on each input before it is combined).
 *
 * Pointers: aligned to the element size; any other alignment is fine. dst
 * may equal a source exactly; partial overlap is not supported.
 *
 * Thread safety: all functions are pure; any thread.
 */
#ifndef CC_KERNELS_KERNELS_H
#define CC_KERNELS_KERNELS_H

#include <stddef.h>

#include "ccomm/types.h"

/* dst[i] = a[i] op b[i] for i < n. dst may alias a or b (exactly, not partially). */
typedef void (*cc__reduce_fn)(void *dst, const void *a, const void *b, size_t n);

/*
 * The kernel for (dtype, op). CC_OK and *fn set, or CC_ERR_NOT_SUPPORTED for
 * a pair that makes no sense (bitwise op on floats) and CC_ERR_INVALID_ARG
 * for values out of range; *fn is untouched on error.
 */
cc_status_t cc__kernel_reduce_get(cc_dtype_t dtype, cc_redop_t op, cc__reduce_fn *fn);

/* Is (dtype, op) supported? Same statuses as above, no output. */
cc_status_t cc__kernel_check(cc_dtype_t dtype, cc_redop_t op);

/*
 * dst[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i], combined left to
 * right in exactly that order whatever the vector width, so every rank that
 * runs it on the same inputs gets the same bits. float16 and bfloat16 are
 * accumulated in float32 across all inputs and rounded once at the end.
 * dst may equal any src[k] exactly (no partial overlap); sources may overlap
 * one another. nsrc == 1 copies src[0]; nsrc < 1 writes nothing. Two to
 * eight inputs run as one fused pass over memory; more run in L1-sized
 * blocks with the same result.
 */
typedef void (*cc__reduce_multi_fn)(void *dst, const void *const *src, int nsrc, size_t n);

/* The multi-input kernel for (dtype, op); statuses as cc__kernel_reduce_get. */
cc_status_t cc__kernel_reduce_multi_get(cc_dtype_t dtype, cc_redop_t op, cc__reduce_multi_fn *fn);

/*
 * dst[i] = src[i] * factor (PREMUL_SUM). Floats: one product in float32
 * (float64 for FLOAT64) with the factor rounded to that type, then rounded
 * to the dtype. Integers: the product rounded to double, NaN taken as 0,
 * saturated to the dtype's range, truncated toward zero. factor == 1.0
 * copies exactly. dst may equal src. Bad dtype: logs an error, writes nothing.
 */
void cc__kernel_scale(cc_dtype_t dtype, void *dst, const void *src, size_t n, double factor);

/*
 * dst[i] = src[i] / divisor (AVG's final step). Integers divide exactly,
 * truncating toward zero (C's /); floats divide (no reciprocal) in float32
 * (float64 for FLOAT64), then round to the dtype: correctly rounded for
 * float32 (divisor <= 2^24), float16 (divisor <= 2048) and bfloat16
 * (divisor <= 256). divisor 0 or a bad dtype logs an error and writes
 * nothing. dst may equal src.
 */
void cc__kernel_div(cc_dtype_t dtype, void *dst, const void *src, size_t n, unsigned divisor);

/*
 * Instruction-set variants. Every kernel exists once per variant; the
 * functions above use the best one this CPU runs. All variants give the same
 * bits (tests compare them); the _isa functions let tests and the benchmark
 * pick one. Unavailable variants return CC_ERR_NOT_SUPPORTED.
 */
typedef enum cc__kernel_isa {
    CC__KISA_GENERIC, /* portable C, the compiler's baseline (SSE2 on x86-64) */
    CC__KISA_AVX2,    /* AVX2 + F16C */
    CC__KISA_AVX512,  /* AVX-512 F/BW/VL/DQ + F16C */
    CC__KISA_COUNT
} cc__kernel_isa_t;

cc__kernel_isa_t cc__kernel_isa_best(void);
int cc__kernel_isa_available(cc__kernel_isa_t isa);    /* built in and run by this CPU */
const char *cc__kernel_isa_name(cc__kernel_isa_t isa); /* "generic", "avx2", "avx512" */
cc_status_t cc__kernel_reduce_get_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, cc_redop_t op,
                                      cc__reduce_fn *fn);
cc_status_t cc__kernel_reduce_multi_get_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, cc_redop_t op,
                                            cc__reduce_multi_fn *fn);
/* As above on one variant; CC_ERR_INVALID_ARG (logged) for a bad dtype or
 * divisor 0, CC_ERR_NOT_SUPPORTED (logged) for a variant that cannot run. */
cc_status_t cc__kernel_scale_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, void *dst, const void *src,
                                 size_t n, double factor);
cc_status_t cc__kernel_div_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, void *dst, const void *src,
                               size_t n, unsigned divisor);

/* Conversions used by the kernels, exported for tests and tools. */
float cc__half_to_float(uint16_t h);
uint16_t cc__float_to_half(float f); /* round to nearest even; NaN stays NaN */
float cc__bfloat16_to_float(uint16_t b);
uint16_t cc__float_to_bfloat16(float f); /* round to nearest even; NaN stays NaN */

#endif /* CC_KERNELS_KERNELS_H */
