/*
 * coll_api_v.c - the collectives that lay blocks out by rank: allgather,
 * gather, scatter, all-to-all and the v forms with per-rank counts and
 * displacements. Per-rank arrays are checked by the door's validation
 * step (door_validate.c) and copied into the op when it outlives the call
 * (async) or when packed displacements must be filled in, so engines
 * always see both arrays.
 */
#include <stdlib.h>
#include <string.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/door_validate.h"

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

/* Built in the caller's op: returned by value, the 504 bytes were copied (rep movsq) on
 * every call. */
static void describe(cc__op_t *op, cc_comm_t *comm, cc_op_type_t type, cc_dtype_t dtype, int root,
                     const void *sendbuf, void *recvbuf, size_t in, size_t out)
{
    cc__op_prepare(op, comm, type);
    op->info.dtype = dtype;
    op->info.root = root;
    op->info.sendbuf = sendbuf;
    op->info.recvbuf = recvbuf;
    op->info.in_count = in;
    op->info.out_count = out;
    op->info.bytes = (in > out ? in : out) * cc_dtype_size(dtype);
}

cc_status_t cc_allgather(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                         cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_allgather(comm, sendbuf, recvbuf, sendcount, dtype, opts));
    size_t n = (size_t)comm->size;
    cc__op_t op;
    describe(&op, comm, CC_OP_ALLGATHER, dtype, -1, sendbuf, recvbuf, sendcount, n * sendcount);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_allgatherv(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                          const size_t *recvcounts, const size_t *rdispls, cc_dtype_t dtype,
                          const cc_op_opts_t *opts, cc_work_t **work)
{
    size_t total;
    CC_CHECK(cc__validate_allgatherv(comm, sendbuf, recvbuf, sendcount, recvcounts, rdispls, dtype,
                                     opts, &total));
    cc__op_t op;
    describe(&op, comm, CC_OP_ALLGATHERV, dtype, -1, sendbuf, recvbuf, sendcount, total);
    cc__arrays_t a = {NULL, NULL, recvcounts, rdispls};
    /* An async op outlives the caller's arrays; engines need displacements filled. */
    CC_CHECK(keep_arrays(&op, comm->size, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_reduce_scatterv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                               const size_t *recvcounts, cc_dtype_t dtype, cc_redop_t redop,
                               const cc_op_opts_t *opts, cc_work_t **work)
{
    size_t total;
    CC_CHECK(cc__validate_reduce_scatterv(comm, sendbuf, recvbuf, recvcounts, dtype, redop, opts,
                                          &total));
    size_t my = recvcounts[comm->rank];
    cc__op_t op;
    describe(&op, comm, CC_OP_REDUCE_SCATTERV, dtype, -1, sendbuf, recvbuf, total, my);
    op.info.redop = redop;
    op.premul_scalar = opts ? opts->premul_scalar : 1.0;
    cc__arrays_t a = {NULL, NULL, recvcounts, NULL};
    CC_CHECK(keep_arrays(&op, comm->size, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_gather(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                      cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_gather(comm, sendbuf, recvbuf, sendcount, dtype, root, opts));
    size_t n = (size_t)comm->size;
    /* The root-only arguments are not looked at on the other ranks (MPI's rule). */
    int me = comm->rank == root;
    cc__op_t op;
    describe(&op, comm, CC_OP_GATHER, dtype, root, sendbuf, me ? recvbuf : NULL, sendcount,
             me ? n * sendcount : 0);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_gatherv(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                       const size_t *recvcounts, const size_t *displs, cc_dtype_t dtype, int root,
                       const cc_op_opts_t *opts, cc_work_t **work)
{
    size_t total;
    CC_CHECK(cc__validate_gatherv(comm, sendbuf, recvbuf, sendcount, recvcounts, displs, dtype,
                                  root, opts, &total));
    int me = comm->rank == root;
    cc__op_t op;
    describe(&op, comm, CC_OP_GATHERV, dtype, root, sendbuf, me ? recvbuf : NULL, sendcount, total);
    cc__arrays_t a = {NULL, NULL, me ? recvcounts : NULL, me ? displs : NULL};
    CC_CHECK(keep_arrays(&op, comm->size, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_scatter(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                       cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_scatter(comm, sendbuf, recvbuf, recvcount, dtype, root, opts));
    size_t n = (size_t)comm->size;
    int me = comm->rank == root;
    cc__op_t op;
    describe(&op, comm, CC_OP_SCATTER, dtype, root, me ? sendbuf : NULL, recvbuf,
             me ? n * recvcount : 0, recvcount);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_scatterv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                        const size_t *sendcounts, const size_t *displs, size_t recvcount,
                        cc_dtype_t dtype, int root, const cc_op_opts_t *opts, cc_work_t **work)
{
    size_t total;
    CC_CHECK(cc__validate_scatterv(comm, sendbuf, recvbuf, sendcounts, displs, recvcount, dtype,
                                   root, opts, &total));
    int me = comm->rank == root;
    cc__op_t op;
    describe(&op, comm, CC_OP_SCATTERV, dtype, root, me ? sendbuf : NULL, recvbuf, total,
             recvcount);
    cc__arrays_t a = {me ? sendcounts : NULL, me ? displs : NULL, NULL, NULL};
    CC_CHECK(keep_arrays(&op, comm->size, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_alltoall(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                        cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_alltoall(comm, sendbuf, recvbuf, count, dtype, opts));
    size_t n = (size_t)comm->size;
    cc__op_t op;
    describe(&op, comm, CC_OP_ALLTOALL, dtype, -1, sendbuf, recvbuf, n * count, n * count);
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_alltoallv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                         const size_t *sendcounts, const size_t *sdispls, const size_t *recvcounts,
                         const size_t *rdispls, cc_dtype_t dtype, const cc_op_opts_t *opts,
                         cc_work_t **work)
{
    size_t stotal, rtotal;
    CC_CHECK(cc__validate_alltoallv(comm, sendbuf, recvbuf, sendcounts, sdispls, recvcounts,
                                    rdispls, dtype, opts, &stotal, &rtotal));
    if (sendbuf == recvbuf) /* MPI_IN_PLACE: each block is sent from where it is received */
        sendcounts = recvcounts, sdispls = rdispls;
    cc__op_t op;
    describe(&op, comm, CC_OP_ALLTOALLV, dtype, -1, sendbuf, recvbuf, stotal, rtotal);
    cc__arrays_t a = {sendcounts, sdispls, recvcounts, rdispls};
    CC_CHECK(keep_arrays(&op, comm->size, a, work != NULL));
    return cc__api_issue(&op, opts, work);
}
