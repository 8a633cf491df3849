/*
 * kernels.c - picks the kernel variant for this CPU and looks kernels up in
 * its table (kernels_table.h); the entry points of kernels.h.
 *
 * The CPU is asked once which variants it runs (cached in a relaxed atomic;
 * the best one is the widest). Lookups validate the enums and log nothing:
 * the caller knows the communicator and the operation and logs with that
 * context.
 */
#include <stdatomic.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/kernels_table.h"
#include "base/log.h"

static const char *const isa_names[CC__KISA_COUNT] = {"generic", "avx2", "avx512"};

/* The variant's table, or NULL when it is not built for this target. */
static const cc__kernel_table_t *isa_table(cc__kernel_isa_t isa)
{
    switch (isa) {
    case CC__KISA_GENERIC:
        return &cc__ktab_generic;
#if CC__KERNELS_X86
    case CC__KISA_AVX2:
        return &cc__ktab_avx2;
    case CC__KISA_AVX512:
        return &cc__ktab_avx512;
#endif
    default:
        return NULL;
    }
}

/* Does this CPU (and OS: GCC checks XCR0) run the variant? */
static int isa_runs(cc__kernel_isa_t isa)
{
#if CC__KERNELS_X86
    __builtin_cpu_init(); /* idempotent; needed if we run before constructors */
    switch (isa) {
    case CC__KISA_GENERIC:
        return 1;
    case CC__KISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case CC__KISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("f16c");
    default:
        return 0;
    }
#else
    return isa == CC__KISA_GENERIC;
#endif
}

/* Bit i set: variant i is built and runs here. Computed once; racing
 * threads compute the same value, so relaxed order suffices. */
static unsigned isa_mask(void)
{
    static _Atomic int cached = -1;
    int mask = atomic_load_explicit(&cached, memory_order_relaxed);
    if (mask >= 0) return (unsigned)mask;
    mask = 0;
    for (int i = 0; i < CC__KISA_COUNT; i++)
        if (isa_table((cc__kernel_isa_t)i) != NULL && isa_runs((cc__kernel_isa_t)i)) mask |= 1 << i;
    atomic_store_explicit(&cached, mask, memory_order_relaxed);
    return (unsigned)mask;
}

int cc__kernel_isa_available(cc__kernel_isa_t isa)
{
    return (unsigned)isa < CC__KISA_COUNT && (isa_mask() >> isa & 1u);
}

const char *cc__kernel_isa_name(cc__kernel_isa_t isa)
{
    return (unsigned)isa < CC__KISA_COUNT ? isa_names[isa] : "?";
}

cc__kernel_isa_t cc__kernel_isa_best(void)
{
    unsigned mask = isa_mask();
    int isa = CC__KISA_COUNT - 1;
    while (isa > CC__KISA_GENERIC && !(mask >> isa & 1u))
        isa--;
    return (cc__kernel_isa_t)isa;
}

/* The best variant's table, found once (racing threads find the same one): the lookups of
 * every small op go through here, and the variant checks cost more than the kernel. */
static const cc__kernel_table_t *best_table(void)
{
    static const cc__kernel_table_t *_Atomic cached;
    const cc__kernel_table_t *t = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!t) {
        t = isa_table(cc__kernel_isa_best());
        atomic_store_explicit(&cached, t, memory_order_relaxed);
    }
    return t;
}

/* CC_OK, or the status for an unusable variant, out-of-range enums, a
 * bitwise op on floats or (when `out` is given as NULL) no output. */
static cc_status_t lookup_check(cc__kernel_isa_t isa, cc_dtype_t dtype, cc_redop_t op,
                                const void *out)
{
    if ((unsigned)dtype >= CC_DTYPE_COUNT || (unsigned)op >= CC_REDOP_COUNT)
        return CC_ERR_INVALID_ARG;
    if ((unsigned)isa >= CC__KISA_COUNT || out == NULL) return CC_ERR_INVALID_ARG;
    if (!cc__kernel_isa_available(isa)) return CC_ERR_NOT_SUPPORTED;
    /* Every variant lists the same pairs; NULL means a bitwise op on floats. */
    return isa_table(isa)->pair[dtype][op] ? CC_OK : CC_ERR_NOT_SUPPORTED;
}

cc_status_t cc__kernel_check(cc_dtype_t dtype, cc_redop_t op)
{
    return lookup_check(CC__KISA_GENERIC, dtype, op, "");
}

cc_status_t cc__kernel_reduce_get_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, cc_redop_t op,
                                      cc__reduce_fn *fn)
{
    cc_status_t st = lookup_check(isa, dtype, op, fn);
    if (st == CC_OK) *fn = isa_table(isa)->pair[dtype][op];
    return st;
}

cc_status_t cc__kernel_reduce_multi_get_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, cc_redop_t op,
                                            cc__reduce_multi_fn *fn)
{
    cc_status_t st = lookup_check(isa, dtype, op, fn);
    if (st == CC_OK) *fn = isa_table(isa)->multi[dtype][op];
    return st;
}

cc_status_t cc__kernel_reduce_get(cc_dtype_t dtype, cc_redop_t op, cc__reduce_fn *fn)
{
    return cc__kernel_reduce_get_isa(cc__kernel_isa_best(), dtype, op, fn);
}

cc_status_t cc__kernel_reduce_multi_get(cc_dtype_t dtype, cc_redop_t op, cc__reduce_multi_fn *fn)
{
    /* The statuses of lookup_check on the best variant (which always runs here). */
    if ((unsigned)dtype >= CC_DTYPE_COUNT || (unsigned)op >= CC_REDOP_COUNT || !fn)
        return CC_ERR_INVALID_ARG;
    const cc__kernel_table_t *t = best_table();
    if (!t->pair[dtype][op]) return CC_ERR_NOT_SUPPORTED;
    *fn = t->multi[dtype][op];
    return CC_OK;
}

/* Shared checks of scale and div; SUM is supported for every dtype. */
static cc_status_t unary_check(cc__kernel_isa_t isa, cc_dtype_t dtype, const char *what)
{
    cc_status_t st = lookup_check(isa, dtype, CC_SUM, "");
    if (st != CC_OK)
        cc_log_error(CC_SUBSYS_COLL, "kernels: %s of dtype %d with variant %d: %s", what,
                     (int)dtype, (int)isa, cc_status_str(st));
    return st;
}

cc_status_t cc__kernel_scale_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, void *dst, const void *src,
                                 size_t n, double factor)
{
    CC_CHECK(unary_check(isa, dtype, "scale"));
    if (n == 0) return CC_OK;
    /* Exact for every dtype (64-bit integers would go through double). */
    if (factor == 1.0) {
        if (dst != src) memmove(dst, src, n * cc_dtype_size(dtype));
        return CC_OK;
    }
    isa_table(isa)->scale[dtype](dst, src, n, factor);
    return CC_OK;
}

cc_status_t cc__kernel_div_isa(cc__kernel_isa_t isa, cc_dtype_t dtype, void *dst, const void *src,
                               size_t n, unsigned divisor)
{
    CC_CHECK(unary_check(isa, dtype, "divide"));
    if (divisor == 0) {
        cc_log_error(CC_SUBSYS_COLL, "kernels: divide %zu elements of %s by 0: invalid divisor", n,
                     cc_dtype_name(dtype));
        return CC_ERR_INVALID_ARG;
    }
    if (n == 0) return CC_OK;
    isa_table(isa)->div[dtype](dst, src, n, divisor);
    return CC_OK;
}

void cc__kernel_scale(cc_dtype_t dtype, void *dst, const void *src, size_t n, double factor)
{
    (void)cc__kernel_scale_isa(cc__kernel_isa_best(), dtype, dst, src, n, factor);
}

void cc__kernel_div(cc_dtype_t dtype, void *dst, const void *src, size_t n, unsigned divisor)
{
    (void)cc__kernel_div_isa(cc__kernel_isa_best(), dtype, dst, src, n, divisor);
}
