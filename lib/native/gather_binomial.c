/*
 * gather_binomial.c - binomial tree gather. With ranks numbered relative to
 * the root (v = rank - root mod n), rank v collects the blocks of relative
 * ranks v .. v + lowbit(v) - 1 (those that exist) from its children
 * v + 1, v + 2, v + 4, ..., then sends them to v - lowbit(v) in one message.
 * ceil(log2 n) rounds: the choice for small blocks. The root, unless it is
 * rank 0, puts the relative order back into rank order at the end.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__gather_binomial(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, root = op->info.root, v = (nc->rank - root + n) % n, sub = cc__subtree(v, n);
    size_t blk = op->info.in_count * cc_dtype_size(op->info.dtype);
    if (!blk) return CC_OK;
    const char *in = op->info.sendbuf;
    if (sub == 1 && v) /* a leaf sends its block as it is */
        return cc__net_send(nc->net, (v - (v & -v) + root) % n, cc__coll_tag(op, 0), in, blk,
                            op->deadline_ns);
    /* Relative order: rank 0's output is already in that order. */
    char *t = v == 0 && root == 0 ? op->info.recvbuf : cc__native_scratch(nc, (size_t)sub * blk);
    int nchild = 0;
    for (int m = 1; m < sub; m <<= 1)
        nchild++;
    cc__req_t *rq = t ? cc__native_reqs(nc, nchild) : NULL;
    if (!rq) return CC_ERR_NO_MEMORY;
    for (int m = 1, i = 0; m < sub; m <<= 1, i++) {
        size_t cnt = (size_t)(m < sub - m ? m : sub - m);
        CC_CHECK(cc__net_irecv(nc->net, (v + m + root) % n, cc__coll_tag(op, 0), t + m * blk,
                               cnt * blk, &rq[i]));
    }
    if (t != in) memcpy(t, in, blk);
    CC_CHECK(cc__native_wait(nc, rq, nchild, op->deadline_ns));
    if (v)
        return cc__net_send(nc->net, (v - (v & -v) + root) % n, cc__coll_tag(op, 0), t,
                            (size_t)sub * blk, op->deadline_ns);
    if (t == op->info.recvbuf) return CC_OK;
    char *out = op->info.recvbuf; /* relative q is rank (q + root) mod n */
    memcpy(out + (size_t)root * blk, t, (size_t)(n - root) * blk);
    memcpy(out, t + (size_t)(n - root) * blk, (size_t)root * blk);
    return CC_OK;
}
