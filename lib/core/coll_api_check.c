/*
 * coll_api_check.c - argument checks of the collectives with per-rank
 * counts and in-place rules (see coll_api.h). Like validate.c, each check
 * logs the function, the argument and the value, and nothing is enqueued
 * when one fails.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/coll_api.h"
#include "base/log.h"
#include "core/validate.h"

/* Largest element count whose byte size a transfer can hold. */
static size_t max_elems(cc_dtype_t dt)
{
    return (size_t)INT64_MAX / cc_dtype_size(dt);
}

cc_status_t cc__v_counts(int n, const size_t *counts, const size_t *displs, cc_dtype_t dt,
                         const char *what, const char *fn, size_t *total, size_t *extent)
{
    CC_CHECK(cc__v_dtype(dt, fn));
    if (!counts) {
        cc_log_error(CC_SUBSYS_CORE, "%s: %s is NULL (%d ranks need a count each)", fn, what, n);
        return CC_ERR_INVALID_ARG;
    }
    size_t lim = max_elems(dt), sum = 0, end = 0;
    for (int r = 0; r < n; r++) {
        size_t c = counts[r], e;
        if (c > lim || __builtin_add_overflow(sum, c, &sum) || sum > lim) {
            cc_log_error(CC_SUBSYS_CORE,
                         "%s: %s[%d] = %zu (a negative value?) makes the total "
                         "overflow %zu-byte %s elements",
                         fn, what, r, c, cc_dtype_size(dt), cc_dtype_name(dt));
            return CC_ERR_INVALID_ARG;
        }
        if (!displs || !c) continue;
        if (__builtin_add_overflow(displs[r], c, &e) || e > lim) {
            cc_log_error(CC_SUBSYS_CORE,
                         "%s: the block of rank %d (displacement %zu, %s %zu) ends "
                         "beyond addressable memory",
                         fn, r, displs[r], what, c);
            return CC_ERR_INVALID_ARG;
        }
        if (e > end) end = e;
    }
    *total = sum;
    *extent = displs ? end : sum;
    return CC_OK;
}

struct span {
    size_t lo, hi;
    int rank;
};

static int by_lo(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

cc_status_t cc__v_disjoint(int n, const size_t *counts, const size_t *displs, const char *what,
                           const char *fn)
{
    if (!displs) return CC_OK; /* packed: disjoint by construction */
    struct span *s = malloc((size_t)n * sizeof(*s));
    if (!s) return CC_ERR_NO_MEMORY;
    int k = 0;
    for (int r = 0; r < n; r++)
        if (counts[r]) s[k++] = (struct span){displs[r], displs[r] + counts[r], r};
    qsort(s, (size_t)k, sizeof(*s), by_lo);
    cc_status_t st = CC_OK;
    for (int i = 1; i < k && st == CC_OK; i++) {
        if (s[i].lo >= s[i - 1].hi) continue;
        cc_log_error(CC_SUBSYS_CORE,
                     "%s: the %s blocks of ranks %d [%zu, %zu) and %d [%zu, %zu) "
                     "overlap",
                     fn, what, s[i - 1].rank, s[i - 1].lo, s[i - 1].hi, s[i].rank, s[i].lo,
                     s[i].hi);
        st = CC_ERR_INVALID_ARG;
    }
    free(s);
    return st;
}

cc_status_t cc__v_inplace(const void *send, size_t sbytes, const void *recv, size_t rbytes,
                          const void *inplace, const char *fn)
{
    if (send && send == inplace) return CC_OK;
    uintptr_t a = (uintptr_t)send, b = (uintptr_t)recv;
    if (!send || !recv || !sbytes || !rbytes || a >= b + rbytes || b >= a + sbytes) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE,
                 "%s: buffers [%p, +%zu) and [%p, +%zu) overlap "
                 "(in place means sendbuf == %p exactly)",
                 fn, send, sbytes, recv, rbytes, inplace);
    return CC_ERR_INVALID_ARG;
}
