/*
 * test_net_paths.c - the size switches of the transports, at the switch:
 * messages of exactly the threshold and one byte either side, checking
 * which path carried each one, not only that the bytes arrived.
 *
 *   CCOMM_TCP_RNDV_THRESHOLD  below: one MSG frame; at or above: RTS, then DATA
 *   CCOMM_TCP_CHUNK_SIZE      no sendmsg() asks to write more payload than it
 *   CCOMM_SHM_CMA_THRESHOLD   below: EAGER (the send completes before any receive
 *                             is posted); at or above: a rendezvous read with one
 *                             process_vm_readv() of the whole message
 *   CCOMM_SHM_RING_SIZE       (CMA off) EAGER up to a quarter of the ring less a
 *                             line, else the rendezvous streamed through the ring
 *
 * The paths are seen from outside the library: the test binary is linked
 * with --wrap=sendmsg and --wrap=process_vm_readv (tests/unit/transport/
 * CMakeLists.txt), so the transports' own calls come here first and are
 * recorded (frame headers, payload lengths, reads), then passed on.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "base/clock.h"
#include "net_mp.h"
#include "transport/net.h"
#include "transport/tcp.h"
#include "tutil.h"

#define DEADLINE_S 30
#define MAXLOG     256

/* ---- what the transports did (per process: each forked rank has its own) ---- */

static const char *g_buf; /* the message being sent: iovecs inside it are payload */
static size_t g_buflen;
static struct cc__tcp_frame g_frames[MAXLOG]; /* frame headers written */
static size_t g_pieces[MAXLOG];               /* payload bytes each sendmsg() asked to write */
static int g_nframes, g_npieces;
static int g_cma_calls;
static size_t g_cma_bytes;

ssize_t __real_sendmsg(int fd, const struct msghdr *mh, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *mh, int flags)
{
    for (size_t i = 0; i < mh->msg_iovlen; i++) {
        const struct iovec *v = &mh->msg_iov[i];
        const char *p = v->iov_base;
        if (g_buf && p >= g_buf && p < g_buf + g_buflen) {
            if (g_npieces < MAXLOG) g_pieces[g_npieces++] = v->iov_len;
        } else if (v->iov_len == sizeof(struct cc__tcp_frame) && g_nframes < MAXLOG) {
            memcpy(&g_frames[g_nframes++], p, sizeof(struct cc__tcp_frame));
        }
    }
    return __real_sendmsg(fd, mh, flags);
}

ssize_t __real_process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                                const struct iovec *r, unsigned long nr, unsigned long flags);
ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                                const struct iovec *r, unsigned long nr, unsigned long flags)
{
    g_cma_calls++;
    for (unsigned long i = 0; i < nl; i++)
        g_cma_bytes += l[i].iov_len;
    return __real_process_vm_readv(pid, l, nl, r, nr, flags);
}

static void log_reset(const void *buf, size_t len)
{
    g_buf = buf, g_buflen = len;
    g_nframes = g_npieces = g_cma_calls = 0;
    g_cma_bytes = 0;
}

/* ---- the ranks ---- */

struct paths {
    const char *name;
    const char *transport;
    const char *env[3][2]; /* CCOMM_* settings of the ranks */
    int (*sender)(cc__net_t *net, size_t len, const unsigned char *buf);
    int (*receiver)(cc__net_t *net, size_t len, unsigned char *buf);
    size_t (*threshold)(cc__net_t *net); /* the switch, from the ranks' configuration */
};

static uint64_t deadline(void)
{
    return cc__deadline_after_ms(DEADLINE_S * 1000);
}

/* Rank 0 sends messages of threshold - 1, threshold and threshold + 1 bytes to rank 1. */
static int rank_paths(int rank, int n, void *arg)
{
    const struct paths *a = arg;
    for (int i = 0; i < 3 && a->env[i][0]; i++)
        setenv(a->env[i][0], a->env[i][1], 1);
    cc__config_reload();
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, a->transport);
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    size_t t = a->threshold(net);
    MP_CHECK(t > 1);
    unsigned char *buf = malloc(t + 1);
    MP_CHECK(buf);
    for (size_t len = t - 1; len <= t + 1; len++) {
        if (rank == 0) tu_fill(buf, len, 0, 1, (uint32_t)len);
        int bad = rank == 0 ? a->sender(net, len, buf) : a->receiver(net, len, buf);
        if (bad) {
            fprintf(stderr, "rank %d: message of %zu bytes (switch at %zu)\n", rank, len, t);
            return 1;
        }
        if (rank == 1) MP_CHECK(tu_check(buf, len, 0, 1, (uint32_t)len) < 0);
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    cc__net_destroy(net);
    free(buf);
    return 0;
}

static int plain_recv(cc__net_t *net, size_t len, unsigned char *buf)
{
    MP_CHECK_ST(cc__net_recv(net, 0, 7, buf, len, deadline()), CC_OK);
    return 0;
}

/* TCP rendezvous: the frames rank 0 wrote for each message. */
/* What CCOMM_TCP_RNDV_THRESHOLD should give, worked out here rather than read back: a size as
 * set; auto (unset) 256 KiB when both ranks have a CPU of their own, 1 MiB when they share. */
static size_t rndv_threshold(cc__net_t *net)
{
    const char *v = getenv("CCOMM_TCP_RNDV_THRESHOLD");
    uint64_t t = 0;
    if (v && strcmp(v, "auto") != 0) {
        MP_CHECK(cc__parse_size(v, &t) == 0);
        return (size_t)t;
    }
    cpu_set_t cpus;
    int ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    const char *local = getenv("CCOMM_LOCAL_SIZE");
    int ranks = local ? atoi(local) : 2;
    (void)net;
    return ranks > ncpu ? (1u << 20) : (256u << 10);
}

static int rndv_send(cc__net_t *net, size_t len, const unsigned char *buf)
{
    size_t t = rndv_threshold(net), chunk = (size_t)cc__cfg()->tcp_chunk_size;
    log_reset(buf, len);
    MP_CHECK_ST(cc__net_send(net, 1, 7, buf, len, deadline()), CC_OK);
    if (len < t) {
        MP_CHECK(g_nframes == 1 && g_frames[0].type == CC__TCP_MSG && g_frames[0].len == len);
    } else {
        MP_CHECK(g_nframes == 2);
        MP_CHECK(g_frames[0].type == CC__TCP_RTS && g_frames[0].len == len);
        MP_CHECK(g_frames[1].type == CC__TCP_DATA && g_frames[1].len == len);
    }
    for (int i = 0; i < g_npieces; i++)
        MP_CHECK(g_pieces[i] <= chunk);
    return 0;
}

/* TCP chunks: the first write of a payload asks for min(len, chunk), none for more. */
static size_t chunk_size(cc__net_t *net)
{
    return (size_t)cc__cfg()->tcp_chunk_size;
}

static int chunk_send(cc__net_t *net, size_t len, const unsigned char *buf)
{
    size_t c = chunk_size(net);
    log_reset(buf, len);
    MP_CHECK_ST(cc__net_send(net, 1, 7, buf, len, deadline()), CC_OK);
    MP_CHECK(g_nframes == 1 && g_frames[0].type == CC__TCP_MSG);
    MP_CHECK(g_npieces >= (len > c ? 2 : 1));
    MP_CHECK(g_pieces[0] == (len < c ? len : c));
    for (int i = 0; i < g_npieces; i++)
        MP_CHECK(g_pieces[i] <= c);
    return 0;
}

/*
 * Shared memory: an EAGER send is complete once it is in the ring, before
 * the receiver posts anything; a rendezvous send stays pending until its
 * receive has read it. The receiver waits at a barrier (outside the net)
 * while the sender looks.
 */
static int shm_send(cc__net_t *net, size_t len, const unsigned char *buf, int eager)
{
    cc__req_t req;
    int done = 0;
    MP_CHECK_ST(cc__net_isend(net, 1, 7, buf, len, &req), CC_OK);
    uint64_t until = cc__now_ns() + 200000000ull; /* eager ones are done at once */
    while (!done && cc__now_ns() < until)
        MP_CHECK_ST(cc__net_test(net, &req, &done), CC_OK);
    if (done != eager)
        fprintf(stderr, "send of %zu bytes %s before its receive was posted (%s expected)\n", len,
                done ? "completed" : "was still pending", eager ? "EAGER" : "rendezvous");
    MP_CHECK(done == eager);
    MP_CHECK_ST(mp_barrier(0), CC_OK);
    cc__req_t *rp = &req;
    MP_CHECK_ST(cc__net_wait(net, &rp, 1, deadline()), CC_OK);
    MP_CHECK(req.status == CC_OK);
    return 0;
}

/* The receiver: how many process_vm_readv calls its receive made. */
static int shm_recv(cc__net_t *net, size_t len, unsigned char *buf, int cma)
{
    MP_CHECK_ST(mp_barrier(1), CC_OK);
    log_reset(NULL, 0);
    MP_CHECK_ST(cc__net_recv(net, 0, 7, buf, len, deadline()), CC_OK);
    if (g_cma_calls != cma)
        fprintf(stderr, "receive of %zu bytes made %d process_vm_readv calls, want %d\n", len,
                g_cma_calls, cma);
    MP_CHECK(g_cma_calls == cma && g_cma_bytes == (cma ? len : 0));
    return 0;
}

static size_t cma_threshold(cc__net_t *net)
{
    return (size_t)cc__cfg()->shm_cma_threshold;
}

static int cma_send(cc__net_t *net, size_t len, const unsigned char *buf)
{
    return shm_send(net, len, buf, len < cma_threshold(net));
}

static int cma_recv(cc__net_t *net, size_t len, unsigned char *buf)
{
    return shm_recv(net, len, buf, len >= cma_threshold(net));
}

/* The largest EAGER message with CMA off: a quarter of the ring less one line. */
static size_t eager_max(cc__net_t *net)
{
    return (size_t)cc__cfg()->shm_ring_size / 4 - 64;
}

static int ring_send(cc__net_t *net, size_t len, const unsigned char *buf)
{
    return shm_send(net, len, buf, len <= eager_max(net));
}

static int ring_recv(cc__net_t *net, size_t len, unsigned char *buf)
{
    return shm_recv(net, len, buf, 0);
}

/* CMA on: what the ring sends as a rendezvous is read with process_vm_readv. */
static int ring_cma_recv(cc__net_t *net, size_t len, unsigned char *buf)
{
    return shm_recv(net, len, buf, len > eager_max(net));
}

/* One case of the table below: rank 0 sends, rank 1 receives. */
static void run(void **state)
{
    int codes[2];
    int bad = mp_fork(2, rank_paths, *state, DEADLINE_S + 30, codes);
    for (int i = 0; i < 2; i++)
        if (codes[i]) fprintf(stderr, "rank %d exited with %d\n", i, codes[i]);
    assert_int_equal(bad, 0);
}

/* Each switch at its default and at a small value. */
static struct paths cases[] = {
    {"tcp_rndv_threshold", "tcp", {{NULL, NULL}}, rndv_send, plain_recv, rndv_threshold},
    {"tcp_rndv_threshold_shared_cpus",
     "tcp",
     {{"CCOMM_TCP_RNDV_THRESHOLD", "auto"}, {"CCOMM_LOCAL_SIZE", "4096"}},
     rndv_send,
     plain_recv,
     rndv_threshold},
    {"tcp_rndv_threshold_small",
     "tcp",
     {{"CCOMM_TCP_RNDV_THRESHOLD", "5000"}, {"CCOMM_TCP_CHUNK_SIZE", "8K"}},
     rndv_send,
     plain_recv,
     rndv_threshold},
    {"tcp_chunk_size",
     "tcp",
     {{"CCOMM_TCP_RNDV_THRESHOLD", "0"}},
     chunk_send,
     plain_recv,
     chunk_size},
    {"tcp_chunk_size_small",
     "tcp",
     {{"CCOMM_TCP_RNDV_THRESHOLD", "0"}, {"CCOMM_TCP_CHUNK_SIZE", "3000"}},
     chunk_send,
     plain_recv,
     chunk_size},
    {"shm_cma_threshold", "auto", {{NULL, NULL}}, cma_send, cma_recv, cma_threshold},
    {"shm_cma_threshold_small",
     "auto",
     {{"CCOMM_SHM_CMA_THRESHOLD", "3001"}},
     cma_send,
     cma_recv,
     cma_threshold},
    /* CMA off: only the ring decides */
    {"shm_ring_size",
     "auto",
     {{"CCOMM_SHM_CMA_THRESHOLD", "0"}, {"CCOMM_SHM_RING_SIZE", "64K"}},
     ring_send,
     ring_recv,
     eager_max},
    /* CMA on, but the ring's limit (16K - 64) comes first */
    {"shm_ring_below_cma",
     "auto",
     {{"CCOMM_SHM_CMA_THRESHOLD", "1M"}, {"CCOMM_SHM_RING_SIZE", "64K"}},
     ring_send,
     ring_cma_recv,
     eager_max},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

int main(void)
{
    struct CMUnitTest tests[NCASES];
    for (size_t i = 0; i < NCASES; i++)
        tests[i] = (struct CMUnitTest){cases[i].name, run, NULL, NULL, &cases[i]};
    return _cmocka_run_group_tests("test_net_paths", tests, NCASES, tu_setup, tu_teardown);
}
