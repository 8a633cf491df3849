/*
 * test_net_fail.c - failures: bad arguments and settings, length mismatch,
 * deadlines, abort from another thread, a peer that closes or is killed with
 * SIGKILL while others wait, CMA refused (fallback through the ring), and a
 * stranger knocking at a TCP listener. Every case must end, with the right
 * status, in bounded time, and leave no segment behind.
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "base/clock.h"
#include "net_mp.h"
#include "transport/net.h"
#include "tutil.h"

#define SEC       1000000000ull
#define BOUND_NS  (10 * SEC) /* "bounded time": far above the 100 ms liveness period */
#define SKIP_CODE 77

static uint64_t deadline(void)
{
    return cc__now_ns() + 30 * SEC;
}

static void run(int n, mp_rank_fn fn, const char *transport, const int *want)
{
    int codes[16];
    mp_fork(n, fn, (void *)transport, 60, codes);
    for (int i = 0; i < n; i++) {
        if (codes[i] == SKIP_CODE) skip();
        if (codes[i] != want[i])
            fprintf(stderr, "rank %d exited with %d, expected %d\n", i, codes[i], want[i]);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(codes[i], want[i]);
    assert_int_equal(tu_leftovers(), 0);
}

static const int all_ok[16];

static cc_status_t solo_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    (void)ctx;
    memcpy(all, mine, len);
    return CC_OK;
}

/* Arguments that make creation impossible fail at once, without the allgather. */
static void test_bad_args(void **s)
{
    (void)s;
    cc__net_t *net = NULL;
    cc__net_config_t c = {.rank = 0, .size = 1, .allgather = solo_allgather, .transport = "auto"};
    assert_int_equal(cc__net_create(NULL, &net), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_create(&c, NULL), CC_ERR_INVALID_ARG);
    c.size = 0;
    assert_int_equal(cc__net_create(&c, &net), CC_ERR_INVALID_ARG);
    c.size = 2;
    c.rank = 2;
    assert_int_equal(cc__net_create(&c, &net), CC_ERR_INVALID_ARG);
    c.rank = 0;
    c.size = 1;
    c.allgather = NULL;
    assert_int_equal(cc__net_create(&c, &net), CC_ERR_INVALID_ARG);
    c.allgather = solo_allgather;
    c.transport = "shm";
    assert_int_equal(cc__net_create(&c, &net), CC_ERR_INVALID_ARG);
    assert_null(net);
    c.transport = NULL; /* NULL means auto */
    assert_int_equal(cc__net_create(&c, &net), CC_OK);
    cc__req_t r, *rp = &r;
    char b[8];
    assert_int_equal(cc__net_isend(net, 1, 0, b, 8, &r), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_isend(net, -1, 0, b, 8, &r), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_irecv(net, 0, 0, NULL, 8, &r), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_irecv(net, 0, 0, b, 8, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_isend(NULL, 0, 0, b, 8, &r), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_wait(net, NULL, 1, UINT64_MAX), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__net_wait(net, &rp, -1, UINT64_MAX), CC_ERR_INVALID_ARG);
    memset(&r, 0, sizeof(r));
    assert_int_equal(cc__net_wait(net, &rp, 1, UINT64_MAX), CC_ERR_INVALID_ARG); /* not posted */
    assert_int_equal(cc__net_wait(net, &rp, 0, UINT64_MAX), CC_OK);
    assert_string_equal(cc__net_transport(net, 0), "self");
    assert_string_equal(cc__net_transport(net, 1), "none");
    assert_string_equal(cc__net_transport(NULL, 0), "none");
    assert_int_equal(cc__net_all_shm(net), 1);
    cc__net_abort(net, CC_ERR_ABORTED);
    cc__net_abort(net, CC_ERR_TIMEOUT); /* idempotent: the first reason stays */
    assert_int_equal(cc__net_isend(net, 0, 0, b, 8, &r), CC_ERR_ABORTED);
    assert_int_equal(r.status, CC_ERR_ABORTED);
    cc__net_destroy(net);
    cc__net_destroy(NULL);
    cc__net_abort(NULL, CC_ERR_ABORTED);
}

/* One rank with a bad CCOMM_SHM_RING_SIZE: it says why, the other learns it failed. */
static int rank_bad_env(int rank, int n, void *arg)
{
    cc__net_config_t cfg;
    cc__net_t *net = NULL;
    if (rank == 0) {
        setenv("CCOMM_SHM_RING_SIZE", "5000", 1);
        cc__config_reload();
    }
    mp_config(&cfg, rank, n, arg);
    MP_CHECK_ST(cc__net_create(&cfg, &net), rank == 0 ? CC_ERR_INVALID_ARG : CC_ERR_CONNECT);
    MP_CHECK(net == NULL);
    return 0;
}

static void test_bad_env(void **s)
{
    (void)s;
    run(2, rank_bad_env, "auto", all_ok);
}

static int rank_bad_addr(int rank, int n, void *arg)
{
    cc__net_config_t cfg;
    cc__net_t *net = NULL;
    mp_config(&cfg, rank, n, arg);
    cfg.socket_addr = rank == 1 ? "not-an-ip" : "127.0.0.1";
    MP_CHECK_ST(cc__net_create(&cfg, &net), rank == 1 ? CC_ERR_INVALID_ARG : CC_ERR_CONNECT);
    return 0;
}

static void test_bad_socket_addr(void **s)
{
    (void)s;
    run(2, rank_bad_addr, "tcp", all_ok);
}

static cc__net_t *make(int rank, int n, const char *transport)
{
    cc__net_config_t cfg;
    cc__net_t *net = NULL;
    mp_config(&cfg, rank, n, transport);
    return cc__net_create(&cfg, &net) == CC_OK ? net : NULL;
}

/* Lengths that differ fail the receive with MISMATCH; the stream stays in step. */
static int rank_mismatch(int rank, int n, void *arg)
{
    uint64_t errors = cc__log_error_count(); /* the parent's count is inherited */
    cc__net_t *net = make(rank, n, arg);
    MP_CHECK(net);
    static const size_t send_len[] = {100, 50, 1u << 20, 10}, recv_len[] = {64, 50, 2u << 20, 10};
    unsigned char *b = malloc(2u << 20);
    for (int i = 0; i < 4; i++) {
        uint32_t tag = 5 + (uint32_t)i;
        if (rank == 0) {
            tu_fill(b, send_len[i], 0, 1, tag);
            MP_CHECK_ST(cc__net_send(net, 1, tag, b, send_len[i], deadline()), CC_OK);
        } else {
            cc_status_t want = send_len[i] == recv_len[i] ? CC_OK : CC_ERR_MISMATCH;
            MP_CHECK_ST(cc__net_recv(net, 0, tag, b, recv_len[i], deadline()), want);
            if (want == CC_OK) MP_CHECK(tu_check(b, recv_len[i], 0, 1, tag) < 0);
        }
    }
    MP_CHECK(cc__log_error_count() - errors == (rank == 1 ? 2u : 0u)); /* a line per mismatch */
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    free(b);
    cc__net_destroy(net);
    return 0;
}

static void test_mismatch_shm(void **s)
{
    (void)s;
    run(2, rank_mismatch, "auto", all_ok);
}

static void test_mismatch_tcp(void **s)
{
    (void)s;
    run(2, rank_mismatch, "tcp", all_ok);
}

/*
 * A receive nobody answers times out and is withdrawn (the net stays usable);
 * a rendezvous send already announced cannot be withdrawn, so the blocking
 * call aborts the net and the peer sees PEER_LOST.
 */
static int rank_timeout(int rank, int n, void *arg)
{
    cc__net_t *net = make(rank, n, arg);
    MP_CHECK(net);
    char b[64] = {0};
    if (rank == 1) {
        uint64_t t0 = cc__now_ns();
        MP_CHECK_ST(cc__net_recv(net, 0, 1, b, sizeof(b), t0 + 200000000ull), CC_ERR_TIMEOUT);
        uint64_t took = cc__now_ns() - t0;
        MP_CHECK(took >= 200000000ull && took < BOUND_NS);
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    /* Still healthy: a message goes through. */
    if (rank == 0)
        MP_CHECK_ST(cc__net_send(net, 1, 2, "ok", 3, deadline()), CC_OK);
    else
        MP_CHECK_ST(cc__net_recv(net, 0, 2, b, 3, deadline()), CC_OK);
    MP_CHECK(rank == 0 || strcmp(b, "ok") == 0);
    {
        size_t big = 1u << 20; /* a rendezvous on shm and on tcp */
        char *p = calloc(1, big);
        if (rank == 1) {
            MP_CHECK_ST(cc__net_send(net, 0, 3, p, big, cc__now_ns() + 200000000ull),
                        CC_ERR_TIMEOUT);
            MP_CHECK_ST(cc__net_send(net, 0, 4, b, 1, deadline()), CC_ERR_TIMEOUT); /* aborted */
        }
        MP_CHECK_ST(mp_barrier(rank), CC_OK);
        if (rank == 0) MP_CHECK_ST(cc__net_recv(net, 1, 3, p, big, deadline()), CC_ERR_PEER_LOST);
        MP_CHECK_ST(mp_barrier(rank), CC_OK);
        free(p);
    }
    cc__net_destroy(net);
    return 0;
}

static void test_timeout_shm(void **s)
{
    (void)s;
    run(2, rank_timeout, "auto", all_ok);
}

static void test_timeout_tcp(void **s)
{
    (void)s;
    run(2, rank_timeout, "tcp", all_ok);
}

static void *abort_later(void *p)
{
    usleep(200000);
    cc__net_abort(p, CC_ERR_ABORTED);
    return NULL;
}

/* Rank 1 is aborted from another thread while it waits; its peers get PEER_LOST. */
static int rank_abort(int rank, int n, void *arg)
{
    cc__net_t *net = make(rank, n, arg);
    MP_CHECK(net);
    char b[16];
    cc__req_t r[2], *rp[2] = {&r[0], &r[1]};
    uint64_t t0 = cc__now_ns();
    if (rank == 1) {
        pthread_t th;
        pthread_create(&th, NULL, abort_later, net);
        MP_CHECK_ST(cc__net_irecv(net, 0, 7, b, sizeof(b), &r[0]), CC_OK);
        MP_CHECK_ST(cc__net_irecv(net, 2, 7, b, sizeof(b), &r[1]), CC_OK);
        MP_CHECK_ST(cc__net_wait(net, rp, 2, deadline()), CC_ERR_ABORTED);
        MP_CHECK(r[0].status == CC_ERR_ABORTED && r[1].status == CC_ERR_ABORTED);
        pthread_join(th, NULL);
        MP_CHECK_ST(cc__net_isend(net, 0, 8, b, 1, &r[0]), CC_ERR_ABORTED);
    } else {
        MP_CHECK_ST(cc__net_recv(net, 1, 7, b, sizeof(b), deadline()), CC_ERR_PEER_LOST);
        /* The pair that does not involve rank 1 still works. */
        MP_CHECK_ST(cc__net_sendrecv(net, 2 - rank, "hi", 3, 2 - rank, b, 3, 9, deadline()), CC_OK);
        MP_CHECK(strcmp(b, "hi") == 0);
    }
    MP_CHECK(cc__now_ns() - t0 < BOUND_NS);
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    cc__net_destroy(net);
    return 0;
}

static void test_abort_shm(void **s)
{
    (void)s;
    run(3, rank_abort, "auto", all_ok);
}

static void test_abort_tcp(void **s)
{
    (void)s;
    run(3, rank_abort, "tcp", all_ok);
}

/* A peer that sends, then destroys its net: its message arrives, the next receive fails. */
static int rank_closed(int rank, int n, void *arg)
{
    cc__net_t *net = make(rank, n, arg);
    MP_CHECK(net);
    char b[16] = {0};
    if (rank == 0) {
        MP_CHECK_ST(cc__net_send(net, 1, 1, "bye", 4, deadline()), CC_OK);
        cc__net_destroy(net);
        MP_CHECK_ST(mp_barrier(rank), CC_OK);
        return 0;
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    MP_CHECK_ST(cc__net_recv(net, 0, 1, b, 4, deadline()), CC_OK);
    MP_CHECK(strcmp(b, "bye") == 0);
    MP_CHECK_ST(cc__net_recv(net, 0, 1, b, 4, deadline()), CC_ERR_PEER_LOST);
    MP_CHECK_ST(cc__net_send(net, 0, 1, b, 4, deadline()), CC_ERR_PEER_LOST);
    cc__net_destroy(net);
    return 0;
}

static void test_closed_shm(void **s)
{
    (void)s;
    run(2, rank_closed, "auto", all_ok);
}

static void test_closed_tcp(void **s)
{
    (void)s;
    run(2, rank_closed, "tcp", all_ok);
}

/*
 * Rank 3 announces a large send to rank 0, then is killed with SIGKILL while
 * ranks 0..2 wait for it; they get PEER_LOST in bounded time and go on.
 */
static int rank_killed(int rank, int n, void *arg)
{
    cc__net_t *net = make(rank, n, arg);
    MP_CHECK(net);
    size_t big = 24u << 20; /* more than TCP's socket buffers hold: the send cannot finish */
    char *p = calloc(1, big), b[8];
    cc__req_t r;
    if (rank == 3) MP_CHECK_ST(cc__net_isend(net, 0, 1, p, big, &r), CC_OK);
    if (rank == 0) MP_CHECK_ST(cc__net_isend(net, 3, 2, p, big, &r), CC_OK);
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    if (rank == 3) raise(SIGKILL);
    uint64_t t0 = cc__now_ns();
    if (rank == 0) {
        cc__req_t *rp = &r;
        MP_CHECK_ST(cc__net_wait(net, &rp, 1, deadline()), CC_ERR_PEER_LOST);
        usleep(100000); /* the held RTS is from a dead sender now */
        MP_CHECK_ST(cc__net_recv(net, 3, 1, p, big, deadline()), CC_ERR_PEER_LOST);
    } else {
        MP_CHECK_ST(cc__net_recv(net, 3, 5, b, sizeof(b), deadline()), CC_ERR_PEER_LOST);
    }
    MP_CHECK(cc__now_ns() - t0 < BOUND_NS);
    int to = (rank + 1) % 3, from = (rank + 2) % 3;
    MP_CHECK_ST(cc__net_sendrecv(net, to, p, big, from, p, big, 6, deadline()), CC_OK);
    free(p);
    cc__net_destroy(net);
    return 0;
}

static const int killed_codes[4] = {0, 0, 0, 128 + SIGKILL};

static void test_killed_shm(void **s)
{
    (void)s;
    run(4, rank_killed, "auto", killed_codes);
}

static void test_killed_tcp(void **s)
{
    (void)s;
    run(4, rank_killed, "tcp", killed_codes);
}

/* A global at the same address in every forked rank: a probe target for CMA. */
static volatile uint64_t probe_word = 42;

/* Take CAP_SYS_PTRACE out of this process's effective and permitted sets. */
static int drop_ptrace_cap(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0) return -1;
    d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
    d[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
    return (int)syscall(SYS_capset, &h, d);
}

/* process_vm_readv refused (non-dumpable sender, no CAP_SYS_PTRACE): data still arrives. */
static int rank_cma_refused(int rank, int n, void *arg)
{
    char log[128];
    snprintf(log, sizeof(log), "%s/log-%d", getenv("CCOMM_SHM_DIR"), rank);
    setenv("CCOMM_LOG_LEVEL", "INFO", 1);
    setenv("CCOMM_LOG_SUBSYS", "SHM", 1);
    setenv("CCOMM_LOG_FILE", log, 1);
    cc__config_reload();
    if (rank == 0) prctl(PR_SET_DUMPABLE, 0);
    cc__net_t *net = make(rank, n, arg);
    MP_CHECK(net);
    size_t big = (1u << 20) + 5;
    unsigned char *p = malloc(big);
    int mine = 1, theirs = 0;
    if (rank == 1) {
        uint64_t v = 0;
        struct iovec l = {&v, sizeof(v)}, r = {(void *)&probe_word, sizeof(v)};
        mine = drop_ptrace_cap() == 0 &&
               process_vm_readv(cc__net_peer_pid(net, 0), &l, 1, &r, 1, 0) < 0 && errno == EPERM;
    }
    MP_CHECK_ST(cc__net_sendrecv(net, 1 - rank, &mine, sizeof(int), 1 - rank, &theirs, sizeof(int),
                                 1, deadline()),
                CC_OK);
    int refused = rank == 1 ? mine : theirs;
    for (int i = 0; i < 3 && refused; i++) {
        if (rank == 0) tu_fill(p, big, 0, 1, (uint32_t)i);
        MP_CHECK_ST(rank == 0 ? cc__net_send(net, 1, 2, p, big, deadline())
                              : cc__net_recv(net, 0, 2, p, big, deadline()),
                    CC_OK);
        if (rank == 1) MP_CHECK(tu_check(p, big, 0, 1, (uint32_t)i) < 0);
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    cc__net_destroy(net);
    free(p);
    char text[4096] = {0};
    FILE *f = fopen(log, "r");
    if (f) {
        size_t got = fread(text, 1, sizeof(text) - 1, f);
        text[got] = '\0';
        fclose(f);
    }
    unlink(log);
    if (!refused) return SKIP_CODE; /* this kernel let the read through: nothing to test */
    MP_CHECK(rank == 0 || strstr(text, "refused") != NULL);
    return 0;
}

static void test_cma_refused(void **s)
{
    (void)s;
    run(2, rank_cma_refused, "auto", all_ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_args),        cmocka_unit_test(test_bad_env),
        cmocka_unit_test(test_bad_socket_addr), cmocka_unit_test(test_mismatch_shm),
        cmocka_unit_test(test_mismatch_tcp),    cmocka_unit_test(test_timeout_shm),
        cmocka_unit_test(test_timeout_tcp),     cmocka_unit_test(test_abort_shm),
        cmocka_unit_test(test_abort_tcp),       cmocka_unit_test(test_closed_shm),
        cmocka_unit_test(test_closed_tcp),      cmocka_unit_test(test_killed_shm),
        cmocka_unit_test(test_killed_tcp),      cmocka_unit_test(test_cma_refused),
    };
    return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
