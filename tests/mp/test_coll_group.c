/*
 * test_coll_group.c - grouped point-to-point (random plans, each rank
 * listing its sends and receives in its own random order, some with their
 * own work handles, sends to self, nested groups, async group_end; every
 * member seen by the PRE and POST hooks), coalesced collectives, byte
 * collectives with uneven lengths (0 included), and the monitored barrier
 * with a rank that arrives late, on 1-8 ranks over shm and TCP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_coll_util.h"

/* ---- grouped point-to-point ------------------------------------------------------------ */

struct xfer {
    int src, dst, tag;
    size_t len;
    cc_dtype_t dt;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
    return x;
}

/* The plan every rank computes alike. Tag 7 repeats between pairs: those keep their order. */
static struct xfer *plan(int n, unsigned seed, int *count)
{
    static const size_t lens[] = {0, 1, 7, 1000, 70001};
    int k = 5 * n;
    struct xfer *x = calloc((size_t)k, sizeof(*x));
    for (int i = 0; i < k; i++) {
        uint64_t h = mix((uint64_t)seed * 1000003u + (uint64_t)i);
        x[i].src = (int)(h % (uint64_t)n);
        x[i].dst = (int)((h >> 8) % (uint64_t)n);
        x[i].len = lens[(h >> 16) % 5];
        x[i].dt = (h >> 20) & 1 ? CC_FLOAT32 : CC_UINT8;
        x[i].tag = (h >> 24) % 4 == 0 ? 7 : 100 + i;
    }
    *count = k;
    return x;
}

static int g_pre_p2p, g_post_p2p, g_post_group;
static cc_status_t on_pre(const cc_op_info_t *op, void *u)
{
    (void)u;
    if ((op->type == CC_OP_SEND || op->type == CC_OP_RECV) && op->p2p_seq > 0) g_pre_p2p++;
    return CC_OK;
}
static void on_post(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (op->type == CC_OP_SEND || op->type == CC_OP_RECV) g_post_p2p++;
    if (op->type == CC_OP_GROUP) g_post_group++;
}

/* Post this rank's part of the plan in a random order (repeated tags in plan order). */
static int post_plan(cc_comm_t *comm, struct xfer *x, int k, char **bufs, cc_work_t **works,
                     unsigned seed)
{
    int r = cc_comm_rank(comm), *order = malloc((size_t)k * sizeof(int)), m = 0;
    for (int i = 0; i < k; i++)
        if (x[i].src == r || x[i].dst == r) order[m++] = i;
    for (int i = m - 1; i > 0; i--) { /* shuffle, then put tag-7 items back in plan order */
        int j = (int)(mix(seed * 31u + (unsigned)r * 7u + (unsigned)i) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m; j++)
            if (x[order[i]].tag == 7 && x[order[j]].tag == 7 && order[j] < order[i]) {
                int t = order[i];
                order[i] = order[j], order[j] = t;
            }
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    for (int q = 0; q < m; q++) {
        int i = order[q];
        o.tag = x[i].tag;
        /* A send to self is listed once as a send and once as a receive. */
        for (int side = 0; side < 2; side++) {
            int send = side == 0;
            if ((send ? x[i].src : x[i].dst) != r) continue;
            cc_work_t **w = i % 4 == 0 ? &works[2 * i + side] : NULL;
            char *b = bufs[2 * i + side];
            cc_status_t st = send ? cc_send(comm, b, x[i].len, x[i].dt, x[i].dst, &o, w)
                                  : cc_recv(comm, b, x[i].len, x[i].dt, x[i].src, &o, w);
            TC_REQUIRE(st == CC_OK, "grouped %s %d: %s", send ? "send" : "recv", i,
                       cc_status_name(st));
        }
    }
    free(order);
    return 0;
}

static int group_round(cc_comm_t *comm, unsigned seed, int async)
{
    int r = cc_comm_rank(comm), k;
    struct xfer *x = plan(cc_comm_size(comm), seed, &k);
    size_t nk = (size_t)(unsigned)k;
    char **bufs = calloc(2 * nk, sizeof(char *));
    cc_work_t **works = calloc(2 * nk, sizeof(cc_work_t *));
    for (int i = 0; i < k; i++) {
        size_t bytes = x[i].len * cc_dtype_size(x[i].dt);
        bufs[2 * i] = tc_alloc(bytes, (size_t)i % 5);
        bufs[2 * i + 1] = tc_alloc(bytes, (size_t)i % 3);
        for (size_t j = 0; j < bytes; j++)
            bufs[2 * i][j] = (char)tc_byte(x[i].src, i, j);
        memset(bufs[2 * i + 1], 0xee, bytes);
    }
    int pre0 = g_pre_p2p, post0 = g_post_p2p;
    TC_REQUIRE(cc_group_start() == CC_OK, "start");
    TC_REQUIRE(cc_group_start() == CC_OK, "nested start");
    if (post_plan(comm, x, k, bufs, works, seed)) return 1;
    cc_work_t *w = (cc_work_t *)1;
    TC_REQUIRE(cc_group_end(NULL, &w) == CC_OK && w == NULL, "inner end");
    cc_status_t st = cc_group_end(NULL, async ? &w : NULL);
    if (async && st == CC_OK) st = cc_work_wait(w, -1), cc_work_free(w);
    TC_REQUIRE(st == CC_OK, "group seed %u: %s", seed, cc_status_name(st));
    int mine = 0;
    for (int i = 0; i < k; i++) {
        mine += (x[i].src == r) + (x[i].dst == r);
        for (int side = 0; side < 2; side++)
            if (works[2 * i + side]) {
                TC_REQUIRE(cc_work_wait(works[2 * i + side], 1000) == CC_OK, "member work %d", i);
                cc_work_free(works[2 * i + side]);
            }
        size_t bytes = x[i].len * cc_dtype_size(x[i].dt);
        for (size_t j = 0; x[i].dst == r && j < bytes; j++)
            TC_REQUIRE((unsigned char)bufs[2 * i + 1][j] == tc_byte(x[i].src, i, j),
                       "seed %u transfer %d (%d -> %d, tag %d) byte %zu", seed, i, x[i].src,
                       x[i].dst, x[i].tag, j);
        tc_free(bufs[2 * i]), tc_free(bufs[2 * i + 1]);
    }
    TC_REQUIRE(g_pre_p2p - pre0 == mine && g_post_p2p - post0 == mine,
               "hooks saw %d PRE and %d POST of %d members", g_pre_p2p - pre0, g_post_p2p - post0,
               mine);
    free(x), free(bufs), free(works);
    return 0;
}

static int groups(cc_comm_t *comm)
{
    cc_hook_handle_t h1, h2;
    TC_REQUIRE(cc_hook_add_pre(comm, on_pre, NULL, 0, &h1) == CC_OK, "hook");
    TC_REQUIRE(cc_hook_add_post(comm, on_post, NULL, 0, &h2) == CC_OK, "hook");
    for (unsigned seed = 1; seed <= (tc_full() ? 40u : 8u); seed++)
        if (group_round(comm, seed, seed % 2)) return 1;
    /* An empty group, and a collective refused inside a group (nothing enqueued). */
    TC_REQUIRE(cc_group_start() == CC_OK && cc_group_end(NULL, NULL) == CC_OK, "empty group");
    int pre0 = g_pre_p2p;
    TC_REQUIRE(cc_group_start() == CC_OK, "start");
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_ERR_INVALID_USAGE, "barrier inside a group");
    TC_REQUIRE(cc_group_end(NULL, NULL) == CC_OK && g_pre_p2p == pre0, "end");
    TC_REQUIRE(cc_group_end(NULL, NULL) == CC_ERR_INVALID_USAGE, "end without start");
    cc_hook_remove(h1), cc_hook_remove(h2);
    return 0;
}

/* ---- coalesced ------------------------------------------------------------------------- */

#define NB 8
static const size_t co_counts[NB] = {7, 0, 1, 1000, 300007, 3, 70001, 5};

static size_t base_of(int b)
{
    return (size_t)b * 400009u;
}

static int co_allreduce(cc_comm_t *comm, cc_dtype_t dt, cc_redop_t op, int async)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm);
    size_t es = cc_dtype_size(dt);
    void *sb[NB], *rb[NB];
    for (int b = 0; b < NB; b++) {
        sb[b] = tc_alloc(co_counts[b] * es, (size_t)b % 3 * es);
        rb[b] = b % 2 ? sb[b] : tc_alloc(co_counts[b] * es, 0); /* odd buffers in place */
        for (size_t i = 0; i < co_counts[b]; i++)
            cc__elem_put(sb[b], dt, i, tc_input(r, base_of(b) + i, op));
    }
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.premul_scalar = TC_PREMUL;
    cc_work_t *w = NULL;
    cc_status_t st = cc_allreduce_coalesced(comm, (const void *const *)sb, rb, co_counts, NB, dt,
                                            op, &o, async ? &w : NULL);
    if (async && st == CC_OK) st = cc_work_wait(w, -1), cc_work_free(w);
    TC_REQUIRE(st == CC_OK, "allreduce_coalesced: %s", cc_status_name(st));
    for (int b = 0; b < NB; b++) {
        for (size_t i = 0; i < co_counts[b]; i++) {
            double got = cc__elem_get(rb[b], dt, i), want = tc_expect(n, base_of(b) + i, op, dt);
            TC_REQUIRE(got == want, "allreduce_coalesced %s %s buffer %d [%zu] = %g, want %g",
                       cc_dtype_name(dt), cc_redop_name(op), b, i, got, want);
        }
        if (rb[b] != sb[b]) tc_free(rb[b]);
        tc_free(sb[b]);
    }
    return 0;
}

/* Broadcast, allgather and reduce-scatter coalesced (uint8 data, sums of bytes for RS). */
static int co_others(cc_comm_t *comm)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm), root = n - 1;
    char *sb[NB], *rb[NB];
    for (int b = 0; b < NB; b++) {
        size_t c = co_counts[b];
        sb[b] = tc_alloc((size_t)n * c, 1), rb[b] = tc_alloc((size_t)n * c, 2);
        for (size_t j = 0; j < (size_t)n * c; j++)
            sb[b][j] = (char)tc_byte(r, b, j);
    }
    TC_REQUIRE(cc_broadcast_coalesced(comm, (const void *const *)sb, (void *const *)rb, co_counts,
                                      NB, CC_UINT8, root, NULL, NULL) == CC_OK,
               "bcast coalesced");
    for (int b = 0; b < NB; b++)
        for (size_t j = 0; j < co_counts[b]; j++)
            TC_REQUIRE((unsigned char)rb[b][j] == tc_byte(root, b, j), "bcast buf %d [%zu]", b, j);
    TC_REQUIRE(cc_allgather_coalesced(comm, (const void *const *)sb, (void *const *)rb, co_counts,
                                      NB, CC_UINT8, NULL, NULL) == CC_OK,
               "allgather coalesced");
    for (int b = 0; b < NB; b++)
        for (int p = 0; p < n; p++)
            for (size_t j = 0; j < co_counts[b]; j++)
                TC_REQUIRE((unsigned char)rb[b][(size_t)p * co_counts[b] + j] == tc_byte(p, b, j),
                           "allgather buf %d rank %d [%zu]", b, p, j);
    TC_REQUIRE(cc_reduce_scatter_coalesced(comm, (const void *const *)sb, (void *const *)rb,
                                           co_counts, NB, CC_UINT8, CC_BXOR, NULL, NULL) == CC_OK,
               "reduce_scatter coalesced");
    for (int b = 0; b < NB; b++) {
        for (size_t j = 0; j < co_counts[b]; j++) {
            unsigned char want = 0;
            for (int p = 0; p < n; p++)
                want ^= tc_byte(p, b, (size_t)r * co_counts[b] + j);
            TC_REQUIRE((unsigned char)rb[b][j] == want, "reduce_scatter buf %d [%zu]", b, j);
        }
        tc_free(sb[b]), tc_free(rb[b]);
    }
    return 0;
}

static int coalesced(cc_comm_t *comm)
{
    if (co_allreduce(comm, CC_FLOAT32, CC_SUM, 0) || co_allreduce(comm, CC_INT32, CC_AVG, 1) ||
        co_allreduce(comm, CC_BFLOAT16, CC_PREMUL_SUM, 0) ||
        co_allreduce(comm, CC_UINT8, CC_MAX, 1))
        return 1;
    return co_others(comm);
}

/* ---- byte collectives ------------------------------------------------------------------ */

static size_t blen(int r)
{
    return r == 0 ? 0 : (size_t)(r * 997) % 5000 + (size_t)r;
}

static int check_blob(const cc_bytes_t *b, size_t i, int who, int blk, size_t len, const char *what)
{
    size_t got;
    const unsigned char *p = cc_bytes_data(b, i, &got);
    TC_REQUIRE(p && (uintptr_t)p % 16 == 0, "%s blob %zu: %p (aligned to 16, never NULL)", what, i,
               (const void *)p);
    TC_REQUIRE(got == len, "%s blob %zu: %zu bytes, want %zu", what, i, got, len);
    for (size_t j = 0; j < len; j++)
        TC_REQUIRE(p[j] == tc_byte(who, blk, j), "%s blob %zu byte %zu", what, i, j);
    return 0;
}

static char *pattern(int r, int blk, size_t len)
{
    char *p = malloc(len + 1);
    for (size_t j = 0; j < len; j++)
        p[j] = (char)tc_byte(r, blk, j);
    return p;
}

static int bytes_colls(cc_comm_t *comm)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm);
    char *mine = pattern(r, 0, blen(r));
    cc_bytes_t *out = NULL;
    cc_work_t *w = NULL;
    TC_REQUIRE(cc_allgather_bytes(comm, mine, blen(r), NULL, &out, &w) == CC_OK, "allgather_bytes");
    TC_REQUIRE(cc_work_wait(w, -1) == CC_OK && out, "allgather_bytes wait");
    cc_work_free(w);
    TC_REQUIRE(cc_bytes_count(out) == (size_t)n, "allgather_bytes count %zu", cc_bytes_count(out));
    for (int p = 0; p < n; p++)
        if (check_blob(out, (size_t)p, p, 0, blen(p), "allgather_bytes")) return 1;
    cc_bytes_free(out);
    int root = n - 1;
    size_t blen_root = r == root ? 12345 : 0;
    char *rootdata = pattern(root, 1, 12345);
    TC_REQUIRE(cc_broadcast_bytes(comm, rootdata, blen_root, root, NULL, &out, NULL) == CC_OK,
               "bb");
    if (check_blob(out, 0, root, 1, 12345, "broadcast_bytes")) return 1;
    cc_bytes_free(out);
    out = (cc_bytes_t *)1;
    TC_REQUIRE(cc_gather_bytes(comm, mine, blen(r), 0, NULL, &out, NULL) == CC_OK, "gather_bytes");
    for (int p = 0; r == 0 && p < n; p++)
        if (check_blob(out, (size_t)p, p, 0, blen(p), "gather_bytes")) return 1;
    TC_REQUIRE(r == 0 || out == NULL, "gather_bytes: non-root out %p", (void *)out);
    cc_bytes_free(out);
    const void **bufs = calloc((size_t)n, sizeof(*bufs));
    size_t *lens = calloc((size_t)n, sizeof(*lens));
    for (int p = 0; p < n; p++)
        lens[p] = blen(p) * 3, bufs[p] = pattern(n / 2, p, lens[p]);
    TC_REQUIRE(cc_scatter_bytes(comm, bufs, lens, n / 2, NULL, &out, NULL) == CC_OK,
               "scatter_bytes");
    if (check_blob(out, 0, n / 2, r, blen(r) * 3, "scatter_bytes")) return 1;
    cc_bytes_free(out);
    for (int p = 0; p < n; p++)
        free((void *)bufs[p]);
    free(bufs), free(lens), free(rootdata), free(mine);
    return 0;
}

/* Pairs (2k, 2k+1) swap blobs: even ranks send first, odd ranks receive first. */
static int bytes_p2p(cc_comm_t *comm)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm), peer = r ^ 1;
    if (peer >= n) return 0;
    static const size_t lens[] = {0, 1, (1u << 20) + 1};
    for (int i = 0; i < 3; i++) {
        char *mine = pattern(r, i, lens[i]);
        cc_bytes_t *out = NULL;
        cc_op_opts_t o = CC_OP_OPTS_INIT;
        o.tag = 40 + i;
        cc_status_t s1, s2;
        if (r % 2 == 0) {
            s1 = cc_send_bytes(comm, mine, lens[i], peer, &o, NULL);
            s2 = cc_recv_bytes(comm, peer, &o, &out, NULL);
        } else {
            cc_work_t *w = NULL;
            s2 = cc_recv_bytes(comm, peer, &o, &out, &w);
            if (s2 == CC_OK) s2 = cc_work_wait(w, -1), cc_work_free(w);
            s1 = cc_send_bytes(comm, mine, lens[i], peer, &o, NULL);
        }
        TC_REQUIRE(s1 == CC_OK && s2 == CC_OK, "send/recv bytes: %s %s", cc_status_name(s1),
                   cc_status_name(s2));
        if (check_blob(out, 0, peer, i, lens[i], "recv_bytes")) return 1;
        cc_bytes_free(out);
        free(mine);
    }
    return 0;
}

/* ---- monitored barrier ----------------------------------------------------------------- */

static int mbarrier_ok(cc_comm_t *comm)
{
    int missing[4] = {-1, -1, -1, -1}, nm = -1;
    TC_REQUIRE(cc_monitored_barrier(comm, 5000, missing, 4, &nm, NULL, NULL) == CC_OK && nm == 0,
               "monitored barrier, all present: nmissing %d", nm);
    cc_work_t *w = NULL;
    TC_REQUIRE(cc_monitored_barrier(comm, 5000, NULL, 0, &nm, NULL, &w) == CC_OK, "async");
    TC_REQUIRE(cc_work_wait(w, -1) == CC_OK && nm == 0, "async monitored barrier");
    cc_work_free(w);
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    if (groups(comm) || coalesced(comm) || bytes_colls(comm) || bytes_p2p(comm) ||
        mbarrier_ok(comm))
        return 1;
    TC_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
    return 0;
}

/* The last rank (or rank 0 when arg says so) arrives 1.2 s late to a 300 ms barrier. */
static int late_rank(int rank, int size, const char *addr, void *arg)
{
    int late = arg && !strcmp(arg, "root") ? 0 : size - 1;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == late) usleep(1200000);
    int missing[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, nm = -1;
    cc_status_t st = cc_monitored_barrier(comm, 300, missing, 8, &nm, NULL, NULL);
    if (rank == late) {
        TC_REQUIRE(st == CC_ERR_TIMEOUT || st == CC_ERR_PEER_LOST, "late rank: %s",
                   cc_status_name(st));
        TC_REQUIRE(st != CC_ERR_TIMEOUT || (nm == 1 && missing[0] == late), "late rank: nm %d [%d]",
                   nm, missing[0]);
    } else {
        TC_REQUIRE(st == CC_ERR_TIMEOUT, "rank %d: %s", rank, cc_status_name(st));
        TC_REQUIRE(nm == 1 && missing[0] == late, "rank %d: nmissing %d, first %d, want rank %d",
                   rank, nm, missing[0], late);
    }
    cc_comm_destroy(comm);
    return 0;
}

/* Rank 0 groups a receive that no rank matches: the group times out and the member says so. */
static int g_member_status = 1;
static void member_post(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (op->type == CC_OP_RECV) g_member_status = op->status;
}

static int unmatched_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    if (rank == 0) {
        cc_hook_handle_t h;
        TC_REQUIRE(cc_hook_add_post(comm, member_post, NULL, 0, &h) == CC_OK, "hook");
        char b[8];
        cc_op_opts_t o = CC_OP_OPTS_INIT;
        o.timeout_ms = 300;
        TC_REQUIRE(cc_group_start() == CC_OK, "start");
        TC_REQUIRE(cc_recv(comm, b, 8, CC_UINT8, size - 1, NULL, NULL) == CC_OK, "held recv");
        cc_status_t st = cc_group_end(&o, NULL);
        TC_REQUIRE(st == CC_ERR_TIMEOUT, "unmatched group: %s", cc_status_name(st));
        TC_REQUIRE(g_member_status == CC_ERR_TIMEOUT, "member POST status %d", g_member_status);
    } else {
        usleep(800000);
    }
    cc_comm_destroy(comm);
    return 0;
}

static void run(int n, const char *tp)
{
    assert_int_equal(tc_run(n, tp, rank_main, 300), 0);
}

static void late(int n, const char *tp, const char *who)
{
    char env[64];
    snprintf(env, sizeof(env), "CCOMM_TRANSPORT=%s", tp);
    const char *envs[] = {env, TC_TIMEOUT_ENV, "CCOMM_LOG_LEVEL=NONE", "CCOMM_DUMP_ON_TIMEOUT=0",
                          NULL};
    fprintf(stderr, "-- late %s, %d ranks, %s\n", who ? who : "last", n, tp);
    assert_int_equal(cc_test_fork_ranks(n, late_rank, (void *)who, 60, envs, NULL), 0);
}

static void test_1(void **s)
{
    (void)s;
    run(1, "auto");
}
static void test_2_shm(void **s)
{
    (void)s;
    run(2, "auto");
}
static void test_3_shm(void **s)
{
    (void)s;
    run(3, "auto");
}
static void test_5_shm(void **s)
{
    (void)s;
    run(5, "auto");
}
/*
 * Under TSan the widest jobs are left out: TSan looks for races between one rank's threads
 * (the progress thread, hooks, async work), which 2-5 ranks exercise alike, and 8 and 7
 * ranks on CI's 2 CPUs took 30 s of this test's 83 alone (2026-12-05). The release and
 * ASan builds run them.
 */
#if defined(__SANITIZE_THREAD__)
#define SKIP_WIDE_UNDER_TSAN(n)                                                          \
    do {                                                                                 \
        fprintf(stderr, "skipped under TSan: %d ranks (the release and ASan runs have it)\n", \
                (n));                                                                    \
        skip();                                                                          \
    } while (0)
#else
#define SKIP_WIDE_UNDER_TSAN(n) ((void)0)
#endif

static void test_8_shm(void **s)
{
    (void)s;
    SKIP_WIDE_UNDER_TSAN(8);
    run(8, "auto");
}
static void test_2_tcp(void **s)
{
    (void)s;
    run(2, "tcp");
}
static void test_4_tcp(void **s)
{
    (void)s;
    run(4, "tcp");
}
static void test_7_tcp(void **s)
{
    (void)s;
    SKIP_WIDE_UNDER_TSAN(7);
    run(7, "tcp");
}
static void test_late_shm(void **s)
{
    (void)s;
    late(4, "auto", NULL);
}
static void test_late_tcp(void **s)
{
    (void)s;
    late(3, "tcp", NULL);
}
static void test_late_root(void **s)
{
    (void)s;
    late(3, "auto", "root");
}
static void test_unmatched(void **s)
{
    (void)s;
    const char *envs[] = {TC_TIMEOUT_ENV, "CCOMM_LOG_LEVEL=NONE", "CCOMM_DUMP_ON_TIMEOUT=0", NULL};
    assert_int_equal(cc_test_fork_ranks(2, unmatched_rank, NULL, 60, envs, NULL), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "nightly") && !tc_full()) {
        printf("skipped: the full matrix runs with CCTEST_NIGHTLY=1 (ctest -L nightly)\n");
        return 77;
    }
    if (argc <= 1) tc_set_full(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1),         cmocka_unit_test(test_2_shm),
        cmocka_unit_test(test_3_shm),     cmocka_unit_test(test_5_shm),
        cmocka_unit_test(test_8_shm),     cmocka_unit_test(test_2_tcp),
        cmocka_unit_test(test_4_tcp),     cmocka_unit_test(test_7_tcp),
        cmocka_unit_test(test_late_shm),  cmocka_unit_test(test_late_tcp),
        cmocka_unit_test(test_late_root), cmocka_unit_test(test_unmatched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
