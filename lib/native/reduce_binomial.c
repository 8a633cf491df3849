/*
 * reduce_binomial.c - binomial tree reduce. Ranks are numbered relative to
 * the root (v = rank - root mod n); rank v combines the partial results of
 * its children v + 1, v + 2, v + 4, ... (below lowbit(v)) in that order,
 * then sends its partial to v - lowbit(v). ceil(log2 n) rounds of the whole
 * message: the choice for small ones.
 *
 * Order: partial(v) = ((x[v] op partial(v+1)) op partial(v+2)) op
 * partial(v+4) ..., a bracket fixed by n and the root, so the root gets the
 * same bits run after run. AVG divides at the root.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__reduce_binomial(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, root = op->info.root, v = (nc->rank - root + n) % n;
    size_t count = op->info.in_count, bytes = op->info.bytes;
    if (!count) return CC_OK;
    cc__reduce_fn fn;
    CC_CHECK(cc__op_kernel(op, &fn));
    char *tmp = cc__native_scratch(nc, 2 * bytes);
    if (!tmp) return CC_ERR_NO_MEMORY;
    /* The partial lives in the root's output, or in scratch; until a child
     * came it is the input itself (a leaf sends its input untouched). */
    char *acc = v == 0 ? op->info.recvbuf : tmp + bytes;
    const char *cur = op->info.sendbuf;
    int mask = 1;
    for (; mask < n; mask <<= 1) {
        if (v & mask) break;
        if (v + mask >= n) continue;
        CC_CHECK(cc__net_recv(nc->net, (v + mask + root) % n, cc__coll_tag(op, 0), tmp, bytes,
                              op->deadline_ns));
        fn(acc, cur, tmp, count);
        cur = acc;
    }
    if (v > 0)
        return cc__net_send(nc->net, (v - mask + root) % n, cc__coll_tag(op, 0), cur, bytes,
                            op->deadline_ns);
    if (cur != acc) memcpy(acc, cur, bytes); /* one rank */
    cc__finish_avg(nc, op, acc, count);
    return CC_OK;
}
