/*
 * gather_linear.c - linear gather and gatherv: the root posts a receive
 * from every rank straight into its place in the output and waits for them
 * all; every other rank sends its block once. One round, each block moved
 * once with no relay: the choice for large blocks and for gatherv, whose
 * counts only the root knows.
 */
#include <string.h>

#include "log.h"
#include "native.h"

static cc_status_t gather(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk)
{
    int n = nc->size, root = op->info.root;
    size_t es = cc_dtype_size(op->info.dtype);
    uint32_t tag = cc__coll_tag(op, 0);
    if (nc->rank != root)
        return cc__net_send(nc->net, root, tag, op->info.sendbuf, op->info.in_count * es,
                            op->deadline_ns);
    char *out = op->info.recvbuf;
    size_t own = cc__blk_count(blk, root);
    if (own != op->info.in_count) {
        cc_log_error(CC_SUBSYS_COLL, "gather_v: root %d sends %zu elements to itself but its "
                     "recvcounts[%d] is %zu", root, op->info.in_count, root, own);
        return CC_ERR_MISMATCH;
    }
    cc__req_t *rq = cc__native_reqs(nc, n);
    if (!rq) return CC_ERR_NO_MEMORY;
    for (int p = 0; p < n; p++) {
        size_t cnt = cc__blk_count(blk, p);
        if (p != root)
            CC_CHECK(cc__net_irecv(nc->net, p, tag, cnt ? out + cc__blk_displ(blk, p) * es : NULL,
                                   cnt * es, &rq[p]));
    }
    char *dst = own ? out + cc__blk_displ(blk, root) * es : NULL;
    if (own && dst != op->info.sendbuf) memcpy(dst, op->info.sendbuf, own * es);
    return cc__native_wait(nc, rq, n, op->deadline_ns);
}

cc_status_t cc__gather_linear(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.in_count) return CC_OK; /* every rank passed sendcount 0 */
    cc__blocks_t blk = {.count = op->info.in_count};
    return gather(nc, op, &blk);
}

cc_status_t cc__gatherv_linear(cc__native_t *nc, cc__op_t *op)
{
    cc__blocks_t blk = {.counts = op->recv_counts, .displs = op->recv_displs};
    return gather(nc, op, &blk);
}
