/*
 * test_coll_args.c - bad input to the collectives gets its specific status
 * and nothing is enqueued (no PRE hook runs): invalid roots, overlapping
 * buffers where not allowed, counts arrays that are NULL, negative
 * (huge) or overflow in total, receive blocks that overlap, a dtype/op pair
 * that makes no sense, misuse of groups, bad CCOMM_ALGO_* names. Count 0
 * still passes the door and is seen by the hooks. The algorithm chosen is
 * reported to the hooks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "native/native.h"
#include "test_coll_util.h"

static _Thread_local int pre_count, post_count;
static _Thread_local char last_algo[32];

static cc_status_t count_pre(const cc_op_info_t *op, void *u)
{
    (void)op, (void)u;
    pre_count++;
    return CC_OK;
}

static void count_post(const cc_op_info_t *op, void *u)
{
    (void)u;
    post_count++;
    snprintf(last_algo, sizeof(last_algo), "%s", op->algorithm ? op->algorithm : "");
}

#define REFUSED(call, status)                                                                      \
    do {                                                                                           \
        int pre0 = pre_count;                                                                      \
        cc_status_t st_ = (call);                                                                  \
        TC_REQUIRE(st_ == (status), "%s: %s, want %s", #call, cc_status_name(st_),                 \
                   cc_status_name(status));                                                        \
        TC_REQUIRE(pre_count == pre0, "%s reached the door", #call);                               \
    } while (0)

/* Every collective with count 0 passes the door, POST included. */
static int zero_counts(cc_comm_t *c)
{
    int pre0 = pre_count, post0 = post_count;
    size_t z[8] = {0};
    TC_REQUIRE(cc_broadcast(c, NULL, NULL, 0, CC_FLOAT32, 0, NULL, NULL) == CC_OK, "bcast 0");
    TC_REQUIRE(cc_reduce(c, NULL, NULL, 0, CC_FLOAT32, CC_SUM, 0, NULL, NULL) == CC_OK, "reduce 0");
    TC_REQUIRE(cc_allgather(c, NULL, NULL, 0, CC_INT8, NULL, NULL) == CC_OK, "allgather 0");
    TC_REQUIRE(cc_allgatherv(c, NULL, NULL, 0, z, NULL, CC_INT8, NULL, NULL) == CC_OK, "agv 0");
    TC_REQUIRE(cc_reduce_scatter(c, NULL, NULL, 0, CC_INT8, CC_MAX, NULL, NULL) == CC_OK, "rs 0");
    TC_REQUIRE(cc_reduce_scatterv(c, NULL, NULL, z, CC_INT8, CC_MAX, NULL, NULL) == CC_OK, "rsv 0");
    TC_REQUIRE(cc_alltoall(c, NULL, NULL, 0, CC_INT8, NULL, NULL) == CC_OK, "a2a 0");
    TC_REQUIRE(cc_alltoallv(c, NULL, NULL, z, z, z, z, CC_INT8, NULL, NULL) == CC_OK, "a2av 0");
    TC_REQUIRE(cc_gather(c, NULL, NULL, 0, CC_INT8, 0, NULL, NULL) == CC_OK, "gather 0");
    TC_REQUIRE(cc_gatherv(c, NULL, NULL, 0, z, NULL, CC_INT8, 0, NULL, NULL) == CC_OK, "gv 0");
    TC_REQUIRE(cc_scatter(c, NULL, NULL, 0, CC_INT8, 0, NULL, NULL) == CC_OK, "scatter 0");
    TC_REQUIRE(cc_scatterv(c, NULL, NULL, z, NULL, 0, CC_INT8, 0, NULL, NULL) == CC_OK, "sv 0");
    TC_REQUIRE(cc_allreduce_coalesced(c, NULL, NULL, NULL, 0, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
               "coalesced of no buffers");
    TC_REQUIRE(pre_count - pre0 == 13 && post_count - post0 == 13, "door saw %d/%d of 13",
               pre_count - pre0, post_count - post0);
    return 0;
}

static int roots_and_pairs(cc_comm_t *c)
{
    float a[64] = {0}, b[64] = {0};
    int n = cc_comm_size(c);
    REFUSED(cc_broadcast(c, a, b, 4, CC_FLOAT32, -1, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_broadcast(c, a, b, 4, CC_FLOAT32, n, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_reduce(c, a, b, 4, CC_FLOAT32, CC_SUM, n + 3, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_gather(c, a, b, 1, CC_FLOAT32, -2, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_scatterv(c, a, b, NULL, NULL, 1, CC_FLOAT32, n, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_gather_bytes(c, a, 4, n, NULL, NULL, NULL), CC_ERR_INVALID_ARG);
    /* dtype/op pairs that make no sense, and values out of range */
    REFUSED(cc_reduce(c, a, b, 4, CC_FLOAT32, CC_BAND, 0, NULL, NULL), CC_ERR_NOT_SUPPORTED);
    REFUSED(cc_reduce_scatter(c, a, b, 1, CC_FLOAT16, CC_BXOR, NULL, NULL), CC_ERR_NOT_SUPPORTED);
    size_t one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    REFUSED(cc_reduce_scatterv(c, a, b, one, CC_BFLOAT16, CC_BOR, NULL, NULL), CC_ERR_NOT_SUPPORTED);
    const void *sp[1] = {a};
    void *rp[1] = {b};
    REFUSED(cc_allreduce_coalesced(c, sp, rp, one, 1, CC_FLOAT64, CC_BOR, NULL, NULL),
            CC_ERR_NOT_SUPPORTED);
    REFUSED(cc_reduce(c, a, b, 4, CC_FLOAT32, (cc_redop_t)77, 0, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_allgather(c, a, b, 1, (cc_dtype_t)-1, NULL, NULL), CC_ERR_INVALID_ARG);
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.premul_scalar = 0.0 / 0.0;
    REFUSED(cc_reduce_scatter(c, a, b, 1, CC_FLOAT32, CC_PREMUL_SUM, &o, NULL), CC_ERR_INVALID_ARG);
    return 0;
}

static int overlaps(cc_comm_t *c)
{
    float a[256];
    int n = cc_comm_size(c), r = cc_comm_rank(c);
    /* allgather: in place is exactly recvbuf + rank x count; anything else overlapping is refused */
    REFUSED(cc_allgather(c, a + r * 4 + 1, a, 4, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_reduce_scatter(c, a, a + r * 4 + 2, 4, CC_FLOAT32, CC_SUM, NULL, NULL),
            CC_ERR_INVALID_ARG);
    REFUSED(cc_alltoall(c, a, a + 1, 2, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_reduce(c, a, a + 1, 4, CC_FLOAT32, CC_SUM, r, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_broadcast(c, a, a + 3, 4, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_gather(c, a + 1, a, 4, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_scatter(c, a, a + 1, 4, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    /* v forms: receive blocks that overlap one another, send and receive regions that overlap */
    size_t cnt[8], dsp[8];
    for (int p = 0; p < n; p++) cnt[p] = 4, dsp[p] = (size_t)p * 4;
    if (n > 1) {
        dsp[n - 1] = dsp[n - 2] + 2;
        REFUSED(cc_allgatherv(c, a + 100, a, 4, cnt, dsp, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
        REFUSED(cc_alltoallv(c, a + 100, a, cnt, NULL, cnt, dsp, CC_FLOAT32, NULL, NULL),
                CC_ERR_INVALID_ARG);
        dsp[n - 1] = (size_t)(n - 1) * 4;
    }
    REFUSED(cc_alltoallv(c, a + 1, a, cnt, NULL, cnt, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_allgatherv(c, a + 1, a, 4, cnt, dsp, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_gatherv(c, a + 1, a, 4, cnt, dsp, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    return 0;
}

static int count_arrays(cc_comm_t *c)
{
    float a[64], b[64];
    int n = cc_comm_size(c), r = cc_comm_rank(c);
    size_t cnt[8], dsp[8], huge[8];
    for (int p = 0; p < n; p++) cnt[p] = 1, dsp[p] = (size_t)p, huge[p] = SIZE_MAX / 2 + 7;
    REFUSED(cc_allgatherv(c, a, b, 1, NULL, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_alltoallv(c, a, b, NULL, NULL, cnt, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    cnt[0] = (size_t)-1; /* a "negative" count */
    REFUSED(cc_reduce_scatterv(c, a, b, cnt, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_gatherv(c, a, b, 1, cnt, NULL, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    cnt[0] = 1;
    huge[r] = 1; /* this rank's own count is fine; another is huge, or the total overflows */
    if (n > 1) REFUSED(cc_allgatherv(c, a, b, 1, huge, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    for (int p = 0; p < n; p++) huge[p] = (size_t)INT64_MAX / 4 / 2 + 1; /* each fits; the sum does not */
    huge[r] = 1;
    if (n > 2) REFUSED(cc_allgatherv(c, a, b, 1, huge, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    dsp[0] = SIZE_MAX - 1; /* displacement + count wraps */
    REFUSED(cc_scatterv(c, a, b, cnt, dsp, 1, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    dsp[0] = 0;
    /* this rank's own block must match what it sends itself */
    REFUSED(cc_allgatherv(c, a, b, 2, cnt, dsp, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_gatherv(c, a, b, 3, cnt, dsp, CC_FLOAT32, r, NULL, NULL), CC_ERR_INVALID_ARG);
    size_t two[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    REFUSED(cc_alltoallv(c, a, b, two, NULL, cnt, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG);
    return 0;
}

static int misuse(cc_comm_t *c)
{
    float a[4] = {0};
    int nm;
    REFUSED(cc_group_end(NULL, NULL), CC_ERR_INVALID_USAGE);
    TC_REQUIRE(cc_group_start() == CC_OK, "start");
    REFUSED(cc_allreduce(c, a, a, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_USAGE);
    REFUSED(cc_send_bytes(c, a, 4, 0, NULL, NULL), CC_ERR_INVALID_USAGE);
    TC_REQUIRE(cc_group_end(NULL, NULL) == CC_OK, "end");
    REFUSED(cc_allreduce_coalesced(c, NULL, NULL, NULL, -1, CC_FLOAT32, CC_SUM, NULL, NULL),
            CC_ERR_INVALID_ARG);
    REFUSED(cc_allreduce_coalesced(c, NULL, NULL, NULL, 2, CC_FLOAT32, CC_SUM, NULL, NULL),
            CC_ERR_INVALID_ARG);
    REFUSED(cc_allgather_bytes(c, a, 4, NULL, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_allgather_bytes(c, NULL, 4, NULL, (cc_bytes_t **)&nm, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_scatter_bytes(c, NULL, NULL, cc_comm_rank(c), NULL, (cc_bytes_t **)&nm, NULL),
            CC_ERR_INVALID_ARG);
    REFUSED(cc_monitored_barrier(c, 0, NULL, 0, &nm, NULL, NULL), CC_ERR_INVALID_ARG);
    REFUSED(cc_monitored_barrier(c, 100, NULL, 3, &nm, NULL, NULL), CC_ERR_INVALID_ARG);
    TC_REQUIRE(cc_bytes_count(NULL) == 0 && cc_bytes_data(NULL, 0, NULL) == NULL, "NULL bytes");
    return 0;
}

/* The forced algorithm is the one the hooks see; an unknown name is refused. */
static int forced(cc_comm_t *c)
{
    float a[4] = {1, 2, 3, 4};
    TC_REQUIRE(cc__native_force(CC_OP_ALLREDUCE, "no_such_algo") == CC_ERR_INVALID_ARG, "force");
    const char *names[16];
    int k = cc__native_algorithms(c, CC_OP_ALLREDUCE, names, 16);
    for (int i = 0; i < k; i++) {
        TC_REQUIRE(cc__native_force(CC_OP_ALLREDUCE, names[i]) == CC_OK, "force %s", names[i]);
        TC_REQUIRE(cc_allreduce(c, a, a, 4, CC_FLOAT32, CC_MAX, NULL, NULL) == CC_OK, "ar");
        TC_REQUIRE(!strcmp(last_algo, names[i]), "hooks saw %s, forced %s", last_algo, names[i]);
    }
    cc__native_force(CC_OP_ALLREDUCE, NULL);
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = tc_init(rank, size, addr);
    TC_REQUIRE(c, "init");
    cc_hook_handle_t h1, h2;
    TC_REQUIRE(cc_hook_add_pre(c, count_pre, NULL, 0, &h1) == CC_OK, "hook");
    TC_REQUIRE(cc_hook_add_post(c, count_post, NULL, 0, &h2) == CC_OK, "hook");
    if (roots_and_pairs(c) || overlaps(c) || count_arrays(c) || misuse(c)) return 1;
    TC_REQUIRE(pre_count == 0, "%d refused calls reached the door", pre_count);
    if (zero_counts(c) || forced(c)) return 1;
    TC_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    return 0;
}

static void test_solo(void **s)
{
    (void)s;
    assert_int_equal(cc_test_thread_ranks(1, rank_main, NULL), 0);
}

/* Ranks as threads: validation needs no peer, and every rank checks its own arguments. */
static void test_3_threads(void **s)
{
    (void)s;
    assert_int_equal(cc_test_thread_ranks(3, rank_main, NULL), 0);
}

static int bad_algo_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_init(&c, rank, size, addr, NULL);
    TC_REQUIRE(st == CC_ERR_INVALID_ARG && !c, "init with a bad CCOMM_ALGO_ALLREDUCE: %s",
               cc_status_name(st));
    return 0;
}

static void test_bad_env_name(void **s)
{
    (void)s;
    const char *env[] = {"CCOMM_ALGO_ALLREDUCE=warp", "CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(2, bad_algo_rank, NULL, 60, env, NULL), 0);
}

/* A cc_recv_bytes that meets a plain cc_send: CC_ERR_MISMATCH, not garbage. */
static int mismatch_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = tc_init(rank, size, addr);
    TC_REQUIRE(c, "init");
    char junk[16] = "not a header";
    cc_bytes_t *out = NULL;
    if (rank == 0) {
        TC_REQUIRE(cc_send(c, junk, 16, CC_UINT8, 1, NULL, NULL) == CC_OK, "send");
    } else {
        cc_status_t st = cc_recv_bytes(c, 0, NULL, &out, NULL);
        TC_REQUIRE(st == CC_ERR_MISMATCH && !out, "recv_bytes of a plain message: %s",
                   cc_status_name(st));
    }
    cc_comm_destroy(c);
    return 0;
}

static void test_bytes_mismatch(void **s)
{
    (void)s;
    const char *env[] = {"CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(2, mismatch_rank, NULL, 60, env, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solo),
        cmocka_unit_test(test_3_threads),
        cmocka_unit_test(test_bad_env_name),
        cmocka_unit_test(test_bytes_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
