/*
 * coll_api.c - the public point-to-point and collective calls with one
 * count: run the door's validation step on the arguments (door_validate.c),
 * describe the op, and hand it to the door.
 * (coll_api_v.c has the ones with per-rank counts and layouts,
 * coll_api_coalesced.c, coll_api_bytes.c and group.c the rest.)
 */
#include <stdlib.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/door_validate.h"

void cc__api_free_owned(cc__op_t *op, cc_status_t status)
{
    (void)status;
    free(op->owned);
    op->owned = NULL;
}

cc_status_t cc__api_issue(cc__op_t *op, const cc_op_opts_t *opts, cc_work_t **work)
{
    if (cc__group_active()) {
        cc_status_t st = cc__door_reentry(op->comm, op->info.type);
        int p2p = op->info.type == CC_OP_SEND || op->info.type == CC_OP_RECV;
        /* Only p2p ops can wait for the group's end: a collective would have to run before
         * the sends and receives listed ahead of it, which breaks issue order. */
        if (st == CC_OK && p2p) return cc__group_hold(op, opts, work);
        if (st == CC_OK)
            cc_log_error(CC_SUBSYS_CORE,
                         "%s on communicator %s inside a group: only cc_send and "
                         "cc_recv may be grouped (call cc_group_end first)",
                         cc_op_type_name(op->info.type), op->comm->name);
        if (op->release) op->release(op, CC_ERR_INVALID_USAGE);
        return CC_ERR_INVALID_USAGE;
    }
    return cc__door_issue(op, opts, work);
}

/* An op of `type` with its dtype, redop and premultiplier set. */
static void describe(cc__op_t *op, cc_comm_t *comm, cc_op_type_t type, cc_dtype_t dtype,
                     cc_redop_t redop, const cc_op_opts_t *opts)
{
    cc__op_prepare(op, comm, type);
    op->info.dtype = dtype;
    op->info.redop = redop;
    op->premul_scalar = opts ? opts->premul_scalar : 1.0;
}

/* cc_send and cc_recv: one shape, the buffer on the side the type says. */
static cc_status_t p2p(cc_comm_t *comm, cc_op_type_t type, void *buf, size_t count,
                       cc_dtype_t dtype, int peer, const cc_op_opts_t *opts, cc_work_t **work,
                       const char *fn)
{
    size_t bytes;
    CC_CHECK(cc__validate_send_recv(comm, buf, count, dtype, peer, opts, fn, &bytes));
    cc__op_t op;
    describe(&op, comm, type, dtype, CC_REDOP_COUNT, opts);
    op.info.peer = peer;
    op.info.tag = opts ? opts->tag : 0;
    op.info.bytes = bytes;
    if (type == CC_OP_SEND) {
        op.info.in_count = count;
        op.info.sendbuf = buf;
    } else {
        op.info.out_count = count;
        op.info.recvbuf = buf;
    }
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_send(cc_comm_t *comm, const void *buf, size_t count, cc_dtype_t dtype, int peer,
                    const cc_op_opts_t *opts, cc_work_t **work)
{
    return p2p(comm, CC_OP_SEND, (void *)buf, count, dtype, peer, opts, work, "cc_send");
}

cc_status_t cc_recv(cc_comm_t *comm, void *buf, size_t count, cc_dtype_t dtype, int peer,
                    const cc_op_opts_t *opts, cc_work_t **work)
{
    return p2p(comm, CC_OP_RECV, buf, count, dtype, peer, opts, work, "cc_recv");
}

cc_status_t cc_barrier(cc_comm_t *comm, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_barrier(comm, opts));
    cc__op_t op;
    cc__op_prepare(&op, comm, CC_OP_BARRIER);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_allreduce(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                         cc_dtype_t dtype, cc_redop_t redop, const cc_op_opts_t *opts,
                         cc_work_t **work)
{
    size_t bytes;
    CC_CHECK(cc__validate_allreduce(comm, sendbuf, recvbuf, count, dtype, redop, opts, &bytes));
    cc__op_t op;
    describe(&op, comm, CC_OP_ALLREDUCE, dtype, redop, opts);
    op.info.in_count = op.info.out_count = count;
    op.info.bytes = bytes;
    op.info.sendbuf = sendbuf;
    op.info.recvbuf = recvbuf;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_broadcast(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                         cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    size_t bytes;
    CC_CHECK(cc__validate_broadcast(comm, sendbuf, recvbuf, count, dtype, root, opts, &bytes));
    /* sendbuf is the root's only; the hooks see NULL elsewhere, whatever was passed. */
    int me = comm->rank == root;
    cc__op_t op;
    describe(&op, comm, CC_OP_BROADCAST, dtype, CC_REDOP_COUNT, opts);
    op.info.root = root;
    op.info.in_count = op.info.out_count = count;
    op.info.bytes = bytes;
    op.info.sendbuf = me ? sendbuf : NULL;
    op.info.recvbuf = recvbuf;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_reduce(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      cc_dtype_t dtype, cc_redop_t redop, int root, const cc_op_opts_t *opts,
                      cc_work_t **work)
{
    size_t bytes;
    CC_CHECK(cc__validate_reduce(comm, sendbuf, recvbuf, count, dtype, redop, root, opts, &bytes));
    int me = comm->rank == root;
    cc__op_t op;
    describe(&op, comm, CC_OP_REDUCE, dtype, redop, opts);
    op.info.root = root;
    op.info.in_count = count;
    op.info.out_count = me ? count : 0;
    op.info.bytes = bytes;
    op.info.sendbuf = sendbuf;
    op.info.recvbuf = me ? recvbuf : NULL;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_reduce_scatter(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                              cc_dtype_t dtype, cc_redop_t redop, const cc_op_opts_t *opts,
                              cc_work_t **work)
{
    size_t bytes;
    CC_CHECK(
        cc__validate_reduce_scatter(comm, sendbuf, recvbuf, recvcount, dtype, redop, opts, &bytes));
    size_t n = (size_t)comm->size;
    cc__op_t op;
    describe(&op, comm, CC_OP_REDUCE_SCATTER, dtype, redop, opts);
    op.info.in_count = n * recvcount;
    op.info.out_count = recvcount;
    op.info.bytes = n * bytes;
    op.info.sendbuf = sendbuf;
    op.info.recvbuf = recvbuf;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_monitored_barrier(cc_comm_t *comm, int64_t timeout_ms, int *missing, int max_missing,
                                 int *nmissing, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_monitored_barrier(comm, timeout_ms, missing, max_missing, opts));
    /* The outputs are written by the engine when the op ends: the block carries them there. */
    cc__mbarrier_args_t *a = malloc(sizeof(*a));
    if (!a) return CC_ERR_NO_MEMORY;
    *a = (cc__mbarrier_args_t){timeout_ms, missing, max_missing, nmissing};
    cc__op_t op;
    cc__op_prepare(&op, comm, CC_OP_MONITORED_BARRIER);
    /* Non-zero ranks wait up to twice the window for the verdict. */
    op.info.timeout_ms = 2 * timeout_ms + 1000;
    if (opts && opts->timeout_ms > op.info.timeout_ms) op.info.timeout_ms = opts->timeout_ms;
    op.extra = op.owned = a;
    op.release = cc__api_free_owned;
    /* The door takes the deadline from opts: hand it the one computed here. */
    cc_op_opts_t o = opts ? *opts : (cc_op_opts_t)CC_OP_OPTS_INIT;
    o.timeout_ms = op.info.timeout_ms;
    return cc__api_issue(&op, &o, work);
}
