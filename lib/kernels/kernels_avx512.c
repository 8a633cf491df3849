/*
 * kernels_avx512.c - the kernels compiled for AVX-512 F/BW/VL/DQ + F16C:
 * 64-byte vectors, byte and word lanes (BW), 64-bit multiply and
 * double <-> int64 conversion (DQ). kernels.c uses it when the CPU has all.
 */
/* System headers first, so that the pragma below does not apply to them. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels_table.h"

#if CC__KERNELS_X86
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,f16c")

#include "kernels/kernels_gen.h"

#include "kernels/kernels_inst.h"
#include "kernels/kernels_f16c.h"

CC__KDEFINE_TABLE(cc__ktab_avx512);
#endif
