/*
 * door_validate.c - the door's validation step: one check per public call
 * (see door_validate.h), run on the call's own arguments before the op is
 * built, made of validate.c's pieces. The order of the checks is the order
 * the errors are reported in: the comm and opts first, then counts and
 * types, then buffers, then how the buffers overlap.
 */
#include <stdint.h>
#include <stdio.h>

#include "base/log.h"
#include "core/comm.h"
#include "core/door_validate.h"
#include "core/validate.h"
#include "native/window.h"

/* The checks every data op starts with; *bytes = count x size. `wide`: the largest buffer
 * holds a block per rank, all of which must be addressable. */
static cc_status_t check_common(cc_comm_t *comm, const cc_op_opts_t *opts, size_t count,
                                cc_dtype_t dtype, int wide, size_t *bytes, const char *fn)
{
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    return cc__v_count(count, dtype, wide ? (size_t)comm->size : 1, bytes, fn);
}

/* Element offset of rank r's block (displs NULL: packed in rank order). */
static size_t displ_of(const size_t *counts, const size_t *displs, int r)
{
    if (displs) return displs[r];
    size_t d = 0;
    for (int q = 0; q < r; q++)
        d += counts[q];
    return d;
}

cc_status_t cc__validate_send_recv(cc_comm_t *comm, const void *buf, size_t count, cc_dtype_t dtype,
                                   int peer, const cc_op_opts_t *opts, const char *fn,
                                   size_t *bytes)
{
    CC_CHECK(check_common(comm, opts, count, dtype, 0, bytes, fn));
    CC_CHECK(cc__v_buf(buf, count, "buf", fn));
    return cc__v_rank(comm, peer, "peer", fn);
}

cc_status_t cc__validate_barrier(cc_comm_t *comm, const cc_op_opts_t *opts)
{
    CC_CHECK(cc__v_comm(comm, "cc_barrier"));
    return cc__v_opts(opts, "cc_barrier");
}

cc_status_t cc__validate_allreduce(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   size_t count, cc_dtype_t dtype, cc_redop_t redop,
                                   const cc_op_opts_t *opts, size_t *bytes)
{
    static const char fn[] = "cc_allreduce";
    CC_CHECK(check_common(comm, opts, count, dtype, 0, bytes, fn));
    CC_CHECK(cc__v_redop(dtype, redop, opts, fn));
    CC_CHECK(cc__v_buf(sendbuf, count, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, count, "recvbuf", fn));
    return cc__v_overlap(sendbuf, *bytes, recvbuf, *bytes, 1, fn);
}

cc_status_t cc__validate_broadcast(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   size_t count, cc_dtype_t dtype, int root,
                                   const cc_op_opts_t *opts, size_t *bytes)
{
    static const char fn[] = "cc_broadcast";
    CC_CHECK(check_common(comm, opts, count, dtype, 0, bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int me = comm->rank == root;
    if (me) CC_CHECK(cc__v_buf(sendbuf, count, "sendbuf (on the root)", fn));
    CC_CHECK(cc__v_buf(recvbuf, count, "recvbuf", fn));
    return me ? cc__v_overlap(sendbuf, *bytes, recvbuf, *bytes, 1, fn) : CC_OK;
}

cc_status_t cc__validate_reduce(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                size_t count, cc_dtype_t dtype, cc_redop_t redop, int root,
                                const cc_op_opts_t *opts, size_t *bytes)
{
    static const char fn[] = "cc_reduce";
    CC_CHECK(check_common(comm, opts, count, dtype, 0, bytes, fn));
    CC_CHECK(cc__v_redop(dtype, redop, opts, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int me = comm->rank == root;
    CC_CHECK(cc__v_buf(sendbuf, count, "sendbuf", fn));
    if (me) CC_CHECK(cc__v_buf(recvbuf, count, "recvbuf (on the root)", fn));
    return me ? cc__v_overlap(sendbuf, *bytes, recvbuf, *bytes, 1, fn) : CC_OK;
}

cc_status_t cc__validate_reduce_scatter(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                        size_t recvcount, cc_dtype_t dtype, cc_redop_t redop,
                                        const cc_op_opts_t *opts, size_t *bytes)
{
    static const char fn[] = "cc_reduce_scatter";
    CC_CHECK(check_common(comm, opts, recvcount, dtype, 1, bytes, fn));
    CC_CHECK(cc__v_redop(dtype, redop, opts, fn));
    size_t n = (size_t)comm->size;
    CC_CHECK(cc__v_buf(sendbuf, recvcount, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, recvcount, "recvbuf", fn));
    /* NCCL's in-place rule: recvbuf is this rank's own block of sendbuf. */
    const char *mine = sendbuf ? (const char *)sendbuf + (size_t)comm->rank * *bytes : NULL;
    return cc__v_inplace(recvbuf, *bytes, sendbuf, n * *bytes, mine, fn);
}

cc_status_t cc__validate_monitored_barrier(cc_comm_t *comm, int64_t timeout_ms, const int *missing,
                                           int max_missing, const cc_op_opts_t *opts)
{
    static const char fn[] = "cc_monitored_barrier";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    if (timeout_ms <= 0 || timeout_ms > (int64_t)1e12 || max_missing < 0 ||
        (max_missing > 0 && !missing)) {
        cc_log_error(CC_SUBSYS_CORE,
                     "%s: timeout_ms %lld must be in (0, 1e12] and max_missing "
                     "%d >= 0 with a missing array (%p)",
                     fn, (long long)timeout_ms, max_missing, (const void *)missing);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc__validate_allgather(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   size_t sendcount, cc_dtype_t dtype, const cc_op_opts_t *opts)
{
    static const char fn[] = "cc_allgather";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 1, &bytes, fn));
    size_t n = (size_t)comm->size;
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, sendcount, "recvbuf", fn));
    const char *mine = recvbuf ? (const char *)recvbuf + (size_t)comm->rank * bytes : NULL;
    /* NCCL's in-place rule: the own block inside recvbuf; any other overlap is a bug. */
    return cc__v_inplace(sendbuf, bytes, recvbuf, n * bytes, mine, fn);
}

cc_status_t cc__validate_allgatherv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                    size_t sendcount, const size_t *recvcounts,
                                    const size_t *rdispls, cc_dtype_t dtype,
                                    const cc_op_opts_t *opts, size_t *total)
{
    static const char fn[] = "cc_allgatherv";
    size_t bytes, ext, es = cc_dtype_size(dtype);
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 0, &bytes, fn));
    int n = comm->size, r = comm->rank;
    CC_CHECK(cc__v_counts(n, recvcounts, rdispls, dtype, "recvcounts", fn, total, &ext));
    /* A rank knows its own block both ways: disagreeing with itself is caught here, */
    /* disagreeing with a peer only by the transport (CC_ERR_MISMATCH). */
    CC_CHECK(cc__v_own(sendcount, "sendcount", recvcounts[r], "recvcounts", r, fn));
    CC_CHECK(cc__v_disjoint(n, recvcounts, rdispls, "receive", fn));
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, *total, "recvbuf", fn));
    const char *mine =
        recvbuf ? (const char *)recvbuf + displ_of(recvcounts, rdispls, r) * es : NULL;
    return cc__v_inplace(sendbuf, bytes, recvbuf, ext * es, mine, fn);
}

cc_status_t cc__validate_reduce_scatterv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                         const size_t *recvcounts, cc_dtype_t dtype,
                                         cc_redop_t redop, const cc_op_opts_t *opts, size_t *total)
{
    static const char fn[] = "cc_reduce_scatterv";
    size_t ext, es = cc_dtype_size(dtype);
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    int n = comm->size, r = comm->rank;
    /* Blocks are packed in rank order: the counts alone say where rank r's block is. */
    CC_CHECK(cc__v_counts(n, recvcounts, NULL, dtype, "recvcounts", fn, total, &ext));
    CC_CHECK(cc__v_redop(dtype, redop, opts, fn));
    size_t my = recvcounts[r], off = displ_of(recvcounts, NULL, r);
    CC_CHECK(cc__v_buf(sendbuf, *total, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, my, "recvbuf", fn));
    const char *mine = sendbuf ? (const char *)sendbuf + off * es : NULL;
    return cc__v_inplace(recvbuf, my * es, sendbuf, *total * es, mine, fn);
}

cc_status_t cc__validate_gather(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                size_t sendcount, cc_dtype_t dtype, int root,
                                const cc_op_opts_t *opts)
{
    static const char fn[] = "cc_gather";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    size_t n = (size_t)comm->size;
    /* The root-only arguments are not looked at on the other ranks (MPI's rule). */
    int me = comm->rank == root;
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    if (!me) return CC_OK;
    CC_CHECK(cc__v_buf(recvbuf, sendcount, "recvbuf (on the root)", fn));
    const char *mine = recvbuf ? (const char *)recvbuf + (size_t)root * bytes : NULL;
    return cc__v_inplace(sendbuf, bytes, recvbuf, n * bytes, mine, fn);
}

cc_status_t cc__validate_gatherv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                 size_t sendcount, const size_t *recvcounts, const size_t *displs,
                                 cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                 size_t *total)
{
    static const char fn[] = "cc_gatherv";
    size_t bytes, ext = 0, es = cc_dtype_size(dtype);
    *total = 0;
    CC_CHECK(check_common(comm, opts, sendcount, dtype, 0, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int n = comm->size;
    CC_CHECK(cc__v_buf(sendbuf, sendcount, "sendbuf", fn));
    if (comm->rank != root) return CC_OK;
    CC_CHECK(cc__v_counts(n, recvcounts, displs, dtype, "recvcounts", fn, total, &ext));
    CC_CHECK(cc__v_own(sendcount, "sendcount", recvcounts[root], "recvcounts", root, fn));
    CC_CHECK(cc__v_disjoint(n, recvcounts, displs, "receive", fn));
    CC_CHECK(cc__v_buf(recvbuf, *total, "recvbuf (on the root)", fn));
    const char *mine =
        recvbuf ? (const char *)recvbuf + displ_of(recvcounts, displs, root) * es : NULL;
    return cc__v_inplace(sendbuf, bytes, recvbuf, ext * es, mine, fn);
}

cc_status_t cc__validate_scatter(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                 size_t recvcount, cc_dtype_t dtype, int root,
                                 const cc_op_opts_t *opts)
{
    static const char fn[] = "cc_scatter";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, recvcount, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    size_t n = (size_t)comm->size;
    int me = comm->rank == root;
    CC_CHECK(cc__v_buf(recvbuf, recvcount, "recvbuf", fn));
    if (!me) return CC_OK;
    CC_CHECK(cc__v_buf(sendbuf, recvcount, "sendbuf (on the root)", fn));
    const char *mine = sendbuf ? (const char *)sendbuf + (size_t)root * bytes : NULL;
    return cc__v_inplace(recvbuf, bytes, sendbuf, n * bytes, mine, fn);
}

cc_status_t cc__validate_scatterv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                  const size_t *sendcounts, const size_t *displs, size_t recvcount,
                                  cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                  size_t *total)
{
    static const char fn[] = "cc_scatterv";
    size_t bytes, ext = 0, es = cc_dtype_size(dtype);
    *total = 0;
    CC_CHECK(check_common(comm, opts, recvcount, dtype, 0, &bytes, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int n = comm->size;
    CC_CHECK(cc__v_buf(recvbuf, recvcount, "recvbuf", fn));
    if (comm->rank != root) return CC_OK;
    CC_CHECK(cc__v_counts(n, sendcounts, displs, dtype, "sendcounts", fn, total, &ext));
    CC_CHECK(cc__v_own(recvcount, "recvcount", sendcounts[root], "sendcounts", root, fn));
    CC_CHECK(cc__v_buf(sendbuf, *total, "sendbuf (on the root)", fn));
    const char *mine =
        sendbuf ? (const char *)sendbuf + displ_of(sendcounts, displs, root) * es : NULL;
    return cc__v_inplace(recvbuf, bytes, sendbuf, ext * es, mine, fn);
}

cc_status_t cc__validate_alltoall(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                  size_t count, cc_dtype_t dtype, const cc_op_opts_t *opts)
{
    static const char fn[] = "cc_alltoall";
    size_t bytes;
    CC_CHECK(check_common(comm, opts, count, dtype, 1, &bytes, fn));
    size_t n = (size_t)comm->size;
    CC_CHECK(cc__v_buf(sendbuf, count, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, count, "recvbuf", fn));
    /* In place is exactly the same buffer (the engine stages each outgoing block). */
    return cc__v_overlap(sendbuf, n * bytes, recvbuf, n * bytes, 1, fn);
}

cc_status_t cc__validate_alltoallv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   const size_t *sendcounts, const size_t *sdispls,
                                   const size_t *recvcounts, const size_t *rdispls,
                                   cc_dtype_t dtype, const cc_op_opts_t *opts, size_t *stotal,
                                   size_t *rtotal)
{
    static const char fn[] = "cc_alltoallv";
    size_t rext, sext, es;
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    int n = comm->size, r = comm->rank, inplace = sendbuf == recvbuf;
    CC_CHECK(cc__v_counts(n, recvcounts, rdispls, dtype, "recvcounts", fn, rtotal, &rext));
    CC_CHECK(cc__v_disjoint(n, recvcounts, rdispls, "receive", fn));
    if (inplace) /* MPI_IN_PLACE: each block is sent from where it is received */
        sendcounts = recvcounts, sdispls = rdispls, *stotal = *rtotal, sext = rext;
    else
        CC_CHECK(cc__v_counts(n, sendcounts, sdispls, dtype, "sendcounts", fn, stotal, &sext));
    CC_CHECK(cc__v_own(sendcounts[r], "sendcounts[rank]", recvcounts[r], "recvcounts", r, fn));
    CC_CHECK(cc__v_buf(sendbuf, *stotal, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, *rtotal, "recvbuf", fn));
    es = cc_dtype_size(dtype);
    return inplace ? CC_OK : cc__v_inplace(sendbuf, sext * es, recvbuf, rext * es, NULL, fn);
}

/* Buffer i by the plain collective's rules; adds its elements to *in and *out. */
static cc_status_t check_buffer(const cc__coalesced_call_t *c, int i, size_t *in, size_t *out)
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

cc_status_t cc__validate_coalesced(const cc__coalesced_call_t *c, const cc_op_opts_t *opts,
                                   size_t *in, size_t *out)
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
    *in = *out = 0;
    for (int i = 0; i < c->nbufs; i++)
        CC_CHECK(check_buffer(c, i, in, out));
    return CC_OK;
}

/* What every byte op checks: the blob it sends (`sends`), where its result goes (`receives`). */
static cc_status_t check_bytes(cc_comm_t *comm, const cc_op_opts_t *opts, const void *buf,
                               size_t len, int sends, cc_bytes_t **out, int receives,
                               const char *fn)
{
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    if (sends && len > (size_t)INT64_MAX) {
        cc_log_error(CC_SUBSYS_CORE, "%s: len %zu is too large", fn, len);
        return CC_ERR_INVALID_ARG;
    }
    if (sends) CC_CHECK(cc__v_buf(buf, len, "buf", fn));
    if (receives && !out) {
        cc_log_error(CC_SUBSYS_CORE, "%s: out is NULL (it receives the result)", fn);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc__validate_allgather_bytes(cc_comm_t *comm, const void *buf, size_t len,
                                         const cc_op_opts_t *opts, cc_bytes_t **out)
{
    return check_bytes(comm, opts, buf, len, 1, out, 1, "cc_allgather_bytes");
}

cc_status_t cc__validate_broadcast_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                                         const cc_op_opts_t *opts, cc_bytes_t **out)
{
    static const char fn[] = "cc_broadcast_bytes";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    /* buf and len mean something on the root only */
    return check_bytes(comm, opts, buf, len, comm->rank == root, out, 1, fn);
}

cc_status_t cc__validate_gather_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                                      const cc_op_opts_t *opts, cc_bytes_t **out)
{
    static const char fn[] = "cc_gather_bytes";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    return check_bytes(comm, opts, buf, len, 1, out, comm->rank == root, fn);
}

cc_status_t cc__validate_scatter_bytes(cc_comm_t *comm, const void *const *bufs, const size_t *lens,
                                       int root, const cc_op_opts_t *opts, cc_bytes_t **out,
                                       size_t *total)
{
    static const char fn[] = "cc_scatter_bytes";
    size_t extent;
    *total = 0;
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    CC_CHECK(check_bytes(comm, opts, NULL, 0, 0, out, 1, fn));
    if (comm->rank != root) return CC_OK;
    if (!bufs) {
        cc_log_error(CC_SUBSYS_CORE, "%s: bufs is NULL on the root", fn);
        return CC_ERR_INVALID_ARG;
    }
    CC_CHECK(cc__v_counts(comm->size, lens, NULL, CC_UINT8, "lens", fn, total, &extent));
    for (int r = 0; r < comm->size; r++)
        if (!bufs[r] && lens[r]) return cc__v_buf(bufs[r], lens[r], "a blob of bufs", fn);
    return CC_OK;
}

cc_status_t cc__validate_send_bytes(cc_comm_t *comm, const void *buf, size_t len, int peer,
                                    const cc_op_opts_t *opts)
{
    static const char fn[] = "cc_send_bytes";
    CC_CHECK(check_bytes(comm, opts, buf, len, 1, NULL, 0, fn));
    return cc__v_rank(comm, peer, "peer", fn);
}

cc_status_t cc__validate_recv_bytes(cc_comm_t *comm, int peer, const cc_op_opts_t *opts,
                                    cc_bytes_t **out)
{
    static const char fn[] = "cc_recv_bytes";
    CC_CHECK(check_bytes(comm, opts, NULL, 0, 0, out, 1, fn));
    return cc__v_rank(comm, peer, "peer", fn);
}

/* Windows (window_api.c): the window handle, live, and its communicator. */
static cc_status_t v_window(const struct cc_window *win, const char *fn)
{
    if (!win) {
        cc_log_error(CC_SUBSYS_CORE, "%s: win is NULL", fn);
        return CC_ERR_INVALID_ARG;
    }
    if (win->magic == CC__WIN_DEAD) {
        cc_log_error(CC_SUBSYS_CORE, "%s: window %p was destroyed", fn, (const void *)win);
        return CC_ERR_INVALID_USAGE;
    }
    if (win->magic != CC__WIN_LIVE) {
        cc_log_error(CC_SUBSYS_CORE, "%s: win %p is not a window", fn, (const void *)win);
        return CC_ERR_INVALID_ARG;
    }
    return cc__v_comm(win->comm, fn);
}

cc_status_t cc__validate_window_create(cc_comm_t *comm, const void *base, size_t bytes,
                                       const cc_window_config_t *cfg, cc_window_t **win)
{
    static const char fn[] = "cc_window_create";
    CC_CHECK(cc__v_comm(comm, fn));
    if (!win) {
        cc_log_error(CC_SUBSYS_CORE, "%s: win (the output) is NULL", fn);
        return CC_ERR_INVALID_ARG;
    }
    if (!base && bytes) {
        cc_log_error(CC_SUBSYS_CORE, "%s: base is NULL with bytes %zu", fn, bytes);
        return CC_ERR_INVALID_ARG;
    }
    if (bytes > UINTPTR_MAX - (uintptr_t)base) {
        cc_log_error(CC_SUBSYS_CORE, "%s: base %p + bytes %zu wraps around", fn, base, bytes);
        return CC_ERR_INVALID_ARG;
    }
    if (cfg && (cfg->struct_size < sizeof(*cfg) || cfg->struct_size > 4096 || cfg->flags)) {
        cc_log_error(CC_SUBSYS_CORE, "%s: cfg has struct_size %zu (want %zu) and flags 0x%x (want "
                     "0; start from CC_WINDOW_CONFIG_INIT)", fn, cfg->struct_size, sizeof(*cfg),
                     cfg->flags);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc__validate_window_op(const struct cc_window *win, const void *buf, size_t bytes,
                                   int peer, size_t offset, const cc_op_opts_t *opts,
                                   const char *fn)
{
    CC_CHECK(v_window(win, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    CC_CHECK(cc__v_rank(win->comm, peer, "peer", fn));
    if (peer == win->rank) {
        cc_log_error(CC_SUBSYS_CORE, "%s: peer %d is this rank: a window op needs another rank",
                     fn, peer);
        return CC_ERR_INVALID_ARG;
    }
    if (!buf && bytes) {
        cc_log_error(CC_SUBSYS_CORE, "%s: the buffer is NULL with bytes %zu", fn, bytes);
        return CC_ERR_INVALID_ARG;
    }
    /* offset + bytes <= size, written so that it cannot overflow. */
    uint64_t size = win->sizes[peer];
    if (offset > size || bytes > size - offset) {
        cc_log_error(CC_SUBSYS_CORE,
                     "%s: target_offset %zu + bytes %zu is beyond the %llu bytes rank %d "
                     "registered", fn, offset, bytes, (unsigned long long)size, peer);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc__validate_window_destroy(const struct cc_window *win)
{
    return v_window(win, "cc_window_destroy");
}
