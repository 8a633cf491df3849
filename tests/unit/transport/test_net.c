/*
 * test_net.c - moving messages: every size between every pair of 2, 3, 4 and
 * 8 forked ranks over shm and over tcp, many messages in flight through a
 * small ring, tags matched out of arrival order, a sendrecv ring, sends to
 * self, mixed shm/tcp meshes, and ranks as threads (for TSan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sched.h>

#include "base/clock.h"
#include "net_mp.h"
#include "transport/net.h"
#include "transport/tcp.h"
#include "transport/transport.h"
#include "tutil.h"

#define DEADLINE_S 60

static const size_t sizes[] = {0, 1, 7, 4096, (1u << 20) + 3};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

struct targ {
    const char *transport; /* "auto" or "tcp" */
    int tcp_from;          /* ranks >= this force tcp (mixed meshes); 0 = none */
    const char *ring;      /* CCOMM_SHM_RING_SIZE for the ranks, or NULL */
    const char *cma;       /* CCOMM_SHM_CMA_THRESHOLD for the ranks, or NULL */
    const char *tcp_rndv;  /* CCOMM_TCP_RNDV_THRESHOLD for the ranks, or NULL */
    const char *tcp_chunk; /* CCOMM_TCP_CHUNK_SIZE for the ranks, or NULL */
    int ns_from;           /* ranks >= this live in the test's network namespace; 0 = none */
};

/* The second "host": a network namespace linked to this one by a veth pair. */
static char ns_name[32], ns_ip[2][32];

static uint64_t deadline(void)
{
    return cc__deadline_after_ms(DEADLINE_S * 1000);
}

static const char *rank_transport(const struct targ *a, int rank)
{
    return a->tcp_from && rank >= a->tcp_from ? "tcp" : a->transport;
}

/* Forked ranks may change their own environment; threads share it, so they don't. */
static void rank_env(const struct targ *a)
{
    if (a->ring) setenv("CCOMM_SHM_RING_SIZE", a->ring, 1);
    if (a->cma) setenv("CCOMM_SHM_CMA_THRESHOLD", a->cma, 1);
    if (a->tcp_rndv) setenv("CCOMM_TCP_RNDV_THRESHOLD", a->tcp_rndv, 1);
    if (a->tcp_chunk) setenv("CCOMM_TCP_CHUNK_SIZE", a->tcp_chunk, 1);
    if (a->ring || a->cma || a->tcp_rndv || a->tcp_chunk) cc__config_reload();
}

/* A rank's settings and net, for the ranks below that need nothing else (NULL: failed). */
static cc__net_t *rank_net(const struct targ *a, int rank, int n)
{
    rank_env(a);
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, a->transport);
    cc_status_t st = cc__net_create(&cfg, &net);
    if (st != CC_OK) fprintf(stderr, "rank %d: net create: %s\n", rank, cc_status_name(st));
    return st == CC_OK ? net : NULL;
}

static int in_ns(const struct targ *a, int rank)
{
    return a->ns_from && rank >= a->ns_from;
}

/* Move a rank to its host: the namespace and the address peers reach it at. */
static int enter_host(const struct targ *a, int rank, cc__net_config_t *cfg)
{
    if (!a->ns_from) return 0;
    cfg->socket_addr = ns_ip[in_ns(a, rank)];
    if (!in_ns(a, rank)) return 0;
    char path[64];
    snprintf(path, sizeof(path), "/run/netns/%s", ns_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = fd >= 0 ? setns(fd, CLONE_NEWNET) : -1;
    if (fd >= 0) close(fd);
    return rc;
}

/* The transport each pair must have picked. */
static int check_transports(cc__net_t *net, const struct targ *a, int rank, int n)
{
    for (int q = 0; q < n; q++) {
        const char *want = q == rank ? "self"
                           : (!strcmp(rank_transport(a, rank), "tcp") ||
                              !strcmp(rank_transport(a, q), "tcp") || in_ns(a, rank) != in_ns(a, q))
                               ? "tcp"
                               : "shm";
        if (strcmp(cc__net_transport(net, q), want) != 0) {
            fprintf(stderr, "rank %d: peer %d uses %s, expected %s\n", rank, q,
                    cc__net_transport(net, q), want);
            return 1;
        }
        MP_CHECK((cc__net_peer_pid(net, q) != 0) == (strcmp(want, "tcp") != 0));
    }
    return 0;
}

/* Every size to and from every peer; unaligned buffers; half the receives posted late. */
static int rank_all_pairs(int rank, int n, void *arg)
{
    const struct targ *a = arg;
    uint64_t errors = cc__log_error_count();
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, rank_transport(a, rank));
    MP_CHECK(enter_host(a, rank, &cfg) == 0);
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    MP_CHECK(check_transports(net, a, rank, n) == 0);
    int nreq = 2 * (n - 1) * NSIZES, k = 0;
    cc__req_t *reqs = calloc((size_t)nreq, sizeof(*reqs));
    cc__req_t **rp = calloc((size_t)nreq, sizeof(*rp));
    unsigned char **bufs = calloc((size_t)nreq, sizeof(*bufs));
    for (int pass = 0; pass < 3; pass++) {
        for (int q = 0; q < n; q++) {
            /* pass 0: receives from even peers; 1: all sends; 2: receives from odd peers */
            if (q == rank || (pass == 0 && q % 2) || (pass == 2 && !(q % 2))) continue;
            for (int s = 0; s < NSIZES; s++, k++) {
                bufs[k] = malloc(sizes[s] + 8);
                rp[k] = &reqs[k];
                if (pass == 1) {
                    tu_fill(bufs[k] + 3, sizes[s], rank, q, (uint32_t)s);
                    MP_CHECK_ST(cc__net_isend(net, q, (uint32_t)s, bufs[k] + 3, sizes[s], rp[k]),
                                CC_OK);
                } else {
                    MP_CHECK_ST(cc__net_irecv(net, q, (uint32_t)s, bufs[k] + 5, sizes[s], rp[k]),
                                CC_OK);
                }
            }
        }
    }
    MP_CHECK(k == nreq);
    MP_CHECK_ST(cc__net_wait(net, rp, nreq, deadline()), CC_OK);
    for (int i = 0; i < nreq; i++) {
        cc__req_t *r = rp[i];
        if (r->kind == 2) {
            long bad = tu_check(bufs[i] + 5, r->len, r->peer, rank, r->tag);
            if (bad >= 0)
                fprintf(stderr, "rank %d: message from %d tag %u: byte %ld of %zu wrong\n", rank,
                        r->peer, r->tag, bad, r->len);
            MP_CHECK(bad < 0);
        }
        free(bufs[i]);
    }
    free(bufs);
    free(rp);
    free(reqs);
    MP_CHECK(cc__log_error_count() == errors);
    cc__net_destroy(net);
    return 0;
}

static void run_forked(int n, mp_rank_fn fn, struct targ *a)
{
    int codes[64];
    int bad = mp_fork(n, fn, a, DEADLINE_S + 30, codes);
    for (int i = 0; i < n; i++)
        if (codes[i]) fprintf(stderr, "rank %d exited with %d\n", i, codes[i]);
    assert_int_equal(bad, 0);
    assert_int_equal(tu_leftovers(), 0);
}

static void run_all_pairs(int n, const char *transport)
{
    struct targ a = {.transport = transport};
    run_forked(n, rank_all_pairs, &a);
}

static void test_shm_2(void **s)
{
    (void)s;
    run_all_pairs(2, "auto");
}
static void test_shm_3(void **s)
{
    (void)s;
    run_all_pairs(3, "auto");
}
static void test_shm_4(void **s)
{
    (void)s;
    run_all_pairs(4, "auto");
}
static void test_shm_8(void **s)
{
    (void)s;
    run_all_pairs(8, "auto");
}
static void test_tcp_2(void **s)
{
    (void)s;
    run_all_pairs(2, "tcp");
}
static void test_tcp_3(void **s)
{
    (void)s;
    run_all_pairs(3, "tcp");
}
static void test_tcp_4(void **s)
{
    (void)s;
    run_all_pairs(4, "tcp");
}
static void test_tcp_8(void **s)
{
    (void)s;
    run_all_pairs(8, "tcp");
}

/* Ranks 2.. force tcp: shm inside {0, 1}, tcp for every pair touching 2 or 3. */
static void test_mixed_4(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto", .tcp_from = 2};
    run_forked(4, rank_all_pairs, &a);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Two hosts for real: ranks 2 and 3 in a namespace of their own (root and `ip` needed). */
static void test_two_hosts_netns(void **s)
{
    (void)s;
    int id = (int)getpid() % 250;
    snprintf(ns_name, sizeof(ns_name), "cct%d", (int)getpid());
    snprintf(ns_ip[0], sizeof(ns_ip[0]), "10.213.%d.1", id);
    snprintf(ns_ip[1], sizeof(ns_ip[1]), "10.213.%d.2", id);
    const char *q = ">/dev/null 2>&1";
    int bad = sh("ip netns add %s %s", ns_name, q) ||
              sh("ip link add %sa type veth peer name %sb %s", ns_name, ns_name, q) ||
              sh("ip link set %sb netns %s %s", ns_name, ns_name, q) ||
              sh("ip addr add %s/24 dev %sa %s", ns_ip[0], ns_name, q) ||
              sh("ip link set %sa up %s", ns_name, q) ||
              sh("ip -n %s addr add %s/24 dev %sb %s", ns_name, ns_ip[1], ns_name, q) ||
              sh("ip -n %s link set %sb up %s", ns_name, ns_name, q) ||
              sh("ip -n %s link set lo up %s", ns_name, q);
    if (bad) {
        sh("ip netns del %s %s", ns_name, q);
        sh("ip link del %sa %s", ns_name, q);
        fprintf(stderr, "skipped: cannot make a network namespace with a veth pair (root, ip)\n");
        skip();
    }
    struct targ a = {.transport = "auto", .ns_from = 2};
    int codes[4];
    int failed = mp_fork(4, rank_all_pairs, &a, DEADLINE_S + 30, codes);
    sh("ip netns del %s %s", ns_name, q);
    sh("ip link del %sa %s", ns_name, q);
    assert_int_equal(failed, 0);
    assert_int_equal(tu_leftovers(), 0);
}

/* Rings of 4 KiB: eager up to 960 B, so most messages are rendezvous; ring full often. */
static void test_shm_small_ring(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto", .ring = "4096"};
    run_forked(3, rank_all_pairs, &a);
}

/* CMA off: large messages stream through the ring after CTS. */
static void test_shm_no_cma(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto", .ring = "65536", .cma = "0"};
    run_forked(4, rank_all_pairs, &a);
}

/* Ranks as threads: the same code paths in one process, visible to TSan. */
static void test_threads_shm_3(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto"};
    int codes[3];
    assert_int_equal(mp_threads(3, rank_all_pairs, &a, DEADLINE_S + 30, codes), 0);
    assert_int_equal(tu_leftovers(), 0);
}

#define NFLIGHT 600

/* Each rank streams NFLIGHT messages to the next: all sent before any is received. */
static int rank_in_flight(int rank, int n, void *arg)
{
    uint64_t errors = cc__log_error_count();
    cc__net_t *net = rank_net(arg, rank, n);
    MP_CHECK(net != NULL);
    int to = (rank + 1) % n, from = (rank + n - 1) % n;
    static cc__req_t reqs[2 * NFLIGHT];
    static cc__req_t *rp[2 * NFLIGHT];
    static unsigned char *bufs[2 * NFLIGHT];
    for (int i = 0; i < 2 * NFLIGHT; i++) {
        int recv = i >= NFLIGHT, m = i % NFLIGHT;
        size_t len = (size_t)(m * 37 % 3000) + (m % 50 == 0 ? 200000 : 0);
        bufs[i] = malloc(len + 1);
        rp[i] = &reqs[i];
        if (!recv) {
            tu_fill(bufs[i] + 1, len, rank, to, (uint32_t)m);
            MP_CHECK_ST(cc__net_isend(net, to, (uint32_t)(m % 7), bufs[i] + 1, len, rp[i]), CC_OK);
        } else {
            MP_CHECK_ST(cc__net_irecv(net, from, (uint32_t)(m % 7), bufs[i] + 1, len, rp[i]),
                        CC_OK);
        }
    }
    MP_CHECK_ST(cc__net_wait(net, rp, 2 * NFLIGHT, deadline()), CC_OK);
    for (int m = 0; m < NFLIGHT; m++) {
        MP_CHECK(tu_check(bufs[NFLIGHT + m] + 1, reqs[NFLIGHT + m].len, from, rank, (uint32_t)m) <
                 0);
        free(bufs[m]);
        free(bufs[NFLIGHT + m]);
    }
    MP_CHECK(cc__log_error_count() == errors);
    cc__net_destroy(net);
    return 0;
}

static void test_in_flight_shm(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto", .ring = "8192"};
    run_forked(3, rank_in_flight, &a);
}

static void test_in_flight_tcp(void **s)
{
    (void)s;
    struct targ a = {.transport = "tcp"};
    run_forked(3, rank_in_flight, &a);
}

/* Rendezvous from 1 KiB: most messages wait for their receive, verdicts cross data. */
static void test_in_flight_tcp_rndv(void **s)
{
    (void)s;
    struct targ a = {.transport = "tcp", .tcp_rndv = "1024"};
    run_forked(3, rank_in_flight, &a);
}

/* Chunks of 1 KiB: a sendmsg's batch of frames (tcp_msg.c) ends inside a payload, verdicts
 * and RTS frames ride between pieces of messages, and a short write leaves a frame half out. */
static void test_in_flight_tcp_chunk(void **s)
{
    (void)s;
    struct targ a = {.transport = "tcp", .tcp_rndv = "1024", .tcp_chunk = "1024"};
    run_forked(3, rank_in_flight, &a);
}

/* No rendezvous: every large message that arrives first is held aside. */
static void test_in_flight_tcp_eager(void **s)
{
    (void)s;
    struct targ a = {.transport = "tcp", .tcp_rndv = "0"};
    run_forked(3, rank_in_flight, &a);
}

/*
 * A sender far ahead of its receiver over TCP (a broadcast's root in a loop): 1200 messages of
 * 16 KiB, 19 MiB, all sent before the receiver posts anything. The receiver may hold copies of
 * at most CC__TCP_HELD_MAX bytes (and the frame it is in) while it progresses with no receive
 * posted and while it receives one message at a time; the sender then waits on its socket,
 * and every message still arrives, in order. Without the bound the receiver copied whatever
 * the socket had (tens of MiB, perf stat: 87688 page faults in one ccperf launch).
 */
#define NHELD   1200
#define HELDLEN 16384

static int rank_held_bound(int rank, int n, void *arg)
{
    uint64_t errors = cc__log_error_count();
    cc__net_t *net = rank_net(arg, rank, n);
    MP_CHECK(net != NULL);
    static cc__req_t reqs[NHELD];
    static cc__req_t *rp[NHELD];
    unsigned char *buf = malloc((size_t)NHELD * HELDLEN);
    MP_CHECK(buf != NULL);
    const size_t bound = CC__TCP_HELD_MAX + HELDLEN;
    if (rank == 0) {
        for (int m = 0; m < NHELD; m++) {
            rp[m] = &reqs[m];
            tu_fill(buf + (size_t)m * HELDLEN, HELDLEN, 0, 1, (uint32_t)m);
            MP_CHECK_ST(cc__net_isend(net, 1, 5, buf + (size_t)m * HELDLEN, HELDLEN, rp[m]), CC_OK);
        }
        MP_CHECK_ST(cc__net_wait(net, rp, NHELD, deadline()), CC_OK);
    } else {
        size_t most = 0;
        /* Progress with nothing posted while the sender fills the socket. */
        for (int i = 0; i < 100; i++) {
            int done;
            usleep(2000);
            cc__req_t none;
            memset(&none, 0, sizeof(none));
            (void)cc__net_test(net, &none, &done);
            if (net->peers[0].held_bytes > most) most = net->peers[0].held_bytes;
        }
        for (int m = 0; m < NHELD; m++) {
            MP_CHECK_ST(cc__net_recv(net, 0, 5, buf + (size_t)m * HELDLEN, HELDLEN, deadline()),
                        CC_OK);
            if (net->peers[0].held_bytes > most) most = net->peers[0].held_bytes;
        }
        if (most > bound)
            fprintf(stderr, "held %zu bytes of rank 0's messages at once (bound %zu)\n", most,
                    bound);
        MP_CHECK(most <= bound);
        MP_CHECK(most > 0); /* the sender was ahead: some were held */
        for (int m = 0; m < NHELD; m++)
            MP_CHECK(tu_check(buf + (size_t)m * HELDLEN, HELDLEN, 0, 1, (uint32_t)m) < 0);
    }
    MP_CHECK(cc__log_error_count() == errors);
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    free(buf);
    cc__net_destroy(net);
    return 0;
}

static void test_held_bound_tcp(void **s)
{
    (void)s;
    struct targ a = {.transport = "tcp", .tcp_rndv = "1M"};
    run_forked(2, rank_held_bound, &a);
}

/* Messages of tags 10, 20, 10, 30, 20 arrive first; receives come in another order. */
static const struct {
    uint32_t tag;
    size_t len;
} order_msgs[] = {{10, 100}, {20, 1u << 20}, {10, 200}, {30, 0}, {20, 5000}};
static const int order_recv[] = {3, 1, 0, 4, 2}; /* message index each receive must get */

static int rank_tag_order(int rank, int n, void *arg)
{
    const struct targ *a = arg;
    cc__net_config_t cfg;
    cc__net_t *net;
    cc__req_t reqs[5], *rp[5];
    unsigned char *bufs[5];
    mp_config(&cfg, rank, n, a->transport);
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    for (int i = 0; i < 5; i++) {
        int m = rank == 0 ? i : order_recv[i];
        bufs[i] = malloc(order_msgs[m].len + 1);
        rp[i] = &reqs[i];
        if (rank == 0) {
            tu_fill(bufs[i], order_msgs[m].len, 0, 1, (uint32_t)m);
            MP_CHECK_ST(cc__net_isend(net, 1, order_msgs[m].tag, bufs[i], order_msgs[m].len, rp[i]),
                        CC_OK);
        }
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    if (rank == 1) {
        /* Let everything arrive and be held aside before any receive exists. */
        for (int i = 0; i < 20; i++) {
            int done;
            usleep(5000);
            cc__net_test(net, &reqs[0], &done);
        }
        for (int i = 0; i < 5; i++) {
            int m = order_recv[i];
            MP_CHECK_ST(cc__net_irecv(net, 0, order_msgs[m].tag, bufs[i], order_msgs[m].len, rp[i]),
                        CC_OK);
        }
    }
    MP_CHECK_ST(cc__net_wait(net, rp, 5, deadline()), CC_OK);
    for (int i = 0; i < 5; i++) {
        if (rank == 1)
            MP_CHECK(tu_check(bufs[i], order_msgs[order_recv[i]].len, 0, 1,
                              (uint32_t)order_recv[i]) < 0);
        free(bufs[i]);
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    cc__net_destroy(net);
    return 0;
}

static void test_tag_order_shm(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto"};
    run_forked(2, rank_tag_order, &a);
}

static void test_tag_order_tcp(void **s)
{
    (void)s;
    struct targ a = {.transport = "tcp"};
    run_forked(2, rank_tag_order, &a);
}

/* Ten rounds of sendrecv around the ring, all sizes. */
static int rank_sendrecv(int rank, int n, void *arg)
{
    const struct targ *a = arg;
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, rank_transport(a, rank));
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    int to = (rank + 1) % n, from = (rank + n - 1) % n;
    unsigned char *sb = malloc(sizes[NSIZES - 1] + 2), *rb = malloc(sizes[NSIZES - 1] + 2);
    for (int it = 0; it < 10; it++) {
        size_t len = sizes[it % NSIZES];
        tu_fill(sb + 1, len, rank, to, (uint32_t)it);
        MP_CHECK_ST(
            cc__net_sendrecv(net, to, sb + 1, len, from, rb + 2, len, (uint32_t)it, deadline()),
            CC_OK);
        MP_CHECK(tu_check(rb + 2, len, from, rank, (uint32_t)it) < 0);
    }
    free(sb);
    free(rb);
    cc__net_destroy(net);
    return 0;
}

static void test_sendrecv_shm(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto"};
    run_forked(4, rank_sendrecv, &a);
}

static void test_sendrecv_mixed(void **s)
{
    (void)s;
    struct targ a = {.transport = "auto", .tcp_from = 3};
    run_forked(5, rank_sendrecv, &a);
}

/* Sends to self: small ones are copied aside, large ones wait for their receive. */
static int rank_self(int rank, int n, void *arg)
{
    (void)arg;
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, "auto");
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    MP_CHECK(strcmp(cc__net_transport(net, rank), "self") == 0);
    size_t big = 3u << 20;
    unsigned char *a = malloc(big), *b = malloc(big);
    tu_fill(a, 100, rank, rank, 1);
    MP_CHECK_ST(cc__net_send(net, rank, 1, a, 100, deadline()), CC_OK);
    MP_CHECK_ST(cc__net_recv(net, rank, 1, b, 100, deadline()), CC_OK);
    MP_CHECK(tu_check(b, 100, rank, rank, 1) < 0);
    cc__req_t r[2], *rp[2] = {&r[0], &r[1]};
    tu_fill(a, big, rank, rank, 2);
    MP_CHECK_ST(cc__net_isend(net, rank, 2, a, big, &r[0]), CC_OK);
    MP_CHECK(r[0].status == CC_INPROGRESS); /* waits, by reference, for its receive */
    MP_CHECK_ST(cc__net_irecv(net, rank, 2, b, big, &r[1]), CC_OK);
    MP_CHECK_ST(cc__net_wait(net, rp, 2, deadline()), CC_OK);
    MP_CHECK(tu_check(b, big, rank, rank, 2) < 0);
    /* A large send to self nobody receives: the blocking call times out and takes it back. */
    uint64_t t0 = cc__now_ns();
    MP_CHECK_ST(cc__net_send(net, rank, 3, a, big, cc__now_ns() + 100000000ull), CC_ERR_TIMEOUT);
    MP_CHECK(cc__now_ns() - t0 >= 100000000ull);
    MP_CHECK_ST(cc__net_sendrecv(net, rank, a, 5000, rank, b, 5000, 4, deadline()), CC_OK);
    free(a);
    free(b);
    cc__net_destroy(net);
    return 0;
}

static void test_self(void **s)
{
    (void)s;
    run_forked(2, rank_self, NULL);
    int code;
    assert_int_equal(mp_fork(1, rank_self, NULL, 30, &code), 0); /* a net of one rank */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_2),
        cmocka_unit_test(test_shm_3),
        cmocka_unit_test(test_shm_4),
        cmocka_unit_test(test_shm_8),
        cmocka_unit_test(test_tcp_2),
        cmocka_unit_test(test_tcp_3),
        cmocka_unit_test(test_tcp_4),
        cmocka_unit_test(test_tcp_8),
        cmocka_unit_test(test_mixed_4),
        cmocka_unit_test(test_two_hosts_netns),
        cmocka_unit_test(test_shm_small_ring),
        cmocka_unit_test(test_shm_no_cma),
        cmocka_unit_test(test_threads_shm_3),
        cmocka_unit_test(test_in_flight_shm),
        cmocka_unit_test(test_in_flight_tcp),
        cmocka_unit_test(test_in_flight_tcp_rndv),
        cmocka_unit_test(test_in_flight_tcp_eager),
        cmocka_unit_test(test_in_flight_tcp_chunk),
        cmocka_unit_test(test_held_bound_tcp),
        cmocka_unit_test(test_tag_order_shm),
        cmocka_unit_test(test_tag_order_tcp),
        cmocka_unit_test(test_sendrecv_shm),
        cmocka_unit_test(test_sendrecv_mixed),
        cmocka_unit_test(test_self),
    };
    return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
