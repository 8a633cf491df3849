/*
 * alltoall_linear.c - all-to-all (and alltoallv) in one round: every rank
 * posts a receive from and a send to every other rank at once and waits for
 * them all. One message latency instead of n - 1: the choice for small
 * blocks, where the rounds of the pairwise exchange cost more than the
 * data. In place, the input is first copied to scratch.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

static cc_status_t run(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *sb,
                       const cc__blocks_t *rb)
{
    int n = nc->size, r = nc->rank;
    size_t es = cc_dtype_size(op->info.dtype);
    const char *in = op->info.sendbuf;
    char *out = op->info.recvbuf;
    if ((const void *)in == (void *)out && out) { /* in place: send from a copy */
        size_t ext = 0;
        for (int p = 0; p < n; p++) {
            size_t e = cc__blk_displ(rb, p) + cc__blk_count(rb, p);
            if (cc__blk_count(rb, p) && e > ext) ext = e;
        }
        char *copy = cc__native_scratch(nc, ext * es + 1);
        if (!copy) return CC_ERR_NO_MEMORY;
        memcpy(copy, out, ext * es);
        in = copy;
        sb = rb;
    }
    if (cc__blk_count(sb, r) != cc__blk_count(rb, r)) {
        cc_log_error(CC_SUBSYS_COLL,
                     "all_to_all_v: rank %d sends %zu elements to itself but "
                     "expects %zu",
                     r, cc__blk_count(sb, r), cc__blk_count(rb, r));
        return CC_ERR_MISMATCH;
    }
    cc__req_t *rq = cc__native_reqs(nc, 2 * n);
    if (!rq) return CC_ERR_NO_MEMORY;
    CC_CHECK(cc__post_blocks(nc, op, rb, out, 0, r, rq));
    CC_CHECK(cc__post_blocks(nc, op, sb, (char *)in, 1, r, rq + n));
    size_t own = cc__blk_count(rb, r);
    char *dst = own ? out + cc__blk_displ(rb, r) * es : NULL;
    const char *src = own ? in + cc__blk_displ(sb, r) * es : NULL;
    if (own && src != dst) cc__native_copy(nc, dst, src, own * es);
    return cc__native_wait(nc, rq, 2 * n, op->deadline_ns);
}

cc_status_t cc__alltoall_linear(cc__native_t *nc, cc__op_t *op)
{
    cc__blocks_t sb, rb;
    return cc__op_blocks(nc, op, &sb, &rb) ? run(nc, op, &sb, &rb) : CC_OK;
}
