/*
 * kernels_f16_soft.h - float16 kernels that widen and round in software
 * (half.h), for the generic variant. Same generators, same line rules as
 * kernels_inst.h.
 */

/* clang-format off */
CC__KV_PAIR(f16, SUM)
CC__KV_PAIR(f16, PROD)
CC__KV_PAIR(f16, MIN)
CC__KV_PAIR(f16, MAX)
CC__KV_LOAD(f16)
CC__KV_STORE(f16)
CC__KV_ACC(f16, SUM)
CC__KV_ACC(f16, PROD)
CC__KV_ACC(f16, MIN)
CC__KV_ACC(f16, MAX)
CC__KV_MSUM(f16, 2)
CC__KV_MSUM(f16, 3)
CC__KV_MSUM(f16, 4)
CC__KV_MSUM(f16, 5)
CC__KV_MSUM(f16, 6)
CC__KV_MSUM(f16, 7)
CC__KV_MSUM(f16, 8)
CC__KV_SCALE_F(f16)
CC__KV_DIV_F(f16)
CC__KD_BLOCKED(f16, SUM)
CC__KD_BLOCKED(f16, PROD)
CC__KD_BLOCKED(f16, MIN)
CC__KD_BLOCKED(f16, MAX)
CC__KD_MULTI_SUM(f16)
/* clang-format on */
