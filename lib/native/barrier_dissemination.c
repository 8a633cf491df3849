/*
 * barrier_dissemination.c - the dissemination barrier: in round k every
 * rank signals rank + 2^k and waits for rank - 2^k; after ceil(log2 n)
 * rounds every rank has heard, directly or not, from every other.
 */
#include "native/native.h"

cc_status_t cc__barrier_dissemination(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, r = nc->rank;
    uint32_t step = 0;
    for (int k = 1; k < n; k <<= 1, step++) {
        char out = 0, in = 0;
        cc_status_t st = cc__net_sendrecv(nc->net, (r + k) % n, &out, 1, (r - k + n) % n, &in, 1,
                                          cc__coll_tag(op, step), op->deadline_ns);
        if (st != CC_OK) return st;
    }
    return CC_OK;
}
