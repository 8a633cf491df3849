/* validate.c - argument checks shared by every public operation (see validate.h). */
#include <math.h>
#include <stdint.h>

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
