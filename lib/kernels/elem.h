/*
 * elem.h - one element of any dtype read or written as a double, for the
 * code that makes and checks data (ccperf, the collective tests), so that
 * each need not switch over the dtypes again. Not for kernels: a switch per
 * element is slow. The buffer may be unaligned (the tests shift buffers on
 * purpose): elements are copied with memcpy. An unknown dtype writes
 * nothing and reads NaN.
 */
#ifndef CC_KERNELS_ELEM_H
#define CC_KERNELS_ELEM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ccomm/types.h"
#include "kernels/kernels.h" /* cc__half_to_float and the other conversions */

typedef union cc__elem {
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    uint16_t h; /* float16 or bfloat16 bits */
    float f;
    double d;
} cc__elem_t;

/* Element i of buf (of dtype dt) := v, converted as C converts (integers truncate). */
static inline void cc__elem_put(void *buf, cc_dtype_t dt, size_t i, double v)
{
    cc__elem_t u;
    switch (dt) {
    case CC_INT8: u.i8 = (int8_t)v; break;
    case CC_UINT8: u.u8 = (uint8_t)v; break;
    case CC_INT16: u.i16 = (int16_t)v; break;
    case CC_UINT16: u.u16 = (uint16_t)v; break;
    case CC_INT32: u.i32 = (int32_t)v; break;
    case CC_UINT32: u.u32 = (uint32_t)v; break;
    case CC_INT64: u.i64 = (int64_t)v; break;
    case CC_UINT64: u.u64 = (uint64_t)v; break;
    case CC_FLOAT16: u.h = cc__float_to_half((float)v); break;
    case CC_BFLOAT16: u.h = cc__float_to_bfloat16((float)v); break;
    case CC_FLOAT32: u.f = (float)v; break;
    case CC_FLOAT64: u.d = v; break;
    default: return;
    }
    size_t es = cc_dtype_size(dt);
    memcpy((char *)buf + i * es, &u, es);
}

/* Element i of buf (of dtype dt) as a double. */
static inline double cc__elem_get(const void *buf, cc_dtype_t dt, size_t i)
{
    cc__elem_t u;
    size_t es = cc_dtype_size(dt);
    if (dt < 0 || dt >= CC_DTYPE_COUNT) return NAN;
    memcpy(&u, (const char *)buf + i * es, es);
    switch (dt) {
    case CC_INT8: return u.i8;
    case CC_UINT8: return u.u8;
    case CC_INT16: return u.i16;
    case CC_UINT16: return u.u16;
    case CC_INT32: return u.i32;
    case CC_UINT32: return u.u32;
    case CC_INT64: return (double)u.i64;
    case CC_UINT64: return (double)u.u64;
    case CC_FLOAT16: return cc__half_to_float(u.h);
    case CC_BFLOAT16: return cc__bfloat16_to_float(u.h);
    case CC_FLOAT32: return u.f;
    case CC_FLOAT64: return u.d;
    default: return NAN;
    }
}

#endif /* CC_KERNELS_ELEM_H */
