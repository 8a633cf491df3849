/*
 * bytes_two_phase.c - collectives of byte strings whose lengths differ by
 * rank: first the lengths travel (a plain collective of one uint64 per
 * rank), then the result block is allocated with every blob at its final,
 * 16-byte aligned place and the payload lands there directly through the
 * v form of the collective. One allocation, no copy beyond the transport's.
 * Send/recv of a blob: a 16-byte header (magic, length) then the payload,
 * under the caller's tag.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/args.h"
#include "base/log.h"
#include "native/native.h"

_Static_assert(sizeof(size_t) == sizeof(uint64_t), "lengths travel as uint64 in size_t arrays");

#define BLOB_MAGIC 0x63634231u /* "ccB1" */

struct blob_hdr {
    uint32_t magic;
    uint32_t pad;
    uint64_t len;
};

/* A phase: the plain collective `type` over the op's identity. */
static cc__op_t phase(const cc__op_t *op, cc_op_type_t type, cc_dtype_t dt, const void *in,
                      size_t inc, void *out, size_t outc)
{
    cc__op_t sub;
    cc__sub_op(&sub, op);
    sub.info.type = type;
    sub.info.dtype = dt;
    sub.info.redop = CC_REDOP_COUNT;
    sub.info.sendbuf = in;
    sub.info.recvbuf = out;
    sub.info.in_count = inc;
    sub.info.out_count = outc;
    sub.info.bytes = (inc > outc ? inc : outc) * cc_dtype_size(dt);
    return sub;
}

static cc_status_t new_result(cc__op_t *op, size_t count, const size_t *lens, cc_bytes_t **res)
{
    cc__bytes_args_t *a = op->owned;
    *res = a->result = cc__bytes_new(count, lens);
    if (!*res) return CC_ERR_NO_MEMORY;
    op->info.out_count = (*res)->total;
    return CC_OK;
}

cc_status_t cc__allgather_bytes_two_phase(cc__native_t *nc, cc__op_t *op)
{
    size_t n = (size_t)nc->size, mine = op->info.in_count;
    size_t *lens = malloc(n * sizeof(*lens));
    if (!lens) return CC_ERR_NO_MEMORY;
    cc__op_t sub = phase(op, CC_OP_ALLGATHER, CC_UINT64, &mine, 1, lens, n);
    cc_status_t st = cc__native_run_sub(nc, &sub);
    cc_bytes_t *res = NULL;
    if (st == CC_OK) st = new_result(op, n, lens, &res);
    if (st == CC_OK) {
        sub = phase(op, CC_OP_ALLGATHERV, CC_UINT8, op->info.sendbuf, mine, res->data, res->total);
        sub.recv_counts = lens;
        sub.recv_displs = res->off;
        st = cc__native_run_sub(nc, &sub);
    }
    free(lens);
    return st;
}

cc_status_t cc__broadcast_bytes_two_phase(cc__native_t *nc, cc__op_t *op)
{
    size_t len = op->info.in_count;
    cc__op_t sub = phase(op, CC_OP_BROADCAST, CC_UINT64, &len, 1, &len, 1);
    CC_CHECK(cc__native_run_sub(nc, &sub));
    cc_bytes_t *res;
    CC_CHECK(new_result(op, 1, &len, &res));
    sub = phase(op, CC_OP_BROADCAST, CC_UINT8, op->info.sendbuf, len, res->data, len);
    return cc__native_run_sub(nc, &sub);
}

cc_status_t cc__gather_bytes_two_phase(cc__native_t *nc, cc__op_t *op)
{
    size_t n = (size_t)nc->size, mine = op->info.in_count;
    int root = nc->rank == op->info.root;
    size_t *lens = root ? malloc(n * sizeof(*lens)) : NULL;
    if (root && !lens) return CC_ERR_NO_MEMORY;
    cc__op_t sub = phase(op, CC_OP_GATHER, CC_UINT64, &mine, 1, lens, root ? n : 0);
    cc_status_t st = cc__native_run_sub(nc, &sub);
    cc_bytes_t *res = NULL;
    if (st == CC_OK && root) st = new_result(op, n, lens, &res);
    if (st == CC_OK) {
        sub = phase(op, CC_OP_GATHERV, CC_UINT8, op->info.sendbuf, mine, res ? res->data : NULL,
                    res ? res->total : 0);
        sub.recv_counts = lens;
        sub.recv_displs = res ? res->off : NULL;
        st = cc__native_run_sub(nc, &sub);
    }
    free(lens);
    return st;
}

/* Phase two of scatter_bytes: the root's blobs are separate buffers, each sent as it is. */
static cc_status_t scatter_blobs(cc__native_t *nc, cc__op_t *op, cc_bytes_t *res)
{
    const cc__bytes_args_t *a = op->owned;
    int n = nc->size, r = nc->rank, root = op->info.root;
    uint32_t tag = cc__coll_tag(op, 0x40);
    if (r != root) return cc__net_recv(nc->net, root, tag, res->data, res->total, op->deadline_ns);
    cc__req_t *rq = cc__native_reqs(nc, n);
    if (!rq) return CC_ERR_NO_MEMORY;
    for (int p = 0; p < n; p++)
        if (p != r) CC_CHECK(cc__net_isend(nc->net, p, tag, a->bufs[p], a->lens[p], &rq[p]));
    if (res->total) memcpy(res->data, a->bufs[r], res->total);
    return cc__native_wait(nc, rq, n, op->deadline_ns);
}

cc_status_t cc__scatter_bytes_two_phase(cc__native_t *nc, cc__op_t *op)
{
    const cc__bytes_args_t *a = op->owned;
    size_t len = 0;
    int root = nc->rank == op->info.root;
    cc__op_t sub = phase(op, CC_OP_SCATTER, CC_UINT64, root ? a->lens : NULL,
                         root ? (size_t)nc->size : 0, &len, 1);
    CC_CHECK(cc__native_run_sub(nc, &sub));
    cc_bytes_t *res;
    CC_CHECK(new_result(op, 1, &len, &res));
    return scatter_blobs(nc, op, res);
}

cc_status_t cc__send_bytes_two_phase(cc__native_t *nc, cc__op_t *op)
{
    struct blob_hdr h = {BLOB_MAGIC, 0, op->info.in_count};
    cc__req_t *rq = cc__native_reqs(nc, 2);
    if (!rq) return CC_ERR_NO_MEMORY;
    uint32_t tag = (uint32_t)op->info.tag;
    CC_CHECK(cc__net_isend(nc->net, op->info.peer, tag, &h, sizeof(h), &rq[0]));
    CC_CHECK(cc__net_isend(nc->net, op->info.peer, tag, op->info.sendbuf, h.len, &rq[1]));
    return cc__native_wait(nc, rq, 2, op->deadline_ns);
}

cc_status_t cc__recv_bytes_two_phase(cc__native_t *nc, cc__op_t *op)
{
    struct blob_hdr h;
    uint32_t tag = (uint32_t)op->info.tag;
    CC_CHECK(cc__net_recv(nc->net, op->info.peer, tag, &h, sizeof(h), op->deadline_ns));
    if (h.magic != BLOB_MAGIC || h.len > (uint64_t)INT64_MAX) {
        cc_log_error(CC_SUBSYS_COLL,
                     "recv_bytes from rank %d (tag %d): the message is not a "
                     "blob header of cc_send_bytes (magic 0x%08x)",
                     op->info.peer, op->info.tag, h.magic);
        return CC_ERR_MISMATCH;
    }
    size_t len = (size_t)h.len;
    cc_bytes_t *res;
    CC_CHECK(new_result(op, 1, &len, &res));
    return cc__net_recv(nc->net, op->info.peer, tag, res->data, len, op->deadline_ns);
}
