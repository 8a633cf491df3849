/*
 * reduce_ring.c - pipelined chain reduce: relative rank n-1 sends its
 * input to n-2, which adds its own and passes the sum on, and so on down to
 * the root (relative rank 0), piece by piece (CCOMM_PIPELINE_CHUNK) so that
 * every rank receives, reduces and sends at the same time. Every rank moves
 * the message once: the choice for large messages.
 *
 * Order: with v = rank - root mod n, the root gets
 *   x[0] op (x[1] op (x[2] op ... (x[n-2] op x[n-1])))
 * fixed by n and the root. AVG divides at the root.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

#define MAX_SEG 1024

cc_status_t cc__reduce_ring(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, root = op->info.root, v = (nc->rank - root + n) % n;
    size_t count = op->info.in_count, es = cc_dtype_size(op->info.dtype), off, len;
    if (!count) return CC_OK;
    const char *in = op->info.sendbuf;
    char *out = op->info.recvbuf;
    if (n == 1) {
        if (in != out) memcpy(out, in, count * es);
        return CC_OK;
    }
    cc__reduce_fn fn;
    CC_CHECK(cc__op_kernel(op, &fn));
    int segs = cc__nseg(nc, count * es, MAX_SEG);
    int to = (nc->rank - 1 + n) % n, from = (nc->rank + 1) % n;
    char *tmp = v < n - 1 ? cc__native_scratch(nc, count * es) : NULL;
    cc__req_t *rq = cc__native_reqs(nc, 2 * segs); /* receives, then sends */
    if (!rq || (v < n - 1 && !tmp)) return CC_ERR_NO_MEMORY;
    uint32_t tag = cc__coll_tag(op, 0);
    for (int k = 0; v < n - 1 && k < segs; k++) {
        cc__chunk(count, segs, k, &off, &len);
        CC_CHECK(cc__net_irecv(nc->net, from, tag, tmp + off * es, len * es, &rq[k]));
    }
    for (int k = 0; k < segs; k++) {
        cc__chunk(count, segs, k, &off, &len);
        const char *piece = in + off * es;
        if (v < n - 1) { /* partial = own op what came from v+1 */
            CC_CHECK(cc__native_wait(nc, &rq[k], 1, op->deadline_ns));
            char *dst = v == 0 ? out + off * es : tmp + off * es;
            fn(dst, piece, tmp + off * es, len);
            piece = dst;
        }
        if (v > 0) CC_CHECK(cc__net_isend(nc->net, to, tag, piece, len * es, &rq[segs + k]));
    }
    if (v == 0) cc__finish_avg(nc, op, out, count);
    return cc__native_wait(nc, rq + segs, segs, op->deadline_ns);
}
