/*
 * kernels_ops.h - the element operations and the element kinds the kernel
 * generators of kernels_gen.h combine.
 *
 * A kind K names how elements are stored and computed:
 *   CC__K_<K>_S   storage type
 *   CC__K_<K>_CK  compute class: whose cc__k_<OP>_<CK>() functions apply
 *   CC__K_<K>_C   compute type
 *   CC__K_<K>_LD  storage -> compute (widening for the 16-bit floats)
 *   CC__K_<K>_ST  compute -> storage (rounding to nearest even; NaN quiet)
 * Signed and unsigned integers share the unsigned kinds for SUM, PROD and
 * the bitwise ops (two's complement wraps the same way, and unsigned
 * arithmetic wraps without undefined behaviour); only MIN and MAX need the
 * signed kinds i8, i16, i32, i64.
 *
 * Included only by kernels_gen.h, once per instruction-set variant.
 */
#ifndef CC_KERNELS_OPS_H
#define CC_KERNELS_OPS_H

#include <stdint.h>

#include "kernels/half.h"

/* ---- integer operations: wrap on overflow ---------------------------------- */

/* uint8_t and uint16_t operands promote to int, where 65535 * 65535 would
 * overflow (undefined): PROD multiplies in unsigned (1u * x) instead. */
#define CC__KUNSIGNED_OPS(T, CK)                                                                   \
    static inline T cc__k_SUM_##CK(T x, T y)                                                       \
    {                                                                                              \
        return (T)(x + y);                                                                         \
    }                                                                                              \
    static inline T cc__k_PROD_##CK(T x, T y)                                                      \
    {                                                                                              \
        return (T)(1u * x * y);                                                                    \
    }                                                                                              \
    static inline T cc__k_BAND_##CK(T x, T y)                                                      \
    {                                                                                              \
        return (T)(x & y);                                                                         \
    }                                                                                              \
    static inline T cc__k_BOR_##CK(T x, T y)                                                       \
    {                                                                                              \
        return (T)(x | y);                                                                         \
    }                                                                                              \
    static inline T cc__k_BXOR_##CK(T x, T y)                                                      \
    {                                                                                              \
        return (T)(x ^ y);                                                                         \
    }

/* Equal integers are the same bits, so ties need no rule. */
#define CC__KORDER_OPS(T, CK)                                                                      \
    static inline T cc__k_MIN_##CK(T x, T y)                                                       \
    {                                                                                              \
        return y < x ? y : x;                                                                      \
    }                                                                                              \
    static inline T cc__k_MAX_##CK(T x, T y)                                                       \
    {                                                                                              \
        return y > x ? y : x;                                                                      \
    }

CC__KUNSIGNED_OPS(uint8_t, u8)
CC__KUNSIGNED_OPS(uint16_t, u16)
CC__KUNSIGNED_OPS(uint32_t, u32)
CC__KUNSIGNED_OPS(uint64_t, u64)
CC__KORDER_OPS(uint8_t, u8)
CC__KORDER_OPS(uint16_t, u16)
CC__KORDER_OPS(uint32_t, u32)
CC__KORDER_OPS(uint64_t, u64)
CC__KORDER_OPS(int8_t, i8)
CC__KORDER_OPS(int16_t, i16)
CC__KORDER_OPS(int32_t, i32)
CC__KORDER_OPS(int64_t, i64)

/* ---- floating-point operations ------------------------------------------- */

/*
 * Quiet a NaN, leave any other value alone (bit-exact): an IEEE operation
 * on a single NaN operand returns it with the quiet bit set and the payload
 * kept. Cheaper to vectorize than setting the bit through an integer view
 * (which GCC 12 does not vectorize for double on SSE2).
 */
static inline float cc__kquiet_f32(float r)
{
    return r != r ? r + r : r;
}

static inline double cc__kquiet_f64(double r)
{
    return r != r ? r + r : r;
}

/*
 * SUM and PROD are IEEE operations of the type. MIN and MAX propagate NaN
 * (like torch.minimum and NCCL): if either operand is NaN the result is the
 * first NaN operand, quieted; otherwise the smaller (larger) one, and the
 * first one when they compare equal (so min(-0, +0) = -0 but min(+0, -0) = +0).
 * Quieting makes the result independent of whether a variant widened float16
 * in software (keeps a signalling NaN) or with F16C (quiets it). Two plain
 * selects, not `x <= y || x != x`: GCC vectorizes the former only.
 */
#define CC__KFLOAT_OPS(T, CK)                                                                      \
    static inline T cc__k_SUM_##CK(T x, T y)                                                       \
    {                                                                                              \
        return x + y;                                                                              \
    }                                                                                              \
    static inline T cc__k_PROD_##CK(T x, T y)                                                      \
    {                                                                                              \
        return x * y;                                                                              \
    }                                                                                              \
    static inline T cc__k_MIN_##CK(T x, T y)                                                       \
    {                                                                                              \
        T r = x <= y ? x : y;                                                                      \
        return cc__kquiet_##CK(x != x ? x : r);                                                    \
    }                                                                                              \
    static inline T cc__k_MAX_##CK(T x, T y)                                                       \
    {                                                                                              \
        T r = x >= y ? x : y;                                                                      \
        return cc__kquiet_##CK(x != x ? x : r);                                                    \
    }

CC__KFLOAT_OPS(float, f32)
CC__KFLOAT_OPS(double, f64)

/* ---- element kinds --------------------------------------------------------- */

#define CC__KPLAIN(x) (x)

#define CC__K_u8_S    uint8_t
#define CC__K_u8_C    uint8_t
#define CC__K_u8_CK   u8
#define CC__K_u8_LD   CC__KPLAIN
#define CC__K_u8_ST   CC__KPLAIN
#define CC__K_i8_S    int8_t
#define CC__K_i8_C    int8_t
#define CC__K_i8_CK   i8
#define CC__K_i8_LD   CC__KPLAIN
#define CC__K_i8_ST   CC__KPLAIN
#define CC__K_u16_S   uint16_t
#define CC__K_u16_C   uint16_t
#define CC__K_u16_CK  u16
#define CC__K_u16_LD  CC__KPLAIN
#define CC__K_u16_ST  CC__KPLAIN
#define CC__K_i16_S   int16_t
#define CC__K_i16_C   int16_t
#define CC__K_i16_CK  i16
#define CC__K_i16_LD  CC__KPLAIN
#define CC__K_i16_ST  CC__KPLAIN
#define CC__K_u32_S   uint32_t
#define CC__K_u32_C   uint32_t
#define CC__K_u32_CK  u32
#define CC__K_u32_LD  CC__KPLAIN
#define CC__K_u32_ST  CC__KPLAIN
#define CC__K_i32_S   int32_t
#define CC__K_i32_C   int32_t
#define CC__K_i32_CK  i32
#define CC__K_i32_LD  CC__KPLAIN
#define CC__K_i32_ST  CC__KPLAIN
#define CC__K_u64_S   uint64_t
#define CC__K_u64_C   uint64_t
#define CC__K_u64_CK  u64
#define CC__K_u64_LD  CC__KPLAIN
#define CC__K_u64_ST  CC__KPLAIN
#define CC__K_i64_S   int64_t
#define CC__K_i64_C   int64_t
#define CC__K_i64_CK  i64
#define CC__K_i64_LD  CC__KPLAIN
#define CC__K_i64_ST  CC__KPLAIN
#define CC__K_f32_S   float
#define CC__K_f32_C   float
#define CC__K_f32_CK  f32
#define CC__K_f32_LD  CC__KPLAIN
#define CC__K_f32_ST  CC__KPLAIN
#define CC__K_f64_S   double
#define CC__K_f64_C   double
#define CC__K_f64_CK  f64
#define CC__K_f64_LD  CC__KPLAIN
#define CC__K_f64_ST  CC__KPLAIN
#define CC__K_f16_S   uint16_t
#define CC__K_f16_C   float
#define CC__K_f16_CK  f32
#define CC__K_f16_LD  cc__h2f
#define CC__K_f16_ST  cc__f2h_q
#define CC__K_bf16_S  uint16_t
#define CC__K_bf16_C  float
#define CC__K_bf16_CK f32
#define CC__K_bf16_LD cc__bf2f
#define CC__K_bf16_ST cc__f2bf_q

/* cc__k_<OP>_<compute class of K>: the indirection expands CC__K_<K>_CK first. */
#define CC__KOPX(OP, CK) cc__k_##OP##_##CK
#define CC__KOPY(OP, CK) CC__KOPX(OP, CK)
#define CC__KOP(K, OP)   CC__KOPY(OP, CC__K_##K##_CK)

#endif /* CC_KERNELS_OPS_H */
