/*
 * test_comm_basic.c - communicators at 1, 2, 3, 4 and 8 ranks over shared
 * memory and TCP: send/recv in a ring, barrier, allreduce of every dtype and
 * op against a reference, async work handles, split and groups.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "kernels/elem.h"
#include "kernels/kernels.h"
#include "mp.h"

/* Input of rank r at index i: small integers, exact in every dtype. */
static int is_int(cc_dtype_t dt)
{
    return dt != CC_FLOAT16 && dt != CC_BFLOAT16 && dt != CC_FLOAT32 && dt != CC_FLOAT64;
}

static double input(int r, size_t i, cc_redop_t op)
{
    if (op == CC_PROD) return (double)(1 + ((r + (int)i) % 2));
    return (double)((r * 7 + (int)(i % 13)) % 15); /* 8 ranks x 14 fits int8 */
}

static double combine(double a, double b, cc_redop_t op, cc_dtype_t dt)
{
    switch (op) {
    case CC_PROD: return a * b;
    case CC_MIN: return a < b ? a : b;
    case CC_MAX: return a > b ? a : b;
    case CC_BAND: return (double)((uint64_t)a & (uint64_t)b);
    case CC_BOR: return (double)((uint64_t)a | (uint64_t)b);
    case CC_BXOR: return (double)((uint64_t)a ^ (uint64_t)b);
    default: (void)dt; return a + b;
    }
}

static double expected(int size, size_t i, cc_redop_t op, cc_dtype_t dt)
{
    double acc = input(0, i, op);
    for (int r = 1; r < size; r++) acc = combine(acc, input(r, i, op), op, dt);
    if (op == CC_AVG) {
        acc /= size;
        if (is_int(dt)) acc = trunc(acc);
    }
    return acc;
}

static int check_allreduce(cc_comm_t *comm, cc_dtype_t dt, cc_redop_t op, size_t count, int inplace)
{
    int rank = cc_comm_rank(comm), size = cc_comm_size(comm);
    size_t es = cc_dtype_size(dt);
    char *in = malloc(count * es + 1), *out = malloc(count * es + 1);
    for (size_t i = 0; i < count; i++) cc__elem_put(in, dt, i, input(rank, i, op));
    void *dst = inplace ? in : out;
    cc_status_t st = cc_allreduce(comm, in, dst, count, dt, op, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_OK, "allreduce %s %s count %zu: %s", cc_dtype_name(dt),
                    cc_redop_name(op), count, cc_status_name(st));
    for (size_t i = 0; i < count; i++) {
        double want = expected(size, i, op, dt), got = cc__elem_get(dst, dt, i);
        CC_TEST_REQUIRE(fabs(got - want) <= (dt >= CC_FLOAT16 && op == CC_AVG ? 0.05 : 0.0),
                        "allreduce %s %s count %zu inplace %d: [%zu] = %g, want %g",
                        cc_dtype_name(dt), cc_redop_name(op), count, inplace, i, got, want);
    }
    free(in);
    free(out);
    return 0;
}

static int all_dtypes_ops(cc_comm_t *comm, size_t count)
{
    for (int dt = 0; dt < CC_DTYPE_COUNT; dt++)
        for (int op = 0; op < CC_REDOP_COUNT; op++) {
            if (cc__kernel_check((cc_dtype_t)dt, (cc_redop_t)op) != CC_OK) continue;
            if (op == CC_PREMUL_SUM) continue; /* checked separately with its scalar */
            /* Sums of 8 ranks of values < 15 fit every dtype; products of 1s and 2s too. */
            if (check_allreduce(comm, (cc_dtype_t)dt, (cc_redop_t)op, count, (dt + op) & 1)) return 1;
        }
    return 0;
}

static int ring_p2p(cc_comm_t *comm)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm);
    if (n == 1) return 0;
    static const size_t sizes[] = {0, 1, 7, 4096, (1u << 20) + 3};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t len = sizes[k];
        unsigned char *s = malloc(len + 3), *d = malloc(len + 3);
        for (size_t i = 0; i < len; i++) s[i + 1] = (unsigned char)(r * 31 + i);
        int to = (r + 1) % n, from = (r - 1 + n) % n;
        cc_op_opts_t o = CC_OP_OPTS_INIT;
        o.tag = (int)k + 5;
        cc_status_t st1, st2;
        /* Even ranks send first, odd ranks receive first: ops on a comm run in order. */
        if (r % 2 == 0) {
            st1 = cc_send(comm, s + 1, len, CC_UINT8, to, &o, NULL); /* unaligned on purpose */
            st2 = cc_recv(comm, d + 1, len, CC_UINT8, from, &o, NULL);
        } else {
            st2 = cc_recv(comm, d + 1, len, CC_UINT8, from, &o, NULL);
            st1 = cc_send(comm, s + 1, len, CC_UINT8, to, &o, NULL);
        }
        CC_TEST_REQUIRE(st1 == CC_OK && st2 == CC_OK, "ring len %zu: send %s recv %s", len,
                        cc_status_name(st1), cc_status_name(st2));
        for (size_t i = 0; i < len; i++)
            CC_TEST_REQUIRE(d[i + 1] == (unsigned char)(from * 31 + i), "ring len %zu byte %zu", len, i);
        free(s);
        free(d);
    }
    return 0;
}

static int async_ops(cc_comm_t *comm)
{
    int n = cc_comm_size(comm);
    int32_t a[3] = {1, 2, 3}, b[3], c[3] = {4, 4, 4};
    cc_work_t *w1 = NULL, *w2 = NULL, *w3 = NULL;
    CC_TEST_REQUIRE(cc_allreduce(comm, a, b, 3, CC_INT32, CC_SUM, NULL, &w1) == CC_OK, "async 1");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, &w2) == CC_OK, "async barrier");
    CC_TEST_REQUIRE(cc_allreduce(comm, c, c, 3, CC_INT32, CC_MAX, NULL, &w3) == CC_OK, "async 2");
    CC_TEST_REQUIRE(cc_work_op_id(w1) < cc_work_op_id(w2), "op ids grow");
    /* A blocking op behind the async ones runs after them, in order. */
    int32_t x = 1, y = 0;
    CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_INT32, CC_SUM, NULL, NULL) == CC_OK, "block");
    CC_TEST_REQUIRE(y == n, "blocking sum %d", y);
    int done = 0;
    CC_TEST_REQUIRE(cc_work_test(w1, &done) == CC_OK && done, "w1 done after later blocking op");
    CC_TEST_REQUIRE(cc_work_wait(w2, -1) == CC_OK, "w2");
    CC_TEST_REQUIRE(cc_work_wait(w3, 1000) == CC_OK, "w3");
    CC_TEST_REQUIRE(b[0] == n && b[2] == 3 * n && c[1] == 4, "async results %d %d %d", b[0], b[2], c[1]);
    /* cc_work_info: the record the hooks saw, with the final status and times. */
    cc_op_info_t i1, i3;
    CC_TEST_REQUIRE(cc_work_info(w1, &i1) == CC_OK && cc_work_info(w3, &i3) == CC_OK, "info");
    CC_TEST_REQUIRE(i1.type == CC_OP_ALLREDUCE && i3.redop == CC_MAX, "info type");
    CC_TEST_REQUIRE(i3.coll_seq == i1.coll_seq + 2 && i1.status == CC_OK && i1.in_count == 3,
                    "info seq %llu %llu status %d", (unsigned long long)i1.coll_seq,
                    (unsigned long long)i3.coll_seq, (int)i1.status);
    CC_TEST_REQUIRE(i1.t_end_ns >= i1.t_start_ns && i1.t_start_ns > 0 &&
                        i1.op_id == cc_work_op_id(w1),
                    "info times");
    CC_TEST_REQUIRE(cc_work_info(w1, NULL) == CC_ERR_INVALID_ARG, "info NULL");
    cc_work_free(w1);
    cc_work_free(w2);
    cc_work_free(w3);
    cc_work_free(NULL);
    return 0;
}

static int premul_and_avg(cc_comm_t *comm)
{
    int n = cc_comm_size(comm), r = cc_comm_rank(comm);
    float v = (float)(r + 1), out = 0;
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.premul_scalar = 0.5;
    CC_TEST_REQUIRE(cc_allreduce(comm, &v, &out, 1, CC_FLOAT32, CC_PREMUL_SUM, &o, NULL) == CC_OK, "premul");
    CC_TEST_REQUIRE(out == 0.5f * (float)(n * (n + 1) / 2), "premul %g", out);
    double d = (double)r, avg = 0;
    CC_TEST_REQUIRE(cc_allreduce(comm, &d, &avg, 1, CC_FLOAT64, CC_AVG, NULL, NULL) == CC_OK, "avg");
    CC_TEST_REQUIRE(avg == (double)(n - 1) / 2.0, "avg %g", avg);
    return 0;
}

static int split_and_group(cc_comm_t *comm)
{
    int r = cc_comm_rank(comm), n = cc_comm_size(comm);
    cc_comm_t *half = NULL;
    /* key reverses the order inside each color */
    CC_TEST_REQUIRE(cc_comm_split(comm, r % 2, -r, NULL, &half) == CC_OK, "split");
    int hn = (n + 1 - r % 2) / 2;
    CC_TEST_REQUIRE(cc_comm_size(half) == hn, "split size %d want %d", cc_comm_size(half), hn);
    CC_TEST_REQUIRE(cc_comm_rank(half) == hn - 1 - r / 2, "split rank %d", cc_comm_rank(half));
    CC_TEST_REQUIRE(cc_comm_world_rank(half, cc_comm_rank(half)) == r, "world rank map");
    int32_t one = r, sum = 0, want = 0;
    for (int q = r % 2; q < n; q += 2) want += q;
    CC_TEST_REQUIRE(cc_allreduce(half, &one, &sum, 1, CC_INT32, CC_SUM, NULL, NULL) == CC_OK, "half ar");
    CC_TEST_REQUIRE(sum == want, "half sum %d want %d", sum, want);
    cc_comm_t *none = (cc_comm_t *)1;
    CC_TEST_REQUIRE(cc_comm_split(comm, r == 0 ? CC_SPLIT_NOCOLOR : 1, 0, NULL, &none) == CC_OK, "split2");
    CC_TEST_REQUIRE((r == 0) == (none == NULL), "nocolor gives NULL");
    if (none) {
        CC_TEST_REQUIRE(cc_comm_size(none) == n - 1, "split2 size");
        CC_TEST_REQUIRE(cc_barrier(none, NULL, NULL) == CC_OK, "split2 barrier");
        cc_comm_destroy(none);
    }
    if (n >= 2 && (r == 0 || r == n - 1)) {
        int ranks[2] = {n - 1, 0};
        cc_comm_t *g = NULL;
        CC_TEST_REQUIRE(cc_comm_create_group(comm, ranks, 2, NULL, &g) == CC_OK, "group");
        CC_TEST_REQUIRE(cc_comm_rank(g) == (r == 0 ? 1 : 0), "group rank");
        int64_t v = r, s = 0;
        CC_TEST_REQUIRE(cc_allreduce(g, &v, &s, 1, CC_INT64, CC_SUM, NULL, NULL) == CC_OK, "g ar");
        CC_TEST_REQUIRE(s == n - 1, "group sum");
        CC_TEST_REQUIRE(cc_comm_id(g) != cc_comm_id(comm), "ids differ");
        cc_comm_destroy(g);
    }
    CC_TEST_REQUIRE(cc_comm_destroy(half) == CC_OK, "destroy half");
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    cc_status_t st = cc_comm_init(&comm, rank, size, addr, NULL);
    CC_TEST_REQUIRE(st == CC_OK, "init: %s", cc_status_name(st));
    CC_TEST_REQUIRE(cc_comm_rank(comm) == rank && cc_comm_size(comm) == size, "rank/size");
    if (ring_p2p(comm)) return 1;
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (all_dtypes_ops(comm, 7) || all_dtypes_ops(comm, 1) || all_dtypes_ops(comm, 1000)) return 1;
    if (check_allreduce(comm, CC_FLOAT32, CC_SUM, (1u << 20) + 3, 0)) return 1;
    if (check_allreduce(comm, CC_INT32, CC_SUM, 0, 0)) return 1;
    if (async_ops(comm) || premul_and_avg(comm) || split_and_group(comm)) return 1;
    CC_TEST_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
    /* The stale handle is caught by the magic check. */
    CC_TEST_REQUIRE(cc_comm_rank(comm) == -1, "stale rank");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_ERR_INVALID_ARG, "stale barrier");
    return 0;
}

static void run(int n, const char *transport)
{
    char env[64];
    snprintf(env, sizeof(env), "CCOMM_TRANSPORT=%s", transport);
    const char *envs[] = {env, "CCOMM_TIMEOUT=60", NULL};
    fprintf(stderr, "-- %d ranks, transport %s\n", n, transport);
    assert_int_equal(cc_test_fork_ranks(n, rank_main, NULL, 120, envs, NULL), 0);
}

static void test_1_rank(void **s) { (void)s; run(1, "auto"); }
static void test_2_shm(void **s) { (void)s; run(2, "auto"); }
static void test_3_shm(void **s) { (void)s; run(3, "auto"); }
static void test_4_shm(void **s) { (void)s; run(4, "auto"); }
static void test_8_shm(void **s) { (void)s; run(8, "auto"); }
static void test_2_tcp(void **s) { (void)s; run(2, "tcp"); }
static void test_3_tcp(void **s) { (void)s; run(3, "tcp"); }
static void test_4_tcp(void **s) { (void)s; run(4, "tcp"); }
static void test_8_tcp(void **s) { (void)s; run(8, "tcp"); }

/* Tier 1: ranks as threads of one process. */
static int thread_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    if (all_dtypes_ops(comm, 7) || split_and_group(comm)) return 1;
    CC_TEST_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
    return 0;
}

static void test_4_threads(void **s)
{
    (void)s;
    assert_int_equal(cc_test_thread_ranks(4, thread_rank, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1_rank), cmocka_unit_test(test_2_shm),  cmocka_unit_test(test_3_shm),
        cmocka_unit_test(test_4_shm),  cmocka_unit_test(test_8_shm),  cmocka_unit_test(test_2_tcp),
        cmocka_unit_test(test_3_tcp),  cmocka_unit_test(test_4_tcp),  cmocka_unit_test(test_8_tcp),
        cmocka_unit_test(test_4_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
