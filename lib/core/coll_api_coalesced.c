/*
 * coll_api_coalesced.c - coalesced collectives: one op (type "coalesced")
 * over several buffers. Each buffer is checked by the rules of the plain
 * collective (the door's validation step, door_validate.c); the lists of
 * pointers and counts are copied into one block the op owns
 * (cc__coalesced_args_t), so the caller may reuse its arrays at once.
 */
#include <stdlib.h>
#include <string.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/door_validate.h"

/* The op's own copy of the lists, one block. */
static cc__coalesced_args_t *copy_args(const cc__coalesced_call_t *c)
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

static cc_status_t coalesced(const cc__coalesced_call_t *c, const cc_op_opts_t *opts,
                             cc_work_t **work)
{
    size_t in, out;
    CC_CHECK(cc__validate_coalesced(c, opts, &in, &out));
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
    cc__coalesced_call_t c = {comm,  CC_OP_ALLREDUCE, sendbufs, recvbufs, counts,
                              nbufs, dtype,           op,       -1,       "cc_allreduce_coalesced"};
    return coalesced(&c, opts, work);
}

cc_status_t cc_broadcast_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                   void *const *recvbufs, const size_t *counts, int nbufs,
                                   cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                   cc_work_t **work)
{
    cc__coalesced_call_t c = {
        comm,  CC_OP_BROADCAST, sendbufs,       recvbufs, counts,
        nbufs, dtype,           CC_REDOP_COUNT, root,     "cc_broadcast_coalesced"};
    return coalesced(&c, opts, work);
}

cc_status_t cc_allgather_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                   void *const *recvbufs, const size_t *sendcounts, int nbufs,
                                   cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work)
{
    cc__coalesced_call_t c = {
        comm,  CC_OP_ALLGATHER, sendbufs,       recvbufs, sendcounts,
        nbufs, dtype,           CC_REDOP_COUNT, -1,       "cc_allgather_coalesced"};
    return coalesced(&c, opts, work);
}

cc_status_t cc_reduce_scatter_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                        void *const *recvbufs, const size_t *recvcounts, int nbufs,
                                        cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts,
                                        cc_work_t **work)
{
    cc__coalesced_call_t c = {
        comm, CC_OP_REDUCE_SCATTER,         sendbufs, recvbufs, recvcounts, nbufs, dtype, op,
        -1,   "cc_reduce_scatter_coalesced"};
    return coalesced(&c, opts, work);
}
