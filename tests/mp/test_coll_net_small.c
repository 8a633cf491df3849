/*
 * test_coll_net_small.c - the few-message algorithms for small ops over
 * TCP (lib/native/net_algo.h): alltoall "bruck" and reduce_scatter
 * "recursive_doubling", each forced, on 2 to 5 ranks (powers of two and
 * not, so Bruck's partial last round and the doubling's fold both run), at
 * every count of a list that crosses block and round boundaries, in and
 * out of place, checked element by element against a reference every rank
 * computes itself. The sampled matrix (test_coll_data/reduce) runs them
 * too, but only in a thin sample; this one runs every case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "native/native.h"
#include "test_coll_util.h"

static const size_t counts[] = {0, 1, 2, 3, 7, 64, 1000, 4099};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* Element j of the block rank `from` sends rank `to`: one value per (from, to, j). */
static double a2a_value(int from, int to, size_t j)
{
    return (double)(from * 1000 + to * 100 + (int)(j % 97));
}

static int t_bruck(cc_comm_t *c, int r, int n, size_t count, int inplace)
{
    size_t all = (size_t)n * count;
    int32_t *rb = malloc(all * sizeof(int32_t) + 4), *sb = inplace ? rb : malloc(all * 4 + 4);
    TC_REQUIRE(rb && sb, "no memory");
    for (int p = 0; p < n; p++)
        for (size_t j = 0; j < count; j++)
            sb[(size_t)p * count + j] = (int32_t)a2a_value(r, p, j);
    if (!inplace) memset(rb, 0xa5, all * sizeof(int32_t));
    cc_status_t st = cc_alltoall(c, sb, rb, count, CC_INT32, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "alltoall bruck of %zu on %d ranks: %s", count, n, cc_status_name(st));
    for (int p = 0; p < n; p++)
        for (size_t j = 0; j < count; j++)
            TC_REQUIRE(rb[(size_t)p * count + j] == (int32_t)a2a_value(p, r, j),
                       "alltoall bruck of %zu on %d ranks, inplace %d: rank %d got %d from rank "
                       "%d at %zu, want %d",
                       count, n, inplace, r, rb[(size_t)p * count + j], p, j,
                       (int32_t)a2a_value(p, r, j));
    if (!inplace) free(sb);
    free(rb);
    return 0;
}

static int t_rs(cc_comm_t *c, int r, int n, size_t count, int inplace, cc_dtype_t dt, cc_redop_t op)
{
    size_t es = cc_dtype_size(dt), all = (size_t)n * count;
    char *sb = malloc(all * es + 8),
         *rb = inplace ? sb + (size_t)r * count * es : malloc(count * es + 8);
    TC_REQUIRE(sb && rb, "no memory");
    for (size_t i = 0; i < all; i++)
        cc__elem_put(sb, dt, i, tc_input(r, i, op));
    cc_status_t st = cc_reduce_scatter(c, sb, rb, count, dt, op, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "reduce_scatter rd of %zu on %d ranks: %s", count, n,
               cc_status_name(st));
    for (size_t j = 0; j < count; j++) {
        double got = cc__elem_get(rb, dt, j), want = tc_expect(n, (size_t)r * count + j, op, dt);
        TC_REQUIRE(got == want,
                   "reduce_scatter rd %s %s of %zu on %d ranks, inplace %d: rank %d element %zu "
                   "is %g, want %g",
                   cc_dtype_name(dt), cc_redop_name(op), count, n, inplace, r, j, got, want);
    }
    if (!inplace) free(rb);
    free(sb);
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = tc_init(rank, size, addr);
    TC_REQUIRE(c, "init");
    TC_REQUIRE(cc__native_force(c, CC_OP_ALLTOALL, "bruck") == CC_OK, "force bruck");
    TC_REQUIRE(cc__native_force(c, CC_OP_REDUCE_SCATTER, "recursive_doubling") == CC_OK,
               "force recursive_doubling");
    static const cc_dtype_t dts[] = {CC_FLOAT32, CC_INT32, CC_FLOAT64};
    static const cc_redop_t ops[] = {CC_SUM, CC_MAX, CC_AVG, CC_PROD};
    for (size_t k = 0; k < NCOUNTS; k++)
        for (int inplace = 0; inplace < 2; inplace++) {
            if (t_bruck(c, rank, size, counts[k], inplace)) return 1;
            for (size_t d = 0; d < 3; d++)
                for (size_t o = 0; o < 4; o++)
                    if (t_rs(c, rank, size, counts[k], inplace, dts[d], ops[o])) return 1;
        }
    TC_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    return 0;
}

int main(int argc, char **argv)
{
    static const tc_job_t jobs[] = {{2, "tcp"}, {3, "tcp"}, {4, "tcp"}, {5, "tcp"}};
    return tc_main(argc, argv, rank_main, jobs, sizeof(jobs) / sizeof(jobs[0]), 300);
}
