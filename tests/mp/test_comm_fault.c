/*
 * test_comm_fault.c - failures end in errors, never in hangs:
 *  - a rank killed with SIGKILL while the others wait in recv from it: they
 *    get CC_ERR_PEER_LOST, within a bounded time, over shm and over TCP;
 *  - a rank that waits on a healthy peer whose own peer died: the failure
 *    cascades (the healthy peer aborts and tells its peers);
 *  - a rank that never joins a collective: the others time out with
 *    CC_ERR_TIMEOUT and their communicator reports it;
 *  - cc_comm_abort from another thread ends a blocked op with CC_ERR_ABORTED;
 *  - the abort message names the rank waited for (comm and world rank), for a
 *    timeout and for a killed peer, over shm and TCP, in a world communicator
 *    and in a split one whose ranks differ from the world's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "mp.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The abort hook keeps the first abort message: what cc_comm's users (the torch adapter)
 * are told about the failure. */
static char g_abort_msg[512];
static cc_hook_handle_t g_hook;

static void keep_abort(const cc_abort_info_t *info, void *user)
{
    (void)user;
    if (!g_abort_msg[0]) snprintf(g_abort_msg, sizeof(g_abort_msg), "%s", info->message);
}

/* Requires the kept message to name comm rank `cr` / world rank `wr` as the one waited for. */
static int names_waited(int cr, int wr)
{
    char want[96];
    snprintf(want, sizeof(want), "waiting for rank %d (comm rank %d, world rank %d)", cr, cr, wr);
    CC_TEST_REQUIRE(strstr(g_abort_msg, want), "abort message \"%s\" lacks \"%s\"", g_abort_msg,
                    want);
    return 0;
}

/* Rank 2 dies after the barrier; ranks 0, 1, 3 wait to receive from it. */
static int killed_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_hook_add_abort(comm, keep_abort, NULL, 0, &g_hook) == CC_OK, "hook");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 2) {
        usleep(200000);
        raise(SIGKILL);
    }
    double t0 = now_s();
    char buf[16];
    cc_status_t st = cc_recv(comm, buf, sizeof(buf), CC_UINT8, 2, NULL, NULL);
    double dt = now_s() - t0;
    CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "recv from the dead rank: %s", cc_status_name(st));
    CC_TEST_REQUIRE(dt < 10.0, "took %.1f s to notice", dt);
    CC_TEST_REQUIRE(cc_comm_get_error(comm) == CC_ERR_PEER_LOST, "comm error %s",
                    cc_status_name(cc_comm_get_error(comm)));
    /* The comm is broken: later ops are refused at once with its error. */
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_ERR_PEER_LOST, "later op");
    if (names_waited(2, 2)) return 1;
    cc_comm_destroy(comm);
    return 0;
}

/* Rank 0 waits on rank 1 (alive); rank 1 waits on rank 2, which dies. */
static int cascade_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    char buf[8];
    cc_status_t st = CC_OK;
    if (rank == 2) {
        usleep(200000);
        raise(SIGKILL);
    } else if (rank == 1) {
        st = cc_recv(comm, buf, 8, CC_UINT8, 2, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "rank 1: %s", cc_status_name(st));
    } else {
        st = cc_recv(comm, buf, 8, CC_UINT8, 1, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "rank 0 (waits on healthy rank 1): %s",
                        cc_status_name(st));
    }
    cc_comm_destroy(comm);
    return 0;
}

/* Rank 2 is "stuck in compute" for 3 s; the others' allreduce has a 400 ms deadline. */
static int timeout_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    float x = 1, y = 0;
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = 400;
    if (rank == 2) {
        sleep(3);
        cc_status_t st = cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, &o, NULL);
        CC_TEST_REQUIRE(st != CC_OK, "late rank must fail, got OK");
    } else {
        double t0 = now_s();
        cc_status_t st = cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, &o, NULL);
        double dt = now_s() - t0;
        CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT || st == CC_ERR_PEER_LOST, "got %s", cc_status_name(st));
        CC_TEST_REQUIRE(dt < 3.0, "took %.2f s", dt);
        CC_TEST_REQUIRE(cc_comm_get_error(comm) != CC_OK, "comm not marked broken");
    }
    cc_comm_destroy(comm);
    return 0;
}

/*
 * World rank 2 skips one collective (it sleeps past the others' deadline), first in a child
 * of world ranks 1..3, where it is comm rank 1, then in the world; rank 0 sits out the
 * child's round. What is named is the rank this rank itself waited for: over shm every rank
 * of an all-reduce waits on every peer's arrival, so all name rank 2; over TCP an
 * all-reduce's ranks wait on partners (one may wait for a partner that waits for rank 2),
 * so there a gather is used, whose root waits for rank 2 directly (the others' small sends
 * complete).
 */
static int skip_round(cc_comm_t *c, int skipper, int world_skipper, int gather)
{
    float x[64] = {0}, all[4 * 64];
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = 600;
    int me = cc_comm_rank(c);
    g_abort_msg[0] = '\0';
    CC_TEST_REQUIRE(cc_hook_add_abort(c, keep_abort, NULL, 0, &g_hook) == CC_OK, "hook");
    CC_TEST_REQUIRE(cc_allreduce(c, x, x, 64, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "warm");
    if (me == skipper) {
        usleep(1500000);
        return 0;
    }
    cc_status_t st = gather ? cc_gather(c, x, all, 64, CC_FLOAT32, 0, &o, NULL)
                            : cc_allreduce(c, x, x, 64, CC_FLOAT32, CC_SUM, &o, NULL);
    if (gather && me != 0) {
        CC_TEST_REQUIRE(st == CC_OK, "gather sender: got %s", cc_status_name(st));
        return 0;
    }
    CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT, "got %s", cc_status_name(st));
    return names_waited(skipper, world_skipper);
}

static int skipped_rank(int rank, int size, const char *addr, void *arg)
{
    int gather = arg && !strcmp(arg, "gather");
    cc_comm_t *comm = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_comm_split(comm, rank ? 0 : CC_SPLIT_NOCOLOR, rank, NULL, &child) == CC_OK,
                    "split");
    if (child) {
        if (skip_round(child, 1, 2, gather)) return 1;
        cc_comm_destroy(child);
    }
    if (skip_round(comm, 2, 2, gather)) return 1;
    cc_comm_destroy(comm);
    return 0;
}

static void expect_skipped(const char *transport, const char *coll)
{
    char env[64];
    snprintf(env, sizeof(env), "CCOMM_TRANSPORT=%s", transport);
    const char *envs[] = {env, "CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(4, skipped_rank, (void *)coll, 60, envs, NULL), 0);
}

static void test_waited_rank_shm(void **s) { (void)s; expect_skipped("auto", "allreduce"); }
static void test_waited_rank_tcp(void **s) { (void)s; expect_skipped("tcp", "gather"); }

struct aborter {
    cc_comm_t *comm;
};

static void *abort_later(void *p)
{
    usleep(300000);
    cc_comm_abort(((struct aborter *)p)->comm);
    return NULL;
}

/* Rank 0 blocks in recv from rank 1 (which never sends); another thread aborts. */
static int abort_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    if (rank == 0) {
        struct aborter a = {comm};
        pthread_t t;
        pthread_create(&t, NULL, abort_later, &a);
        char b[4];
        cc_status_t st = cc_recv(comm, b, 4, CC_UINT8, 1, NULL, NULL);
        pthread_join(t, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_ABORTED, "aborted recv: %s", cc_status_name(st));
        CC_TEST_REQUIRE(cc_comm_abort(comm) == CC_OK, "abort twice is fine");
    } else {
        char b[4];
        /* Rank 0's abort reaches rank 1 as a lost peer. */
        cc_status_t st = cc_recv(comm, b, 4, CC_UINT8, 0, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "peer of aborted rank: %s", cc_status_name(st));
    }
    cc_comm_destroy(comm);
    return 0;
}

static void expect_killed(int n, cc_test_rank_fn fn, const char *transport, int victim)
{
    char env[64];
    snprintf(env, sizeof(env), "CCOMM_TRANSPORT=%s", transport);
    const char *envs[] = {env, "CCOMM_TIMEOUT=60", "CCOMM_LOG_LEVEL=NONE", NULL};
    cc_test_child_t res[8];
    cc_test_fork_ranks(n, fn, NULL, 60, envs, res);
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

static void test_kill_shm(void **s) { (void)s; expect_killed(4, killed_rank, "auto", 2); }
static void test_kill_tcp(void **s) { (void)s; expect_killed(4, killed_rank, "tcp", 2); }
static void test_cascade_shm(void **s) { (void)s; expect_killed(3, cascade_rank, "auto", 2); }
static void test_cascade_tcp(void **s) { (void)s; expect_killed(3, cascade_rank, "tcp", 2); }

static void test_timeout(void **s)
{
    (void)s;
    const char *envs[] = {"CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(3, timeout_rank, NULL, 60, envs, NULL), 0);
}

static void test_abort(void **s)
{
    (void)s;
    const char *envs[] = {"CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(2, abort_rank, NULL, 60, envs, NULL), 0);
}

/*
 * Rank 0 hosts the store (its address is a port nobody listens on) and is
 * done first; rank 1 then makes a communicator of itself, which goes through
 * the store (as a solo split child of NCCL's interposer does): rank 0's
 * destroy waits for it to let go (CCOMM_STORE_LINGER) instead of pulling the
 * store from under it.
 */
static int host_leaves_first(int rank, int size, const char *addr, void *arg)
{
    (void)addr;
    cc_comm_t *comm = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, (const char *)arg, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 0) {
        CC_TEST_REQUIRE(cc_comm_destroy(comm) == CC_OK, "destroy");
        return 0;
    }
    usleep(300000); /* rank 0 is in its destroy by now */
    const int me[1] = {1};
    cc_status_t st = cc_comm_create_group(comm, me, 1, NULL, &child);
    CC_TEST_REQUIRE(st == CC_OK, "a group of one after the host left: %s", cc_status_name(st));
    CC_TEST_REQUIRE(cc_comm_size(child) == 1, "child size %d", cc_comm_size(child));
    cc_comm_destroy(child);
    cc_comm_destroy(comm);
    return 0;
}

static void test_store_host_leaves_first(void **s)
{
    (void)s;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    close(fd); /* free again: rank 0 binds it */
    const char *envs[] = {"CCOMM_LOG_LEVEL=WARN", NULL};
    assert_int_equal(cc_test_fork_ranks(2, host_leaves_first, addr, 60, envs, NULL), 0);
}

/*
 * The store's host (rank 0) is done and gone while rank 1 lives on: rank 1's
 * watchdog loses its store connection. It must say so once and stop calling
 * the store, not log a failed call every tick for the rest of the process.
 */
static int host_gone(int rank, int size, const char *addr, void *arg)
{
    (void)addr;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, (const char *)arg, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 1) usleep(2000000); /* 20 watchdog ticks, most with the store gone */
    cc_comm_destroy(comm); /* rank 1's may fail: the store is gone */
    return 0;
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

static void test_store_host_gone_quiet(void **s)
{
    (void)s;
    char dir[] = "/tmp/cctest-hostgone-XXXXXX", env_log[200], addr[64], path[240];
    assert_non_null(mkdtemp(dir));
    snprintf(env_log, sizeof(env_log), "CCOMM_LOG_FILE=%s/rank%%r.log", dir);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    close(fd);
    /* No linger: rank 0 stops the store at its destroy while rank 1 still holds its comm. */
    const char *envs[] = {"CCOMM_LOG_LEVEL=WARN", "CCOMM_HEARTBEAT_MS=100",
                          "CCOMM_STORE_LINGER=0", env_log, NULL};
    assert_int_equal(cc_test_fork_ranks(2, host_gone, addr, 60, envs, NULL), 0);
    snprintf(path, sizeof(path), "%s/rank1.log", dir);
    int errors = count_lines(path, "\"dump/") + count_lines(path, "\"hb/");
    int said = count_lines(path, "lost its connection to the store");
    printf("rank 1 after the store's host left: %d store error line(s), %d notice(s)\n", errors,
           said);
    assert_true(errors >= 0 && errors <= 2); /* the call that found it gone */
    assert_int_equal(said, 1);
    for (int r = -1; r < 2; r++) { /* rank -1: lines logged before a rank was known */
        snprintf(path, sizeof(path), "%s/rank%d.log", dir, r);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_shm),    cmocka_unit_test(test_kill_tcp),
        cmocka_unit_test(test_cascade_shm), cmocka_unit_test(test_cascade_tcp),
        cmocka_unit_test(test_timeout),     cmocka_unit_test(test_abort),
        cmocka_unit_test(test_waited_rank_shm), cmocka_unit_test(test_waited_rank_tcp),
        cmocka_unit_test(test_store_host_leaves_first),
        cmocka_unit_test(test_store_host_gone_quiet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
