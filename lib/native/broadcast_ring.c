/*
 * broadcast_ring.c - pipelined chain broadcast: the message is cut into
 * pieces (CCOMM_PIPELINE_CHUNK) that flow root -> root+1 -> ... ->
 * root-1, each rank forwarding a piece as soon as it has it. Every rank
 * receives and sends the message once, so the time is about
 * (n - 2 + pieces) piece times: bandwidth-bound, the choice for large
 * messages. Data is copied, never combined.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

#define MAX_SEG 1024

cc_status_t cc__broadcast_ring(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, root = op->info.root, v = (nc->rank - root + n) % n;
    size_t bytes = op->info.bytes, off, len;
    if (!bytes) return CC_OK;
    char *buf = op->info.recvbuf;
    const char *src = v == 0 ? op->info.sendbuf : buf;
    int segs = cc__nseg(nc, bytes, MAX_SEG), next = (nc->rank + 1) % n,
        prev = (nc->rank - 1 + n) % n;
    cc__req_t *rq = cc__native_reqs(nc, 2 * segs); /* receives, then sends */
    if (!rq) return CC_ERR_NO_MEMORY;
    uint32_t tag = cc__coll_tag(op, 0);
    for (int k = 0; v > 0 && k < segs; k++) {
        cc__chunk(bytes, segs, k, &off, &len);
        CC_CHECK(cc__net_irecv(nc->net, prev, tag, buf + off, len, &rq[k]));
    }
    for (int k = 0; k < segs; k++) {
        cc__chunk(bytes, segs, k, &off, &len);
        if (v > 0) CC_CHECK(cc__native_wait(nc, &rq[k], 1, op->deadline_ns));
        if (v < n - 1) CC_CHECK(cc__net_isend(nc->net, next, tag, src + off, len, &rq[segs + k]));
    }
    if (src != buf) memcpy(buf, src, bytes); /* the root's own copy, while the sends go */
    return cc__native_wait(nc, rq + segs, segs, op->deadline_ns);
}
