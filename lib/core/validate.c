/*
 * validate.c - the checks the door's validation step (door_validate.c) is
 * made of, shared by every public operation (see validate.h): each logs the
 * function, the argument and the value.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/comm.h"
#include "kernels/kernels.h"
#include "base/log.h"
#include "core/validate.h"

cc_status_t cc__v_comm(const cc_comm_t *comm, const char *fn)
{
    if (cc__comm_valid(comm)) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: comm %p is not a valid communicator (%s)", fn,
                 (const void *)comm,
                 !comm ? "NULL" : comm->magic == CC__COMM_DEAD ? "destroyed" : "bad magic");
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc__v_dtype(cc_dtype_t dtype, const char *fn)
{
    if ((unsigned)dtype < CC_DTYPE_COUNT) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: dtype %d is not a cc_dtype_t (0..%d)", fn, (int)dtype,
                 CC_DTYPE_COUNT - 1);
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc__v_redop(cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts, const char *fn)
{
    CC_CHECK(cc__v_dtype(dtype, fn));
    if ((unsigned)op >= CC_REDOP_COUNT) {
        cc_log_error(CC_SUBSYS_CORE, "%s: op %d is not a cc_redop_t (0..%d)", fn, (int)op,
                     CC_REDOP_COUNT - 1);
        return CC_ERR_INVALID_ARG;
    }
    cc_status_t st = cc__kernel_check(dtype, op);
    if (st != CC_OK) {
        cc_log_error(CC_SUBSYS_CORE, "%s: reduction %s on %s is not supported (bitwise ops take "
                     "integer types only)", fn, cc_redop_name(op), cc_dtype_name(dtype));
        return st;
    }
    if (op == CC_PREMUL_SUM && opts && !isfinite(opts->premul_scalar)) {
        cc_log_error(CC_SUBSYS_CORE, "%s: opts->premul_scalar is %g, must be finite", fn,
                     opts->premul_scalar);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc__v_count(size_t count, cc_dtype_t dtype, size_t mult, size_t *bytes, const char *fn)
{
    CC_CHECK(cc__v_dtype(dtype, fn));
    size_t es = cc_dtype_size(dtype), b;
    /* The largest buffer holds `mult` blocks (one per rank): all of it must be addressable. */
    if (!mult) mult = 1;
    if (__builtin_mul_overflow(count, es, &b) || b > (size_t)INT64_MAX / mult) {
        cc_log_error(CC_SUBSYS_CORE,
                     "%s: count %zu x %zu-byte %s x %zu block%s is more than "
                     "INT64_MAX bytes",
                     fn, count, es, cc_dtype_name(dtype), mult, mult == 1 ? "" : "s");
        return CC_ERR_INVALID_ARG;
    }
    if (bytes) *bytes = b;
    return CC_OK;
}

cc_status_t cc__v_buf(const void *buf, size_t count, const char *what, const char *fn)
{
    if (buf || count == 0) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: %s is NULL with count %zu", fn, what, count);
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc__v_rank(const cc_comm_t *comm, int r, const char *what, const char *fn)
{
    if (r >= 0 && r < comm->size) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: %s %d is out of range for communicator %s of %d ranks", fn,
                 what, r, comm->name, comm->size);
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc__v_opts(const cc_op_opts_t *opts, const char *fn)
{
    if (!opts) return CC_OK;
    if (opts->struct_size < sizeof(cc_op_opts_t) || opts->struct_size > 4096) {
        cc_log_error(CC_SUBSYS_CORE, "%s: opts->struct_size is %zu, expected %zu (start from "
                     "CC_OP_OPTS_INIT)", fn, opts->struct_size, sizeof(cc_op_opts_t));
        return CC_ERR_INVALID_ARG;
    }
    if (opts->tag < 0) {
        cc_log_error(CC_SUBSYS_CORE, "%s: opts->tag is %d, must be 0..%d", fn, opts->tag, CC_TAG_MAX);
        return CC_ERR_INVALID_ARG;
    }
    if (opts->timeout_ms < 0) {
        cc_log_error(CC_SUBSYS_CORE, "%s: opts->timeout_ms is %lld, must be >= 0 (0 = the "
                     "communicator's timeout)", fn, (long long)opts->timeout_ms);
        return CC_ERR_INVALID_ARG;
    }
    if (opts->flags) {
        cc_log_error(CC_SUBSYS_CORE, "%s: opts->flags is 0x%x, must be 0", fn, opts->flags);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc__v_overlap(const void *a, size_t alen, const void *b, size_t blen, int allow_same,
                          const char *fn)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    if (!a || !b || !alen || !blen) return CC_OK;
    if (pa == pb && allow_same) return CC_OK;
    if (pa < pb + blen && pb < pa + alen) {
        cc_log_error(CC_SUBSYS_CORE, "%s: send buffer [%p, +%zu) and receive buffer [%p, +%zu) "
                     "overlap%s", fn, a, alen, b, blen,
                     allow_same ? " (only exactly the same buffer is allowed: in place)" : "");
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

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

cc_status_t cc__v_own(size_t a, const char *an, size_t b, const char *bn, int r, const char *fn)
{
    if (a == b) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: %s is %zu but %s[%d] is %zu (this rank's own block)", fn, an,
                 a, bn, r, b);
    return CC_ERR_INVALID_ARG;
}
