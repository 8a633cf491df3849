/*
 * allgather_ring.c - ring allgather (and its v form), and the ring
 * allgather phase that allreduce_ring builds on.
 *
 * In step s (0 .. n-2) rank r sends block r-s to rank r+1 and receives
 * block r-s-1 from rank r-1, straight into its place in the output. Every
 * receive is posted up front (each has its own place), and a received piece
 * (CCOMM_PIPELINE_CHUNK) is forwarded at once, so a large block streams
 * around the ring instead of moving one whole step at a time. Blocks are
 * copied, never combined: every rank ends with the same bits.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

#define MAX_SEG 16

struct ag {
    cc__native_t *nc;
    const cc__op_t *op;
    const cc__blocks_t *blk;
    char *buf;
    size_t es;
    int n, r, nseg;
    size_t seg;     /* piece size (0: whole blocks) */
    uint32_t step0; /* first step number of the tags */
    cc__req_t *rq;  /* [n-1][nseg] receives, then [n-1][nseg] sends */
};

static int blk_of(const struct ag *c, int k)
{
    return ((c->r - k) % c->n + c->n) % c->n;
}

/* Piece k of block b: element offset within the block and length. */
static int piece(const struct ag *c, int b, int k, size_t *off, size_t *len)
{
    size_t cnt = cc__blk_count(c->blk, b);
    int segs = cc__nseg_of(c->seg, cnt * c->es, c->nseg);
    if (k >= segs) return 0;
    cc__chunk(cnt, segs, k, off, len);
    return 1;
}

static char *place(const struct ag *c, int b)
{
    return c->buf + cc__blk_displ(c->blk, b) * c->es;
}

static cc_status_t post_recvs(struct ag *c)
{
    size_t off, len;
    for (int s = 0; s < c->n - 1; s++) {
        int b = blk_of(c, s + 1);
        for (int k = 0; piece(c, b, k, &off, &len); k++)
            CC_CHECK(cc__net_irecv(
                c->nc->net, (c->r - 1 + c->n) % c->n, cc__coll_tag(c->op, c->step0 + (uint32_t)s),
                place(c, b) + off * c->es, len * c->es, &c->rq[s * c->nseg + k]));
    }
    return CC_OK;
}

/* Send piece k of step s's block, which starts at `block`. */
static cc_status_t post_send(struct ag *c, int s, int k, const char *block)
{
    size_t off, len;
    if (!piece(c, blk_of(c, s), k, &off, &len)) return CC_OK;
    cc__req_t *req = &c->rq[(c->n - 1 + s) * c->nseg + k];
    return cc__net_isend(c->nc->net, (c->r + 1) % c->n, cc__coll_tag(c->op, c->step0 + (uint32_t)s),
                         block + off * c->es, len * c->es, req);
}

static cc_status_t run(struct ag *c, const char *own)
{
    size_t cnt = cc__blk_count(c->blk, c->r);
    char *mine = place(c, c->r);
    CC_CHECK(post_recvs(c));
    /* Step 0 sends from wherever this rank's block is; the copy into place overlaps it. */
    const char *src = own && cnt ? (const char *)own : mine;
    for (int k = 0; k < c->nseg; k++)
        CC_CHECK(post_send(c, 0, k, src));
    if (cnt && src != mine) cc__native_copy(c->nc, mine, src, cnt * c->es);
    size_t off, len;
    for (int s = 0; s < c->n - 1; s++) {
        int b = blk_of(c, s + 1);
        for (int k = 0; piece(c, b, k, &off, &len); k++) {
            CC_CHECK(cc__native_wait(c->nc, &c->rq[s * c->nseg + k], 1, c->op->deadline_ns));
            if (s + 1 < c->n - 1) CC_CHECK(post_send(c, s + 1, k, place(c, b)));
        }
    }
    return cc__native_wait(c->nc, c->rq + (c->n - 1) * c->nseg, (c->n - 1) * c->nseg,
                           c->op->deadline_ns);
}

/*
 * The piece size of an allgather's ring (0: whole blocks). A CCOMM_PIPELINE_CHUNK that is
 * set holds; under auto (1 MiB on 3 or more ranks: util.c), two ranks forward nothing, and
 * over TCP every piece pays a rendezvous: a block of up to 512 KiB goes whole, and from
 * 1 MiB on 256K pieces were faster. TCP, 2 ranks, ccperf sizes (the whole output: a block
 * is half), medians of 5-9 launches, us, 256K pieces / whole blocks, 2026-12-06 03:19-03:40:
 *   bench/ab.sh --a build --b build --b-env CCOMM_PIPELINE_CHUNK=1M --coll allgather
 *     --transport tcp --sizes "512K 1M 2M 4M" --launches 5 (and 9)
 *   1M 165.7/139.2, 164.7/135.2, 172.8/142.3, 117.3/95.9, 115.7/96.6 (1.19-1.22; an A/A
 *   run gave 0.96); 2M (blocks of 1 MiB) 0.71-0.90.
 * allreduce_ring's allgather phase (type ALLREDUCE), not measured so, keeps the chunk.
 */
size_t cc__ring_allgather_piece(int n, cc_op_type_t type, size_t block, size_t chunk, int is_auto)
{
    if (!is_auto || type == CC_OP_ALLREDUCE || n != 2) return chunk;
    return block <= 512 * 1024 ? 0 : chunk;
}

cc_status_t cc__ring_allgather(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk, void *buf,
                               const void *own, uint32_t step0)
{
    struct ag c = {.nc = nc,
                   .op = op,
                   .blk = blk,
                   .buf = buf,
                   .n = nc->size,
                   .r = nc->rank,
                   .step0 = step0,
                   .es = cc_dtype_size(op->info.dtype)};
    if (c.n == 1) {
        size_t cnt = cc__blk_count(blk, 0);
        if (own && cnt && own != place(&c, 0)) memcpy(place(&c, 0), own, cnt * c.es);
        return CC_OK;
    }
    size_t most = cc__blk_max(blk, c.n) * c.es;
    c.seg = cc__ring_allgather_piece(c.n, op->info.type, most, nc->seg_bytes, nc->seg_auto);
    c.nseg = cc__nseg_of(c.seg, most, MAX_SEG);
    c.rq = cc__native_reqs(nc, 2 * (c.n - 1) * c.nseg);
    if (!c.rq) return CC_ERR_NO_MEMORY;
    return run(&c, own);
}

cc_status_t cc__allgather_ring(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.in_count) return CC_OK; /* every rank passed sendcount 0 */
    cc__blocks_t blk = {.count = op->info.in_count};
    return cc__ring_allgather(nc, op, &blk, op->info.recvbuf, op->info.sendbuf, 0);
}

cc_status_t cc__allgatherv_ring(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.out_count) return CC_OK; /* the counts are the same everywhere: all 0 */
    cc__blocks_t blk = {.counts = op->recv_counts, .displs = op->recv_displs};
    return cc__ring_allgather(nc, op, &blk, op->info.recvbuf, op->info.sendbuf, 0);
}
