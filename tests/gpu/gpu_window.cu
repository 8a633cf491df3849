/*
 * gpu_window.cu - RMA windows on device communicators (engine native:
 * CUDA IPC, lib/cuda/cuda_window.c), under ccrun -n 2..4 on the GPUs there
 * are (ranks share them). tests/gpu/run.sh runs it (cases window2,
 * window4); without a usable CUDA device it prints "skipped: no CUDA
 * device" and exits 77.
 *
 *   gpu_window          every check below, then destroy with ops pending
 *   gpu_window timeout  rank 0 waits for a signal rank 1 never sends: the
 *                       op times out at its deadline and fails the comm
 *
 * Checks (every rank checks what landed in its own region, on the GPU):
 *  - ring puts of sizes 1 B .. 1 MiB at source and target offsets 0, 1, 3,
 *    8, 255, each followed by a signal: the target's stream waits for the
 *    signal, then a kernel compares every byte and the bytes on either
 *    side (still the fill); the target re-fills its region and signals
 *    "ready" before the next put, so a signal seen before its data shows
 *    as a mismatch, never as a pass;
 *  - many-to-one: every rank puts its block into rank 0's region and signals;
 *  - get: every rank reads its neighbour's region (filled by the neighbour);
 *  - flush returns once the stream ran the puts before it;
 *  - bad input (host source, offset past the end, peer outside the comm)
 *    is refused with CC_ERR_INVALID_ARG; a host base at create fails on
 *    every rank together;
 *  - destroy with puts and signals still on the stream: CC_OK, and the
 *    handle answers CC_ERR_INVALID_USAGE afterwards.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccomm/ccomm.h"
#include "ccomm/window.h"

static int g_rank, g_size;

#define GPU_TEST_NAME "gpu_window"
#include "gpu_check.h"
#define OK(call)                                                                                   \
    do {                                                                                           \
        cc_status_t s_ = (call);                                                                   \
        REQUIRE(s_ == CC_OK, "%s: %s", #call, cc_status_name(s_));                                \
    } while (0)

#define FILL   0xee
#define REGION ((1u << 20) + 512u)

__device__ __host__ static unsigned char pat(size_t i, unsigned k, int sender)
{
    return (unsigned char)(i * 131u + k * 7u + (unsigned)sender * 29u + 1u);
}

__global__ void fill_k(unsigned char *p, size_t n, unsigned k, int sender)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = pat(i, k, sender);
}

/* Count bytes of p[0, n) that are not the pattern, and guard bytes that are not the fill. */
__global__ void check_k(const unsigned char *region, size_t off, size_t n, size_t size,
                        unsigned k, int sender, unsigned long long *bad)
{
    const volatile unsigned char *p = region + off;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != pat(i, k, sender)) atomicAdd(bad, 1ull);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (off > 0 && region[off - 1] != FILL) atomicAdd(bad, 1ull << 40);
        if (off + n < size && region[off + n] != FILL) atomicAdd(bad, 1ull << 40);
    }
}

struct ctx {
    cc_comm_t *c;
    cc_window_t *win;
    unsigned char *region, *src;
    unsigned long long *bad;
    cudaStream_t s;
    cc_op_opts_t o;
    uint64_t got[8]; /* signals expected so far from each rank */
};

static cc_comm_t *make_comm(void)
{
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    const char *r = getenv("CCOMM_RANK");
    int rank = r ? atoi(r) : 0;
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.device = rank % ndev;
    cfg.engine = "native";
    CK(cudaSetDevice(cfg.device));
    cc_comm_t *c = NULL;
    OK(cc_comm_init_from_env(&c, &cfg));
    g_rank = cc_comm_rank(c);
    g_size = cc_comm_size(c);
    return c;
}

static void setup(struct ctx *x)
{
    memset(x, 0, sizeof(*x));
    x->c = make_comm();
    REQUIRE(g_size >= 2 && g_size <= 8, "run under ccrun -n 2..8 (size %d)", g_size);
    CK(cudaStreamCreateWithFlags(&x->s, cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&x->region, REGION));
    CK(cudaMalloc((void **)&x->src, REGION));
    CK(cudaMalloc((void **)&x->bad, sizeof(*x->bad)));
    CK(cudaMemset(x->bad, 0, sizeof(*x->bad)));
    CK(cudaMemset(x->region, FILL, REGION));
    CK(cudaDeviceSynchronize());
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.stream = x->s;
    o.timeout_ms = 60000;
    x->o = o;
    /* An interior pointer of the allocation: the window starts past its first 256 bytes. */
    OK(cc_window_create(x->c, x->region + 256, REGION - 256, NULL, &x->win));
}

static unsigned long long bad_count(struct ctx *x)
{
    unsigned long long b = 0;
    CK(cudaStreamSynchronize(x->s));
    CK(cudaMemcpy(&b, x->bad, sizeof(b), cudaMemcpyDeviceToHost));
    return b;
}

/* One ring round: fill and say ready to prev, put to next once it is ready, check prev's. */
static void ring_round(struct ctx *x, unsigned k, size_t bytes, size_t soff, size_t doff)
{
    int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
    unsigned char *mine = x->region + 256;
    size_t size = REGION - 256;
    CK(cudaMemsetAsync(mine, FILL, size, x->s));
    OK(cc_window_signal(x->win, prev, &x->o, NULL));
    OK(cc_window_wait_signal(x->win, next, ++x->got[next], &x->o, NULL)); /* next is ready */
    fill_k<<<64, 256, 0, x->s>>>(x->src + soff, bytes, k, g_rank);
    CK(cudaGetLastError());
    OK(cc_window_put(x->win, x->src + soff, bytes, next, doff, &x->o, NULL));
    OK(cc_window_signal(x->win, next, &x->o, NULL));
    OK(cc_window_wait_signal(x->win, prev, ++x->got[prev], &x->o, NULL)); /* prev's data */
    check_k<<<64, 256, 0, x->s>>>(mine, doff, bytes, size, k, prev, x->bad);
    CK(cudaGetLastError());
}

static int ring(struct ctx *x)
{
    const size_t sizes[] = {1, 3, 8, 64, 1000, 4103, 65536, 1u << 20};
    const size_t offs[] = {0, 1, 3, 8, 255};
    unsigned k = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (size_t j = 0; j < sizeof(offs) / sizeof(offs[0]); j++) {
            size_t doff = sizes[i] + offs[j] <= REGION - 256 ? offs[j] : 0;
            ring_round(x, ++k, sizes[i], offs[(j + 2) % 5], doff);
        }
    unsigned long long b = bad_count(x);
    REQUIRE(b == 0, "ring: %llu wrong bytes, %llu guard bytes overwritten, in %u puts",
            b & ((1ull << 40) - 1), b >> 40, k);
    return (int)k;
}

/* Every other rank puts a 128 KiB block into rank 0's region, then signals. */
static void many_to_one(struct ctx *x)
{
    const size_t blk = 128u << 10;
    unsigned char *mine = x->region + 256;
    CK(cudaMemsetAsync(mine, FILL, REGION - 256, x->s));
    CK(cudaStreamSynchronize(x->s));
    OK(cc_barrier(x->c, &x->o, NULL)); /* rank 0's fill is done before any put */
    if (g_rank != 0) {
        fill_k<<<64, 256, 0, x->s>>>(x->src, blk, 1000u, g_rank);
        CK(cudaGetLastError());
        OK(cc_window_put(x->win, x->src, blk, 0, (size_t)(g_rank - 1) * blk, &x->o, NULL));
        OK(cc_window_signal(x->win, 0, &x->o, NULL));
    } else {
        for (int q = 1; q < g_size; q++) {
            OK(cc_window_wait_signal(x->win, q, ++x->got[q], &x->o, NULL));
            check_k<<<64, 256, 0, x->s>>>(mine + (size_t)(q - 1) * blk, 0, blk, blk, 1000u, q,
                                          x->bad);
            CK(cudaGetLastError());
        }
        unsigned long long b = bad_count(x);
        REQUIRE(b == 0, "many-to-one: %llu wrong bytes", b);
    }
    CK(cudaStreamSynchronize(x->s));
    OK(cc_barrier(x->c, &x->o, NULL));
    CK(cudaStreamSynchronize(x->s));
}

/* Each rank fills its own region; after a barrier every rank gets its neighbour's. */
static void get_and_flush(struct ctx *x)
{
    const size_t n = 300000;
    int next = (g_rank + 1) % g_size;
    fill_k<<<64, 256, 0, x->s>>>(x->region + 256 + 5, n, 2000u, g_rank);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(x->s));
    OK(cc_barrier(x->c, &x->o, NULL));
    CK(cudaMemsetAsync(x->src, FILL, n + 2, x->s));
    OK(cc_window_get(x->win, x->src + 1, n, next, 5, &x->o, NULL));
    OK(cc_window_flush(x->win, next, &x->o)); /* the host waits for the stream */
    REQUIRE(cudaStreamQuery(x->s) == cudaSuccess, "flush returned before its stream was done");
    check_k<<<64, 256, 0, x->s>>>(x->src, 1, n, n + 2, 2000u, next, x->bad);
    CK(cudaGetLastError());
    unsigned long long b = bad_count(x);
    REQUIRE(b == 0, "get: %llu wrong bytes", b);
    OK(cc_barrier(x->c, &x->o, NULL)); /* nobody refills while a peer still reads */
    CK(cudaStreamSynchronize(x->s));
}

static void bad_input(struct ctx *x)
{
    char host[64] = {0};
    int next = (g_rank + 1) % g_size;
    size_t size = REGION - 256;
    REQUIRE(cc_window_put(x->win, host, sizeof(host), next, 0, &x->o, NULL) == CC_ERR_INVALID_ARG,
            "a host source");
    REQUIRE(cc_window_put(x->win, x->src, 2, next, size - 1, &x->o, NULL) == CC_ERR_INVALID_ARG,
            "a put past the end");
    REQUIRE(cc_window_get(x->win, x->src, 1, g_size, 0, &x->o, NULL) == CC_ERR_INVALID_ARG,
            "a get from rank %d", g_size);
    /* Rank 0 registers host memory: every rank's create fails, none waits for it. */
    cc_window_t *w2 = NULL;
    cc_status_t st = cc_window_create(x->c, g_rank == 0 ? (void *)host : (void *)x->src,
                                      sizeof(host), NULL, &w2);
    REQUIRE(st == CC_ERR_INVALID_ARG && !w2, "create with rank 0's host base: %s",
            cc_status_name(st));
}

/* Puts and signals still on the stream (behind a slow fill) when destroy is called. */
static void destroy_pending(struct ctx *x)
{
    int next = (g_rank + 1) % g_size;
    fill_k<<<1, 32, 0, x->s>>>(x->src, 1u << 20, 3000u, g_rank); /* a slow one-warp fill */
    CK(cudaGetLastError());
    for (int i = 0; i < 8; i++) {
        OK(cc_window_put(x->win, x->src, 1u << 17, next, (size_t)i << 17, &x->o, NULL));
        OK(cc_window_signal(x->win, next, &x->o, NULL));
    }
    OK(cc_window_destroy(x->win));
    REQUIRE(cc_window_signal(x->win, next, &x->o, NULL) == CC_ERR_INVALID_USAGE,
            "an op on the destroyed window");
}

static int mode_all(void)
{
    struct ctx x;
    setup(&x);
    int puts = ring(&x);
    many_to_one(&x);
    get_and_flush(&x);
    bad_input(&x);
    destroy_pending(&x);
    CK(cudaStreamSynchronize(x.s));
    OK(cc_comm_destroy(x.c));
    if (g_rank == 0)
        printf("window (%d ranks): %d ring puts of 1 B..1 MiB checked after their signals, "
               "many-to-one, get, flush, bad input, destroy with ops pending: ok\n",
               g_size, puts);
    return 0;
}

static int mode_timeout(void)
{
    struct ctx x;
    setup(&x);
    if (g_rank == 0) {
        cc_op_opts_t o = x.o;
        o.timeout_ms = 1500;
        cc_work_t *w = NULL;
        OK(cc_window_wait_signal(x.win, 1, 1, &o, &w));
        cc_status_t st = cc_work_wait(w, -1);
        cc_work_free(w);
        REQUIRE(st == CC_ERR_TIMEOUT, "the wait for a signal never sent gave %s",
                cc_status_name(st));
        REQUIRE(cc_comm_get_error(x.c) == CC_ERR_TIMEOUT, "comm error %s",
                cc_status_name(cc_comm_get_error(x.c)));
    } else {
        sleep(4); /* never signals */
    }
    cc_window_destroy(x.win); /* the comm may be failed: whatever it says */
    cc_comm_destroy(x.c);
    if (g_rank == 0) printf("window timeout: the unanswered wait timed out, comm failed: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev < 1) {
        printf("skipped: no CUDA device (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "timeout")) return mode_timeout();
    if (argc > 1) {
        fprintf(stderr, "usage: gpu_window [timeout]\n");
        return 2;
    }
    return mode_all();
}
