/*
 * test_coll_reduce.c - the reducing collectives: allreduce, reduce,
 * reduce_scatter, reduce_scatterv. Every algorithm (forced one by one, then
 * the automatic choice) x every dtype/op pair the kernels support (AVG and
 * PREMUL_SUM included) x count (0, 1, 7, 1000, 1M+3) x in/out of place x
 * blocking/async x buffers off the 64-byte boundary, on 1-8 ranks over
 * shared memory and TCP, checked exactly against a reference each rank
 * computes. Then determinism: random float inputs give the same bits on
 * every rank and in every run. CI runs a sample; the nightly label runs all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernels.h"
#include "test_coll_util.h"

struct tcase {
    cc_comm_t *comm;
    int r, n, root, inplace, async;
    cc_dtype_t dt;
    cc_redop_t op;
    size_t count, es, off;
};

static const cc_op_opts_t *opts_of(const struct tcase *c, cc_op_opts_t *o)
{
    *o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o->premul_scalar = TC_PREMUL;
    return c->op == CC_PREMUL_SUM ? o : NULL;
}

/* n elements of this rank's input, element i being global element first + i. */
static void fill(const struct tcase *c, void *buf, size_t first, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cc__elem_put(buf, c->dt, i, tc_input(c->r, first + i, c->op));
}

static int check(const struct tcase *c, const void *buf, size_t first, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double got = cc__elem_get(buf, c->dt, i), want = tc_expect(c->n, first + i, c->op, c->dt);
        TC_REQUIRE(got == want, "%s %s %s count %zu inplace %d async %d: [%zu] = %g, want %g", what,
                   cc_dtype_name(c->dt), cc_redop_name(c->op), c->count, c->inplace, c->async,
                   first + i, got, want);
    }
    return 0;
}

static int t_allreduce(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    char *sb = tc_alloc(bytes, c->off), *rb = c->inplace ? sb : tc_alloc(bytes, c->off + c->es);
    fill(c, sb, 0, c->count);
    cc_op_opts_t o;
    cc_work_t *w = NULL;
    cc_status_t st =
        cc_allreduce(c->comm, sb, rb, c->count, c->dt, c->op, opts_of(c, &o), c->async ? &w : NULL);
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "allreduce: %s", cc_status_name(st));
    if (check(c, rb, 0, c->count, "allreduce")) return 1;
    if (rb != sb) tc_free(rb);
    tc_free(sb);
    return 0;
}

static int t_reduce(const struct tcase *c)
{
    size_t bytes = c->count * c->es;
    int me = c->r == c->root;
    char *sb = tc_alloc(bytes, c->off);
    char *rb = !me ? NULL : c->inplace ? sb : tc_alloc(bytes, c->off + c->es);
    fill(c, sb, 0, c->count);
    cc_op_opts_t o;
    cc_work_t *w = NULL;
    cc_status_t st = cc_reduce(c->comm, sb, rb, c->count, c->dt, c->op, c->root, opts_of(c, &o),
                               c->async ? &w : NULL);
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "reduce: %s", cc_status_name(st));
    if (me && check(c, rb, 0, c->count, "reduce")) return 1;
    if (rb != sb) tc_free(rb);
    tc_free(sb);
    return 0;
}

static int t_reduce_scatter(const struct tcase *c)
{
    size_t bytes = c->count * c->es, all = (size_t)c->n * bytes;
    char *sb = tc_alloc(all, c->off);
    char *rb = c->inplace ? sb + (size_t)c->r * bytes : tc_alloc(bytes, c->off + c->es);
    fill(c, sb, 0, (size_t)c->n * c->count);
    cc_op_opts_t o;
    cc_work_t *w = NULL;
    cc_status_t st = cc_reduce_scatter(c->comm, sb, rb, c->count, c->dt, c->op, opts_of(c, &o),
                                       c->async ? &w : NULL);
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "reduce_scatter: %s", cc_status_name(st));
    if (check(c, rb, (size_t)c->r * c->count, c->count, "reduce_scatter")) return 1;
    if (!c->inplace) tc_free(rb);
    tc_free(sb);
    return 0;
}

static int t_reduce_scatterv(const struct tcase *c)
{
    size_t *cnt = malloc((size_t)c->n * sizeof(*cnt)), total = 0, first = 0;
    for (int p = 0; p < c->n; p++) {
        cnt[p] = p % 3 == 1 ? 0 : c->count + (size_t)p;
        if (p < c->r) first += cnt[p];
        total += cnt[p];
    }
    char *sb = tc_alloc(total * c->es, c->off);
    char *rb = c->inplace ? sb + first * c->es : tc_alloc(cnt[c->r] * c->es, c->off + c->es);
    fill(c, sb, 0, total);
    cc_op_opts_t o;
    cc_work_t *w = NULL;
    cc_status_t st = cc_reduce_scatterv(c->comm, sb, rb, cnt, c->dt, c->op, opts_of(c, &o),
                                        c->async ? &w : NULL);
    st = tc_finish(st, w);
    TC_REQUIRE(st == CC_OK, "reduce_scatterv: %s", cc_status_name(st));
    if (check(c, rb, first, cnt[c->r], "reduce_scatterv")) return 1;
    if (!c->inplace) tc_free(rb);
    tc_free(sb);
    free(cnt);
    return 0;
}

struct coll {
    cc_op_type_t type;
    int (*fn)(const struct tcase *c);
    int rooted;
};

static const struct coll colls[] = {
    {CC_OP_ALLREDUCE, t_allreduce, 0},
    {CC_OP_REDUCE, t_reduce, 1},
    {CC_OP_REDUCE_SCATTER, t_reduce_scatter, 0},
    {CC_OP_REDUCE_SCATTERV, t_reduce_scatterv, 0},
};

/* Sampled: 1 in 12 small cases, 1 in 400 big ones, plus every dtype/op pair once at count 7
 * with the automatic choice. */
static int wanted(int auto_algo, int dt, int op, int ci, int v, uint64_t key)
{
    if (auto_algo && ci == 2 && v == (dt + op) % 4) return 1;
    return tc_pick(key, (ci == 4 ? 400 : 12) * TC_THIN);
}

static int matrix(cc_comm_t *comm, const struct coll *co)
{
    const char *algos[16];
    int na = tc_algos(comm, co->type, algos, 16);
    struct tcase c = {.comm = comm, .r = cc_comm_rank(comm), .n = cc_comm_size(comm)};
    for (int a = 0; a < na; a++) {
        tc_force(comm, co->type, algos[a]);
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++)
            for (int op = 0; op < CC_REDOP_COUNT; op++) {
                if (cc__kernel_check((cc_dtype_t)dt, (cc_redop_t)op) != CC_OK) continue;
                for (int ci = 0; ci < 5; ci++)
                    for (int v = 0; v < 4; v++) {
                        uint64_t key = tc_key(c.n, (int)co->type * 16 + a, dt, op, ci, v);
                        if (!wanted(!algos[a][0], dt, op, ci, v, key)) continue;
                        c.dt = (cc_dtype_t)dt;
                        c.op = (cc_redop_t)op;
                        c.es = cc_dtype_size(c.dt);
                        c.count = tc_counts[ci];
                        c.inplace = v & 1;
                        c.async = v >> 1;
                        c.off = c.es * ((key >> 8) % 3); /* element-aligned, not line-aligned */
                        c.root = co->rooted ? (int)((key >> 16) % (uint64_t)c.n) : -1;
                        if (co->fn(&c)) {
                            fprintf(stderr,
                                    "  (%s, algorithm %s, %d ranks, %s %s x %zu, root %d, "
                                    "inplace %d, async %d)\n",
                                    cc_op_type_name(co->type), algos[a][0] ? algos[a] : "auto", c.n,
                                    cc_dtype_name(c.dt), cc_redop_name(c.op), c.count, c.root,
                                    c.inplace, c.async);
                            return 1;
                        }
                    }
            }
    }
    tc_force(comm, co->type, "");
    return 0;
}

/* Random finite floats: the order of the reduction shows in the low bits. */
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
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* Every rank and every run: the same bits. */
static int determinism(cc_comm_t *comm)
{
    static const cc_dtype_t dts[] = {CC_FLOAT16, CC_BFLOAT16, CC_FLOAT32, CC_FLOAT64};
    static const size_t counts[] = {1000, 100003};
    int r = cc_comm_rank(comm), n = cc_comm_size(comm);
    const char *algos[16];
    int na = tc_algos(comm, CC_OP_ALLREDUCE, algos, 16);
    uint64_t *all = malloc((size_t)n * sizeof(*all));
    for (int a = 0; a < na; a++)
        for (size_t d = 0; d < 4; d++)
            for (size_t k = 0; k < 2; k++) {
                size_t cnt = counts[k], bytes = cnt * cc_dtype_size(dts[d]);
                char *in = malloc(bytes), *out1 = malloc(bytes), *out2 = malloc(bytes);
                random_fill(in, dts[d], cnt, (unsigned)r * 7919u + (unsigned)k);
                tc_force(comm, CC_OP_ALLREDUCE, algos[a]);
                cc_status_t s1 = cc_allreduce(comm, in, out1, cnt, dts[d], CC_SUM, NULL, NULL);
                cc_status_t s2 = cc_allreduce(comm, in, out2, cnt, dts[d], CC_SUM, NULL, NULL);
                tc_force(comm, CC_OP_ALLREDUCE, "");
                TC_REQUIRE(s1 == CC_OK && s2 == CC_OK, "allreduce: %s %s", cc_status_name(s1),
                           cc_status_name(s2));
                TC_REQUIRE(!memcmp(out1, out2, bytes), "%s %s x %zu: two runs differ",
                           algos[a][0] ? algos[a] : "auto", cc_dtype_name(dts[d]), cnt);
                uint64_t h = hash(out1, bytes);
                TC_REQUIRE(cc_allgather(comm, &h, all, 1, CC_UINT64, NULL, NULL) == CC_OK, "ag");
                for (int p = 0; p < n; p++)
                    TC_REQUIRE(all[p] == h, "%s %s x %zu: rank %d's result differs from rank %d's",
                               algos[a][0] ? algos[a] : "auto", cc_dtype_name(dts[d]), cnt, p, r);
                free(in), free(out1), free(out2);
            }
    free(all);
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        if (matrix(comm, &colls[i])) return 1;
    if (determinism(comm)) return 1;
    TC_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
    return 0;
}

int main(int argc, char **argv)
{
    static const tc_job_t sample[] = {{1, "auto"}, {2, "auto"}, {3, "auto"}, {4, "auto"},
                                      {7, "auto"}, {2, "tcp"},  {5, "tcp"},  {8, "tcp"}};
    return tc_main(argc, argv, rank_main, sample, sizeof(sample) / sizeof(sample[0]), 900);
}
