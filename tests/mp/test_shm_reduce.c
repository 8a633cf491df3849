/*
 * test_shm_reduce.c - the shared-memory reducing algorithms (shm_flat and
 * shm_cma of allreduce, reduce and reduce_scatter in lib/native, and
 * allreduce's shm_stream),
 * each forced in turn on 2, 3, 4 and 8 forked ranks of one host:
 *  - every dtype/op pair the kernels support x counts 0, 1, 7, 1000 x in
 *    and out of place x buffers off the 64-byte boundary, against a
 *    reference each rank computes; 1M+3 elements for a spread of pairs;
 *  - shm_stream's piece and share edges and its non-temporal output path;
 *  - the arena's staging size (the automatic choice runs flat through it):
 *    staged bytes one element short of, at and one past CC__ARENA_DATA,
 *    chosen automatically and each algorithm forced;
 *  - determinism: random floats (float32, float16, bfloat16, float64) give
 *    the same bits on every rank, in both algorithms, in and out of place,
 *    and reduce / reduce_scatter give allreduce's bits for their part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernels.h"
#include "test_coll_util.h"
#include "native/shm_algo.h"
#include "transport/arena.h"

static const char *const algos[] = {"shm_flat", "shm_cma", "shm_stream"};
#define NALGOS ((int)(sizeof(algos) / sizeof(algos[0])))

/* shm_stream is an allreduce only. */
static int applies(cc_op_type_t type, const char *algo)
{
    return type == CC_OP_ALLREDUCE || strcmp(algo, "shm_stream") != 0;
}

struct tcase {
    cc_comm_t *comm;
    int r, n, root, inplace;
    cc_dtype_t dt;
    cc_redop_t op;
    size_t count, es, off;
    const char *algo;
};

static const cc_op_opts_t *opts_of(const struct tcase *c, cc_op_opts_t *o)
{
    *o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o->premul_scalar = TC_PREMUL;
    return o;
}

static void fill(const struct tcase *c, void *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) cc__elem_put(buf, c->dt, i, tc_input(c->r, i, c->op));
}

static int check(const struct tcase *c, const void *buf, size_t first, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double got = cc__elem_get(buf, c->dt, i), want = tc_expect(c->n, first + i, c->op, c->dt);
        TC_REQUIRE(got == want, "%s/%s %s %s count %zu inplace %d off %zu: [%zu] = %g, want %g",
                   what, c->algo, cc_dtype_name(c->dt), cc_redop_name(c->op), c->count,
                   c->inplace, c->off, first + i, got, want);
    }
    return 0;
}

static int t_allreduce(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    char *sb = tc_alloc(bytes, c->off), *rb = c->inplace ? sb : tc_alloc(bytes, c->off + c->es);
    fill(c, sb, c->count);
    cc_op_opts_t o;
    cc_status_t st = cc_allreduce(c->comm, sb, rb, c->count, c->dt, c->op, opts_of(c, &o), NULL);
    TC_REQUIRE(st == CC_OK, "allreduce/%s: %s", c->algo, cc_status_name(st));
    int bad = check(c, rb, 0, c->count, "allreduce");
    if (rb != sb) tc_free(rb);
    tc_free(sb);
    return bad;
}

static int t_reduce(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    int me = c->r == c->root;
    char *sb = tc_alloc(bytes, c->off);
    char *rb = !me ? NULL : c->inplace ? sb : tc_alloc(bytes, c->off + c->es);
    fill(c, sb, c->count);
    cc_op_opts_t o;
    cc_status_t st = cc_reduce(c->comm, sb, rb, c->count, c->dt, c->op, c->root, opts_of(c, &o),
                               NULL);
    TC_REQUIRE(st == CC_OK, "reduce/%s: %s", c->algo, cc_status_name(st));
    int bad = me ? check(c, rb, 0, c->count, "reduce") : 0;
    if (rb && rb != sb) tc_free(rb);
    tc_free(sb);
    return bad;
}

static int t_reduce_scatter(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    char *sb = tc_alloc((size_t)c->n * bytes, c->off);
    char *rb = c->inplace ? sb + (size_t)c->r * bytes : tc_alloc(bytes, c->off + c->es);
    fill(c, sb, (size_t)c->n * c->count);
    cc_op_opts_t o;
    cc_status_t st = cc_reduce_scatter(c->comm, sb, rb, c->count, c->dt, c->op, opts_of(c, &o),
                                       NULL);
    TC_REQUIRE(st == CC_OK, "reduce_scatter/%s: %s", c->algo, cc_status_name(st));
    int bad = check(c, rb, (size_t)c->r * c->count, c->count, "reduce_scatter");
    if (!c->inplace) tc_free(rb);
    tc_free(sb);
    return bad;
}

static const struct {
    cc_op_type_t type;
    int (*fn)(const struct tcase *c);
} colls[] = {
    {CC_OP_ALLREDUCE, t_allreduce},
    {CC_OP_REDUCE, t_reduce},
    {CC_OP_REDUCE_SCATTER, t_reduce_scatter},
};

/*
 * Which cases run: on 2 ranks every pair at every small count, in and out
 * of place; with more ranks (slower: they share 2 cores here) every pair at
 * count 7 and a rotating sample of the rest. The big count: every 7th pair
 * on 2 ranks, fewer beyond.
 */
static int wanted(int n, int k, int ci)
{
    if (TC_THIN > 1 && ci != 2 && k % TC_THIN) return 0; /* count 7 stays whole */
    if (ci == 4) return k % (n == 2 ? 7 : n <= 4 ? 29 : 97) == 0;
    if (n == 2 || ci == 2) return 1;
    return k % (n <= 4 ? 3 : 7) == 0;
}

static int matrix(struct tcase *c)
{
    int k = 0;
    for (int dt = 0; dt < CC_DTYPE_COUNT; dt++)
        for (int op = 0; op < CC_REDOP_COUNT; op++) {
            if (cc__kernel_check((cc_dtype_t)dt, (cc_redop_t)op) != CC_OK) continue;
            c->dt = (cc_dtype_t)dt;
            c->op = (cc_redop_t)op;
            c->es = cc_dtype_size(c->dt);
            for (int ci = 0; ci < 5; ci++)
                for (int v = 0; v < 2; v++, k++) {
                    if (!wanted(c->n, k, ci)) continue;
                    c->count = tc_counts[ci];
                    c->inplace = v;
                    c->off = c->es * (size_t)(k % 3); /* element-aligned, not line-aligned */
                    c->root = k % c->n;
                    for (size_t f = 0; f < sizeof(colls) / sizeof(colls[0]); f++) {
                        if (!applies(colls[f].type, c->algo)) continue;
                        tc_force(c->comm, colls[f].type, c->algo);
                        if (colls[f].fn(c)) return 1;
                    }
                }
        }
    return 0;
}

/* Random finite values: the order of the reduction shows in the low bits. */
static void random_fill(void *buf, cc_dtype_t dt, size_t n, unsigned seed)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        cc__elem_put(buf, dt, i, ((double)(x % 2000001) - 1000000.0) / 997.0);
    }
}

static uint64_t hash(const void *p, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* Every rank holds the same bits: the min and the max of the hashes agree. */
static int same_on_all(cc_comm_t *comm, const void *p, size_t len, const char *what)
{
    uint64_t h = hash(p, len), lo = 0, hi = 0;
    TC_REQUIRE(cc_allreduce(comm, &h, &lo, 1, CC_UINT64, CC_MIN, NULL, NULL) == CC_OK, "min");
    TC_REQUIRE(cc_allreduce(comm, &h, &hi, 1, CC_UINT64, CC_MAX, NULL, NULL) == CC_OK, "max");
    TC_REQUIRE(lo == hi, "%s: ranks hold different bits", what);
    return 0;
}

/* One dtype/op/count: allreduce with both algorithms and both placements, reduce and
 * reduce_scatter against its blocks. */
static int bits_case(cc_comm_t *comm, cc_dtype_t dt, cc_redop_t op, size_t count)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm);
    size_t es = cc_dtype_size(dt), bytes = count * es, blk = count / (size_t)n;
    char *in = malloc(bytes + 1), *ref = malloc(bytes + 1), *out = malloc(bytes + 1);
    random_fill(in, dt, count, (unsigned)r);
    tc_force(comm, CC_OP_ALLREDUCE, "shm_flat");
    TC_REQUIRE(cc_allreduce(comm, in, ref, count, dt, op, NULL, NULL) == CC_OK, "flat");
    if (same_on_all(comm, ref, bytes, "allreduce shm_flat")) return 1;
    for (int a = 0; a < NALGOS; a++)
        for (int inplace = 0; inplace < 2; inplace++) {
            tc_force(comm, CC_OP_ALLREDUCE, algos[a]);
            if (inplace) memcpy(out, in, bytes);
            TC_REQUIRE(cc_allreduce(comm, inplace ? out : in, out, count, dt, op, NULL, NULL) ==
                           CC_OK, "allreduce");
            TC_REQUIRE(!memcmp(out, ref, bytes), "%s %s %s count %zu inplace %d: other bits",
                       algos[a], cc_dtype_name(dt), cc_redop_name(op), count, inplace);
            if (!applies(CC_OP_REDUCE, algos[a])) continue;
            tc_force(comm, CC_OP_REDUCE, algos[a]);
            memset(out, 0, bytes);
            TC_REQUIRE(cc_reduce(comm, in, out, count, dt, op, n - 1, NULL, NULL) == CC_OK, "rd");
            TC_REQUIRE(r != n - 1 || !memcmp(out, ref, bytes), "reduce/%s: other bits", algos[a]);
            tc_force(comm, CC_OP_REDUCE_SCATTER, algos[a]);
            TC_REQUIRE(cc_reduce_scatter(comm, in, out, blk, dt, op, NULL, NULL) == CC_OK, "rs");
            TC_REQUIRE(!memcmp(out, ref + (size_t)r * blk * es, blk * es),
                       "reduce_scatter/%s: other bits", algos[a]);
        }
    tc_force(comm, CC_OP_ALLREDUCE, "");
    tc_force(comm, CC_OP_REDUCE, "");
    tc_force(comm, CC_OP_REDUCE_SCATTER, "");
    free(in);
    free(ref);
    free(out);
    return 0;
}

static int determinism(cc_comm_t *comm)
{
    static const cc_dtype_t dts[] = {CC_FLOAT32, CC_FLOAT16, CC_BFLOAT16, CC_FLOAT64};
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++)
        if (bits_case(comm, dts[d], CC_SUM, 1000 + d) || bits_case(comm, dts[d], CC_AVG, 3001))
            return 1;
    /* Pieces and shares of several cache pieces each. */
    return bits_case(comm, CC_FLOAT32, CC_SUM, (1u << 19) + 5);
}

/* Counts whose staged bytes are one element short of, at and past the staging area. */
static int staging_edge(struct tcase *c)
{
    static const char *const how[] = {"", "shm_flat", "shm_cma"};
    c->dt = CC_FLOAT32;
    c->op = CC_SUM;
    c->es = cc_dtype_size(c->dt);
    for (size_t f = 0; f < sizeof(colls) / sizeof(colls[0]); f++) {
        /* reduce_scatter stages its whole input: n blocks of `count`. */
        size_t per = colls[f].type == CC_OP_REDUCE_SCATTER ? (size_t)c->n : 1;
        size_t edge = CC__ARENA_DATA / (c->es * per);
        for (int h = 0; h < 3; h++)
            for (int d = -1; d <= 1; d++) {
                c->count = edge + (size_t)d;
                c->inplace = d != 0;
                c->off = c->es;
                c->root = c->n - 1;
                c->algo = h ? how[h] : "(automatic)";
                tc_force(c->comm, colls[f].type, how[h]);
                if (colls[f].fn(c)) return 1;
            }
        tc_force(c->comm, colls[f].type, "");
    }
    return 0;
}

/*
 * shm_stream's edges: shares of exactly 3 pieces and one element short or
 * past (the last piece full, then ragged, and a fourth step); outputs of at
 * least 4 MiB, written with non-temporal stores, off the 16-byte boundary
 * with a tail of less than a line, in 1- and 4-byte elements.
 */
static int stream_edges(struct tcase *c)
{
    static const cc_dtype_t dts[] = {CC_UINT8, CC_FLOAT32};
    tc_force(c->comm, CC_OP_ALLREDUCE, "shm_stream");
    c->algo = "shm_stream";
    c->op = CC_SUM;
    c->root = 0;
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        c->dt = dts[d];
        c->es = cc_dtype_size(c->dt);
        size_t whole = (size_t)c->n * cc__shm_stream_piece(c->n, c->es) * 3;
        size_t counts[] = {whole - 1, whole, whole + 1, (4u << 20) / c->es + 37};
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
            for (int v = 0; v < 2; v++) {
                c->count = counts[i];
                c->inplace = v;
                c->off = c->es * (size_t)(1 + 2 * v); /* element-aligned, 16-byte misaligned */
                if (t_allreduce(c)) return 1;
            }
    }
    tc_force(c->comm, CC_OP_ALLREDUCE, "");
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
    if (staging_edge(&c) || stream_edges(&c) || determinism(comm)) return 1;
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
