/*
 * alltoall_pairwise.c - pairwise exchange all-to-all (and alltoallv): in
 * step s (0 .. n-1) rank r swaps blocks with rank (s - r) mod n, a
 * symmetric pairing (each of the two names the other), so every step is n/2
 * simultaneous two-way exchanges and each link carries both directions at
 * once. Exactly one step pairs a rank with itself: its own block is copied
 * then, or rather during the next step's exchange (cc__native_copy: with 2
 * ranks the copy came first and the exchange waited for it). n steps of one
 * block: the choice for large blocks. In place, the block to send goes to
 * scratch first, since the same block receives.
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
    char *out = op->info.recvbuf, *tmp = NULL;
    int inplace = (const void *)in == (void *)out && out;
    if (inplace && !(tmp = cc__native_scratch(nc, cc__blk_max(rb, n) * es + 1)))
        return CC_ERR_NO_MEMORY;
    cc__req_t *rq = cc__native_reqs(nc, 2);
    if (!rq) return CC_ERR_NO_MEMORY;
    char *self_dst = NULL; /* the own block's copy, not done yet */
    const char *self_src = NULL;
    size_t self_len = 0;
    for (int s = 0; s < n; s++) {
        int p = ((s - r) % n + n) % n;
        size_t rc = cc__blk_count(rb, p), sc = inplace ? rc : cc__blk_count(sb, p);
        char *dst = rc ? out + cc__blk_displ(rb, p) * es : NULL;
        const char *src = sc && !inplace ? in + cc__blk_displ(sb, p) * es : dst;
        if (p == r) {
            if (sc != rc) {
                cc_log_error(CC_SUBSYS_COLL,
                             "all_to_all_v: rank %d sends %zu elements to itself "
                             "but expects %zu",
                             r, sc, rc);
                return CC_ERR_MISMATCH;
            }
            if (rc && src != dst) self_dst = dst, self_src = src, self_len = rc * es;
            continue;
        }
        if (inplace && sc) memcpy(tmp, dst, sc * es), src = tmp;
        uint32_t tag = cc__coll_tag(op, (uint32_t)s);
        CC_CHECK(cc__net_irecv(nc->net, p, tag, dst, rc * es, &rq[0]));
        CC_CHECK(cc__net_isend(nc->net, p, tag, src, sc * es, &rq[1]));
        if (self_len) cc__native_copy(nc, self_dst, self_src, self_len);
        self_len = 0;
        CC_CHECK(cc__native_wait(nc, rq, 2, op->deadline_ns));
    }
    if (self_len) memcpy(self_dst, self_src, self_len); /* the last step was the own one */
    return CC_OK;
}

cc_status_t cc__alltoall_pairwise(cc__native_t *nc, cc__op_t *op)
{
    cc__blocks_t sb, rb;
    return cc__op_blocks(nc, op, &sb, &rb) ? run(nc, op, &sb, &rb) : CC_OK;
}
