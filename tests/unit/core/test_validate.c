/*
 * test_validate.c - sizes at their wrap points, for every collective.
 *
 * A call may span at most INT64_MAX bytes in any of its buffers: count x
 * element size for the plain ops, x the number of ranks for the ones whose
 * buffer holds a block per rank (allgather, gather, scatter, all-to-all,
 * reduce-scatter), the total and every displacement + count for the v
 * forms, the sum over the buffers of a coalesced op. For each call this
 * test asks for exactly the largest size (accepted: it reaches the PRE hook,
 * which vetoes it so that no byte moves and the fake buffers are never
 * touched), one element more, a count whose byte size wraps around
 * SIZE_MAX to a small number, and SIZE_MAX (all refused with
 * CC_ERR_INVALID_ARG before the door). Runs on 1 rank and on 3 (a factor
 * that is not a power of two).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "mp.h"

#define VETO  CC_ERR_NOT_FOUND /* what the PRE hook answers: validation passed */
#define LIMIT ((size_t)INT64_MAX)

/* A fake buffer address: the veto ends the op before anything reads it. */
#define AT(off) ((void *)(uintptr_t)(0x10000u + (size_t)(off)))

static int pre_seen;
static size_t pre_bytes;

static cc_status_t veto(const cc_op_info_t *op, void *u)
{
    (void)u;
    pre_seen++;
    pre_bytes = op->bytes;
    return VETO;
}

static int g_rank, g_size;

/* The op's byte count did not wrap: at least what the call spans, at most the limit. */
static int bytes_ok(size_t got, size_t want)
{
    return got >= want && got <= LIMIT;
}

/* `call` must be refused by validation (the PRE hook does not see it). */
#define REFUSED(call, what, ...)                                                                   \
    do {                                                                                           \
        int seen0 = pre_seen;                                                                      \
        cc_status_t st_ = (call);                                                                  \
        if (st_ != CC_ERR_INVALID_ARG || pre_seen != seen0) {                                      \
            fprintf(stderr, "rank %d of %d: " what ": %s (%s the door), want ERR_INVALID_ARG\n",   \
                    g_rank, g_size, __VA_ARGS__, cc_status_name(st_),                              \
                    pre_seen != seen0 ? "passed" : "stopped before");                              \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* `call` must pass validation; what the hooks see spans `bytes` at least, unwrapped. */
#define ACCEPTED(call, bytes, what, ...)                                                           \
    do {                                                                                           \
        int seen0 = pre_seen;                                                                      \
        cc_status_t st_ = (call);                                                                  \
        if (st_ != VETO || pre_seen != seen0 + 1 || !bytes_ok(pre_bytes, (bytes))) {               \
            fprintf(stderr, "rank %d of %d: " what ": %s, op bytes %zu (want >= %zu)\n", g_rank,   \
                    g_size, __VA_ARGS__, cc_status_name(st_), pre_bytes, (size_t)(bytes));         \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* The collectives with one count, and how many blocks of it their largest buffer holds. */
enum plain {
    P_SEND,
    P_RECV,
    P_ALLREDUCE,
    P_BROADCAST,
    P_REDUCE,
    P_REDUCE_SCATTER,
    P_ALLGATHER,
    P_GATHER,
    P_SCATTER,
    P_ALLTOALL,
    P_CO_ALLREDUCE,
    P_CO_BROADCAST,
    P_CO_ALLGATHER,
    P_CO_REDUCE_SCATTER,
    P_COUNT
};
static const char *const plain_names[P_COUNT] = {"cc_send",
                                                 "cc_recv",
                                                 "cc_allreduce",
                                                 "cc_broadcast",
                                                 "cc_reduce",
                                                 "cc_reduce_scatter",
                                                 "cc_allgather",
                                                 "cc_gather",
                                                 "cc_scatter",
                                                 "cc_alltoall",
                                                 "cc_allreduce_coalesced",
                                                 "cc_broadcast_coalesced",
                                                 "cc_allgather_coalesced",
                                                 "cc_reduce_scatter_coalesced"};

static int wide(enum plain p)
{
    return p == P_REDUCE_SCATTER || p == P_ALLGATHER || p == P_GATHER || p == P_SCATTER ||
           p == P_ALLTOALL || p == P_CO_ALLGATHER || p == P_CO_REDUCE_SCATTER;
}

/* Issue `p` with `count` elements, in place where the op allows it (so huge buffers cannot
 * overlap). `blk` is this rank's block offset in bytes (0 when the size is refused anyway). */
static cc_status_t plain(cc_comm_t *c, enum plain p, size_t count, cc_dtype_t dt, size_t blk)
{
    int r = g_rank, n = g_size;
    void *b = AT(0), *mine = AT(blk);
    const void *sp[1] = {b};
    void *rp[1] = {b};
    size_t cnt[1] = {count};
    switch (p) {
    case P_SEND:
        return cc_send(c, b, count, dt, (r + 1) % n, NULL, NULL);
    case P_RECV:
        return cc_recv(c, b, count, dt, (r + n - 1) % n, NULL, NULL);
    case P_ALLREDUCE:
        return cc_allreduce(c, b, b, count, dt, CC_SUM, NULL, NULL);
    case P_BROADCAST:
        return cc_broadcast(c, b, b, count, dt, 0, NULL, NULL);
    case P_REDUCE:
        return cc_reduce(c, b, b, count, dt, CC_SUM, 0, NULL, NULL);
    case P_REDUCE_SCATTER:
        return cc_reduce_scatter(c, b, mine, count, dt, CC_SUM, NULL, NULL);
    case P_ALLGATHER:
        return cc_allgather(c, mine, b, count, dt, NULL, NULL);
    case P_GATHER:
        return cc_gather(c, b, b, count, dt, 0, NULL, NULL);
    case P_SCATTER:
        return cc_scatter(c, b, b, count, dt, 0, NULL, NULL);
    case P_ALLTOALL:
        return cc_alltoall(c, b, b, count, dt, NULL, NULL);
    case P_CO_ALLREDUCE:
        return cc_allreduce_coalesced(c, sp, rp, cnt, 1, dt, CC_SUM, NULL, NULL);
    case P_CO_BROADCAST:
        return cc_broadcast_coalesced(c, sp, rp, cnt, 1, dt, 0, NULL, NULL);
    case P_CO_ALLGATHER:
        sp[0] = mine;
        return cc_allgather_coalesced(c, sp, rp, cnt, 1, dt, NULL, NULL);
    case P_CO_REDUCE_SCATTER:
        rp[0] = mine;
        return cc_reduce_scatter_coalesced(c, sp, rp, cnt, 1, dt, CC_SUM, NULL, NULL);
    default:
        return CC_ERR_INTERNAL;
    }
}

static int plain_limits(cc_comm_t *c, cc_dtype_t dt)
{
    size_t es = cc_dtype_size(dt);
    for (int p = 0; p < P_COUNT; p++) {
        size_t mult = wide(p) ? (size_t)g_size : 1, max = LIMIT / (mult * es);
        /* The smallest count whose bytes (x ranks) wrap around SIZE_MAX, to 0 or a little
         * more (2^62 + 1 floats on one rank: 4 bytes); none when both factors are 1. */
        size_t wrap = SIZE_MAX / (mult * es) + 1;
        const char *name = plain_names[p];
        ACCEPTED(plain(c, p, max, dt, (size_t)g_rank * max * es), max * es, "%s count %zu %s", name,
                 max, cc_dtype_name(dt));
        REFUSED(plain(c, p, max + 1, dt, (size_t)g_rank * (max + 1) * es), "%s count %zu %s", name,
                max + 1, cc_dtype_name(dt));
        for (size_t k = 0; mult * es > 1 && k < 2; k++)
            REFUSED(plain(c, p, wrap + k, dt, 0), "%s count %zu %s", name, wrap + k,
                    cc_dtype_name(dt));
        REFUSED(plain(c, p, SIZE_MAX, dt, 0), "%s count %zu %s", name, SIZE_MAX, cc_dtype_name(dt));
    }
    return 0;
}

/* Two buffers of a coalesced op: each fits, the sum must fit too. */
static int coalesced_sums(cc_comm_t *c, cc_dtype_t dt)
{
    size_t es = cc_dtype_size(dt), n = (size_t)g_size, one = LIMIT / es, per = one / n;
    void *b = AT(0);
    const void *sp[2] = {b, b};
    void *rp[2] = {b, b};
    size_t cnt[2] = {one - one / 2, one / 2};
    ACCEPTED(cc_allreduce_coalesced(c, sp, rp, cnt, 2, dt, CC_SUM, NULL, NULL), one * es,
             "allreduce_coalesced counts %zu + %zu %s", cnt[0], cnt[1], cc_dtype_name(dt));
    cnt[1]++;
    REFUSED(cc_allreduce_coalesced(c, sp, rp, cnt, 2, dt, CC_SUM, NULL, NULL),
            "allreduce_coalesced counts %zu + %zu %s", cnt[0], cnt[1], cc_dtype_name(dt));
    cnt[0] = cnt[1] = one; /* each fits, not both */
    REFUSED(cc_broadcast_coalesced(c, sp, rp, cnt, 2, dt, 0, NULL, NULL),
            "broadcast_coalesced counts %zu + %zu %s", cnt[0], cnt[1], cc_dtype_name(dt));
    cnt[0] = cnt[1] = per / 2 + 1; /* each fits x ranks, not the two together */
    sp[0] = sp[1] = AT((size_t)g_rank * cnt[0] * es);
    REFUSED(cc_allgather_coalesced(c, sp, rp, cnt, 2, dt, NULL, NULL),
            "allgather_coalesced counts %zu + %zu %s", cnt[0], cnt[1], cc_dtype_name(dt));
    cnt[0] = cnt[1] = per / 2;
    sp[0] = sp[1] = AT((size_t)g_rank * cnt[0] * es);
    ACCEPTED(cc_allgather_coalesced(c, sp, rp, cnt, 2, dt, NULL, NULL), 2 * cnt[0] * n * es,
             "allgather_coalesced counts %zu + %zu %s", cnt[0], cnt[1], cc_dtype_name(dt));
    return 0;
}

/* Packed displacement of rank r. */
static size_t displ(const size_t *cnt, int r)
{
    size_t d = 0;
    for (int q = 0; q < r; q++)
        d += cnt[q];
    return d;
}

/* The v forms with packed blocks: the total is what must fit. `last` is added to the
 * last rank's count. */
static cc_status_t v_packed(cc_comm_t *c, int which, size_t *cnt, cc_dtype_t dt)
{
    size_t es = cc_dtype_size(dt);
    int r = g_rank;
    void *b = AT(0), *mine = AT(cnt[r] <= LIMIT / es ? displ(cnt, r) * es : 0);
    switch (which) {
    case 0:
        return cc_allgatherv(c, mine, b, cnt[r], cnt, NULL, dt, NULL, NULL);
    case 1:
        return cc_reduce_scatterv(c, b, mine, cnt, dt, CC_SUM, NULL, NULL);
    case 2:
        return cc_gatherv(c, b, b, cnt[0], cnt, NULL, dt, 0, NULL, NULL);
    case 3:
        return cc_scatterv(c, b, b, cnt, NULL, cnt[0], dt, 0, NULL, NULL);
    case 4:
        return cc_alltoallv(c, b, b, cnt, NULL, cnt, NULL, dt, NULL, NULL);
    default:
        return cc_alltoallv(c, b, AT(0x1000), cnt, NULL, cnt, NULL, dt, NULL, NULL);
    }
}

static const char *const v_names[] = {"cc_allgatherv", "cc_reduce_scatterv", "cc_gatherv",
                                      "cc_scatterv",   "cc_alltoallv",       "cc_alltoallv"};

/* The root-only arguments of gatherv and scatterv are checked on the root alone (MPI). */
static int v_checked_here(int which)
{
    return (which != 2 && which != 3) || g_rank == 0;
}

static int v_totals(cc_comm_t *c, cc_dtype_t dt)
{
    size_t es = cc_dtype_size(dt), lim = LIMIT / es, cnt[3];
    int n = g_size;
    for (int w = 0; w < 6; w++) {
        const char *name = v_names[w];
        /* The blocks add up to exactly the limit, then to one element more. */
        for (int p = 0; p < n; p++)
            cnt[p] = lim / (size_t)n;
        cnt[n - 1] += lim % (size_t)n;
        if (w < 5) /* (separate buffers that large would overlap) */
            ACCEPTED(v_packed(c, w, cnt, dt), cnt[0] * es, "%s total %zu %s", name, lim,
                     cc_dtype_name(dt));
        cnt[n - 1]++;
        if (v_checked_here(w))
            REFUSED(v_packed(c, w, cnt, dt), "%s total %zu %s", name, lim + 1, cc_dtype_name(dt));
        /* One count past the limit on its own, and counts whose sum wraps to a small total. */
        for (int p = 0; p < n; p++)
            cnt[p] = p == n - 1 ? SIZE_MAX : 1;
        if (n > 1 && v_checked_here(w))
            REFUSED(v_packed(c, w, cnt, dt), "%s count %zu %s", name, SIZE_MAX, cc_dtype_name(dt));
        for (int p = 0; p < n; p++)
            cnt[p] = p == 0 ? 2 : p == n - 1 ? SIZE_MAX - 1 - (size_t)(n - 2) : 1;
        if (n > 1 && v_checked_here(w))
            REFUSED(v_packed(c, w, cnt, dt), "%s counts summing to %zu + 1 wrapped %s", name,
                    SIZE_MAX, cc_dtype_name(dt));
    }
    return 0;
}

/* Explicit displacements: a block may end exactly at the limit, not one element later,
 * and displacement + count must not wrap. Blocks of one element; the last rank's moves. */
static cc_status_t v_displ(cc_comm_t *c, int which, size_t last, cc_dtype_t dt)
{
    size_t es = cc_dtype_size(dt), cnt[3], dsp[3];
    int r = g_rank, n = g_size;
    for (int p = 0; p < n; p++)
        cnt[p] = 1, dsp[p] = (size_t)p;
    dsp[n - 1] = last;
    void *b = AT(0), *mine = AT(dsp[r] <= LIMIT / es ? dsp[r] * es : 0);
    switch (which) {
    case 0:
        return cc_allgatherv(c, mine, b, 1, cnt, dsp, dt, NULL, NULL);
    case 1:
        return cc_gatherv(c, mine, b, 1, cnt, dsp, dt, 0, NULL, NULL);
    case 2:
        return cc_scatterv(c, b, mine, cnt, dsp, 1, dt, 0, NULL, NULL);
    default:
        return cc_alltoallv(c, b, b, cnt, dsp, cnt, dsp, dt, NULL, NULL);
    }
}

static int v_displacements(cc_comm_t *c, cc_dtype_t dt)
{
    static const char *const names[] = {"cc_allgatherv", "cc_gatherv", "cc_scatterv",
                                        "cc_alltoallv"};
    size_t lim = LIMIT / cc_dtype_size(dt);
    for (int w = 0; w < 4; w++) {
        int here = (w != 1 && w != 2) || g_rank == 0;
        ACCEPTED(v_displ(c, w, lim - 1, dt), cc_dtype_size(dt), "%s last displacement %zu %s",
                 names[w], lim - 1, cc_dtype_name(dt));
        if (!here) continue;
        REFUSED(v_displ(c, w, lim, dt), "%s last displacement %zu %s", names[w], lim,
                cc_dtype_name(dt));
        REFUSED(v_displ(c, w, SIZE_MAX, dt), "%s last displacement %zu %s", names[w], SIZE_MAX,
                cc_dtype_name(dt));
    }
    return 0;
}

/* Byte collectives: one blob may be INT64_MAX bytes; scatter's lengths add up to that. */
static int bytes_limits(cc_comm_t *c)
{
    cc_bytes_t *out = NULL;
    int n = g_size, peer = (g_rank + 1) % n;
    ACCEPTED(cc_allgather_bytes(c, AT(0), LIMIT, NULL, &out, NULL), LIMIT, "%s len %zu",
             "cc_allgather_bytes", LIMIT);
    REFUSED(cc_allgather_bytes(c, AT(0), LIMIT + 1, NULL, &out, NULL), "%s len %zu",
            "cc_allgather_bytes", LIMIT + 1);
    REFUSED(cc_gather_bytes(c, AT(0), SIZE_MAX, 0, NULL, &out, NULL), "%s len %zu",
            "cc_gather_bytes", SIZE_MAX);
    REFUSED(cc_send_bytes(c, AT(0), LIMIT + 1, peer, NULL, NULL), "%s len %zu", "cc_send_bytes",
            LIMIT + 1);
    if (g_rank == 0)
        REFUSED(cc_broadcast_bytes(c, AT(0), LIMIT + 1, 0, NULL, &out, NULL), "%s len %zu",
                "cc_broadcast_bytes", LIMIT + 1);
    const void *bufs[3] = {AT(0), AT(0), AT(0)};
    size_t lens[3];
    for (int p = 0; p < n; p++)
        lens[p] = p == n - 1 ? LIMIT - (size_t)(n - 1) : 1;
    ACCEPTED(cc_scatter_bytes(c, bufs, lens, 0, NULL, &out, NULL), 0, "%s lens summing to %zu",
             "cc_scatter_bytes", LIMIT);
    lens[n - 1]++;
    if (g_rank == 0)
        REFUSED(cc_scatter_bytes(c, bufs, lens, 0, NULL, &out, NULL), "%s lens summing to %zu",
                "cc_scatter_bytes", LIMIT + 1);
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    g_rank = rank, g_size = size;
    cc_comm_t *c = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    cc_hook_handle_t h;
    CC_TEST_REQUIRE(cc_hook_add_pre(c, veto, NULL, 0, &h) == CC_OK, "hook");
    const cc_dtype_t dts[] = {CC_INT8, CC_FLOAT16, CC_FLOAT32, CC_FLOAT64};
    for (int i = 0; i < 4; i++)
        if (plain_limits(c, dts[i]) || coalesced_sums(c, dts[i]) || v_totals(c, dts[i]) ||
            v_displacements(c, dts[i]))
            return 1;
    if (bytes_limits(c)) return 1;
    CC_TEST_REQUIRE(cc_comm_get_error(c) == CC_OK, "vetoes broke the comm");
    cc_hook_remove(h);
    CC_TEST_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    return 0;
}

static void test_one_rank(void **s)
{
    (void)s;
    const char *env[] = {"CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(1, rank_main, NULL, 60, env, NULL), 0);
}

static void test_three_ranks(void **s)
{
    (void)s;
    const char *env[] = {"CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(3, rank_main, NULL, 60, env, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_three_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
