/*
 * scatter_linear.c - linear scatter and scatterv: the root sends every
 * rank its block straight from the input, all at once, and copies its own;
 * every other rank receives once. The mirror of gather_linear.c.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__scatter_linear(cc__native_t *nc, cc__op_t *op)
{
    cc__blocks_t sb, rb;
    int root = op->info.root, v = op->info.type == CC_OP_SCATTERV;
    size_t es = cc_dtype_size(op->info.dtype), own = op->info.out_count;
    if (!cc__op_blocks(nc, op, &sb, &rb) && !v) return CC_OK; /* as gather_linear.c */
    if (nc->rank != root)
        return cc__net_recv(nc->net, root, cc__coll_tag(op, 0), op->info.recvbuf, own * es,
                            op->deadline_ns);
    cc__req_t *rq = cc__native_reqs(nc, nc->size);
    if (!rq) return CC_ERR_NO_MEMORY;
    char *in = (char *)op->info.sendbuf; /* only read: the sends take const buffers */
    CC_CHECK(cc__post_blocks(nc, op, &sb, in, 1, root, rq));
    const char *src = own ? in + cc__blk_displ(&sb, root) * es : NULL; /* the API checked own */
    if (own && src != op->info.recvbuf) memcpy(op->info.recvbuf, src, own * es);
    return cc__native_wait(nc, rq, nc->size, op->deadline_ns);
}
