/*
 * test_window.c - RMA windows (ccomm/window.h) on forked ranks of one host,
 * over shared memory (CCOMM_TRANSPORT=auto) and over TCP (=tcp: the
 * target's progress thread): puts of 1, 7, 64, 4096 and 1M+3 bytes at odd
 * offsets from odd source alignments, each followed by a signal, round
 * after round with a new pattern each round (a target that saw the signal
 * before the data would find the previous round's bytes); many-to-one puts
 * into slices of rank 0's window; get and flush; a wait for a signal that
 * never comes (CC_ERR_TIMEOUT in the op's timeout); a signal waking a
 * sleeping waiter at once; bad arguments (nothing written); the window ops
 * in the flight recorder's dump; a peer killed while a rank waits for its
 * signal (CC_ERR_PEER_LOST, no hang); puts still on the wire at destroy
 * (in place when destroy returns); the process's fds over 50
 * create/destroy rounds.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/config.h"
#include "engine/comm.h"
#include "native/native.h"
#include "native/window.h"
#include "native/window_tcp.h"
#include "test_coll_util.h"

#define BIG    ((size_t)(1u << 20) + 3)
#define ROUNDS 40
static const size_t sizes[] = {1, 7, 64, 4096, BIG};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define SPAN   (BIG + 256) /* each rank's registered bytes in the ring test */

/* The byte j of round i from rank r: changes every round. */
static unsigned char pat(int r, int i, size_t j)
{
    return (unsigned char)((size_t)r * 131u + (size_t)i * 29u + j * 7u + (j >> 8) + 1u);
}

static size_t odd_off(int i)
{
    return (size_t)(i * 13 % 97) | 1u;
}

static cc_status_t wait_sig(cc_window_t *w, int peer, uint64_t count)
{
    return cc_window_wait_signal(w, peer, count, NULL, NULL);
}

/* Every rank puts into the next and waits for the previous; acks through a second window. */
static int ring_rounds(cc_comm_t *comm, int r, int n)
{
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    unsigned char *mine = calloc(1, SPAN), *src = tc_alloc(BIG + 8, 0);
    cc_window_t *data = NULL, *ack = NULL;
    TC_REQUIRE(mine && src, "alloc");
    TC_REQUIRE(cc_window_create(comm, mine, SPAN, NULL, &data) == CC_OK, "create data");
    TC_REQUIRE(cc_window_create(comm, NULL, 0, NULL, &ack) == CC_OK, "create ack");
    for (int i = 0; i < ROUNDS * (int)NSIZES; i++) {
        size_t len = sizes[(size_t)i % NSIZES], off = odd_off(i), salign = (size_t)i % 7;
        unsigned char *s = src + salign;
        for (size_t j = 0; j < len; j++) s[j] = pat(r, i, j);
        TC_REQUIRE(cc_window_put(data, s, len, next, off, NULL, NULL) == CC_OK, "put %d", i);
        TC_REQUIRE(cc_window_signal(data, next, NULL, NULL) == CC_OK, "signal %d", i);
        cc_status_t st = wait_sig(data, prev, (uint64_t)i + 1);
        TC_REQUIRE(st == CC_OK, "wait round %d: %s", i, cc_status_name(st));
        for (size_t j = 0; j < len; j++) {
            unsigned char v = mine[off + j]; /* read once: the message shows what was seen */
            TC_REQUIRE(v == pat(prev, i, j),
                       "round %d (%zu bytes at %zu) from rank %d: byte %zu is %u, want %u", i, len,
                       off, prev, j, v, pat(prev, i, j));
        }
        TC_REQUIRE(cc_window_signal(ack, prev, NULL, NULL) == CC_OK, "ack %d", i);
        st = wait_sig(ack, next, (uint64_t)i + 1);
        TC_REQUIRE(st == CC_OK, "wait ack %d: %s", i, cc_status_name(st));
    }
    TC_REQUIRE(cc_window_destroy(ack) == CC_OK, "destroy ack");
    TC_REQUIRE(cc_window_destroy(data) == CC_OK, "destroy data");
    free(mine);
    tc_free(src);
    return 0;
}

/* Every rank but 0 puts into its own slice of rank 0's window; rank 0 waits for each. */
static int many_to_one(cc_comm_t *comm, int r, int n)
{
    enum { SLICE = 4099, NR = 20 };
    unsigned char *mine = r == 0 ? calloc((size_t)n, SLICE) : NULL, src[SLICE];
    cc_window_t *w = NULL, *ack = NULL;
    TC_REQUIRE(r != 0 || mine, "alloc");
    TC_REQUIRE(cc_window_create(comm, mine, r == 0 ? (size_t)n * SLICE : 0, NULL, &w) == CC_OK,
               "create");
    TC_REQUIRE(cc_window_create(comm, NULL, 0, NULL, &ack) == CC_OK, "create ack");
    for (int i = 0; i < NR; i++) {
        if (r != 0) {
            for (size_t j = 0; j < SLICE; j++) src[j] = pat(r, i, j);
            TC_REQUIRE(cc_window_put(w, src, SLICE, 0, (size_t)r * SLICE, NULL, NULL) == CC_OK,
                       "put");
            TC_REQUIRE(cc_window_signal(w, 0, NULL, NULL) == CC_OK, "signal");
            TC_REQUIRE(wait_sig(ack, 0, (uint64_t)i + 1) == CC_OK, "wait ack");
            continue;
        }
        for (int q = n - 1; q >= 1; q--) {
            TC_REQUIRE(wait_sig(w, q, (uint64_t)i + 1) == CC_OK, "wait rank %d", q);
            for (size_t j = 0; j < SLICE; j++)
                TC_REQUIRE(mine[(size_t)q * SLICE + j] == pat(q, i, j),
                           "round %d slice of rank %d byte %zu", i, q, j);
        }
        for (int q = 1; q < n; q++)
            TC_REQUIRE(cc_window_signal(ack, q, NULL, NULL) == CC_OK, "ack %d", q);
    }
    TC_REQUIRE(cc_window_destroy(ack) == CC_OK && cc_window_destroy(w) == CC_OK, "destroy");
    free(mine);
    return 0;
}

/* Get a peer's region (after a barrier: it wrote it before); flush is OK. */
static int get_flush(cc_comm_t *comm, int r, int n)
{
    enum { LEN = 3001 };
    unsigned char mine[LEN + 16], got[LEN];
    for (size_t j = 0; j < sizeof(mine); j++) mine[j] = pat(r, 99, j);
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, mine, sizeof(mine), NULL, &w) == CC_OK, "create");
    int next = (r + 1) % n;
    memset(got, 0, sizeof(got));
    TC_REQUIRE(cc_window_get(w, got, LEN, next, 5, NULL, NULL) == CC_OK, "get");
    for (size_t j = 0; j < LEN; j++)
        TC_REQUIRE(got[j] == pat(next, 99, j + 5), "get byte %zu from rank %d", j, next);
    TC_REQUIRE(cc_window_flush(w, next, NULL) == CC_OK, "flush");
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier"); /* nobody reads us any more */
    TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy");
    return 0;
}

/* Bad input: specific errors and nothing written into the target. */
static int bad_input(cc_comm_t *comm, int r, int n)
{
    unsigned char mine[64], b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    memset(mine, 0xee, sizeof(mine));
    cc_window_t *w = NULL, *w2 = NULL;
    cc_window_config_t bad = CC_WINDOW_CONFIG_INIT;
    bad.flags = 1;
    TC_REQUIRE(cc_window_create(comm, mine, 64, &bad, &w) == CC_ERR_INVALID_ARG, "flags");
    TC_REQUIRE(cc_window_create(comm, mine, 64, NULL, NULL) == CC_ERR_INVALID_ARG, "NULL out");
    TC_REQUIRE(cc_window_create(comm, NULL, 64, NULL, &w) == CC_ERR_INVALID_ARG, "NULL base");
    TC_REQUIRE(cc_window_create(NULL, mine, 64, NULL, &w) != CC_OK, "NULL comm");
    TC_REQUIRE(cc_window_create(comm, mine, 64, NULL, &w) == CC_OK, "create");
    int p = (r + 1) % n;
    TC_REQUIRE(cc_window_put(NULL, b, 8, p, 0, NULL, NULL) == CC_ERR_INVALID_ARG, "NULL win");
    TC_REQUIRE(cc_window_put(w, b, 8, -1, 0, NULL, NULL) == CC_ERR_INVALID_ARG, "peer -1");
    TC_REQUIRE(cc_window_put(w, b, 8, n, 0, NULL, NULL) == CC_ERR_INVALID_ARG, "peer n");
    TC_REQUIRE(cc_window_put(w, b, 8, r, 0, NULL, NULL) == CC_ERR_INVALID_ARG, "peer self");
    TC_REQUIRE(cc_window_signal(w, r, NULL, NULL) == CC_ERR_INVALID_ARG, "signal self");
    TC_REQUIRE(cc_window_put(w, b, 8, p, 57, NULL, NULL) == CC_ERR_INVALID_ARG, "57 + 8 > 64");
    TC_REQUIRE(cc_window_put(w, b, 1, p, 64, NULL, NULL) == CC_ERR_INVALID_ARG, "64 + 1 > 64");
    TC_REQUIRE(cc_window_get(w, b, 2, p, SIZE_MAX, NULL, NULL) == CC_ERR_INVALID_ARG, "wrap");
    TC_REQUIRE(cc_window_get(w, b, SIZE_MAX, p, 2, NULL, NULL) == CC_ERR_INVALID_ARG, "wrap 2");
    TC_REQUIRE(cc_window_put(w, NULL, 8, p, 0, NULL, NULL) == CC_ERR_INVALID_ARG, "NULL src");
    TC_REQUIRE(cc_window_put(w, b, 8, p, 56, NULL, NULL) == CC_OK, "56 + 8 fits");
    TC_REQUIRE(cc_window_put(w, NULL, 0, p, 64, NULL, NULL) == CC_OK, "0 bytes at the end");
    TC_REQUIRE(cc_window_flush(w, n + 3, NULL) == CC_ERR_INVALID_ARG, "flush peer");
    TC_REQUIRE(cc_window_flush(w, p, NULL) == CC_OK, "flush"); /* the put is in place at p */
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    for (size_t j = 0; j < 56; j++) TC_REQUIRE(mine[j] == 0xee, "byte %zu was written", j);
    for (size_t j = 56; j < 64; j++) TC_REQUIRE(mine[j] == j - 55, "byte %zu", j);
    TC_REQUIRE(cc_window_create(comm, NULL, 0, NULL, &w2) == CC_OK, "create 2");
    TC_REQUIRE(cc_window_destroy(w2) == CC_OK, "destroy, nothing pending");
    TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy");
    TC_REQUIRE(cc_window_put(w, b, 8, p, 0, NULL, NULL) == CC_ERR_INVALID_USAGE, "destroyed");
    TC_REQUIRE(cc_window_destroy(w) == CC_ERR_INVALID_USAGE, "destroyed twice");
    return 0;
}

/* The window ops are in the flight recorder's dump, by name. */
static int recorded(int r, int n)
{
    char path[256], *buf = NULL;
    snprintf(path, sizeof(path), "/tmp/ccomm-test-window-%d-%d.json", (int)getpid(), r);
    TC_REQUIRE(cc_recorder_dump(path) == CC_OK, "dump");
    FILE *f = fopen(path, "r");
    TC_REQUIRE(f, "open %s", path);
    size_t cap = 64u << 20, len;
    buf = malloc(cap + 1);
    len = buf ? fread(buf, 1, cap, f) : 0;
    fclose(f);
    unlink(path);
    TC_REQUIRE(buf, "alloc");
    buf[len] = '\0';
    char names[7][64];
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    snprintf(names[0], 64, "\"ccomm:window_put %d->%d\"", r, next);
    snprintf(names[1], 64, "\"ccomm:window_get %d<-%d\"", r, next);
    snprintf(names[2], 64, "\"ccomm:window_signal %d->%d\"", r, next);
    snprintf(names[3], 64, "\"ccomm:window_wait_signal %d<-%d\"", r, prev);
    snprintf(names[4], 64, "\"ccomm:window_flush %d->%d\"", r, next);
    snprintf(names[5], 64, "\"ccomm:window_create\"");
    snprintf(names[6], 64, "\"ccomm:window_destroy\"");
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        TC_REQUIRE(strstr(buf, names[i]), "%s is not in the dump", names[i]);
    free(buf);
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    if (ring_rounds(comm, rank, size) || many_to_one(comm, rank, size) ||
        get_flush(comm, rank, size) || bad_input(comm, rank, size) || recorded(rank, size))
        return 1;
    return cc_comm_destroy(comm) != CC_OK;
}

/* A mixed communicator: rank 0 forces TCP, so it reaches everyone over TCP while ranks 1 and
 * 2 share memory; the window serves every peer over TCP (one transport class per comm). */
static int rank_mixed(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    if (rank == 0) {
        setenv("CCOMM_TRANSPORT", "tcp", 1);
        cc__config_reload();
    }
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    const cc__native_t *nc = comm->engine_state;
    const char *want = rank == 0 ? "tcp" : "mixed", *algo[4];
    TC_REQUIRE(!strcmp(nc->transport, want), "rank %d: transport %s, want %s", rank,
               nc->transport, want);
    TC_REQUIRE(cc__native_algorithms(comm, CC_OP_WIN_PUT, algo, 4) == 1 && !strcmp(algo[0], "tcp"),
               "rank %d: window puts do not run over tcp", rank);
    if (ring_rounds(comm, rank, size) || many_to_one(comm, rank, size) ||
        get_flush(comm, rank, size) || bad_input(comm, rank, size))
        return 1;
    return cc_comm_destroy(comm) != CC_OK;
}

/* CCOMM_TIMEOUT past INT64_MAX ms: ops and destroy have no deadline (UINT64_MAX); destroy
 * must still end once the peers said goodbye, not wait for a deadline that never comes. */
static int rank_no_deadline(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    setenv("CCOMM_TIMEOUT", "9300000000000000", 1);
    cc__config_reload();
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    uint64_t slot = 0, v = 7u + (uint64_t)rank;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, &slot, sizeof(slot), NULL, &w) == CC_OK, "create");
    TC_REQUIRE(cc_window_put(w, &v, sizeof(v), next, 0, NULL, NULL) == CC_OK, "put");
    TC_REQUIRE(cc_window_signal(w, next, NULL, NULL) == CC_OK, "signal");
    TC_REQUIRE(wait_sig(w, prev, 1) == CC_OK && slot == 7u + (uint64_t)prev, "wait");
    TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy");
    return cc_comm_destroy(comm) != CC_OK;
}

/* Nobody signals: CC_ERR_TIMEOUT after the op's 300 ms, not the comm's 15 s. */
static int rank_timeout(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, NULL, 0, NULL, &w) == CC_OK, "create");
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = 300;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cc_status_t st = cc_window_wait_signal(w, (rank + 1) % size, 1, &o, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    TC_REQUIRE(st == CC_ERR_TIMEOUT, "wait: %s", cc_status_name(st));
    TC_REQUIRE(ms >= 299 && ms < 3000, "timed out after %.0f ms, want 300", ms);
    cc_window_destroy(w); /* the comm is broken by the timeout: any status */
    cc_comm_destroy(comm);
    return 0;
}

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * A signal wakes a waiter that went to sleep: rank 1 signals 50 ms after rank 0 began to
 * wait (past the spin and yield stages), sending the time it signalled; rank 0 measures how
 * long it took to wake. Without the futex wake the waiter sleeps on to its next liveness
 * check: CCOMM_PEER_CHECK_MS is set to 5 s here, so a missing wake reads as seconds while a
 * woken waiter takes well under a millisecond; the 1 s bound holds on a loaded machine.
 */
static int rank_wake(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    enum { NW = 11 };
    setenv("CCOMM_PEER_CHECK_MS", "5000", 1);
    cc__config_reload();
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    int64_t t_sig = 0, lat[NW];
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, &t_sig, sizeof(t_sig), NULL, &w) == CC_OK, "create");
    for (int i = 0; i < NW; i++) {
        TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
        if (rank == 1) {
            struct timespec d = {0, 50000000};
            nanosleep(&d, NULL);
            int64_t now = mono_ns();
            TC_REQUIRE(cc_window_put(w, &now, sizeof(now), 0, 0, NULL, NULL) == CC_OK, "put");
            TC_REQUIRE(cc_window_signal(w, 0, NULL, NULL) == CC_OK, "signal");
        } else if (rank == 0) {
            TC_REQUIRE(wait_sig(w, 1, (uint64_t)i + 1) == CC_OK, "wait %d", i);
            lat[i] = mono_ns() - t_sig;
        }
    }
    if (rank == 0) {
        qsort(lat, NW, sizeof(lat[0]), cmp_i64);
        fprintf(stderr, "wake latency: median %.3f ms, max %.3f ms\n", (double)lat[NW / 2] / 1e6,
                (double)lat[NW - 1] / 1e6);
        TC_REQUIRE(lat[NW / 2] < 1000000000, "median wake latency %.3f ms: the signal did not wake "
                   "the sleeping waiter", (double)lat[NW / 2] / 1e6);
    }
    TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy");
    return cc_comm_destroy(comm) != CC_OK;
}

/*
 * A put and its signal are two requests on the wire: the target's progress thread must take
 * both in one wake-up, not sleep between them (the put's tail waits in the origin's kernel
 * for the signal, MSG_MORE, and both travel in one segment). A ping-pong of NR put+signal
 * rounds: each thread sleeps about once per round; one that is woken by the put and again by
 * its signal sleeps about twice per round (76 times over 40 rounds, measured before).
 */
static int rank_one_wake(int rank, int size, const char *addr, void *arg)
{
    (void)arg, (void)size;
    enum { NR = 40 };
    setenv("CCOMM_TCP_SPIN_US", "0", 1); /* waiters sleep at once: nobody spins for the CPU */
    cc__config_reload();
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    int64_t slot = 0, v = 0;
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, &slot, sizeof(slot), NULL, &w) == CC_OK, "create");
    TC_REQUIRE(w->tcp, "rank %d: the window is not over tcp", rank);
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    uint64_t before = atomic_load(&w->tcp->sleeps);
    /* Each rank reads its slot right after the wait, before its own signal lets the peer
     * put the next round's value there. */
    for (int i = 0; i < NR; i++) {
        if (rank == 1) {
            TC_REQUIRE(wait_sig(w, 0, (uint64_t)i + 1) == CC_OK, "wait %d", i);
            TC_REQUIRE(slot == i * 2, "round %d: slot %lld", i, (long long)slot);
        }
        v = i * 2 + rank;
        TC_REQUIRE(cc_window_put(w, &v, sizeof(v), 1 - rank, 0, NULL, NULL) == CC_OK, "put");
        TC_REQUIRE(cc_window_signal(w, 1 - rank, NULL, NULL) == CC_OK, "signal");
        if (rank == 0) {
            TC_REQUIRE(wait_sig(w, 1, (uint64_t)i + 1) == CC_OK, "wait %d", i);
            TC_REQUIRE(slot == i * 2 + 1, "round %d: slot %lld", i, (long long)slot);
        }
    }
    uint64_t sleeps = atomic_load(&w->tcp->sleeps) - before;
    fprintf(stderr, "rank %d: window thread slept %llu times over %d put+signal\n", rank,
            (unsigned long long)sleeps, NR);
    TC_REQUIRE(sleeps <= NR + NR / 4, "rank %d: the window thread slept %llu times for %d put+signal "
               "(it sleeps between a put and its signal)", rank, (unsigned long long)sleeps, NR);
    TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy");
    return cc_comm_destroy(comm) != CC_OK;
}

/* Rank 1 dies (SIGKILL) while rank 0 waits for its signal: PEER_LOST long before the
 * 20 s timeout of the wait, naming the peer, and no hang in what follows. */
static int rank_killed(int rank, int size, const char *addr, void *arg)
{
    (void)arg, (void)size;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, NULL, 0, NULL, &w) == CC_OK, "create");
    TC_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 1) {
        struct timespec d = {0, 200000000}; /* rank 0 is asleep in its wait by then */
        nanosleep(&d, NULL);
        raise(SIGKILL);
    }
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = 20000;
    int64_t t0 = mono_ns();
    cc_status_t st = cc_window_wait_signal(w, 1, 1, &o, NULL);
    double ms = (double)(mono_ns() - t0) / 1e6;
    TC_REQUIRE(st == CC_ERR_PEER_LOST, "wait: %s after %.0f ms", cc_status_name(st), ms);
    TC_REQUIRE(ms < 10000, "peer loss seen after %.0f ms", ms);
    cc_window_destroy(w); /* the comm lost a rank: any status, but it returns */
    cc_comm_destroy(comm);
    return 0;
}

static void run_killed(void **s)
{
    const char *tp = *s;
    char env[64];
    snprintf(env, sizeof(env), "CCOMM_TRANSPORT=%s", tp);
    const char *envs[] = {env, TC_TIMEOUT_ENV, "CCOMM_LOG_LEVEL=NONE", NULL};
    cc_test_child_t out[2];
    fprintf(stderr, "-- 2 ranks, transport %s, rank 1 killed\n", tp);
    cc_test_fork_ranks(2, rank_killed, NULL, 60, envs, out);
    assert_true(out[0].exited && out[0].code == 0);
    assert_true(!out[1].exited && out[1].signo == SIGKILL);
}

/*
 * Destroy with puts still on their way: every rank but 1 puts PENDING_N puts of 1 MiB into
 * its slice of rank 1's window and destroys at once, without a signal or a flush; rank 1
 * only destroys. The destroy is a barrier after which no peer writes into this rank's
 * memory, so once it returned every byte must be in place. Over TCP rank 1 leaves the
 * barrier right after the last sender's last put went into its socket, with the others'
 * socket buffers (megabytes each: one progress thread drains n - 1 senders) still on the
 * wire: its destroy must wait for each peer's last request.
 */
static int rank_pending(int rank, int size, const char *addr, void *arg)
{
    enum { PENDING_N = 16, PLEN = 1 << 20 };
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    size_t slice = (size_t)PENDING_N * PLEN, len = rank == 1 ? slice * (size_t)size : 0;
    unsigned char *mine = len ? calloc(1, len) : NULL, *src = rank == 1 ? NULL : malloc(slice);
    TC_REQUIRE(rank == 1 ? !!mine : !!src, "alloc");
    for (size_t k = 0; src && k < slice; k++) /* before: the puts go out back to back */
        src[k] = pat(rank, (int)(k / PLEN), k % PLEN);
    cc_window_t *w = NULL;
    TC_REQUIRE(cc_window_create(comm, mine, len, NULL, &w) == CC_OK, "create");
    for (int i = 0; rank != 1 && i < PENDING_N; i++)
        TC_REQUIRE(cc_window_put(w, src + (size_t)i * PLEN, PLEN, 1,
                                 (size_t)rank * slice + (size_t)i * PLEN, NULL, NULL) == CC_OK,
                   "put %d", i);
    TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy");
    for (int q = 0; rank == 1 && q < size; q++)
        for (size_t k = 0; q != 1 && k < slice; k++)
            TC_REQUIRE(mine[(size_t)q * slice + k] == pat(q, (int)(k / PLEN), k % PLEN),
                       "put %zu from rank %d: byte %zu not in place after destroy", k / PLEN, q,
                       k % PLEN);
    free(mine);
    free(src);
    return cc_comm_destroy(comm) != CC_OK;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int k = 0;
    if (!d) return -1;
    while (readdir(d)) k++;
    closedir(d);
    return k;
}

/* 50 windows made and destroyed, each used once: the process holds the same fds after. */
static int rank_fds(int rank, int size, const char *addr, void *arg)
{
    enum { NWIN = 50 };
    (void)arg;
    cc_comm_t *comm = tc_init(rank, size, addr);
    TC_REQUIRE(comm, "init");
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, before = -1;
    uint64_t slot = 0, v;
    for (int i = 0; i <= NWIN; i++) {
        if (i == 1) before = count_fds(); /* after one round: lazily opened files are open */
        cc_window_t *w = NULL;
        TC_REQUIRE(cc_window_create(comm, &slot, sizeof(slot), NULL, &w) == CC_OK, "create %d",
                   i);
        v = (uint64_t)i * 1000u + (uint64_t)rank;
        TC_REQUIRE(cc_window_put(w, &v, sizeof(v), next, 0, NULL, NULL) == CC_OK, "put");
        TC_REQUIRE(cc_window_signal(w, next, NULL, NULL) == CC_OK, "signal");
        TC_REQUIRE(wait_sig(w, prev, 1) == CC_OK, "wait %d", i);
        TC_REQUIRE(slot == (uint64_t)i * 1000u + (uint64_t)prev, "round %d: %llu", i,
                   (unsigned long long)slot);
        TC_REQUIRE(cc_window_destroy(w) == CC_OK, "destroy %d", i);
    }
    int after = count_fds();
    TC_REQUIRE(before > 0 && after == before, "fds: %d after round 1, %d after %d windows",
               before, after, NWIN);
    return cc_comm_destroy(comm) != CC_OK;
}

/* One job: ranks, transport, what each rank runs. */
struct wjob {
    int n;
    const char *transport;
    int (*fn)(int, int, const char *, void *);
    int timeout_s;
};

static void run_job(void **s)
{
    const struct wjob *j = *s;
    assert_int_equal(tc_run(j->n, j->transport, j->fn, j->timeout_s), 0);
}

int main(void)
{
    static struct wjob two = {2, "auto", rank_main, 120}, four = {4, "auto", rank_main, 120},
                       timeout = {2, "auto", rank_timeout, 60}, wake = {2, "auto", rank_wake, 60},
                       pending = {2, "auto", rank_pending, 60}, fds = {2, "auto", rank_fds, 60},
                       two_tcp = {2, "tcp", rank_main, 120}, four_tcp = {4, "tcp", rank_main, 120},
                       timeout_tcp = {2, "tcp", rank_timeout, 60},
                       wake_tcp = {2, "tcp", rank_wake, 60},
                       pending_tcp = {4, "tcp", rank_pending, 60},
                       fds_tcp = {4, "tcp", rank_fds, 90}, mixed = {3, "auto", rank_mixed, 120},
                       forever_tcp = {2, "tcp", rank_no_deadline, 30},
                       one_wake_tcp = {2, "tcp", rank_one_wake, 60};
    static const char *shm = "auto", *tcp = "tcp";
    const struct CMUnitTest tests[] = {
        {"two", run_job, NULL, NULL, &two},
        {"four", run_job, NULL, NULL, &four},
        {"timeout", run_job, NULL, NULL, &timeout},
        {"wake", run_job, NULL, NULL, &wake},
        {"killed", run_killed, NULL, NULL, (void *)shm},
        {"pending", run_job, NULL, NULL, &pending},
        {"fds", run_job, NULL, NULL, &fds},
        {"two_tcp", run_job, NULL, NULL, &two_tcp},
        {"four_tcp", run_job, NULL, NULL, &four_tcp},
        {"timeout_tcp", run_job, NULL, NULL, &timeout_tcp},
        {"wake_tcp", run_job, NULL, NULL, &wake_tcp},
        {"killed_tcp", run_killed, NULL, NULL, (void *)tcp},
        {"pending_tcp", run_job, NULL, NULL, &pending_tcp},
        {"fds_tcp", run_job, NULL, NULL, &fds_tcp},
        {"mixed", run_job, NULL, NULL, &mixed},
        {"no_deadline_tcp", run_job, NULL, NULL, &forever_tcp},
        {"one_wake_tcp", run_job, NULL, NULL, &one_wake_tcp},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
