/*
 * kernels_avx2.c - the kernels compiled for AVX2 + F16C (x86-64-v3 without
 * FMA: contraction would change results). kernels.c uses it when the CPU
 * has both and lacks the AVX-512 set of kernels_avx512.c.
 */
/* System headers first, so that the pragma below does not apply to them. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels_table.h"

#if CC__KERNELS_X86
#pragma GCC target("avx2,f16c")

#include "kernels/kernels_gen.h"

#include "kernels/kernels_inst.h"
#include "kernels/kernels_f16c.h"

CC__KDEFINE_TABLE(cc__ktab_avx2);
#endif
