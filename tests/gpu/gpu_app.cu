/*
 * gpu_app.cu - the GPU tests' program (tests/gpu/run.sh runs it; without a
 * usable CUDA device every mode prints "skipped: no CUDA device", exit 77).
 *
 *   gpu_app probe                  is a CUDA device usable?
 *   gpu_app nccl <dump> [gpu]      one rank, engine nccl (real NCCL): every dtype x op
 *                                  all-reduce and every collective row, checked; the
 *                                  recorder dump written to <dump>; with "gpu", entries
 *                                  must carry kernel times (CCOMM_GPU_TIMING set)
 *   gpu_app hang <dump>            a kernel holds the stream past the op's deadline: the
 *                                  op times out on the tracker, the comm fails
 *   gpu_app native                 under ccrun -n 2..4, engine native on shared GPUs: every
 *                                  dtype x op all-reduce (sizes per algorithm), collectives
 *   gpu_app overhead               host time per op: raw NCCL vs ccomm (prints JSON)
 * Exit 0 when every check held; messages say what did not.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ccomm/ccomm.h"
#include "gpu_ops.h"

static int g_rank, g_size;
#define GPU_TEST_NAME "gpu_app"
#include "gpu_check.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- values: small integers, exact in every dtype, wrapping like the dtype -------------- */

static uint16_t half_of(double x)
{
    if (x == 0) return 0;
    int e = 0;
    double f = frexp(fabs(x), &e);
    uint16_t h = (uint16_t)(((e - 1 + 15) << 10) | (int)((f * 2 - 1) * 1024));
    return x < 0 ? (uint16_t)(h | 0x8000) : h;
}

static void put(cc_dtype_t t, void *buf, size_t i, double x)
{
    int64_t v = (int64_t)x; /* integers: the low bits, as the dtype wraps */
    float f = (float)x;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    switch (t) {
    case CC_INT8:
    case CC_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case CC_INT16:
    case CC_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case CC_INT32:
    case CC_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case CC_INT64:
    case CC_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case CC_FLOAT16: ((uint16_t *)buf)[i] = half_of(x); break;
    case CC_BFLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(fb >> 16); break;
    case CC_FLOAT32: ((float *)buf)[i] = f; break;
    default: ((double *)buf)[i] = x; break;
    }
}

static int int_dtype(cc_dtype_t t)
{
    return t != CC_FLOAT16 && t != CC_BFLOAT16 && t != CC_FLOAT32 && t != CC_FLOAT64;
}

/* The expected result of op over ranks 0..n-1 of the values v(r) = r + 1 + m. */
static double expect(cc_dtype_t t, cc_redop_t op, int n, int m, double premul)
{
    int is_int = int_dtype(t);
    double acc = op == CC_PROD ? 1 : 0;
    int64_t bits = op == CC_BAND ? -1 : 0;
    for (int r = 0; r < n; r++) {
        double v = r + 1 + m;
        if (op == CC_PREMUL_SUM) v = is_int ? trunc(v * premul) : v * premul;
        if (op == CC_SUM || op == CC_AVG || op == CC_PREMUL_SUM) acc += v;
        if (op == CC_PROD) acc *= v;
        if (op == CC_MIN) acc = r == 0 || v < acc ? v : acc;
        if (op == CC_MAX) acc = r == 0 || v > acc ? v : acc;
        if (op == CC_BAND) bits &= (int64_t)v;
        if (op == CC_BOR) bits |= (int64_t)v;
        if (op == CC_BXOR) bits ^= (int64_t)v;
    }
    if (op == CC_BAND || op == CC_BOR || op == CC_BXOR) return (double)bits;
    if (op == CC_AVG) acc = is_int ? trunc(acc / n) : acc / n;
    return acc;
}

static cc_status_t wait_op(cc_status_t st, cc_work_t **w)
{
    if (st != CC_OK) return st;
    st = cc_work_wait(*w, -1);
    cc_work_free(*w);
    *w = NULL;
    return st;
}

/* One all-reduce of `count` elements on the device, checked element by element. */
static void check_allreduce(cc_comm_t *c, cc_dtype_t t, cc_redop_t op, size_t count)
{
    size_t es = cc_dtype_size(t), bytes = count * es;
    unsigned char *h = (unsigned char *)malloc(bytes), *want = (unsigned char *)malloc(bytes);
    void *d = NULL;
    CK(cudaMalloc(&d, bytes ? bytes : 1));
    for (size_t i = 0; i < count; i++) put(t, h, i, g_rank + 1 + (int)(i % 5));
    CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.premul_scalar = 2.0; /* an integer factor: NCCL scales integers by an integer */
    cc_work_t *w = NULL;
    cc_status_t st = wait_op(cc_allreduce(c, d, d, count, t, op, &o, &w), &w);
    int nccl = !strcmp(getenv("GPU_APP_ENGINE") ? getenv("GPU_APP_ENGINE") : "", "nccl");
    /* NCCL has no bitwise ops and no 16-bit integers: refused, never reduced as another type. */
    if (nccl && (op == CC_BAND || op == CC_BOR || op == CC_BXOR || t == CC_INT16 ||
                 t == CC_UINT16)) {
        REQUIRE(st == CC_ERR_NOT_SUPPORTED, "nccl %s: %s", cc_redop_name(op), cc_status_name(st));
    } else {
        REQUIRE(st == CC_OK, "allreduce %s %s %zu: %s", cc_dtype_name(t), cc_redop_name(op), count,
                cc_status_name(st));
        CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) put(t, want, i, expect(t, op, g_size, (int)(i % 5), 2.0));
        for (size_t i = 0; i < count; i++)
            REQUIRE(!memcmp(h + i * es, want + i * es, es), "allreduce %s %s %zu: element %zu wrong",
                    cc_dtype_name(t), cc_redop_name(op), count, i);
    }
    CK(cudaFree(d));
    free(h);
    free(want);
}

/* Every dtype x op at `count` elements. */
static int all_pairs(cc_comm_t *c, size_t count)
{
    int n = 0;
    for (int t = 0; t < CC_DTYPE_COUNT; t++)
        for (int op = 0; op < CC_REDOP_COUNT; op++) {
            int bitwise = op == CC_BAND || op == CC_BOR || op == CC_BXOR;
            if (bitwise && !int_dtype((cc_dtype_t)t)) continue;
            check_allreduce(c, (cc_dtype_t)t, (cc_redop_t)op, count);
            n++;
        }
    return n;
}

/* The other collectives on int32 values rank * 1000 + i, checked. */
static void check_collectives(cc_comm_t *c)
{
    const size_t m = 3000; /* elements per rank block */
    size_t all = m * (size_t)g_size;
    int32_t *h = (int32_t *)malloc(all * 4), *in = (int32_t *)malloc(all * 4);
    void *din, *dout;
    CK(cudaMalloc(&din, all * 4));
    CK(cudaMalloc(&dout, all * 4));
    for (size_t i = 0; i < all; i++) in[i] = g_rank * 100000 + (int32_t)i;
    CK(cudaMemcpy(din, in, all * 4, cudaMemcpyHostToDevice));
    int root = 1 % g_size;
    struct {
        cc_op_type_t type;
        size_t in, out;
        cc_redop_t op;
        int root;
    } cases[] = {
        {CC_OP_ALLGATHER, m, all, CC_REDOP_COUNT, -1},
        {CC_OP_REDUCE_SCATTER, all, m, CC_SUM, -1},
        {CC_OP_BROADCAST, m, m, CC_REDOP_COUNT, root},
        {CC_OP_REDUCE, m, m, CC_SUM, root},
        {CC_OP_ALLTOALL, all, all, CC_REDOP_COUNT, -1},
        {CC_OP_BARRIER, 0, 0, CC_REDOP_COUNT, -1},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        gpu_op_t g = {cases[k].type, din, dout, cases[k].in, cases[k].out, CC_INT32, cases[k].op,
                      cases[k].root, 1.0, NULL, 0};
        CK(cudaMemset(dout, 0xff, all * 4));
        cc_work_t *w = NULL;
        cc_status_t st = wait_op(gpu_issue(c, &g, &w), &w);
        REQUIRE(st == CC_OK, "%s: %s", cc_op_type_name(cases[k].type), cc_status_name(st));
        CK(cudaMemcpy(h, dout, all * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < cases[k].out; i++) {
            int64_t want = 0;
            size_t b = i / m, j = i % m;
            switch (cases[k].type) {
            case CC_OP_ALLGATHER: want = (int64_t)b * 100000 + (int64_t)j; break;
            case CC_OP_REDUCE_SCATTER:
                for (int r = 0; r < g_size; r++) want += r * 100000 + (int64_t)(g_rank * m + i);
                break;
            case CC_OP_BROADCAST: want = root * 100000 + (int64_t)i; break;
            case CC_OP_REDUCE:
                if (g_rank != root) continue;
                for (int r = 0; r < g_size; r++) want += r * 100000 + (int64_t)i;
                break;
            case CC_OP_ALLTOALL: want = (int64_t)b * 100000 + (int64_t)(g_rank * m + j); break;
            default: continue;
            }
            REQUIRE(h[i] == (int32_t)want, "%s element %zu: %d, want %lld",
                    cc_op_type_name(cases[k].type), i, h[i], (long long)want);
        }
    }
    CK(cudaFree(din));
    CK(cudaFree(dout));
    free(h);
    free(in);
}

static cc_comm_t *make_comm(const char *engine)
{
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    const char *r = getenv("CCOMM_RANK");
    int rank = r ? atoi(r) : 0;
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.device = rank % ndev; /* ranks share the GPUs there are (one H200: all on device 0) */
    cfg.engine = engine;
    CK(cudaSetDevice(cfg.device));
    setenv("GPU_APP_ENGINE", engine, 1);
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_init_from_env(&c, &cfg);
    REQUIRE(st == CC_OK, "init (engine %s, device %d): %s", engine, cfg.device, cc_status_name(st));
    g_rank = cc_comm_rank(c);
    g_size = cc_comm_size(c);
    return c;
}

/* ---- modes ------------------------------------------------------------------------------ */

static int mode_nccl(const char *dump, int expect_gpu)
{
    cc_comm_t *c = make_comm("nccl");
    int n = all_pairs(c, 1000);
    check_collectives(c);
    check_allreduce(c, CC_FLOAT32, CC_SUM, 4u << 20);
    char path[4096]; /* rank 0 writes <dump>, the others <dump>.rank<r> */
    snprintf(path, sizeof(path), g_rank ? "%s.rank%d" : "%s", dump, g_rank);
    REQUIRE(cc_recorder_dump(path) == CC_OK, "dump to %s", path);
    REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    printf("nccl: %d dtype x op pairs, collectives, 16 MiB all-reduce: ok%s\n", n,
           expect_gpu ? " (kernel times checked by run.sh)" : "");
    return 0;
}

__global__ void spin(uint64_t ns)
{
    uint64_t t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

static int mode_hang(const char *dump)
{
    cc_comm_t *c = make_comm("nccl");
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *d;
    CK(cudaMalloc(&d, 64));
    spin<<<1, 1, 0, s>>>(4000000000ull); /* holds the stream 4 s */
    CK(cudaGetLastError());
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.stream = s;
    o.timeout_ms = 1500;
    cc_work_t *w = NULL;
    cc_status_t st = wait_op(cc_allreduce(c, d, d, 16, CC_FLOAT32, CC_SUM, &o, &w), &w);
    REQUIRE(st == CC_ERR_TIMEOUT, "the held all-reduce gave %s", cc_status_name(st));
    REQUIRE(cc_comm_get_error(c) == CC_ERR_TIMEOUT, "comm error %s",
            cc_status_name(cc_comm_get_error(c)));
    REQUIRE(cc_recorder_dump(dump) == CC_OK, "dump");
    CK(cudaStreamSynchronize(s)); /* the spin ends; NCCL's aborted comm left nothing queued */
    cc_comm_destroy(c);
    printf("hang: the held op timed out on the tracker and failed the comm: ok\n");
    return 0;
}

static int mode_native(void)
{
    cc_comm_t *c = make_comm("native");
    const char *algo = getenv("CCOMM_CUDA_ALLREDUCE_ALGO");
    int n = all_pairs(c, 1000);
    /* Several rounds of the IPC slot (8 MiB default): 12 MiB of float32, 5 MiB of bfloat16. */
    check_allreduce(c, CC_FLOAT32, CC_SUM, 3u << 20);
    check_allreduce(c, CC_BFLOAT16, CC_SUM, 5u << 19);
    check_allreduce(c, CC_FLOAT32, CC_AVG, 3u << 20);
    check_collectives(c);
    REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    if (g_rank == 0)
        printf("native (%d ranks, algo %s): %d dtype x op pairs, multi-round, collectives: ok\n",
               g_size, algo ? algo : "auto", n);
    return 0;
}

typedef struct {
    char b[128];
} nccl_uid_t;
typedef int (*nccl_uid_fn)(nccl_uid_t *);
typedef int (*nccl_init_fn)(void **, int, nccl_uid_t, int);
typedef int (*nccl_ar_fn)(const void *, void *, size_t, int, int, void *, void *);

/* Host µs per NCCL all-reduce of one float between two event records, the events made with
 * `flags` (cudaEventDisableTiming, or cudaEventDefault: timing events). */
static double nccl_between_events(nccl_ar_fn ar, void *d, void *nc, int iters, unsigned flags)
{
    cudaEvent_t ev[2];
    CK(cudaEventCreateWithFlags(&ev[0], flags));
    CK(cudaEventCreateWithFlags(&ev[1], flags));
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        CK(cudaEventRecord(ev[0], 0));
        ar(d, d, 1, 7 /* float32 */, 0 /* sum */, nc, NULL);
        CK(cudaEventRecord(ev[1], 0));
        if (i % 1000 == 999) CK(cudaDeviceSynchronize());
    }
    double us = (now_s() - t0) / iters * 1e6;
    CK(cudaDeviceSynchronize());
    CK(cudaEventDestroy(ev[0]));
    CK(cudaEventDestroy(ev[1]));
    return us;
}

/* Host time per 4-byte all-reduce: NCCL alone, then through ccomm (same stream, same GPU). */
static int mode_overhead(void)
{
    const int iters = 20000;
    void *h = dlopen("libnccl.so.2", RTLD_NOW);
    REQUIRE(h, "dlopen libnccl.so.2: %s", dlerror());
    nccl_uid_fn uid = (nccl_uid_fn)dlsym(h, "ncclGetUniqueId");
    nccl_init_fn init = (nccl_init_fn)dlsym(h, "ncclCommInitRank");
    nccl_ar_fn ar = (nccl_ar_fn)dlsym(h, "ncclAllReduce");
    REQUIRE(uid && init && ar, "nccl symbols");
    nccl_uid_t id;
    void *nc = NULL, *d = NULL;
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&d, 64));
    REQUIRE(uid(&id) == 0 && init(&nc, 1, id, 0) == 0, "nccl init");
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        ar(d, d, 1, 7 /* float32 */, 0 /* sum */, nc, NULL);
        if (i % 1000 == 999) CK(cudaDeviceSynchronize());
    }
    double raw = (now_s() - t0) / iters * 1e6;
    /* The floor of any tracked op: NCCL's call between two event records (what ccomm adds
     * on the stream for START and POST), timed the same way; then with timing events
     * (ccomm's: the tracker reads their times). */
    double with_events = nccl_between_events(ar, d, nc, iters, cudaEventDisableTiming);
    double with_timing_events = nccl_between_events(ar, d, nc, iters, cudaEventDefault);
    cc_comm_t *c = make_comm("nccl");
    t0 = now_s();
    for (int i = 0; i < iters; i++) {
        cc_allreduce(c, d, d, 1, CC_FLOAT32, CC_SUM, NULL, NULL);
        if (i % 1000 == 999) CK(cudaDeviceSynchronize());
    }
    double cc = (now_s() - t0) / iters * 1e6;
    cc_comm_destroy(c);
    const char *rec = getenv("CCOMM_RECORDER_ENTRIES");
    printf("{\"raw_nccl_us\": %.3f, \"raw_nccl_two_events_us\": %.3f, "
           "\"raw_nccl_two_timing_events_us\": %.3f, \"ccomm_us\": %.3f, "
           "\"overhead_us\": %.3f, \"recorder_entries\": \"%s\", \"gpu_timing\": \"%s\"}\n",
           raw, with_events, with_timing_events, cc, cc - raw, rec ? rec : "default",
           getenv("CCOMM_GPU_TIMING") ? getenv("CCOMM_GPU_TIMING") : "events");
    return 0;
}

int main(int argc, char **argv)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev < 1) {
        printf("skipped: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    const char *mode = argc > 1 ? argv[1] : "probe";
    if (!strcmp(mode, "probe")) return 0;
    if (!strcmp(mode, "nccl") && argc > 2) return mode_nccl(argv[2], argc > 3);
    if (!strcmp(mode, "hang") && argc > 2) return mode_hang(argv[2]);
    if (!strcmp(mode, "native")) return mode_native();
    if (!strcmp(mode, "overhead")) return mode_overhead();
    fprintf(stderr, "usage: gpu_app probe|nccl <dump> [gpu]|hang <dump>|native|overhead\n");
    return 2;
}
