/*
 * engine_app.c - a ccomm program on a device communicator (engine nccl),
 * run as one rank of a job by test_nccl_double with CCOMM_NCCL_LIB naming
 * the NCCL test double: ccomm's NCCL engine in the CUDA plugin then runs
 * on host memory, so its mapping, tracking, timeouts and abort are
 * exercised without a GPU.
 *
 *   engine_app <scenario> <rank> <nranks> <store addr> [<dump file>]
 *
 * basic      every dtype x reduction through ncclAllReduce (bitwise ones
 *            refused cleanly), AVG and PREMUL_SUM, barrier, send/recv, a
 *            split through ncclCommSplit; hooks see engine "nccl".
 * hang       rank 1 skips an all-reduce: rank 0's op times out on the
 *            tracker, the comm fails with CC_ERR_TIMEOUT and is aborted;
 *            rank 1 waits for its job-wide dump.
 * no_plugin  (one rank; CCOMM_CUDA_PLUGIN names nothing) device comms
 *            are refused with CC_ERR_NOT_SUPPORTED.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccomm/ccomm.h"

#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "engine_app rank %d: %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static int g_rank, g_issued;
static _Atomic int g_post_nccl, g_bad;

static void on_post(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (op->type >= CC_OP_COMM_INIT || !op->engine || strcmp(op->engine, "nccl")) return;
    atomic_fetch_add(&g_post_nccl, 1);
    if (op->status == CC_OK && (!op->transport || strcmp(op->transport, "nccl") || !op->algorithm ||
                                op->t_end_ns < op->t_start_ns))
        atomic_fetch_add(&g_bad, 1);
}

/* The op's status once done; w is read after the call that set it (argument order). */
static cc_status_t wait_op(cc_status_t st, cc_work_t **w)
{
    if (st != CC_OK) return st;
    st = cc_work_wait(*w, -1);
    cc_work_free(*w);
    *w = NULL;
    return st;
}

/* float16 of a small non-negative integer (exact), and back. */
static uint16_t half_of(double x)
{
    if (x <= 0) return 0;
    int e = 0;
    double f = frexp(x, &e); /* x = f * 2^e, f in [0.5, 1) */
    return (uint16_t)(((e - 1 + 15) << 10) | (int)((f * 2 - 1) * 1024));
}

static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    return e ? ldexp(1 + m / 1024.0, e - 15) : ldexp(m, -24);
}

/* x as the dtype's value, and back: the test values are small integers. */
static void put(cc_dtype_t t, void *buf, size_t i, double x)
{
    switch (t) {
    case CC_INT8:
        ((int8_t *)buf)[i] = (int8_t)x;
        break;
    case CC_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)x;
        break;
    case CC_INT16:
        ((int16_t *)buf)[i] = (int16_t)x;
        break;
    case CC_UINT16:
        ((uint16_t *)buf)[i] = (uint16_t)x;
        break;
    case CC_INT32:
        ((int32_t *)buf)[i] = (int32_t)x;
        break;
    case CC_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)x;
        break;
    case CC_INT64:
        ((int64_t *)buf)[i] = (int64_t)x;
        break;
    case CC_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)x;
        break;
    case CC_FLOAT16:
        ((uint16_t *)buf)[i] = half_of(x);
        break;
    case CC_BFLOAT16: {
        float f = (float)x;
        uint32_t b;
        memcpy(&b, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(b >> 16);
        break;
    }
    case CC_FLOAT32:
        ((float *)buf)[i] = (float)x;
        break;
    default:
        ((double *)buf)[i] = x;
        break;
    }
}

static double get(cc_dtype_t t, const void *buf, size_t i)
{
    switch (t) {
    case CC_INT8:
        return ((const int8_t *)buf)[i];
    case CC_UINT8:
        return ((const uint8_t *)buf)[i];
    case CC_INT16:
        return ((const int16_t *)buf)[i];
    case CC_UINT16:
        return ((const uint16_t *)buf)[i];
    case CC_INT32:
        return ((const int32_t *)buf)[i];
    case CC_UINT32:
        return ((const uint32_t *)buf)[i];
    case CC_INT64:
        return (double)((const int64_t *)buf)[i];
    case CC_UINT64:
        return (double)((const uint64_t *)buf)[i];
    case CC_FLOAT16:
        return half_value(((const uint16_t *)buf)[i]);
    case CC_BFLOAT16: {
        uint32_t b = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    case CC_FLOAT32:
        return ((const float *)buf)[i];
    case CC_FLOAT64:
        return ((const double *)buf)[i];
    default:
        return NAN;
    }
}

static int is_int(cc_dtype_t t)
{
    return t != CC_FLOAT16 && t != CC_BFLOAT16 && t != CC_FLOAT32 && t != CC_FLOAT64;
}

/* One all-reduce of rank+1 (+ index) on every rank; the expected value per op. NCCL has no
 * bitwise ops and no 16-bit integers: those must be refused, not reduced as something else. */
static void one_allreduce(cc_comm_t *c, cc_dtype_t t, cc_redop_t op, int n)
{
    enum { N = 5 };
    uint64_t in[N], out[N];
    for (int i = 0; i < N; i++)
        put(t, in, (size_t)i, g_rank + 1 + i);
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.premul_scalar = 2.0;
    cc_work_t *w = NULL;
    cc_status_t st = wait_op(cc_allreduce(c, in, out, N, t, op, &o, &w), &w);
    int bitwise = op == CC_BAND || op == CC_BOR || op == CC_BXOR;
    g_issued++; /* refused ops pass PRE and POST too, with their status */
    if (bitwise || t == CC_INT16 || t == CC_UINT16) {
        REQUIRE(st == CC_ERR_NOT_SUPPORTED, "%s on %s: %s", cc_redop_name(op), cc_dtype_name(t),
                cc_status_name(st));
        return;
    }
    REQUIRE(st == CC_OK, "%s on %s: %s", cc_redop_name(op), cc_dtype_name(t), cc_status_name(st));
    for (int i = 0; i < N; i++) {
        double sum = 0, prod = 1, lo = 1e30, hi = -1e30;
        for (int r = 0; r < n; r++) {
            double v = r + 1 + i;
            sum += v, prod *= v, lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        }
        double want = op == CC_SUM          ? sum
                      : op == CC_PROD       ? prod
                      : op == CC_MIN        ? lo
                      : op == CC_MAX        ? hi
                      : op == CC_PREMUL_SUM ? 2 * sum
                                            : sum / n;
        if (op == CC_AVG && is_int(t)) want = floor(sum / n); /* integers truncate */
        double got = get(t, out, (size_t)i);
        REQUIRE(fabs(got - want) <= 1e-3 * fabs(want), "%s on %s [%d]: got %g, want %g",
                cc_redop_name(op), cc_dtype_name(t), i, got, want);
    }
}

static int basic(cc_comm_t *c, int rank, int n)
{
    REQUIRE(cc_comm_device(c) == 0, "device %d", cc_comm_device(c));
    for (int t = 0; t < CC_DTYPE_COUNT; t++)
        for (int op = 0; op < CC_REDOP_COUNT; op++) {
            int bitwise = op == CC_BAND || op == CC_BOR || op == CC_BXOR;
            if (bitwise && !is_int((cc_dtype_t)t)) continue; /* refused by validation already */
            one_allreduce(c, (cc_dtype_t)t, (cc_redop_t)op, n);
        }
    int ops = g_issued;
    cc_work_t *w = NULL;
    REQUIRE(wait_op(cc_barrier(c, NULL, &w), &w) == CC_OK, "barrier");
    /* int16 is moved (as NCCL's 2-byte float16, bits untouched) where it is not reduced. */
    int16_t bc[4] = {(int16_t)(rank ? 0 : -32768), (int16_t)(rank ? 0 : 0x7c01), 0, 0};
    bc[2] = (int16_t)(rank ? 0 : -1), bc[3] = (int16_t)(rank ? 0 : 0x7e00);
    REQUIRE(wait_op(cc_broadcast(c, bc, bc, 4, CC_INT16, 0, NULL, &w), &w) == CC_OK, "bcast i16");
    REQUIRE(bc[0] == -32768 && bc[1] == 0x7c01 && bc[2] == -1 && bc[3] == 0x7e00,
            "broadcast i16 gave %d %d %d %d", bc[0], bc[1], bc[2], bc[3]);
    ops += 1;
    int64_t v = rank, got = -1;
    cc_work_t *ws = NULL, *wr = NULL;
    if (rank < 2 && n >= 2) {
        REQUIRE(cc_send(c, &v, 1, CC_INT64, 1 - rank, NULL, &ws) == CC_OK, "send");
        REQUIRE(cc_recv(c, &got, 1, CC_INT64, 1 - rank, NULL, &wr) == CC_OK, "recv");
        REQUIRE(wait_op(CC_OK, &ws) == CC_OK && wait_op(CC_OK, &wr) == CC_OK, "send/recv");
        REQUIRE(got == 1 - rank, "recv gave %lld", (long long)got);
        ops += 2;
        /* A group, receive listed first on both ranks: one NCCL group, no deadlock. */
        int64_t g_in = 10 + rank, g_out = -1;
        cc_work_t *wg = NULL, *wgr = NULL;
        REQUIRE(cc_group_start() == CC_OK, "group start");
        REQUIRE(cc_recv(c, &g_out, 1, CC_INT64, 1 - rank, NULL, &wgr) == CC_OK, "group recv");
        REQUIRE(cc_send(c, &g_in, 1, CC_INT64, 1 - rank, NULL, NULL) == CC_OK, "group send");
        REQUIRE(wait_op(cc_group_end(NULL, &wg), &wg) == CC_OK, "group end");
        REQUIRE(wait_op(CC_OK, &wgr) == CC_OK, "group member");
        REQUIRE(g_out == 11 - rank, "group recv gave %lld", (long long)g_out);
        ops += 3; /* the group op and its two members */
        /* Coalesced: two buffers of different lengths, one operation. */
        int32_t ca[3] = {rank, 1, 2}, cb[1] = {5}, ra[3], rb[1];
        const void *cs[2] = {ca, cb};
        void *cr[2] = {ra, rb};
        const size_t cn[2] = {3, 1};
        cc_work_t *wc = NULL;
        REQUIRE(wait_op(cc_allreduce_coalesced(c, cs, cr, cn, 2, CC_INT32, CC_SUM, NULL, &wc),
                        &wc) == CC_OK,
                "coalesced allreduce");
        REQUIRE(ra[0] == n * (n - 1) / 2 && ra[1] == n && ra[2] == 2 * n && rb[0] == 5 * n,
                "coalesced gave %d %d %d %d", ra[0], ra[1], ra[2], rb[0]);
        ops += 1;
    }
    cc_comm_t *child = NULL;
    REQUIRE(cc_comm_split(c, rank % 2, rank, NULL, &child) == CC_OK && child, "split");
    int32_t one = 1, cnt = 0;
    REQUIRE(wait_op(cc_allreduce(child, &one, &cnt, 1, CC_INT32, CC_SUM, NULL, &w), &w) == CC_OK,
            "child allreduce");
    REQUIRE(cnt == cc_comm_size(child), "child allreduce gave %d", cnt);
    REQUIRE(cc_comm_destroy(child) == CC_OK, "child destroy");
    REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    ops += 2; /* barrier, child allreduce */
    printf("nccl posts=%d expected=%d bad=%d\n", atomic_load(&g_post_nccl), ops,
           atomic_load(&g_bad));
    REQUIRE(atomic_load(&g_post_nccl) == ops && atomic_load(&g_bad) == 0, "post hooks");
    return 0;
}

static int hang(cc_comm_t *c, int rank, const char *dump)
{
    float a[8] = {1}, b[8];
    cc_work_t *w = NULL;
    for (int i = 0; i < 2; i++)
        REQUIRE(wait_op(cc_allreduce(c, a, b, 8, CC_FLOAT32, CC_SUM, NULL, &w), &w) == CC_OK, "ar");
    if (rank == 1) {
        for (int i = 0; i < 600 && access(dump, F_OK) != 0; i++)
            usleep(50000);
        REQUIRE(access(dump, F_OK) == 0, "no dump at %s", dump);
        cc_comm_abort(c);
        cc_comm_destroy(c);
        return 0;
    }
    cc_status_t st = wait_op(cc_allreduce(c, a, b, 8, CC_FLOAT32, CC_SUM, NULL, &w), &w);
    REQUIRE(st == CC_ERR_TIMEOUT, "the skipped all-reduce gave %s", cc_status_name(st));
    REQUIRE(cc_comm_get_error(c) == CC_ERR_TIMEOUT, "comm error %s",
            cc_status_name(cc_comm_get_error(c)));
    cc_comm_destroy(c);
    for (int i = 0; i < 200 && access(dump, F_OK) != 0; i++)
        usleep(50000);
    REQUIRE(access(dump, F_OK) == 0, "no dump at %s", dump);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: engine_app basic|hang|no_plugin rank nranks store [dump]\n");
        return 2;
    }
    int rank = atoi(argv[2]), n = atoi(argv[3]);
    g_rank = rank;
    cc_hook_handle_t h;
    REQUIRE(cc_hook_add_post(NULL, on_post, NULL, 0, &h) == CC_OK, "hook");
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.device = 0;
    cfg.engine = "nccl";
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_init(&c, rank, n, argv[4], &cfg);
    if (!strcmp(argv[1], "no_plugin")) {
        REQUIRE(st == CC_ERR_NOT_SUPPORTED, "init gave %s", cc_status_name(st));
        return 0;
    }
    REQUIRE(st == CC_OK, "init: %s", cc_status_name(st));
    if (!strcmp(argv[1], "basic")) return basic(c, rank, n);
    if (!strcmp(argv[1], "hang") && argc > 5) return hang(c, rank, argv[5]);
    return 2;
}
