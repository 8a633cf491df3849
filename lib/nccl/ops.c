/*
 * ops.c - each ccomm op type as NCCL calls: one row per type.
 *
 * NCCL's own collectives where it has one; the rest as grouped calls
 * (ncclGroupStart/End), the way PyTorch builds them:
 *   all-to-all(v), gather(v), scatter(v)  grouped ncclSend/ncclRecv
 *   all-gather-v                          grouped ncclBroadcast, root r for block r
 *   reduce-scatter-v                      grouped ncclReduce, root r for block r
 *   barrier                               ncclAllReduce of one int32
 * Counts are elements of the op's dtype; ops without a dtype (the byte
 * forms) count bytes. v-collectives read op->send_counts/send_displs
 * (blocks of the input, per rank) and recv_counts/recv_displs (blocks of
 * the output), in elements.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "core/coll_api.h"
#include "base/log.h"
#include "nccl/nccl_engine.h"

cc_status_t cc__ncclx_err(cc__ncclx_t *x, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess || r == ncclInProgress) return CC_OK;
    const char *last = x->lib->GetLastError ? x->lib->GetLastError(x->nc) : NULL;
    cc_log_error(CC_SUBSYS_NCCL, "communicator %s: %s failed: %s%s%s", x->name, what,
                 cc__nccl_errstr(x->lib, r), last && *last ? ": " : "", last ? last : "");
    return cc__nccl_status(r);
}

#define CALL(x, what, expr) cc__ncclx_err((x), (expr), (what))

static size_t esize(const cc__op_t *op)
{
    return op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
}

static const char *at(const void *base, size_t elems, size_t es)
{
    return (const char *)base + elems * es;
}

/* The PREMUL_SUM factor as a value of the op's dtype, for NCCL's host-immediate scalar. */
static void scalar_of(cc_dtype_t t, double f, void *out)
{
    double c = isnan(f) ? 0.0 : f; /* integer types: NaN as 0, saturated, toward zero */
#define SAT(type, lo, hi)                                                                          \
    (c <= (double)(lo) ? (type)(lo) : c >= (double)(hi) ? (type)(hi) : (type)c)
    switch (t) {
    case CC_INT8:
        *(int8_t *)out = SAT(int8_t, INT8_MIN, INT8_MAX);
        break;
    case CC_UINT8:
        *(uint8_t *)out = SAT(uint8_t, 0, UINT8_MAX);
        break;
    case CC_INT32:
        *(int32_t *)out = SAT(int32_t, INT32_MIN, INT32_MAX);
        break;
    case CC_UINT32:
        *(uint32_t *)out = SAT(uint32_t, 0, UINT32_MAX);
        break;
    case CC_INT64:
        *(int64_t *)out = SAT(int64_t, INT64_MIN, INT64_MAX);
        break;
    case CC_UINT64:
        *(uint64_t *)out = SAT(uint64_t, 0, UINT64_MAX);
        break;
    case CC_FLOAT16:
        *(uint16_t *)out = cc__float_to_half((float)f);
        break;
    case CC_BFLOAT16:
        *(uint16_t *)out = cc__float_to_bfloat16((float)f);
        break;
    case CC_FLOAT32:
        *(float *)out = (float)f;
        break;
    default:
        *(double *)out = f;
        break;
    }
#undef SAT
}

/* The NCCL operator of a reducing op; *made is set when it must be destroyed after the call. */
static cc_status_t redop_of(cc__ncclx_t *x, const cc__op_t *op, ncclRedOp_t *out, int *made)
{
    *made = 0;
    CC_CHECK(cc__nccl_redop(op->info.redop, op->info.dtype, out));
    if (op->info.redop != CC_PREMUL_SUM) return CC_OK;
    if (!x->lib->RedOpCreatePreMulSum || !x->lib->RedOpDestroy) {
        cc_log_error(CC_SUBSYS_NCCL,
                     "nccl library %s has no ncclRedOpCreatePreMulSum: "
                     "premul_sum needs NCCL 2.11 or newer",
                     x->lib->path);
        return CC_ERR_NOT_SUPPORTED;
    }
    uint64_t scalar[1] = {0};
    scalar_of(op->info.dtype, op->premul_scalar, scalar);
    CC_CHECK(CALL(x, "ncclRedOpCreatePreMulSum",
                  x->lib->RedOpCreatePreMulSum(out, scalar, cc__nccl_dtype(op->info.dtype),
                                               ncclScalarHostImmediate, x->nc)));
    *made = 1;
    return CC_OK;
}

static cc_status_t need(const cc__ncclx_t *x, const void *fn, const char *name)
{
    if (fn) return CC_OK;
    cc_log_error(CC_SUBSYS_NCCL, "nccl library %s has no %s", x->lib->path, name);
    return CC_ERR_NOT_SUPPORTED;
}

static cc_status_t issue_send(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t n = op->info.in_count ? op->info.in_count : op->info.bytes / esize(op);
    return CALL(
        x, "ncclSend",
        x->lib->Send(op->info.sendbuf, n, cc__nccl_dtype(op->info.dtype), op->info.peer, x->nc, s));
}

static cc_status_t issue_recv(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t n = op->info.out_count ? op->info.out_count : op->info.bytes / esize(op);
    return CALL(
        x, "ncclRecv",
        x->lib->Recv(op->info.recvbuf, n, cc__nccl_dtype(op->info.dtype), op->info.peer, x->nc, s));
}

static cc_status_t issue_barrier(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    (void)op;
    void *b = x->barrier_buf ? x->barrier_buf : &x->host_barrier;
    return CALL(x, "ncclAllReduce (barrier)",
                x->lib->AllReduce(b, b, 1, ncclInt32, ncclSum, x->nc, s));
}

static cc_status_t issue_allreduce(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    ncclRedOp_t r;
    int made;
    CC_CHECK(redop_of(x, op, &r, &made));
    cc_status_t st = CALL(x, "ncclAllReduce",
                          x->lib->AllReduce(op->info.sendbuf, op->info.recvbuf, op->info.in_count,
                                            cc__nccl_dtype(op->info.dtype), r, x->nc, s));
    if (made) x->lib->RedOpDestroy(r, x->nc);
    return st;
}

static cc_status_t issue_reduce(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    CC_CHECK(need(x, (const void *)x->lib->Reduce, "ncclReduce"));
    ncclRedOp_t r;
    int made;
    CC_CHECK(redop_of(x, op, &r, &made));
    cc_status_t st =
        CALL(x, "ncclReduce",
             x->lib->Reduce(op->info.sendbuf, op->info.recvbuf, op->info.in_count,
                            cc__nccl_dtype(op->info.dtype), r, op->info.root, x->nc, s));
    if (made) x->lib->RedOpDestroy(r, x->nc);
    return st;
}

static cc_status_t issue_broadcast(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t n = op->info.out_count ? op->info.out_count : op->info.bytes / esize(op);
    return CALL(x, "ncclBroadcast",
                x->lib->Broadcast(op->info.sendbuf, op->info.recvbuf, n,
                                  cc__nccl_dtype(op->info.dtype), op->info.root, x->nc, s));
}

static cc_status_t issue_allgather(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    CC_CHECK(need(x, (const void *)x->lib->AllGather, "ncclAllGather"));
    return CALL(x, "ncclAllGather",
                x->lib->AllGather(op->info.sendbuf, op->info.recvbuf, op->info.in_count,
                                  cc__nccl_dtype(op->info.dtype), x->nc, s));
}

static cc_status_t issue_reduce_scatter(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    CC_CHECK(need(x, (const void *)x->lib->ReduceScatter, "ncclReduceScatter"));
    ncclRedOp_t r;
    int made;
    CC_CHECK(redop_of(x, op, &r, &made));
    cc_status_t st =
        CALL(x, "ncclReduceScatter",
             x->lib->ReduceScatter(op->info.sendbuf, op->info.recvbuf, op->info.out_count,
                                   cc__nccl_dtype(op->info.dtype), r, x->nc, s));
    if (made) x->lib->RedOpDestroy(r, x->nc);
    return st;
}

/* ---- grouped forms --------------------------------------------------------- */

static cc_status_t group_end(cc__ncclx_t *x, cc_status_t st)
{
    cc_status_t e = CALL(x, "ncclGroupEnd", x->lib->GroupEnd());
    return st != CC_OK ? st : e;
}

/* Block r of a buffer: uniform blocks of `each` elements, or the v-collective's lists. */
static size_t blk_count(const size_t *counts, size_t each, int r)
{
    return counts ? counts[r] : each;
}

static size_t blk_displ(const size_t *displs, size_t each, int r)
{
    return displs ? displs[r] : each * (size_t)r;
}

static cc_status_t issue_alltoall(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t es = esize(op), each_in = op->info.in_count / (size_t)x->size;
    size_t each_out = op->info.out_count / (size_t)x->size;
    ncclDataType_t t = cc__nccl_dtype(op->info.dtype);
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    CC_CHECK(st);
    for (int r = 0; r < x->size && st == CC_OK; r++) {
        size_t sn = blk_count(op->send_counts, each_in, r);
        size_t rn = blk_count(op->recv_counts, each_out, r);
        const char *sp = at(op->info.sendbuf, blk_displ(op->send_displs, each_in, r), es);
        const char *rp = at(op->info.recvbuf, blk_displ(op->recv_displs, each_out, r), es);
        if (sn) st = CALL(x, "ncclSend", x->lib->Send(sp, sn, t, r, x->nc, s));
        if (rn && st == CC_OK)
            st = CALL(x, "ncclRecv", x->lib->Recv((void *)rp, rn, t, r, x->nc, s));
    }
    return group_end(x, st);
}

static cc_status_t issue_gather(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t es = esize(op), n = op->info.in_count;
    ncclDataType_t t = cc__nccl_dtype(op->info.dtype);
    int root = op->info.root;
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    CC_CHECK(st);
    if (x->rank == root)
        for (int r = 0; r < x->size && st == CC_OK; r++) {
            size_t rn = blk_count(op->recv_counts, n, r);
            char *rp = (char *)at(op->info.recvbuf, blk_displ(op->recv_displs, n, r), es);
            if (rn) st = CALL(x, "ncclRecv", x->lib->Recv(rp, rn, t, r, x->nc, s));
        }
    if (n && st == CC_OK)
        st = CALL(x, "ncclSend", x->lib->Send(op->info.sendbuf, n, t, root, x->nc, s));
    return group_end(x, st);
}

static cc_status_t issue_scatter(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t es = esize(op), n = op->info.out_count;
    ncclDataType_t t = cc__nccl_dtype(op->info.dtype);
    int root = op->info.root;
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    CC_CHECK(st);
    if (x->rank == root)
        for (int r = 0; r < x->size && st == CC_OK; r++) {
            size_t sn = blk_count(op->send_counts, n, r);
            const char *sp = at(op->info.sendbuf, blk_displ(op->send_displs, n, r), es);
            if (sn) st = CALL(x, "ncclSend", x->lib->Send(sp, sn, t, r, x->nc, s));
        }
    if (n && st == CC_OK)
        st = CALL(x, "ncclRecv", x->lib->Recv(op->info.recvbuf, n, t, root, x->nc, s));
    return group_end(x, st);
}

static cc_status_t issue_allgatherv(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    size_t es = esize(op);
    ncclDataType_t t = cc__nccl_dtype(op->info.dtype);
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    CC_CHECK(st);
    for (int r = 0; r < x->size && st == CC_OK; r++) {
        size_t n = blk_count(op->recv_counts, op->info.in_count, r);
        char *rp =
            (char *)at(op->info.recvbuf, blk_displ(op->recv_displs, op->info.in_count, r), es);
        const void *sp = r == x->rank ? op->info.sendbuf : rp;
        if (n) st = CALL(x, "ncclBroadcast", x->lib->Broadcast(sp, rp, n, t, r, x->nc, s));
    }
    return group_end(x, st);
}

static cc_status_t issue_reduce_scatterv(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    CC_CHECK(need(x, (const void *)x->lib->Reduce, "ncclReduce"));
    size_t es = esize(op), each = op->info.out_count;
    ncclDataType_t t = cc__nccl_dtype(op->info.dtype);
    ncclRedOp_t red;
    int made;
    CC_CHECK(redop_of(x, op, &red, &made));
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    if (st == CC_OK) {
        for (int r = 0; r < x->size && st == CC_OK; r++) {
            size_t n = blk_count(op->send_counts, each, r);
            const char *sp = at(op->info.sendbuf, blk_displ(op->send_displs, each, r), es);
            void *rp = r == x->rank ? op->info.recvbuf : NULL;
            if (n) st = CALL(x, "ncclReduce", x->lib->Reduce(sp, rp, n, t, red, r, x->nc, s));
        }
        st = group_end(x, st);
    }
    /* The operator is used at ncclGroupEnd: destroyed only after it. */
    if (made) x->lib->RedOpDestroy(red, x->nc);
    return st;
}

/*
 * A group's sends and receives (cc_group_start .. cc_group_end) in one NCCL
 * group, so any set that matches across the ranks completes whatever order
 * each rank listed them in. The members start here; they end with the group
 * op (lib/core/group.c ends each member with the group's status: NCCL
 * completes or fails a group as a whole).
 */
static cc_status_t issue_group(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    const cc__group_args_t *g = op->extra;
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    CC_CHECK(st);
    for (int i = 0; i < g->n && st == CC_OK; i++) {
        cc__op_t *m = g->members[i];
        const cc_op_info_t *in = &m->info;
        m->info.algorithm = "nccl:p2p";
        m->info.transport = "nccl";
        cc__op_started(m);
        if (!in->bytes) continue;
        if (in->type == CC_OP_SEND)
            st = CALL(x, "ncclSend",
                      x->lib->Send(in->sendbuf, in->bytes, ncclUint8, in->peer, x->nc, s));
        else
            st = CALL(x, "ncclRecv",
                      x->lib->Recv(in->recvbuf, in->bytes, ncclUint8, in->peer, x->nc, s));
    }
    return group_end(x, st);
}

/* A coalesced collective: the plain NCCL call per buffer, in one NCCL group (a
 * PREMUL_SUM operator is made once and destroyed after ncclGroupEnd). */
static cc_status_t coalesced_one(cc__ncclx_t *x, const cc__op_t *op, int i, ncclRedOp_t red,
                                 void *s)
{
    const cc__coalesced_args_t *a = op->extra;
    const void *sp = a->sendbufs[i];
    void *rp = a->recvbufs[i];
    size_t k = a->counts[i];
    ncclDataType_t t = cc__nccl_dtype(op->info.dtype);
    switch (a->kind) {
    case CC_OP_ALLREDUCE:
        return CALL(x, "ncclAllReduce", x->lib->AllReduce(sp, rp, k, t, red, x->nc, s));
    case CC_OP_BROADCAST: /* a non-root has no send buffer: NCCL reads none there */
        return CALL(x, "ncclBroadcast",
                    x->lib->Broadcast(sp ? sp : rp, rp, k, t, op->info.root, x->nc, s));
    case CC_OP_ALLGATHER:
        return CALL(x, "ncclAllGather", x->lib->AllGather(sp, rp, k, t, x->nc, s));
    case CC_OP_REDUCE_SCATTER:
        return CALL(x, "ncclReduceScatter", x->lib->ReduceScatter(sp, rp, k, t, red, x->nc, s));
    default:
        return CC_ERR_NOT_SUPPORTED;
    }
}

static cc_status_t issue_coalesced(cc__ncclx_t *x, const cc__op_t *op, void *s)
{
    const cc__coalesced_args_t *a = op->extra;
    if (a->kind == CC_OP_ALLGATHER)
        CC_CHECK(need(x, (const void *)x->lib->AllGather, "ncclAllGather"));
    if (a->kind == CC_OP_REDUCE_SCATTER)
        CC_CHECK(need(x, (const void *)x->lib->ReduceScatter, "ncclReduceScatter"));
    ncclRedOp_t red = ncclSum;
    int made = 0;
    if (a->kind == CC_OP_ALLREDUCE || a->kind == CC_OP_REDUCE_SCATTER)
        CC_CHECK(redop_of(x, op, &red, &made));
    cc_status_t st = CALL(x, "ncclGroupStart", x->lib->GroupStart());
    if (st == CC_OK) {
        for (int i = 0; i < a->nbufs && st == CC_OK; i++)
            if (a->counts[i]) st = coalesced_one(x, op, i, red, s);
        st = group_end(x, st);
    }
    if (made) x->lib->RedOpDestroy(red, x->nc);
    return st;
}

/* The table. */
static const struct {
    cc_op_type_t type;
    cc__nccl_row_t row;
} rows[] = {
    {CC_OP_GROUP, {issue_group, "nccl:grouped-p2p"}},
    {CC_OP_COALESCED, {issue_coalesced, "nccl:grouped"}},
    {CC_OP_SEND, {issue_send, "nccl:p2p"}},
    {CC_OP_SEND_BYTES, {issue_send, "nccl:p2p"}},
    {CC_OP_RECV, {issue_recv, "nccl:p2p"}},
    {CC_OP_RECV_BYTES, {issue_recv, "nccl:p2p"}},
    {CC_OP_BARRIER, {issue_barrier, "nccl:allreduce"}},
    {CC_OP_MONITORED_BARRIER, {issue_barrier, "nccl:allreduce"}},
    {CC_OP_ALLREDUCE, {issue_allreduce, "nccl"}},
    {CC_OP_REDUCE, {issue_reduce, "nccl"}},
    {CC_OP_BROADCAST, {issue_broadcast, "nccl"}},
    {CC_OP_BROADCAST_BYTES, {issue_broadcast, "nccl"}},
    {CC_OP_ALLGATHER, {issue_allgather, "nccl"}},
    {CC_OP_ALLGATHER_BYTES, {issue_allgather, "nccl"}},
    {CC_OP_ALLGATHERV, {issue_allgatherv, "nccl:grouped-bcast"}},
    {CC_OP_REDUCE_SCATTER, {issue_reduce_scatter, "nccl"}},
    {CC_OP_REDUCE_SCATTERV, {issue_reduce_scatterv, "nccl:grouped-reduce"}},
    {CC_OP_ALLTOALL, {issue_alltoall, "nccl:grouped-p2p"}},
    {CC_OP_ALLTOALLV, {issue_alltoall, "nccl:grouped-p2p"}},
    {CC_OP_GATHER, {issue_gather, "nccl:grouped-p2p"}},
    {CC_OP_GATHERV, {issue_gather, "nccl:grouped-p2p"}},
    {CC_OP_GATHER_BYTES, {issue_gather, "nccl:grouped-p2p"}},
    {CC_OP_SCATTER, {issue_scatter, "nccl:grouped-p2p"}},
    {CC_OP_SCATTERV, {issue_scatter, "nccl:grouped-p2p"}},
    {CC_OP_SCATTER_BYTES, {issue_scatter, "nccl:grouped-p2p"}},
};

const cc__nccl_row_t *cc__nccl_row(cc_op_type_t type)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].type == type) return &rows[i].row;
    return NULL;
}
