/*
 * test_tcp_spin.c - CCOMM_TCP_SPIN_US: a rank whose pending requests are
 * all TCP spins that long before it sleeps in epoll, and by default (0)
 * sleeps at once; CCOMM_TCP_YIELD_US: where the host's ranks share its
 * CPUs, it polls and yields that long instead. Seen from outside: the binary is linked with
 * --wrap=epoll_pwait2 (tests/unit/transport/CMakeLists.txt), the TCP
 * transport's only sleep, and counts its calls during a ping-pong: with a
 * spin far longer than a reply takes, no wait sleeps. (Without one, whether
 * a wait sleeps is a race with the wait loop's first 16 polls, so the
 * default is not asserted here.) epoll_wait, progress's non-blocking look at
 * the sockets, is counted too: a message already there needs none.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/clock.h"
#include "base/config.h"
#include "net_mp.h"
#include "transport/net.h"
#include "tutil.h"

#define DEADLINE_S 30
#define ROUNDS     50

static int g_sleeps; /* per process: each forked rank counts its own */

int __real_epoll_pwait2(int fd, struct epoll_event *ev, int max, const struct timespec *t,
                        const sigset_t *mask);
int __wrap_epoll_pwait2(int fd, struct epoll_event *ev, int max, const struct timespec *t,
                        const sigset_t *mask)
{
    g_sleeps++;
    return __real_epoll_pwait2(fd, ev, max, t, mask);
}

/* The settings of a ping-pong: each NULL is left unset. */
struct pp {
    const char *spin;  /* CCOMM_TCP_SPIN_US */
    const char *yield; /* CCOMM_TCP_YIELD_US */
    const char *local; /* CCOMM_LOCAL_SIZE: more than the CPUs makes the ranks share them */
};

/* ROUNDS 8-byte ping-pongs over TCP with the settings of arg; 1 if a spinning or yielding wait
 * slept. */
static int rank_pingpong(int rank, int n, void *arg)
{
    const struct pp *a = arg;
    if (a->spin) setenv("CCOMM_TCP_SPIN_US", a->spin, 1);
    if (a->yield) setenv("CCOMM_TCP_YIELD_US", a->yield, 1);
    if (a->local) setenv("CCOMM_LOCAL_SIZE", a->local, 1);
    cc__config_reload();
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, "tcp");
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    uint64_t word = 0;
    int before = g_sleeps;
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t dl = cc__deadline_after_ms(DEADLINE_S * 1000);
        if (rank == 0) {
            word = (uint64_t)i;
            MP_CHECK_ST(cc__net_send(net, 1, 3, &word, sizeof(word), dl), CC_OK);
            MP_CHECK_ST(cc__net_recv(net, 1, 4, &word, sizeof(word), dl), CC_OK);
            MP_CHECK(word == (uint64_t)i + 1000);
        } else {
            MP_CHECK_ST(cc__net_recv(net, 0, 3, &word, sizeof(word), dl), CC_OK);
            MP_CHECK(word == (uint64_t)i);
            word += 1000;
            MP_CHECK_ST(cc__net_send(net, 0, 4, &word, sizeof(word), dl), CC_OK);
        }
    }
    int sleeps = g_sleeps - before;
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    cc__net_destroy(net);
    int busy = a->local ? a->yield && atoi(a->yield) > 0 : a->spin && atoi(a->spin) > 0;
    if (busy && sleeps != 0) {
        fprintf(stderr,
                "rank %d: CCOMM_TCP_SPIN_US=%s CCOMM_TCP_YIELD_US=%s CCOMM_LOCAL_SIZE=%s, yet %d "
                "of %d waits slept in epoll\n",
                rank, a->spin ? a->spin : "-", a->yield ? a->yield : "-",
                a->local ? a->local : "-", sleeps, ROUNDS);
        return 1;
    }
    return 0;
}

static int g_polls; /* epoll_wait calls: progress's look at which sockets are readable */

int __real_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout);
int __wrap_epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
    g_polls++;
    return __real_epoll_wait(fd, ev, max, timeout);
}

/*
 * A message that is already in the socket when its receive waits is read by recv()
 * without an epoll_wait() first (before: one per message): with few peers, progress reads the sockets that requests
 * wait on directly. Rank 1 sends ROUNDS messages; rank 0 receives each after they are all
 * surely there (a reply said so, and 20 ms passed).
 */
static int rank_ready(int rank, int n, void *arg)
{
    (void)arg;
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, "tcp");
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    uint64_t word = 0, dl = cc__deadline_after_ms(DEADLINE_S * 1000);
    if (rank == 1) {
        for (int i = 0; i < ROUNDS; i++) {
            word = (uint64_t)i;
            MP_CHECK_ST(cc__net_send(net, 0, 3, &word, sizeof(word), dl), CC_OK);
        }
        MP_CHECK_ST(cc__net_send(net, 0, 4, &word, sizeof(word), dl), CC_OK);
    } else {
        MP_CHECK_ST(cc__net_recv(net, 1, 4, &word, sizeof(word), dl), CC_OK);
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
        int before = g_polls;
        for (int i = 0; i < ROUNDS; i++) {
            MP_CHECK_ST(cc__net_recv(net, 1, 3, &word, sizeof(word), dl), CC_OK);
            MP_CHECK(word == (uint64_t)i);
        }
        /* Only the every-16th look at peers nothing waits on (tcp_msg.c) may remain. */
        if (g_polls - before > ROUNDS / 4) {
            fprintf(stderr, "rank 0: %d epoll_wait calls for %d messages already there\n",
                    g_polls - before, ROUNDS);
            return 1;
        }
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    cc__net_destroy(net);
    return 0;
}

static void reads_ready_data_directly(void **state)
{
    (void)state;
    int codes[2];
    assert_int_equal(mp_fork(2, rank_ready, NULL, DEADLINE_S + 30, codes), 0);
}

/* A value outside [0, 10 s] fails the net's creation on every rank (net.c, check_env). */
static int rank_bad(int rank, int n, void *arg)
{
    const char *const *var = arg; /* {name, value} */
    setenv(var[0], var[1], 1);
    cc__config_reload();
    cc__net_config_t cfg;
    cc__net_t *net = NULL;
    mp_config(&cfg, rank, n, "tcp");
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_ERR_INVALID_ARG);
    MP_CHECK(net == NULL);
    return 0;
}

static void rejects_bad_values(void **state)
{
    (void)state;
    static const char *const bad[][2] = {{"CCOMM_TCP_SPIN_US", "-1"},
                                         {"CCOMM_TCP_SPIN_US", "10000001"},
                                         {"CCOMM_TCP_YIELD_US", "-1"},
                                         {"CCOMM_TCP_YIELD_US", "10000001"}};
    for (int i = 0; i < 4; i++) {
        int codes[2];
        assert_int_equal(mp_fork(2, rank_bad, (void *)bad[i], DEADLINE_S + 30, codes), 0);
    }
}

/* A spin needs a CPU per rank: with fewer CPUs than ranks the spin is off (net.c). */
static void spins_when_asked(void **state)
{
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) < 2) skip();
    int codes[2];
    int bad = mp_fork(2, rank_pingpong, *state, DEADLINE_S + 30, codes);
    for (int i = 0; i < 2; i++)
        if (codes[i]) fprintf(stderr, "rank %d exited with %d\n", i, codes[i]);
    assert_int_equal(bad, 0);
}

/* With more ranks than CPUs (CCOMM_LOCAL_SIZE says so) the spin is off and the yield stage,
 * here 10 s, keeps every wait of the ping-pong out of epoll's sleep. Any CPU count. */
static void yields_when_cpus_shared(void **state)
{
    int codes[2];
    int bad = mp_fork(2, rank_pingpong, *state, DEADLINE_S + 30, codes);
    for (int i = 0; i < 2; i++)
        if (codes[i]) fprintf(stderr, "rank %d exited with %d\n", i, codes[i]);
    assert_int_equal(bad, 0);
}

static struct pp g_spin = {.spin = "10000000"};
static struct pp g_yield = {.spin = "10000000", .yield = "10000000", .local = "4096"};

int main(void)
{
    const struct CMUnitTest tests[] = {
        {"spins_when_asked", spins_when_asked, NULL, NULL, &g_spin},
        {"yields_when_cpus_shared", yields_when_cpus_shared, NULL, NULL, &g_yield},
        {"rejects_bad_values", rejects_bad_values, NULL, NULL, NULL},
        {"reads_ready_data_directly", reads_ready_data_directly, NULL, NULL, NULL},
    };
    return _cmocka_run_group_tests("test_tcp_spin", tests, sizeof(tests) / sizeof(tests[0]),
                                   tu_setup, tu_teardown);
}
