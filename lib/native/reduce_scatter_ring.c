/*
 * reduce_scatter_ring.c - ring reduce-scatter (and its v form), and the
 * ring reduce-scatter phase that allreduce_ring builds on.
 *
 * In step s (0 .. n-2) rank r sends block r-s-1 to rank r+1 and receives
 * block r-s-2 from rank r-1, adding its own input to what came in; after
 * n-1 steps rank r holds block r summed over every rank. Each block thus
 * travels the ring once, starting at the rank after its owner:
 *
 *   block b = ((x[b+1] op x[b+2]) op x[b+3]) ... op x[b]     (ranks mod n)
 *
 * a left fold in ring order that ends at the owner. The order depends only
 * on b and n, so the result is the same bits run after run.
 *
 * Pipelining: a block is cut into pieces (CCOMM_PIPELINE_CHUNK); piece k is
 * forwarded as soon as it is reduced, and the receives of the next step are
 * posted before this step's are waited for, so sending, receiving and
 * reducing overlap. Received pieces go to one of three staging areas of a
 * block each (receiving step s+1, reducing step s, sending step s-1's
 * result), reduced there in place, and the last step writes straight into
 * the output: no copy of the input is made.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

#define MAX_SEG 16

struct rs {
    cc__native_t *nc;
    const cc__op_t *op;
    const cc__blocks_t *blk;
    const char *in;
    char *out;
    char *stage[3]; /* staging areas, by step % 3 */
    size_t es;
    int n, r, nseg;
    uint32_t step0; /* first step number of the tags */
    cc__req_t *rq;  /* [3][nseg] receives, then [3][nseg] sends */
    cc__reduce_fn fn;
};

static int blk_of(const struct rs *c, int k)
{
    return ((c->r - k) % c->n + c->n) % c->n;
}

/* Piece k of block b: element offset within the block and length. */
static int piece(const struct rs *c, int b, int k, size_t *off, size_t *len)
{
    size_t cnt = cc__blk_count(c->blk, b);
    int segs = cc__nseg(c->nc, cnt * c->es, c->nseg);
    if (k >= segs) return 0;
    cc__chunk(cnt, segs, k, off, len);
    return 1;
}

static cc__req_t *rreq(struct rs *c, int s, int k)
{
    return &c->rq[(s % 3) * c->nseg + k];
}
static cc__req_t *sreq(struct rs *c, int s, int k)
{
    return &c->rq[(3 + s % 3) * c->nseg + k];
}

static cc_status_t post_recv(struct rs *c, int s)
{
    int b = blk_of(c, s + 2);
    size_t off, len;
    for (int k = 0; piece(c, b, k, &off, &len); k++)
        CC_CHECK(cc__net_irecv(c->nc->net, (c->r - 1 + c->n) % c->n,
                               cc__coll_tag(c->op, c->step0 + (uint32_t)s),
                               c->stage[s % 3] + off * c->es, len * c->es, rreq(c, s, k)));
    return CC_OK;
}

/* Send piece k of step s's block, read from base (the block's start). */
static cc_status_t post_send(struct rs *c, int s, int k, const char *base)
{
    size_t off, len;
    if (!piece(c, blk_of(c, s + 1), k, &off, &len)) return CC_OK;
    return cc__net_isend(c->nc->net, (c->r + 1) % c->n, cc__coll_tag(c->op, c->step0 + (uint32_t)s),
                         base + off * c->es, len * c->es, sreq(c, s, k));
}

/* Reduce the pieces of step s as they arrive, forwarding each to step s+1. */
static cc_status_t reduce_step(struct rs *c, int s)
{
    int b = blk_of(c, s + 2), last = s == c->n - 2;
    const char *own = c->in + cc__blk_displ(c->blk, b) * c->es;
    size_t off, len;
    for (int k = 0; piece(c, b, k, &off, &len); k++) {
        CC_CHECK(cc__native_wait(c->nc, rreq(c, s, k), 1, c->op->deadline_ns));
        char *got = c->stage[s % 3] + off * c->es;
        if (len) c->fn(last ? c->out + off * c->es : got, got, own + off * c->es, len);
        if (!last) CC_CHECK(post_send(c, s + 1, k, c->stage[s % 3]));
    }
    return CC_OK;
}

static cc_status_t run(struct rs *c)
{
    const char *first = c->in + cc__blk_displ(c->blk, blk_of(c, 1)) * c->es;
    CC_CHECK(post_recv(c, 0));
    for (int k = 0; k < c->nseg; k++)
        CC_CHECK(post_send(c, 0, k, first));
    for (int s = 0; s < c->n - 1; s++) {
        /* Step s-1's sends read the area that step s+1 receives into. */
        if (s >= 1)
            CC_CHECK(cc__native_wait(c->nc, sreq(c, s - 1, 0), c->nseg, c->op->deadline_ns));
        if (s + 1 < c->n - 1) CC_CHECK(post_recv(c, s + 1));
        CC_CHECK(reduce_step(c, s));
    }
    return cc__native_wait(c->nc, sreq(c, c->n - 2, 0), c->nseg, c->op->deadline_ns);
}

cc_status_t cc__ring_reduce_scatter(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk,
                                    const void *in, void *out, uint32_t step0)
{
    struct rs c = {.nc = nc,
                   .op = op,
                   .blk = blk,
                   .in = in,
                   .out = out,
                   .n = nc->size,
                   .r = nc->rank,
                   .step0 = step0,
                   .es = cc_dtype_size(op->info.dtype)};
    size_t own = cc__blk_count(blk, c.r);
    if (c.n == 1) {
        const char *src = c.in + cc__blk_displ(blk, 0) * c.es;
        if (own && src != c.out) memcpy(c.out, src, own * c.es);
        return CC_OK;
    }
    CC_CHECK(cc__op_kernel(op, &c.fn));
    size_t max = cc__blk_max(blk, c.n) * c.es;
    c.nseg = cc__nseg(nc, max, MAX_SEG);
    char *st = cc__native_scratch(nc, 3 * max + 1);
    c.rq = st ? cc__native_reqs(nc, 6 * c.nseg) : NULL;
    if (!c.rq) return CC_ERR_NO_MEMORY;
    for (int i = 0; i < 3; i++)
        c.stage[i] = st + (size_t)i * max;
    return run(&c);
}

cc_status_t cc__reduce_scatter_ring(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.in_count) return CC_OK; /* every rank passed recvcount 0 */
    cc__blocks_t blk = {.count = op->info.out_count};
    CC_CHECK(cc__ring_reduce_scatter(nc, op, &blk, op->info.sendbuf, op->info.recvbuf, 0));
    cc__finish_avg(nc, op, op->info.recvbuf, op->info.out_count);
    return CC_OK;
}

cc_status_t cc__reduce_scatterv_ring(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.in_count) return CC_OK; /* the counts are the same everywhere: all 0 */
    cc__blocks_t blk = {.counts = op->recv_counts, .displs = op->recv_displs};
    CC_CHECK(cc__ring_reduce_scatter(nc, op, &blk, op->info.sendbuf, op->info.recvbuf, 0));
    cc__finish_avg(nc, op, op->info.recvbuf, op->info.out_count);
    return CC_OK;
}
