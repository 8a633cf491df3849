/*
 * test_coll_data.c - the collectives that move data without combining it:
 * broadcast, allgather(v), all-to-all(v), gather(v), scatter(v). Every
 * algorithm (forced one by one, then the automatic choice) x dtype x count
 * (0, 1, 7, 1000, 1M+3) x in/out of place x blocking/async x buffers at odd
 * byte offsets, on 1-8 ranks over shared memory and TCP, checked byte for
 * byte (gaps between v blocks must stay untouched). CI runs a sample; the
 * nightly label runs the whole matrix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_coll_util.h"

#define GAP  3     /* elements between v blocks */
#define FILL 0xEEu /* bytes a collective must not touch */

struct tcase {
    cc_comm_t *comm;
    int r, n, root, inplace, async, packed;
    cc_dtype_t dt;
    size_t count, es, off;
};

#define WORK(c) ((c)->async ? &w : NULL)

static void fill_block(char *p, size_t bytes, int r, int blk)
{
    for (size_t j = 0; j < bytes; j++)
        p[j] = (char)tc_byte(r, blk, j);
}

static int check_block(const struct tcase *c, const char *p, size_t bytes, int r, int blk,
                       const char *what)
{
    for (size_t j = 0; j < bytes; j++)
        TC_REQUIRE((unsigned char)p[j] == tc_byte(r, blk, j),
                   "%s %s count %zu inplace %d: block of rank %d byte %zu is 0x%02x, want 0x%02x",
                   what, cc_dtype_name(c->dt), c->count, c->inplace, r, j, (unsigned char)p[j],
                   tc_byte(r, blk, j));
    return 0;
}

/* Per-rank counts with zeros; symmetric in (a, b) so in-place all-to-all-v fits. */
static size_t vcount(const struct tcase *c, int a, int b)
{
    return (a + b) % 4 == 3 ? 0 : c->count + (size_t)((a * b) % 5);
}

/* Displacements: packed (NULL), or blocks in reverse rank order with gaps. */
static size_t *vdispls(const struct tcase *c, const size_t *cnt, size_t *extent)
{
    size_t *d = malloc((size_t)c->n * sizeof(*d)), e = 0;
    for (int p = c->n - 1; p >= 0; p--)
        d[p] = e, e += cnt[p] + (c->packed ? 0 : GAP);
    if (c->packed) /* in rank order */
        for (int p = 0, o = 0; p < c->n; o += (int)cnt[p], p++)
            d[p] = (size_t)o;
    *extent = e;
    return d;
}

static int t_broadcast(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    char *rb = tc_alloc(bytes, c->off), *sb = NULL;
    memset(rb, FILL, bytes);
    if (c->r == c->root) {
        sb = c->inplace ? rb : tc_alloc(bytes, c->off + 1);
        fill_block(sb, bytes, c->root, 0);
    }
    cc_work_t *w = NULL;
    cc_status_t st = cc_broadcast(c->comm, sb, rb, c->count, c->dt, c->root, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "broadcast: %s", cc_status_name(st));
    if (check_block(c, rb, bytes, c->root, 0, "broadcast")) return 1;
    if (sb != rb) tc_free(sb);
    tc_free(rb);
    return 0;
}

static int t_allgather(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    char *rb = tc_alloc((size_t)c->n * bytes, c->off);
    memset(rb, FILL, (size_t)c->n * bytes);
    char *sb = c->inplace ? rb + (size_t)c->r * bytes : tc_alloc(bytes, c->off + 2);
    fill_block(sb, bytes, c->r, 0);
    cc_work_t *w = NULL;
    cc_status_t st = cc_allgather(c->comm, sb, rb, c->count, c->dt, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "allgather: %s", cc_status_name(st));
    for (int p = 0; p < c->n; p++)
        if (check_block(c, rb + (size_t)p * bytes, bytes, p, 0, "allgather")) return 1;
    if (!c->inplace) tc_free(sb);
    tc_free(rb);
    return 0;
}

/* The v blocks of `rb` hold rank p's data (cnt[p] elements at d[p]); gaps hold FILL. */
static int check_v(const struct tcase *c, const char *rb, const size_t *cnt, const size_t *d,
                   size_t ext, int (*src)(const struct tcase *, int), int blk_is_me,
                   const char *what)
{
    char *want = malloc(ext * c->es + 1);
    memset(want, FILL, ext * c->es);
    for (int p = 0; p < c->n; p++)
        fill_block(want + d[p] * c->es, cnt[p] * c->es, src(c, p), blk_is_me ? c->r : 0);
    for (size_t j = 0; j < ext * c->es; j++)
        TC_REQUIRE(rb[j] == want[j],
                   "%s %s count %zu inplace %d packed %d: byte %zu is 0x%02x, "
                   "want 0x%02x",
                   what, cc_dtype_name(c->dt), c->count, c->inplace, c->packed, j,
                   (unsigned char)rb[j], (unsigned char)want[j]);
    free(want);
    return 0;
}

static int same_rank(const struct tcase *c, int p)
{
    (void)c;
    return p;
}

static int t_allgatherv(const struct tcase *c)
{
    size_t *cnt = malloc((size_t)c->n * sizeof(*cnt)), ext;
    for (int p = 0; p < c->n; p++)
        cnt[p] = vcount(c, p, p);
    size_t *d = vdispls(c, cnt, &ext);
    char *rb = tc_alloc(ext * c->es, c->off);
    memset(rb, FILL, ext * c->es);
    size_t mine = cnt[c->r] * c->es;
    char *sb = c->inplace ? rb + d[c->r] * c->es : tc_alloc(mine, c->off + 1);
    fill_block(sb, mine, c->r, 0);
    cc_work_t *w = NULL;
    cc_status_t st =
        cc_allgatherv(c->comm, sb, rb, cnt[c->r], cnt, c->packed ? NULL : d, c->dt, NULL, WORK(c));
    if (c->async) memset(cnt, 0, (size_t)c->n * sizeof(*cnt)); /* the call copied them */
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "allgatherv: %s", cc_status_name(st));
    for (int p = 0; p < c->n; p++)
        cnt[p] = vcount(c, p, p);
    if (check_v(c, rb, cnt, d, ext, same_rank, 0, "allgatherv")) return 1;
    if (!c->inplace) tc_free(sb);
    tc_free(rb);
    free(cnt);
    free(d);
    return 0;
}

static int t_alltoall(const struct tcase *c)
{
    size_t bytes = c->count * c->es, all = (size_t)c->n * bytes;
    char *rb = tc_alloc(all, c->off), *sb = c->inplace ? rb : tc_alloc(all, c->off + 3);
    for (int p = 0; p < c->n; p++)
        fill_block(sb + (size_t)p * bytes, bytes, c->r, p);
    if (!c->inplace) memset(rb, FILL, all);
    cc_work_t *w = NULL;
    cc_status_t st = cc_alltoall(c->comm, sb, rb, c->count, c->dt, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "alltoall: %s", cc_status_name(st));
    for (int p = 0; p < c->n; p++)
        if (check_block(c, rb + (size_t)p * bytes, bytes, p, c->r, "alltoall")) return 1;
    if (!c->inplace) tc_free(sb);
    tc_free(rb);
    return 0;
}

static int t_alltoallv(const struct tcase *c)
{
    int n = c->n;
    size_t *sc = malloc((size_t)n * sizeof(*sc)), *rc = malloc((size_t)n * sizeof(*rc)), se, re;
    for (int p = 0; p < n; p++)
        sc[p] = vcount(c, c->r, p), rc[p] = vcount(c, p, c->r);
    size_t *sd = vdispls(c, sc, &se), *rd = vdispls(c, rc, &re);
    char *rb = tc_alloc(re * c->es, c->off),
         *sb = c->inplace ? rb : tc_alloc(se * c->es, c->off + 1);
    memset(rb, FILL, re * c->es);
    for (int p = 0; p < n; p++) /* in place: block p of recvbuf goes to p */
        fill_block(sb + (c->inplace ? rd[p] : sd[p]) * c->es, sc[p] * c->es, c->r, p);
    cc_work_t *w = NULL;
    const size_t *rdp = c->packed ? NULL : rd, *sdp = c->packed ? NULL : sd;
    cc_status_t st =
        cc_alltoallv(c->comm, sb, rb, c->inplace ? NULL : sc, sdp, rc, rdp, c->dt, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "alltoallv: %s", cc_status_name(st));
    if (check_v(c, rb, rc, rd, re, same_rank, 1, "alltoallv")) return 1;
    if (!c->inplace) tc_free(sb);
    tc_free(rb);
    free(sc), free(rc), free(sd), free(rd);
    return 0;
}

static int t_gather(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    int me = c->r == c->root;
    char *rb = me ? tc_alloc((size_t)c->n * bytes, c->off) : NULL;
    if (me) memset(rb, FILL, (size_t)c->n * bytes);
    char *sb = me && c->inplace ? rb + (size_t)c->root * bytes : tc_alloc(bytes, c->off + 1);
    fill_block(sb, bytes, c->r, 0);
    cc_work_t *w = NULL;
    cc_status_t st = cc_gather(c->comm, sb, rb, c->count, c->dt, c->root, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "gather: %s", cc_status_name(st));
    for (int p = 0; me && p < c->n; p++)
        if (check_block(c, rb + (size_t)p * bytes, bytes, p, 0, "gather")) return 1;
    if (!(me && c->inplace)) tc_free(sb);
    tc_free(rb);
    return 0;
}

static int t_gatherv(const struct tcase *c)
{
    int me = c->r == c->root;
    size_t *cnt = malloc((size_t)c->n * sizeof(*cnt)), ext;
    for (int p = 0; p < c->n; p++)
        cnt[p] = vcount(c, p, p);
    size_t *d = vdispls(c, cnt, &ext), mine = cnt[c->r] * c->es;
    char *rb = me ? tc_alloc(ext * c->es, c->off) : NULL;
    if (me) memset(rb, FILL, ext * c->es);
    char *sb = me && c->inplace ? rb + d[c->r] * c->es : tc_alloc(mine, c->off + 1);
    fill_block(sb, mine, c->r, 0);
    cc_work_t *w = NULL;
    cc_status_t st = cc_gatherv(c->comm, sb, rb, cnt[c->r], me ? cnt : NULL,
                                me && !c->packed ? d : NULL, c->dt, c->root, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "gatherv: %s", cc_status_name(st));
    if (me && check_v(c, rb, cnt, d, ext, same_rank, 0, "gatherv")) return 1;
    if (!(me && c->inplace)) tc_free(sb);
    tc_free(rb);
    free(cnt);
    free(d);
    return 0;
}

static int t_scatter(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    int me = c->r == c->root;
    char *sb = me ? tc_alloc((size_t)c->n * bytes, c->off) : NULL;
    for (int p = 0; me && p < c->n; p++)
        fill_block(sb + (size_t)p * bytes, bytes, c->root, p);
    char *rb = me && c->inplace ? sb + (size_t)c->root * bytes : tc_alloc(bytes, c->off + 1);
    if (!(me && c->inplace)) memset(rb, FILL, bytes);
    cc_work_t *w = NULL;
    cc_status_t st = cc_scatter(c->comm, sb, rb, c->count, c->dt, c->root, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "scatter: %s", cc_status_name(st));
    if (check_block(c, rb, bytes, c->root, c->r, "scatter")) return 1;
    if (!(me && c->inplace)) tc_free(rb);
    tc_free(sb);
    return 0;
}

static int t_scatterv(const struct tcase *c)
{
    int me = c->r == c->root;
    size_t *cnt = malloc((size_t)c->n * sizeof(*cnt)), ext;
    for (int p = 0; p < c->n; p++)
        cnt[p] = vcount(c, p, p);
    size_t *d = vdispls(c, cnt, &ext), mine = cnt[c->r] * c->es;
    char *sb = me ? tc_alloc(ext * c->es, c->off) : NULL;
    for (int p = 0; me && p < c->n; p++)
        fill_block(sb + d[p] * c->es, cnt[p] * c->es, c->root, p);
    char *rb = me && c->inplace ? sb + d[c->r] * c->es : tc_alloc(mine, c->off + 1);
    if (!(me && c->inplace)) memset(rb, FILL, mine);
    cc_work_t *w = NULL;
    cc_status_t st = cc_scatterv(c->comm, sb, rb, me ? cnt : NULL, me && !c->packed ? d : NULL,
                                 cnt[c->r], c->dt, c->root, NULL, WORK(c));
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "scatterv: %s", cc_status_name(st));
    if (check_block(c, rb, mine, c->root, c->r, "scatterv")) return 1;
    if (!(me && c->inplace)) tc_free(rb);
    tc_free(sb);
    free(cnt);
    free(d);
    return 0;
}

struct coll {
    cc_op_type_t type;
    int (*fn)(const struct tcase *c);
    int rooted;
};

static const struct coll colls[] = {
    {CC_OP_BROADCAST, t_broadcast, 1},   {CC_OP_ALLGATHER, t_allgather, 0},
    {CC_OP_ALLGATHERV, t_allgatherv, 0}, {CC_OP_ALLTOALL, t_alltoall, 0},
    {CC_OP_ALLTOALLV, t_alltoallv, 0},   {CC_OP_GATHER, t_gather, 1},
    {CC_OP_GATHERV, t_gatherv, 1},       {CC_OP_SCATTER, t_scatter, 1},
    {CC_OP_SCATTERV, t_scatterv, 1},
};

/* One collective over its matrix: algorithms x dtypes x counts x variants. */
static int matrix(cc_comm_t *comm, const struct coll *co)
{
    const char *algos[16];
    int na = tc_algos(comm, co->type, algos, 16);
    struct tcase c = {.comm = comm, .r = cc_comm_rank(comm), .n = cc_comm_size(comm)};
    for (int a = 0; a < na; a++) {
        tc_force(comm, co->type, algos[a]);
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++)
            for (int ci = 0; ci < 5; ci++)
                for (int v = 0; v < 4; v++) {
                    uint64_t key = tc_key(c.n, (int)co->type, a, dt, ci, v);
                    /* The sample: 1 in 6 small cases, 1 in 120 of the big ones. */
                    if (!tc_pick(key, (ci == 4 ? 120 : 6) * TC_THIN)) continue;
                    c.dt = (cc_dtype_t)dt;
                    c.es = cc_dtype_size(c.dt);
                    c.count = tc_counts[ci];
                    c.inplace = v & 1;
                    c.async = (v >> 1) & 1;
                    c.packed = (int)(key >> 8) & 1;
                    c.off = (size_t)(key >> 12) % 5;
                    c.root = co->rooted ? (int)((key >> 16) % (uint64_t)c.n) : -1;
                    if (co->fn(&c)) {
                        fprintf(stderr,
                                "  (%s, algorithm %s, %d ranks, %s x %zu, root %d, inplace %d, "
                                "async %d)\n",
                                cc_op_type_name(co->type), algos[a][0] ? algos[a] : "auto", c.n,
                                cc_dtype_name(c.dt), c.count, c.root, c.inplace, c.async);
                        return 1;
                    }
                }
    }
    tc_force(comm, co->type, "");
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        if (matrix(comm, &colls[i])) return 1;
    TC_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
    return 0;
}

int main(int argc, char **argv)
{
    static const tc_job_t sample[] = {{1, "auto"}, {2, "auto"}, {3, "auto"}, {5, "auto"},
                                      {8, "auto"}, {2, "tcp"},  {3, "tcp"},  {4, "tcp"}};
    return tc_main(argc, argv, rank_main, sample, sizeof(sample) / sizeof(sample[0]), 600);
}
