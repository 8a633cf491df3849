/*
 * kernels.h - host reduction and copy kernels for every dtype x op.
 *
 * Loops are written so that GCC vectorizes them at -O2/-O3 (checked with
 * -fopt-info-vec in tests/unit/kernels). float16 and bfloat16 are widened to
 * float32, combined, and rounded back to nearest-even, one element at a time:
 * a result is bitwise the same whatever the vector width.
 *
 * Which pairs exist: SUM, PROD, MIN, MAX, AVG, PREMUL_SUM on every dtype;
 * BAND, BOR, BXOR on integer dtypes only. AVG and PREMUL_SUM reduce as SUM;
 * the algorithm applies the division (cc__kernel_scale with 1/n after the
 * sum, integers truncate toward zero) or the premultiplication
 * (cc__kernel_scale on each input before it is combined).
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
 * dst[i] = src[i] * factor, computed in double for 64-bit types and float
 * for the others, rounded to the dtype (integers: truncation toward zero of
 * the exact quotient when used for AVG, see cc__kernel_div). dst may equal src.
 */
void cc__kernel_scale(cc_dtype_t dtype, void *dst, const void *src, size_t n, double factor);

/* dst[i] = src[i] / divisor: AVG's final step. Integers divide exactly
 * (truncating toward zero); floats multiply by nothing, they divide. */
void cc__kernel_div(cc_dtype_t dtype, void *dst, const void *src, size_t n, unsigned divisor);

/* Conversions used by the kernels, exported for tests and tools. */
float cc__half_to_float(uint16_t h);
uint16_t cc__float_to_half(float f);     /* round to nearest even; NaN stays NaN */
float cc__bfloat16_to_float(uint16_t b);
uint16_t cc__float_to_bfloat16(float f); /* round to nearest even; NaN stays NaN */

#endif /* CC_KERNELS_KERNELS_H */
