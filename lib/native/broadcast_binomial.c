/*
 * broadcast_binomial.c - binomial tree broadcast. Ranks are numbered
 * relative to the root (v = rank - root mod n); rank v receives from
 * v - lowbit(v) and then sends to v + 2^k for every 2^k below lowbit(v)
 * (the root: below n), largest first so the deepest subtrees start first.
 * ceil(log2 n) rounds of the whole message: the choice for small ones.
 * Data is copied, never combined: every rank gets the root's bits.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__broadcast_binomial(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, root = op->info.root, v = (nc->rank - root + n) % n;
    size_t bytes = op->info.bytes;
    if (!bytes) return CC_OK;
    char *buf = op->info.recvbuf;
    const char *src = v == 0 ? op->info.sendbuf : buf;
    int mask = 1;
    for (; mask < n; mask <<= 1) {
        if (!(v & mask)) continue;
        CC_CHECK(cc__net_recv(nc->net, (v - mask + root) % n, cc__coll_tag(op, 0), buf, bytes,
                              op->deadline_ns));
        break;
    }
    int nchild = 0;
    for (int m = mask >> 1; m >= 1; m >>= 1)
        nchild += v + m < n;
    cc__req_t *rq = nchild ? cc__native_reqs(nc, nchild) : NULL;
    if (nchild && !rq) return CC_ERR_NO_MEMORY;
    int i = 0;
    for (int m = mask >> 1; m >= 1; m >>= 1)
        if (v + m < n)
            CC_CHECK(cc__net_isend(nc->net, (v + m + root) % n, cc__coll_tag(op, 0), src, bytes,
                                   &rq[i++]));
    if (src != buf) memcpy(buf, src, bytes); /* the root's own copy, while the sends go */
    return cc__native_wait(nc, rq, nchild, op->deadline_ns);
}
