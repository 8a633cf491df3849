/*
 * coll_api_v.c - the collectives that lay blocks out by rank: allgather,
 * gather, scatter, all-to-all and the v forms with per-rank counts and
 * displacements. Per-rank arrays are checked here (coll_api_check.c) and
 * copied into the op when it outlives the call (async) or when packed
 * displacements must be filled in, so engines always see both arrays.
 */
#include <stdlib.h>
#include <string.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/validate.h"

/* Per-rank arrays of an op: [0] send counts, [1] send displs, [2] recv counts, [3] recv displs. */
typedef const size_t *cc__arrays_t[4];

/* Point the op at its arrays, copying them when it must own them. */
static cc_status_t keep_arrays(cc__op_t *op, int n, cc__arrays_t a, int async)
{
    int need = 0;
    for (int k = 0; k < 4; k += 2)
        if (a[k] && (async || !a[k + 1])) need += 2;
    if (need) {
        size_t *blk = malloc((size_t)need * (size_t)n * sizeof(size_t)), *p = blk;
        if (!blk) return CC_ERR_NO_MEMORY;
        for (int k = 0; k < 4; k += 2) {
            if (!a[k] || !(async || !a[k + 1])) continue;
            memcpy(p, a[k], (size_t)n * sizeof(size_t));
            for (int r = 0; r < n; r++) /* displacements: the caller's, or packed */
                p[n + r] = a[k + 1] ? a[k + 1][r] : r ? p[n + r - 1] + p[r - 1] : 0;
            a[k] = p;
            a[k + 1] = p + n;
            p += 2 * n;
        }
        op->owned = blk;
        op->release = cc__api_free_owned;
    }
    op->send_counts = a[0];
    op->send_displs = a[1];
    op->recv_counts = a[2];
    op->recv_displs = a[3];
    return CC_OK;
}

static size_t displ_of(const size_t *counts, const size_t *displs, int r)
{
    if (displs) return displs[r];
    size_t d = 0;
    for (int q = 0; q < r; q++)
        d += counts[q];
    return d;
}

static cc_status_t check_common(cc_comm_t *comm, const cc_op_opts_t *opts, size_t count,
                                cc_dtype_t dtype, int wide, size_t *bytes, const char *fn)
{
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    return cc__v_count(count, dtype, wide ? (size_t)comm->size : 1, bytes, fn);
}

/* A rank's own block must have the size it sends itself. */
static cc_status_t check_own(size_t a, const char *an, size_t b, const char *bn, int r,
                             const char *fn)
{
    if (a == b) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: %s is %zu but %s[%d] is %zu (this rank's own block)", fn, an,
                 a, bn, r, b);
    return CC_ERR_INVALID_ARG;
}

static cc__op_t describe(cc_comm_t *comm, cc_op_type_t type, cc_dtype_t dtype, int root,
                         const void *sendbuf, void *recvbuf, size_t in, size_t out)
{
    cc__op_t op;
    cc__op_prepare(&op, comm, type);
    op.info.dtype = dtype;
    op.info.root = root;
    op.info.sendbuf = sendbuf;
    op.info.recvbuf = recvbuf;
    op.info.in_count = in;
    op.info.out_count = out;
    op.info.bytes = (in > out ? in : out) * cc_dtype_size(dtype);
    return op;
}

cc_status_t cc_allgather(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                         cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_allgather";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 1, &bytes, fn));
    size_t n = (size_t)comm->size;
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, sendcount, "recvbuf", fn));
    char *mine = recvbuf ? (char *)recvbuf + (size_t)comm->rank * bytes : NULL;
    /* NCCL's in-place rule: the own block inside recvbuf; any other overlap is a bug. */
    CC_CHECK(cc__v_inplace(sendbuf, bytes, recvbuf, n * bytes, mine, fn));
    cc__op_t op =
        describe(comm, CC_OP_ALLGATHER, dtype, -1, sendbuf, recvbuf, sendcount, n * sendcount);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_allgatherv(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                          const size_t *recvcounts, const size_t *rdispls, cc_dtype_t dtype,
                          const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_allgatherv";
    size_t bytes, total, ext, es = cc_dtype_size(dtype);
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 0, &bytes, fn));
    int n = comm->size, r = comm->rank;
    CC_CHECK(cc__v_counts(n, recvcounts, rdispls, dtype, "recvcounts", fn, &total, &ext));
    /* A rank knows its own block both ways: disagreeing with itself is caught here, */
    /* disagreeing with a peer only by the transport (CC_ERR_MISMATCH). */
    CC_CHECK(check_own(sendcount, "sendcount", recvcounts[r], "recvcounts", r, fn));
    CC_CHECK(cc__v_disjoint(n, recvcounts, rdispls, "receive", fn));
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, total, "recvbuf", fn));
    char *mine = recvbuf ? (char *)recvbuf + displ_of(recvcounts, rdispls, r) * es : NULL;
    CC_CHECK(cc__v_inplace(sendbuf, bytes, recvbuf, ext * es, mine, fn));
    cc__op_t op = describe(comm, CC_OP_ALLGATHERV, dtype, -1, sendbuf, recvbuf, sendcount, total);
    cc__arrays_t a = {NULL, NULL, recvcounts, rdispls};
    /* An async op outlives the caller's arrays; engines need displacements filled. */
    CC_CHECK(keep_arrays(&op, n, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_reduce_scatterv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                               const size_t *recvcounts, cc_dtype_t dtype, cc_redop_t redop,
                               const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_reduce_scatterv";
    size_t total, ext, es = cc_dtype_size(dtype);
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    int n = comm->size, r = comm->rank;
    /* Blocks are packed in rank order: the counts alone say where rank r's block is. */
    CC_CHECK(cc__v_counts(n, recvcounts, NULL, dtype, "recvcounts", fn, &total, &ext));
    CC_CHECK(cc__v_redop(dtype, redop, opts, fn));
    size_t my = recvcounts[r], off = displ_of(recvcounts, NULL, r);
    CC_CHECK(cc__v_buf(sendbuf, total, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, my, "recvbuf", fn));
    const char *mine = sendbuf ? (const char *)sendbuf + off * es : NULL;
    CC_CHECK(cc__v_inplace(recvbuf, my * es, sendbuf, total * es, mine, fn));
    cc__op_t op = describe(comm, CC_OP_REDUCE_SCATTERV, dtype, -1, sendbuf, recvbuf, total, my);
    op.info.redop = redop;
    op.premul_scalar = opts ? opts->premul_scalar : 1.0;
    cc__arrays_t a = {NULL, NULL, recvcounts, NULL};
    CC_CHECK(keep_arrays(&op, n, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_gather(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                      cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_gather";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    size_t n = (size_t)comm->size;
    /* The root-only arguments are not looked at on the other ranks (MPI's rule). */
    int me = comm->rank == root;
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    if (me) CC_CHECK(cc__v_buf(recvbuf, sendcount, "recvbuf (on the root)", fn));
    char *mine = me && recvbuf ? (char *)recvbuf + (size_t)root * bytes : NULL;
    if (me) CC_CHECK(cc__v_inplace(sendbuf, bytes, recvbuf, n * bytes, mine, fn));
    cc__op_t op = describe(comm, CC_OP_GATHER, dtype, root, sendbuf, me ? recvbuf : NULL, sendcount,
                           me ? n * sendcount : 0);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_gatherv(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                       const size_t *recvcounts, const size_t *displs, cc_dtype_t dtype, int root,
                       const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_gatherv";
    size_t bytes, total = 0, ext = 0, es = cc_dtype_size(dtype);
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 0, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int n = comm->size, me = comm->rank == root;
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    if (me) {
        CC_CHECK(cc__v_counts(n, recvcounts, displs, dtype, "recvcounts", fn, &total, &ext));
        CC_CHECK(check_own(sendcount, "sendcount", recvcounts[root], "recvcounts", root, fn));
        CC_CHECK(cc__v_disjoint(n, recvcounts, displs, "receive", fn));
        CC_CHECK(cc__v_buf(recvbuf, total, "recvbuf (on the root)", fn));
        char *mine = recvbuf ? (char *)recvbuf + displ_of(recvcounts, displs, root) * es : NULL;
        CC_CHECK(cc__v_inplace(sendbuf, bytes, recvbuf, ext * es, mine, fn));
    }
    cc__op_t op =
        describe(comm, CC_OP_GATHERV, dtype, root, sendbuf, me ? recvbuf : NULL, sendcount, total);
    cc__arrays_t a = {NULL, NULL, me ? recvcounts : NULL, me ? displs : NULL};
    CC_CHECK(keep_arrays(&op, n, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_scatter(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                       cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_scatter";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, recvcount, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    size_t n = (size_t)comm->size;
    int me = comm->rank == root;
    CC_CHECK(cc__v_buf(recvbuf, recvcount, "recvbuf", fn));
    if (me) CC_CHECK(cc__v_buf(sendbuf, recvcount, "sendbuf (on the root)", fn));
    const char *mine = me && sendbuf ? (const char *)sendbuf + (size_t)root * bytes : NULL;
    if (me) CC_CHECK(cc__v_inplace(recvbuf, bytes, sendbuf, n * bytes, mine, fn));
    cc__op_t op = describe(comm, CC_OP_SCATTER, dtype, root, me ? sendbuf : NULL, recvbuf,
                           me ? n * recvcount : 0, recvcount);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_scatterv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                        const size_t *sendcounts, const size_t *displs, size_t recvcount,
                        cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_scatterv";
    size_t bytes, total = 0, ext = 0, es = cc_dtype_size(dtype);
    CC_CHECK(check_common(comm, opts, recvcount, dtype, 0, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int n = comm->size, me = comm->rank == root;
    CC_CHECK(cc__v_buf(recvbuf, recvcount, "recvbuf", fn));
    if (me) {
        CC_CHECK(cc__v_counts(n, sendcounts, displs, dtype, "sendcounts", fn, &total, &ext));
        CC_CHECK(check_own(recvcount, "recvcount", sendcounts[root], "sendcounts", root, fn));
        CC_CHECK(cc__v_buf(sendbuf, total, "sendbuf (on the root)", fn));
        const char *mine =
            sendbuf ? (const char *)sendbuf + displ_of(sendcounts, displs, root) * es : NULL;
        CC_CHECK(cc__v_inplace(recvbuf, bytes, sendbuf, ext * es, mine, fn));
    }
    cc__op_t op =
        describe(comm, CC_OP_SCATTERV, dtype, root, me ? sendbuf : NULL, recvbuf, total, recvcount);
    cc__arrays_t a = {me ? sendcounts : NULL, me ? displs : NULL, NULL, NULL};
    CC_CHECK(keep_arrays(&op, n, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_alltoall(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                        cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_alltoall";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, count, dtype, 1, &bytes, fn));
    size_t n = (size_t)comm->size;
    CC_CHECK(cc__v_buf(sendbuf, count, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, count, "recvbuf", fn));
    /* In place is exactly the same buffer (the engine stages each outgoing block). */
    CC_CHECK(cc__v_overlap(sendbuf, n * bytes, recvbuf, n * bytes, 1, fn));
    cc__op_t op = describe(comm, CC_OP_ALLTOALL, dtype, -1, sendbuf, recvbuf, n * count, n * count);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_alltoallv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                         const size_t *sendcounts, const size_t *sdispls, const size_t *recvcounts,
                         const size_t *rdispls, cc_dtype_t dtype, const cc_op_opts_t *opts,
                         cc_work_t **work)
{
    static const char fn[] = "cc_alltoallv";
    size_t rtotal, rext, stotal, sext, es;
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    int n = comm->size, r = comm->rank, inplace = sendbuf == recvbuf;
    CC_CHECK(cc__v_counts(n, recvcounts, rdispls, dtype, "recvcounts", fn, &rtotal, &rext));
    CC_CHECK(cc__v_disjoint(n, recvcounts, rdispls, "receive", fn));
    if (inplace) /* MPI_IN_PLACE: each block is sent from where it is received */
        sendcounts = recvcounts, sdispls = rdispls, stotal = rtotal, sext = rext;
    else
        CC_CHECK(cc__v_counts(n, sendcounts, sdispls, dtype, "sendcounts", fn, &stotal, &sext));
    CC_CHECK(check_own(sendcounts[r], "sendcounts[rank]", recvcounts[r], "recvcounts", r, fn));
    CC_CHECK(cc__v_buf(sendbuf, stotal, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, rtotal, "recvbuf", fn));
    es = cc_dtype_size(dtype);
    if (!inplace) CC_CHECK(cc__v_inplace(sendbuf, sext * es, recvbuf, rext * es, NULL, fn));
    cc__op_t op = describe(comm, CC_OP_ALLTOALLV, dtype, -1, sendbuf, recvbuf, stotal, rtotal);
    cc__arrays_t a = {sendcounts, sdispls, recvcounts, rdispls};
    CC_CHECK(keep_arrays(&op, n, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}
