/*
 * allgather_bruck.c - Bruck's allgather, for any rank count: rank r keeps a
 * work area whose slot i will hold the block of rank r + i; in the round of
 * distance d = 1, 2, 4, ... it sends its first min(d, n - d) slots to rank
 * r - d and receives as many from rank r + d into slots d ... ceil(log2 n)
 * rounds, then one local rotation into rank order. Latency log2(n): the
 * choice for small blocks. Blocks are copied, never combined.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__allgather_bruck(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, r = nc->rank;
    size_t blk = op->info.in_count * cc_dtype_size(op->info.dtype);
    if (!blk) return CC_OK;
    char *out = op->info.recvbuf, *t = cc__native_scratch(nc, (size_t)n * blk);
    if (!t) return CC_ERR_NO_MEMORY;
    memcpy(t, op->info.sendbuf, blk);
    uint32_t step = 0;
    for (int d = 1; d < n; d <<= 1, step++) {
        size_t cnt = (size_t)(d < n - d ? d : n - d);
        CC_CHECK(cc__net_sendrecv(nc->net, (r - d + n) % n, t, cnt * blk, (r + d) % n,
                                  t + (size_t)d * blk, cnt * blk, cc__coll_tag(op, step),
                                  op->deadline_ns));
    }
    /* Slot i holds rank (r + i) mod n. */
    memcpy(out + (size_t)r * blk, t, (size_t)(n - r) * blk);
    memcpy(out, t + (size_t)(n - r) * blk, (size_t)r * blk);
    return CC_OK;
}
