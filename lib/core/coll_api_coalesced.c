/*
 * coll_api_coalesced.c - coalesced collectives: one op (type "coalesced")
 * over several buffers. Each buffer is checked by the rules of the plain
 * collective; the lists of pointers and counts are copied into one block
 * the op owns (cc__coalesced_args_t), so the caller may reuse its arrays
 * at once.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/validate.h"

struct co_call {
    cc_comm_t *comm;
    cc_op_type_t kind;
    const void *const *sendbufs;
    void *const *recvbufs;
    const size_t *counts;
    int nbufs;
    cc_dtype_t dtype;
    cc_redop_t redop;
    int root;
    const char *fn;
};

/* Buffer i by the plain collective's rules; adds its elements to *in and *out. */
static cc_status_t check_buffer(const struct co_call *c, int i, size_t *in, size_t *out)
{
    size_t n = (size_t)c->comm->size, cnt = c->counts[i], b, es = cc_dtype_size(c->dtype);
    int wide = c->kind == CC_OP_ALLGATHER || c->kind == CC_OP_REDUCE_SCATTER;
    int sender = c->kind != CC_OP_BROADCAST || c->comm->rank == c->root;
    char what[64];
    CC_CHECK(cc__v_count(cnt, c->dtype, wide ? n : 1, &b, c->fn));
    const void *s = c->sendbufs[i];
    void *r = c->recvbufs[i];
    snprintf(what, sizeof(what), "sendbufs[%d]", i);
    if (sender) CC_CHECK(cc__v_buf(s, cnt, what, c->fn));
    snprintf(what, sizeof(what), "recvbufs[%d]", i);
    CC_CHECK(cc__v_buf(r, cnt, what, c->fn));
    size_t win = wide && c->kind == CC_OP_REDUCE_SCATTER ? n * cnt : cnt;
    size_t wout = c->kind == CC_OP_ALLGATHER ? n * cnt : cnt;
    if (__builtin_add_overflow(*in, win, in) || __builtin_add_overflow(*out, wout, out) ||
        *in > (size_t)INT64_MAX / es || *out > (size_t)INT64_MAX / es) {
        cc_log_error(CC_SUBSYS_CORE, "%s: the total count overflows at counts[%d] = %zu", c->fn, i,
                     cnt);
        return CC_ERR_INVALID_ARG;
    }
    size_t me = (size_t)c->comm->rank * b;
    switch (c->kind) {
    case CC_OP_ALLGATHER:
        return cc__v_inplace(s, b, r, n * b, r ? (char *)r + me : NULL, c->fn);
    case CC_OP_REDUCE_SCATTER:
        return cc__v_inplace(r, b, s, n * b, s ? (const char *)s + me : NULL, c->fn);
    default:
        return sender ? cc__v_overlap(s, b, r, b, 1, c->fn) : CC_OK;
    }
}

/* The op's own copy of the lists, one block. */
static cc__coalesced_args_t *copy_args(const struct co_call *c)
{
    size_t n = (size_t)c->nbufs;
    cc__coalesced_args_t *a = malloc(sizeof(*a) + n * (2 * sizeof(void *) + sizeof(size_t)));
    if (!a) return NULL;
    const void **s = (const void **)(a + 1);
    void **r = (void **)(s + n);
    size_t *k = (size_t *)(r + n);
    for (size_t i = 0; i < n; i++) {
        s[i] = c->kind == CC_OP_BROADCAST && c->comm->rank != c->root ? NULL : c->sendbufs[i];
        r[i] = c->recvbufs[i];
        k[i] = c->counts[i];
    }
    *a = (cc__coalesced_args_t){c->kind, c->nbufs, s, r, k};
    return a;
}

static cc_status_t coalesced(const struct co_call *c, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__v_comm(c->comm, c->fn));
    CC_CHECK(cc__v_opts(opts, c->fn));
    CC_CHECK(cc__v_dtype(c->dtype, c->fn));
    if (c->redop != CC_REDOP_COUNT) CC_CHECK(cc__v_redop(c->dtype, c->redop, opts, c->fn));
    if (c->kind == CC_OP_BROADCAST) CC_CHECK(cc__v_rank(c->comm, c->root, "root", c->fn));
    int sender = c->kind != CC_OP_BROADCAST || c->comm->rank == c->root;
    if (c->nbufs < 0 ||
        (c->nbufs > 0 && (!c->counts || !c->recvbufs || (sender && !c->sendbufs)))) {
        cc_log_error(CC_SUBSYS_CORE, "%s: nbufs %d needs sendbufs %p, recvbufs %p and counts %p",
                     c->fn, c->nbufs, (const void *)c->sendbufs, (const void *)c->recvbufs,
                     (const void *)c->counts);
        return CC_ERR_INVALID_ARG;
    }
    size_t in = 0, out = 0;
    for (int i = 0; i < c->nbufs; i++)
        CC_CHECK(check_buffer(c, i, &in, &out));
    cc__coalesced_args_t *a = copy_args(c);
    if (!a) return CC_ERR_NO_MEMORY;
    cc__op_t op;
    cc__op_prepare(&op, c->comm, CC_OP_COALESCED);
    op.info.dtype = c->dtype;
    op.info.redop = c->redop;
    op.info.root = c->kind == CC_OP_BROADCAST ? c->root : -1;
    op.info.in_count = in;
    op.info.out_count = out;
    op.info.bytes = (in > out ? in : out) * cc_dtype_size(c->dtype);
    op.premul_scalar = opts ? opts->premul_scalar : 1.0;
    op.extra = op.owned = a;
    op.release = cc__api_free_owned;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_allreduce_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                   void *const *recvbufs, const size_t *counts, int nbufs,
                                   cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts,
                                   cc_work_t **work)
{
    struct co_call c = {comm,  CC_OP_ALLREDUCE, sendbufs, recvbufs, counts,
                        nbufs, dtype,           op,       -1,       "cc_allreduce_coalesced"};
    return coalesced(&c, opts, work);
}

cc_status_t cc_broadcast_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                   void *const *recvbufs, const size_t *counts, int nbufs,
                                   cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                   cc_work_t **work)
{
    struct co_call c = {comm,  CC_OP_BROADCAST, sendbufs,       recvbufs, counts,
                        nbufs, dtype,           CC_REDOP_COUNT, root,     "cc_broadcast_coalesced"};
    return coalesced(&c, opts, work);
}

cc_status_t cc_allgather_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                   void *const *recvbufs, const size_t *sendcounts, int nbufs,
                                   cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work)
{
    struct co_call c = {comm,  CC_OP_ALLGATHER, sendbufs,       recvbufs, sendcounts,
                        nbufs, dtype,           CC_REDOP_COUNT, -1,       "cc_allgather_coalesced"};
    return coalesced(&c, opts, work);
}

cc_status_t cc_reduce_scatter_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                        void *const *recvbufs, const size_t *recvcounts, int nbufs,
                                        cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts,
                                        cc_work_t **work)
{
    struct co_call c = {
        comm, CC_OP_REDUCE_SCATTER,         sendbufs, recvbufs, recvcounts, nbufs, dtype, op,
        -1,   "cc_reduce_scatter_coalesced"};
    return coalesced(&c, opts, work);
}
