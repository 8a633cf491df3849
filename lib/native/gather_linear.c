/*
 * gather_linear.c - linear gather and gatherv: the root posts a receive
 * from every rank straight into its place in the output and waits for them
 * all; every other rank sends its block once. One round, each block moved
 * once with no relay: the choice for large blocks and for gatherv, whose
 * counts only the root knows.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

cc_status_t cc__gather_linear(cc__native_t *nc, cc__op_t *op)
{
    cc__blocks_t sb, rb;
    int root = op->info.root, v = op->info.type == CC_OP_GATHERV;
    size_t es = cc_dtype_size(op->info.dtype), own = op->info.in_count;
    /* gatherv: every rank sends even an empty block, so a count the root disagrees with
     * ends in CC_ERR_MISMATCH instead of a wait. */
    if (!cc__op_blocks(nc, op, &sb, &rb) && !v) return CC_OK;
    if (nc->rank != root)
        return cc__net_send(nc->net, root, cc__coll_tag(op, 0), op->info.sendbuf, own * es,
                            op->deadline_ns);
    cc__req_t *rq = cc__native_reqs(nc, nc->size);
    if (!rq) return CC_ERR_NO_MEMORY;
    char *out = op->info.recvbuf;
    CC_CHECK(cc__post_blocks(nc, op, &rb, out, 0, root, rq));
    char *dst = own ? out + cc__blk_displ(&rb, root) * es : NULL; /* the API checked own's size */
    if (own && dst != op->info.sendbuf) memcpy(dst, op->info.sendbuf, own * es);
    return cc__native_wait(nc, rq, nc->size, op->deadline_ns);
}
