/*
 * test_shm_fault.c - failures in the shared-memory algorithms end in
 * errors, never in hangs (each case with shm_flat and with shm_cma):
 *  - a rank SIGKILLed in the middle of a stream of allreduces: the others
 *    get CC_ERR_PEER_LOST in bounded time; the same for either rank of a
 *    2-rank stream of broadcasts whose root and reader share the copy;
 *  - a rank that dies before it joins: the same;
 *  - a rank that comes late: the others' op ends at its deadline with
 *    CC_ERR_TIMEOUT, and the late rank fails too (never completes alone);
 *  - cc_comm_abort from another thread while the op waits: CC_ERR_ABORTED,
 *    and the peer gets CC_ERR_PEER_LOST;
 *  - ranks that call different ops (or counts) at the same point:
 *    CC_ERR_MISMATCH on both.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_coll_util.h"

#define BIG (1u << 20) /* floats: several cma pieces */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void force_all(cc_comm_t *comm, const char *algo)
{
    tc_force(comm, CC_OP_ALLREDUCE, algo);
    tc_force(comm, CC_OP_BROADCAST, algo);
}

/* Size of one op in this test: flat ops stay small, cma ops are large. */
static size_t count_for(const char *algo)
{
    return strcmp(algo, "shm_cma") == 0 ? BIG : 16;
}

static void *kill_later(void *arg)
{
    usleep((useconds_t)(intptr_t)arg);
    raise(SIGKILL);
    return NULL;
}

/*
 * A rank is killed by its own thread 150 ms into a stream of ops. arg: the algorithm, for
 * allreduces with rank 2 the victim; or "b<victim>:<algo>" for in-place broadcasts from rank 0.
 * The 2-rank broadcasts with shm_cma have the root write half of each into its reader's buffer
 * while the reader reads the other half (broadcast_shm.c): either side may die.
 */
static int killed_mid(int rank, int size, const char *addr, void *arg)
{
    const char *spec = arg, *algo = spec[0] == 'b' ? spec + 3 : spec;
    int bcast = spec[0] == 'b', victim = bcast ? spec[1] - '0' : 2;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    force_all(comm, algo);
    size_t n = count_for(algo);
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    pthread_t t;
    if (rank == victim) pthread_create(&t, NULL, kill_later, (void *)(intptr_t)150000);
    cc_status_t st = CC_OK;
    double t0 = now_s();
    for (long i = 0; st == CC_OK && now_s() - t0 < 60; i++)
        st = bcast ? cc_broadcast(comm, a, a, n, CC_FLOAT32, 0, NULL, NULL)
                   : cc_allreduce(comm, a, b, n, CC_FLOAT32, CC_SUM, NULL, NULL);
    double dt = now_s() - t0;
    TC_REQUIRE(st == CC_ERR_PEER_LOST, "%s %s, victim %d: rank %d got %s", algo,
               bcast ? "broadcast" : "allreduce", victim, rank, cc_status_name(st));
    TC_REQUIRE(dt < 20, "took %.1f s", dt);
    free(a);
    free(b);
    cc_comm_destroy(comm);
    return 0;
}

/* Rank 2 dies after the barrier; the others enter an allreduce it never joins. */
static int killed_before(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    force_all(comm, arg);
    size_t n = count_for(arg);
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 2) raise(SIGKILL);
    double t0 = now_s();
    cc_status_t st = cc_allreduce(comm, a, b, n, CC_FLOAT32, CC_SUM, NULL, NULL);
    TC_REQUIRE(st == CC_ERR_PEER_LOST, "%s: got %s", (const char *)arg, cc_status_name(st));
    TC_REQUIRE(now_s() - t0 < 20, "took %.1f s", now_s() - t0);
    free(a);
    free(b);
    cc_comm_destroy(comm);
    return 0;
}

static void expect_killed(int n, cc_test_rank_fn fn, const char *arg, int victim)
{
    const char *envs[] = {TC_TIMEOUT_ENV, "CCOMM_LOG_LEVEL=NONE", NULL};
    cc_test_child_t res[8];
    cc_test_fork_ranks(n, fn, (void *)arg, 90, envs, res);
    for (int r = 0; r < n; r++) {
        if (r == victim) {
            assert_false(res[r].exited);
            assert_int_equal(res[r].signo, SIGKILL);
        } else {
            assert_true(res[r].exited);
            assert_int_equal(res[r].code, 0);
        }
    }
}

/* Rank 1 comes 2 s late; rank 0's op has a 300 ms deadline. */
static int late_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    force_all(comm, arg);
    size_t n = count_for(arg);
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = 300;
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 1) {
        sleep(2);
        cc_status_t st = cc_allreduce(comm, a, b, n, CC_FLOAT32, CC_SUM, NULL, NULL);
        TC_REQUIRE(st != CC_OK, "the late rank completed an op its peer gave up");
    } else {
        double t0 = now_s();
        cc_status_t st = cc_allreduce(comm, a, b, n, CC_FLOAT32, CC_SUM, &o, NULL);
        TC_REQUIRE(st == CC_ERR_TIMEOUT, "%s: got %s", (const char *)arg, cc_status_name(st));
        TC_REQUIRE(now_s() - t0 < 1.9, "took %.2f s", now_s() - t0);
        TC_REQUIRE(cc_comm_get_error(comm) == CC_ERR_TIMEOUT, "comm error");
    }
    free(a);
    free(b);
    cc_comm_destroy(comm);
    return 0;
}

static void *abort_later(void *p)
{
    usleep(300000);
    cc_comm_abort(p);
    return NULL;
}

/* Rank 0 waits in the op (rank 1 comes 1 s late); another thread of rank 0 aborts. */
static int abort_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    force_all(comm, arg);
    size_t n = count_for(arg);
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 0) {
        pthread_t t;
        pthread_create(&t, NULL, abort_later, comm);
        double t0 = now_s();
        cc_status_t st = cc_allreduce(comm, a, b, n, CC_FLOAT32, CC_SUM, NULL, NULL);
        pthread_join(t, NULL);
        TC_REQUIRE(st == CC_ERR_ABORTED, "%s: got %s", (const char *)arg, cc_status_name(st));
        TC_REQUIRE(now_s() - t0 < 5, "took %.2f s", now_s() - t0);
    } else {
        sleep(1);
        cc_status_t st = cc_allreduce(comm, a, b, n, CC_FLOAT32, CC_SUM, NULL, NULL);
        TC_REQUIRE(st == CC_ERR_PEER_LOST, "%s: peer of the aborted rank got %s", (const char *)arg,
                   cc_status_name(st));
    }
    free(a);
    free(b);
    cc_comm_destroy(comm);
    return 0;
}

/* Different counts, then an allreduce against a broadcast, at the same point. */
static int mismatch_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    const char *algo = (const char *)arg + 1;
    /* "b<algo>": allreduce vs broadcast; "c": counts; "o": SUM vs MAX; "d": float32 vs int32 */
    char what = *(const char *)arg;
    int which = what == 'b', other = rank == 1;
    force_all(comm, algo);
    size_t n = count_for(algo);
    float *a = calloc(n + 1, sizeof(float)), *b = calloc(n + 1, sizeof(float));
    cc_status_t st;
    if (which && other)
        st = cc_broadcast(comm, a, b, n, CC_FLOAT32, 0, NULL, NULL);
    else
        st = cc_allreduce(comm, a, b, n + (size_t)(what == 'c' ? rank : 0),
                          what == 'd' && other ? CC_INT32 : CC_FLOAT32,
                          what == 'o' && other ? CC_MAX : CC_SUM, NULL, NULL);
    TC_REQUIRE(st == CC_ERR_MISMATCH, "%s: got %s", (const char *)arg, cc_status_name(st));
    free(a);
    free(b);
    cc_comm_destroy(comm);
    return 0;
}

static void run_ok(int n, cc_test_rank_fn fn, const char *arg)
{
    const char *envs[] = {TC_TIMEOUT_ENV, "CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(n, fn, (void *)arg, 90, envs, NULL), 0);
}

static void test_kill_mid(void **s)
{
    (void)s;
    expect_killed(3, killed_mid, "shm_flat", 2);
    expect_killed(3, killed_mid, "shm_cma", 2);
    expect_killed(2, killed_mid, "b0:shm_cma", 0);
    expect_killed(2, killed_mid, "b1:shm_cma", 1);
}

static void test_kill_before(void **s)
{
    (void)s;
    expect_killed(3, killed_before, "shm_flat", 2);
    expect_killed(3, killed_before, "shm_cma", 2);
}

static void test_timeout(void **s)
{
    (void)s;
    run_ok(2, late_rank, "shm_flat");
    run_ok(2, late_rank, "shm_cma");
}

static void test_abort(void **s)
{
    (void)s;
    run_ok(2, abort_rank, "shm_flat");
    run_ok(2, abort_rank, "shm_cma");
}

static void test_mismatch(void **s)
{
    (void)s;
    run_ok(2, mismatch_rank, "cshm_flat");
    run_ok(2, mismatch_rank, "cshm_cma");
    run_ok(2, mismatch_rank, "bshm_flat");
    run_ok(2, mismatch_rank, "bshm_cma");
    run_ok(2, mismatch_rank, "oshm_flat");
    run_ok(2, mismatch_rank, "dshm_flat");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_mid), cmocka_unit_test(test_kill_before),
        cmocka_unit_test(test_timeout),  cmocka_unit_test(test_abort),
        cmocka_unit_test(test_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
