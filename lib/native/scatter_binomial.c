/*
 * scatter_binomial.c - binomial tree scatter, the mirror of
 * gather_binomial.c: with ranks numbered relative to the root, rank v
 * receives the blocks of relative ranks v .. v + lowbit(v) - 1 from
 * v - lowbit(v) in one message, keeps the first and passes the rest on to
 * v + 2^k (largest subtree first). The root, unless it is rank 0, first
 * puts its rank-ordered input into relative order.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__scatter_binomial(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, root = op->info.root, v = (nc->rank - root + n) % n, sub = cc__subtree(v, n);
    size_t blk = op->info.out_count * cc_dtype_size(op->info.dtype);
    if (!blk) return CC_OK;
    char *out = op->info.recvbuf;
    if (sub == 1 && v) /* a leaf receives its block in place */
        return cc__net_recv(nc->net, (v - (v & -v) + root) % n, cc__coll_tag(op, 0), out, blk,
                            op->deadline_ns);
    const char *t = op->info.sendbuf;
    if (v || root) {
        char *s = cc__native_scratch(nc, (size_t)sub * blk);
        if (!s) return CC_ERR_NO_MEMORY;
        if (v) {
            CC_CHECK(cc__net_recv(nc->net, (v - (v & -v) + root) % n, cc__coll_tag(op, 0), s,
                                  (size_t)sub * blk, op->deadline_ns));
        } else { /* the root: rank (q + root) mod n is relative q */
            memcpy(s, t + (size_t)root * blk, (size_t)(n - root) * blk);
            memcpy(s + (size_t)(n - root) * blk, t, (size_t)root * blk);
        }
        t = s;
    }
    int nchild = 0, top = 0;
    for (int m = 1; m < sub; m <<= 1)
        nchild++, top = m;
    cc__req_t *rq = cc__native_reqs(nc, nchild);
    if (!rq) return CC_ERR_NO_MEMORY;
    int i = 0;
    for (int m = top; m >= 1; m >>= 1, i++) { /* the largest subtree first */
        size_t cnt = (size_t)(m < sub - m ? m : sub - m);
        CC_CHECK(cc__net_isend(nc->net, (v + m + root) % n, cc__coll_tag(op, 0), t + m * blk,
                               cnt * blk, &rq[i]));
    }
    if (t != out) memcpy(out, t, blk);
    return cc__native_wait(nc, rq, i, op->deadline_ns);
}
