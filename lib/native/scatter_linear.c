/*
 * scatter_linear.c - linear scatter and scatterv: the root sends every
 * rank its block straight from the input, all at once, and copies its own;
 * every other rank receives once. The mirror of gather_linear.c.
 */
#include <string.h>

#include "log.h"
#include "native.h"

static cc_status_t scatter(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk)
{
    int n = nc->size, root = op->info.root;
    size_t es = cc_dtype_size(op->info.dtype);
    uint32_t tag = cc__coll_tag(op, 0);
    if (nc->rank != root)
        return cc__net_recv(nc->net, root, tag, op->info.recvbuf, op->info.out_count * es,
                            op->deadline_ns);
    const char *in = op->info.sendbuf;
    size_t own = cc__blk_count(blk, root);
    if (own != op->info.out_count) {
        cc_log_error(CC_SUBSYS_COLL, "scatter_v: root %d receives %zu elements but its "
                     "sendcounts[%d] is %zu", root, op->info.out_count, root, own);
        return CC_ERR_MISMATCH;
    }
    cc__req_t *rq = cc__native_reqs(nc, n);
    if (!rq) return CC_ERR_NO_MEMORY;
    for (int p = 0; p < n; p++) {
        size_t cnt = cc__blk_count(blk, p);
        if (p != root)
            CC_CHECK(cc__net_isend(nc->net, p, tag, cnt ? in + cc__blk_displ(blk, p) * es : NULL,
                                   cnt * es, &rq[p]));
    }
    const char *src = own ? in + cc__blk_displ(blk, root) * es : NULL;
    if (own && src != op->info.recvbuf) memcpy(op->info.recvbuf, src, own * es);
    return cc__native_wait(nc, rq, n, op->deadline_ns);
}

cc_status_t cc__scatter_linear(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.out_count) return CC_OK; /* every rank passed recvcount 0 */
    cc__blocks_t blk = {.count = op->info.out_count};
    return scatter(nc, op, &blk);
}

cc_status_t cc__scatterv_linear(cc__native_t *nc, cc__op_t *op)
{
    cc__blocks_t blk = {.counts = op->send_counts, .displs = op->send_displs};
    return scatter(nc, op, &blk);
}
