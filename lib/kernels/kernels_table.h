/*
 * kernels_table.h - the table of kernels that each instruction-set variant
 * (kernels_generic.c, kernels_avx2.c, kernels_avx512.c) defines and
 * kernels.c dispatches through. Internal to lib/kernels.
 */
#ifndef CC_KERNELS_TABLE_H
#define CC_KERNELS_TABLE_H

#include <stddef.h>

#include "kernels/kernels.h"

typedef void (*cc__scale_fn)(void *dst, const void *src, size_t n, double factor);
typedef void (*cc__div_fn)(void *dst, const void *src, size_t n, unsigned divisor);

/* Invariant: an entry is NULL exactly for the unsupported pairs (bitwise op
 * on a float dtype); AVG and PREMUL_SUM hold the SUM kernels. */
typedef struct cc__kernel_table {
    cc__reduce_fn pair[CC_DTYPE_COUNT][CC_REDOP_COUNT];
    cc__reduce_multi_fn multi[CC_DTYPE_COUNT][CC_REDOP_COUNT];
    cc__scale_fn scale[CC_DTYPE_COUNT];
    cc__div_fn div[CC_DTYPE_COUNT];
} cc__kernel_table_t;

/* The x86 variants need GCC's #pragma GCC target; other compilers and
 * architectures build the generic variant only. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CC__KERNELS_X86 1
#else
#define CC__KERNELS_X86 0
#endif

extern const cc__kernel_table_t cc__ktab_generic;
#if CC__KERNELS_X86
extern const cc__kernel_table_t cc__ktab_avx2;
extern const cc__kernel_table_t cc__ktab_avx512;
#endif

#endif /* CC_KERNELS_TABLE_H */
