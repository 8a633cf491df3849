/*
 * net_bench.c - point-to-point speed of the transports between two forked
 * processes: ping-pong latency of 8-byte messages, streaming bandwidth of
 * 64 KiB, 1 MiB and 64 MiB messages one way, and the same messages exchanged
 * both ways at once (each rank sends while it receives: the traffic of a
 * 2-rank allgather or alltoall, whose busbw is the rate each way), over shm
 * and over tcp, next to the figures of shared/ANCHORS.md. A benchmark, not a
 * test: it asserts nothing.
 *
 *   build/bin/net_bench [reps]      (default 5 repetitions; median and best)
 *
 * CCOMM_* variables apply (CCOMM_WAIT_SPIN_US, CCOMM_SHM_CMA_THRESHOLD, ...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "net_mp.h"
#include "transport/net.h"

#define MAX_REPS 15
#define NSIZES   3

static const size_t bw_size[NSIZES] = {64u << 10, 1u << 20, 64u << 20};
static const int bw_window[NSIZES] = {16, 8, 2};    /* messages in flight, at most 16 (flow) */
static const int bw_count[NSIZES] = {4096, 512, 8}; /* messages per repetition */

struct results {
    int reps;
    double lat_us[MAX_REPS]; /* one way */
    double gbps[NSIZES][MAX_REPS];
    double xgbps[NSIZES][MAX_REPS]; /* exchange: bytes received by rank 0 a second */
    int failed;
};

static struct results *g_res;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Both ranks in step before a timed section. */
static cc_status_t sync_pair(cc__net_t *net, int rank)
{
    char a = 0, b;
    return cc__net_sendrecv(net, 1 - rank, &a, 1, 1 - rank, &b, 1, 0x7fffffff, UINT64_MAX);
}

static double ping_pong(cc__net_t *net, int rank, int iters)
{
    char out[8] = "ccomm!!", in[8];
    if (sync_pair(net, rank) != CC_OK) return -1;
    uint64_t t0 = cc__now_ns();
    for (int i = 0; i < iters; i++) {
        cc_status_t st;
        if (rank == 0) {
            st = cc__net_send(net, 1, 1, out, 8, UINT64_MAX);
            if (st == CC_OK) st = cc__net_recv(net, 1, 1, in, 8, UINT64_MAX);
        } else {
            st = cc__net_recv(net, 0, 1, in, 8, UINT64_MAX);
            if (st == CC_OK) st = cc__net_send(net, 0, 1, out, 8, UINT64_MAX);
        }
        if (st != CC_OK) return -1;
    }
    return (double)(cc__now_ns() - t0) / 1000.0 / (2.0 * iters);
}

/*
 * `count` messages of size s, `window` in flight at a time: rank 0 to rank 1 (a stream), or
 * both ways at once when `both` (an exchange: each rank sends while it receives). GB/s
 * each way. send_buf and recv_buf hold `window` messages each.
 */
static double flow(cc__net_t *net, int rank, char *send_buf, char *recv_buf, int s, int both)
{
    cc__req_t reqs[2 * 16], *rp[2 * 16]; /* a send and a receive for each message in flight */
    size_t len = bw_size[s];
    int q = 1 - rank, win = bw_window[s], nreq = 0;
    if (sync_pair(net, rank) != CC_OK) return -1;
    uint64_t t0 = cc__now_ns();
    for (int done = 0; done < bw_count[s]; done += win) {
        nreq = 0;
        for (int w = 0; w < win; w++) {
            size_t off = (size_t)w * len;
            if (both || rank == 1) {
                rp[nreq] = &reqs[nreq];
                if (cc__net_irecv(net, q, 2, recv_buf + off, len, rp[nreq++]) != CC_OK) return -1;
            }
            if (both || rank == 0) {
                rp[nreq] = &reqs[nreq];
                if (cc__net_isend(net, q, 2, send_buf + off, len, rp[nreq++]) != CC_OK) return -1;
            }
        }
        if (cc__net_wait(net, rp, nreq, UINT64_MAX) != CC_OK) return -1;
    }
    /* The last byte has landed only when the receiver says so. */
    if (sync_pair(net, rank) != CC_OK) return -1;
    double secs = (double)(cc__now_ns() - t0) / 1e9;
    return (double)len * bw_count[s] / secs / 1e9;
}

static int bench_rank(int rank, int n, void *arg)
{
    cc__net_config_t cfg;
    cc__net_t *net;
    mp_config(&cfg, rank, n, arg);
    if (cc__net_create(&cfg, &net) != CC_OK) return 1;
    int tcp = strcmp(arg, "tcp") == 0;
    /* Two areas of `window` messages of the largest size: one sent from, one received into. */
    size_t area = (size_t)bw_window[NSIZES - 1] * bw_size[NSIZES - 1];
    char *buf = malloc(2 * area);
    if (!buf) {
        cc__net_destroy(net);
        return 1;
    }
    memset(buf, rank + 1, 2 * area); /* touch the pages before timing */
    ping_pong(net, rank, 1000);      /* warm up */
    for (int r = 0; r < g_res->reps; r++) {
        double lat = ping_pong(net, rank, tcp ? 5000 : 50000);
        if (lat < 0) g_res->failed = 1;
        if (rank == 0) g_res->lat_us[r] = lat;
    }
    /* Every stream first, then every exchange. */
    for (int both = 0; both < 2; both++) {
        for (int s = 0; s < NSIZES; s++) {
            double *out = both ? g_res->xgbps[s] : g_res->gbps[s];
            for (int r = 0; r < g_res->reps; r++) {
                double gbps = flow(net, rank, buf, buf + area, s, both);
                if (gbps < 0) g_res->failed = 1;
                if (rank == 0) out[r] = gbps;
            }
        }
    }
    free(buf);
    cc__net_destroy(net);
    return g_res->failed;
}

/* In-process memcpy of 64 MiB, best of reps: the machine's own bound. */
static double memcpy_gbps(int reps)
{
    size_t len = 64u << 20;
    char *a = malloc(len), *b = malloc(len);
    memset(a, 1, len);
    memset(b, 2, len);
    double best = 0;
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = cc__now_ns();
        memcpy(b, a, len);
        double g = (double)len / ((double)(cc__now_ns() - t0) / 1e9) / 1e9;
        if (g > best) best = g;
    }
    free(a);
    free(b);
    return best;
}

static void report(const char *tp, struct results *res)
{
    int reps = res->reps;
    qsort(res->lat_us, (size_t)reps, sizeof(double), cmp_double);
    printf("%-4s latency 8 B one way: median %7.2f us, best %7.2f us", tp, res->lat_us[reps / 2],
           res->lat_us[0]);
    printf(strcmp(tp, "shm") ? "   [ANCHORS: loopback TCP ~12 us]\n"
                             : "   [ANCHORS: cache-line handoff ~0.06 us; goal <= ~1 us]\n");
    for (int s = 0; s < NSIZES; s++) {
        qsort(res->gbps[s], (size_t)reps, sizeof(double), cmp_double);
        printf("%-4s stream %6zu KiB x%-2d: median %6.2f GB/s, best %6.2f GB/s", tp,
               bw_size[s] >> 10, bw_window[s], res->gbps[s][reps / 2], res->gbps[s][reps - 1]);
        printf(strcmp(tp, "shm") ? "   [ANCHORS: loopback TCP stream 1.5-2.6 GB/s]\n"
                                 : "   [ANCHORS: memcpy 5.0 GB/s]\n");
    }
    for (int s = 0; s < NSIZES; s++) {
        qsort(res->xgbps[s], (size_t)reps, sizeof(double), cmp_double);
        printf("%-4s exchange %4zu KiB x%-2d: median %6.2f GB/s, best %6.2f GB/s each way"
               "   [2-rank allgather/alltoall busbw]\n",
               tp, bw_size[s] >> 10, bw_window[s], res->xgbps[s][reps / 2],
               res->xgbps[s][reps - 1]);
    }
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: %s [repetitions 1..%d]\n", argv[0], MAX_REPS);
        return 2;
    }
    g_res = mmap(NULL, sizeof(*g_res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_res == MAP_FAILED) return 1;
    printf("net_bench: 2 forked processes, %d repetitions each (median, best)\n", reps);
    const char *tps[] = {"shm", "tcp"};
    for (int t = 0; t < 2; t++) {
        memset(g_res, 0, sizeof(*g_res));
        g_res->reps = reps;
        int codes[2];
        const char *mode = t == 0 ? "auto" : "tcp";
        if (mp_fork(2, bench_rank, (void *)mode, 600, codes) != 0 || g_res->failed) {
            fprintf(stderr, "net_bench: %s run failed (exit codes %d %d)\n", tps[t], codes[0],
                    codes[1]);
            return 1;
        }
        report(tps[t], g_res);
    }
    printf("memcpy 64 MiB in one process: best %.2f GB/s   [ANCHORS: 5.0 GB/s]\n",
           memcpy_gbps(reps));
    return 0;
}
