/*
 * test_shm_move.c - the shared-memory algorithms that move data without
 * reducing it (shm_flat and shm_cma of broadcast, allgather, alltoall,
 * gather and scatter; broadcast's, allgather's and alltoall's shm_stream
 * (alltoall's streams at 2 ranks and runs shm_cma at others); the shm
 * barrier), each forced in turn on 2, 3, 4 and 8 forked ranks of one host:
 * counts 0, 1, 7, 1000 and 1M+3 of 1-, 2-, 4- and 8-byte elements, in and
 * out of place, buffers off the 64-byte
 * boundary, every root; each byte checked against the pattern its sender
 * wrote. Receive buffers start poisoned, so a block never written shows.
 * The arena's inline payload (CC__ARENA_INLINE, transport/arena.h): staged
 * bytes at 24 / 25 (one arrival line or more) and at and one past the
 * inline bound, in streaks of ops that each send other bytes while one rank
 * starts late, so a root that runs ahead wraps the arrival slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_coll_util.h"
#include "transport/arena.h"

static const char *const algos[] = {"shm_flat", "shm_cma", "shm_stream"};
#define NALGOS ((int)(sizeof(algos) / sizeof(algos[0])))

struct tcase {
    cc_comm_t *comm;
    int r, n, root, inplace;
    cc_dtype_t dt;
    size_t count, bytes, off; /* count elements = bytes per block */
    const char *algo;
    int salt; /* added to every block number: each op of a streak sends other bytes */
};

static void put_block(const struct tcase *c, unsigned char *p, int r, int blk)
{
    for (size_t j = 0; j < c->bytes; j++) p[j] = tc_byte(r, blk + c->salt, j);
}

static int check_block(const struct tcase *c, const unsigned char *p, int r, int blk,
                       const char *what)
{
    for (size_t j = 0; j < c->bytes; j++)
        TC_REQUIRE(p[j] == tc_byte(r, blk + c->salt, j),
                   "%s/%s count %zu x %zu B inplace %d root %d: block from rank %d (#%d) byte %zu "
                   "is %u, want %u",
                   what, c->algo, c->count, cc_dtype_size(c->dt), c->inplace, c->root, r, blk, j,
                   p[j], tc_byte(r, blk + c->salt, j));
    return 0;
}

/* A buffer of nblk blocks, poisoned. */
static unsigned char *blocks(const struct tcase *c, int nblk, size_t off)
{
    unsigned char *p = tc_alloc((size_t)nblk * c->bytes + 1, off);
    memset(p, 0xee, (size_t)nblk * c->bytes + 1);
    return p;
}

static int t_broadcast(const struct tcase *c)
{
    unsigned char *rb = blocks(c, 1, c->off), *sb = rb;
    if (c->r == c->root && !c->inplace) sb = blocks(c, 1, c->off + 1);
    if (c->r == c->root) put_block(c, sb, c->root, 0);
    cc_status_t st = cc_broadcast(c->comm, sb, rb, c->count, c->dt, c->root, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "broadcast/%s: %s", c->algo, cc_status_name(st));
    int bad = check_block(c, rb, c->root, 0, "broadcast");
    if (sb != rb) tc_free(sb);
    tc_free(rb);
    return bad;
}

static int t_allgather(const struct tcase *c)
{
    unsigned char *rb = blocks(c, c->n, c->off);
    unsigned char *sb = c->inplace ? rb + (size_t)c->r * c->bytes : blocks(c, 1, c->off + 3);
    put_block(c, sb, c->r, 0);
    cc_status_t st = cc_allgather(c->comm, sb, rb, c->count, c->dt, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "allgather/%s: %s", c->algo, cc_status_name(st));
    int bad = 0;
    for (int q = 0; q < c->n && !bad; q++)
        bad = check_block(c, rb + (size_t)q * c->bytes, q, 0, "allgather");
    if (!c->inplace) tc_free(sb);
    tc_free(rb);
    return bad;
}

static int t_alltoall(const struct tcase *c)
{
    unsigned char *sb = blocks(c, c->n, c->off);
    unsigned char *rb = c->inplace ? sb : blocks(c, c->n, c->off + 5);
    for (int q = 0; q < c->n; q++) put_block(c, sb + (size_t)q * c->bytes, c->r, q);
    cc_status_t st = cc_alltoall(c->comm, sb, rb, c->count, c->dt, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "alltoall/%s: %s", c->algo, cc_status_name(st));
    int bad = 0;
    for (int q = 0; q < c->n && !bad; q++)
        bad = check_block(c, rb + (size_t)q * c->bytes, q, c->r, "alltoall");
    if (!c->inplace) tc_free(rb);
    tc_free(sb);
    return bad;
}

static int t_gather(const struct tcase *c)
{
    int me = c->r == c->root;
    unsigned char *rb = me ? blocks(c, c->n, c->off) : NULL;
    unsigned char *sb = me && c->inplace ? rb + (size_t)c->r * c->bytes : blocks(c, 1, c->off + 7);
    put_block(c, sb, c->r, 0);
    cc_status_t st = cc_gather(c->comm, sb, rb, c->count, c->dt, c->root, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "gather/%s: %s", c->algo, cc_status_name(st));
    int bad = 0;
    for (int q = 0; me && q < c->n && !bad; q++)
        bad = check_block(c, rb + (size_t)q * c->bytes, q, 0, "gather");
    if (!(me && c->inplace)) tc_free(sb);
    tc_free(rb);
    return bad;
}

static int t_scatter(const struct tcase *c)
{
    int me = c->r == c->root;
    unsigned char *sb = me ? blocks(c, c->n, c->off) : NULL;
    unsigned char *rb = me && c->inplace ? sb + (size_t)c->r * c->bytes : blocks(c, 1, c->off + 9);
    for (int q = 0; me && q < c->n; q++) put_block(c, sb + (size_t)q * c->bytes, c->root, q);
    cc_status_t st = cc_scatter(c->comm, sb, rb, c->count, c->dt, c->root, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "scatter/%s: %s", c->algo, cc_status_name(st));
    int bad = check_block(c, rb, c->root, c->r, "scatter");
    if (!(me && c->inplace)) tc_free(rb);
    tc_free(sb);
    return bad;
}

static const struct {
    cc_op_type_t type;
    int (*fn)(const struct tcase *c);
} colls[] = {
    {CC_OP_BROADCAST, t_broadcast}, {CC_OP_ALLGATHER, t_allgather}, {CC_OP_ALLTOALL, t_alltoall},
    {CC_OP_GATHER, t_gather},       {CC_OP_SCATTER, t_scatter},
};

static int matrix(struct tcase *c)
{
    static const cc_dtype_t dts[] = {CC_UINT8, CC_FLOAT16, CC_FLOAT32, CC_FLOAT64};
    int k = 0;
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        for (int ci = 0; ci < 5; ci++) {
            for (int v = 0; v < 2; v++, k++) {
                /* Beyond 4 ranks (8 processes on 2 cores here) a sample of the larger counts. */
                if (c->n > 4 && ci >= 3 && (k + (int)d) % 4 != 0) continue;
                /* shm_stream copies bytes: 1- and 8-byte elements cover its sizes and offsets
                 * (and keep the test's time in CI's budget). */
                if (!strcmp(c->algo, "shm_stream") && (d == 1 || d == 2)) continue;
                if (TC_THIN > 1 && ci != 2 && (k + (int)d) % TC_THIN) continue;
                c->dt = dts[d];
                c->count = tc_counts[ci];
                c->bytes = c->count * cc_dtype_size(c->dt);
                c->inplace = v;
                c->off = cc_dtype_size(c->dt) * (size_t)(k % 3);
                c->root = k % c->n;
                for (size_t f = 0; f < sizeof(colls) / sizeof(colls[0]); f++) {
                    /* shm_stream is broadcast's, allgather's and alltoall's only. */
                    if (!strcmp(c->algo, "shm_stream") && colls[f].type != CC_OP_BROADCAST &&
                        colls[f].type != CC_OP_ALLGATHER && colls[f].type != CC_OP_ALLTOALL)
                        continue;
                    tc_force(c->comm, colls[f].type, c->algo);
                    if (colls[f].fn(c)) return 1;
                }
            }
        }
    return 0;
}

/* Whose staged bytes are n blocks (the others stage one). */
static int stages_n_blocks(cc_op_type_t t)
{
    return t == CC_OP_ALLTOALL || t == CC_OP_SCATTER;
}

/*
 * Each collective forced to shm_flat, float32 / uint8 blocks whose staged bytes sit at the
 * inline edges: 24 | 25 (the arrival's own line or more), the bound | one past it (inline or
 * the data area). A streak of 2 x CC__ARENA_DEPTH + 3 ops per case, other bytes each time;
 * the last rank sleeps before the streak, so a root that waits for nobody runs ahead.
 */
static int inline_edges(struct tcase *c)
{
    static const size_t edges[] = {24, 25, CC__ARENA_INLINE, CC__ARENA_INLINE + 1};
    c->algo = "shm_flat";
    for (size_t f = 0; f < sizeof(colls) / sizeof(colls[0]); f++)
        for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
            size_t per = stages_n_blocks(colls[f].type) ? (size_t)c->n : 1;
            size_t blk = edges[e] / per + (edges[e] % 2 && per > 1); /* odd edges: past it */
            c->dt = blk % 4 ? CC_UINT8 : CC_FLOAT32;
            c->count = blk / cc_dtype_size(c->dt);
            c->bytes = blk;
            c->root = (int)(e + f) % c->n;
            c->inplace = (int)e % 2;
            c->off = e;
            tc_force(c->comm, colls[f].type, c->algo);
            if (c->r == c->n - 1) usleep(2000);
            for (c->salt = 0; c->salt < 2 * CC__ARENA_DEPTH + 3; c->salt++)
                if (colls[f].fn(c)) return 1;
            c->salt = 0;
            tc_force(c->comm, colls[f].type, "");
        }
    return 0;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Barriers back to back, then one a late rank holds up: nobody leaves before it enters
 * (CLOCK_MONOTONIC is one clock for every process of the host). */
static int barriers(cc_comm_t *comm, int r)
{
    tc_force(comm, CC_OP_BARRIER, "shm");
    for (int i = 0; i < 200; i++) TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier %d", i);
    int64_t enter = 0, left, last_enter = 0, first_left = 0;
    if (r == 0) {
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    enter = now_ns();
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "late barrier");
    left = now_ns();
    TC_REQUIRE(cc_allreduce(comm, &enter, &last_enter, 1, CC_INT64, CC_MAX, NULL, NULL) == CC_OK,
               "max");
    TC_REQUIRE(cc_allreduce(comm, &left, &first_left, 1, CC_INT64, CC_MIN, NULL, NULL) == CC_OK,
               "min");
    TC_REQUIRE(first_left >= last_enter, "a rank left the barrier %lld ns before the last entered",
               (long long)(last_enter - first_left));
    tc_force(comm, CC_OP_BARRIER, "");
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    struct tcase c = {.comm = comm, .r = rank, .n = size};
    for (int a = 0; a < NALGOS; a++) {
        c.algo = algos[a];
        if (matrix(&c)) return 1;
    }
    if (inline_edges(&c) || barriers(comm, rank)) return 1;
    TC_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
    return 0;
}

#define RUN(n) assert_int_equal(tc_run(n, "auto", rank_main, 600), 0)
static void test_2(void **s) { (void)s; RUN(2); }
static void test_3(void **s) { (void)s; RUN(3); }
static void test_4(void **s) { (void)s; RUN(4); }
static void test_8(void **s) { (void)s; RUN(8); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_2),
        cmocka_unit_test(test_3),
        cmocka_unit_test(test_4),
        cmocka_unit_test(test_8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
