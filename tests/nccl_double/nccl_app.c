/*
 * nccl_app.c - an NCCL program, run as one rank of a job by
 * test_nccl_double (usually under LD_PRELOAD=libccomm-nccl.so). It uses
 * NCCL's API only, plus ncclDoubleSync where a GPU program would call
 * cudaStreamSynchronize, and counts what ccomm's hooks saw.
 *
 *   nccl_app <scenario> <rank> <nranks> <uid file> [<dump file to wait for>]
 *
 * basic  collectives, grouped send/recv, PREMUL_SUM, a split; checks the
 *        data and that every interposed op passed PRE, START and POST
 *        once, in order. Prints "hooks pre=N start=N post=N".
 * hang   two all-reduces, then rank 1 skips the third (a rank that never
 *        joins): rank 0 must see its communicator fail (ccomm's timeout
 *        aborted it), rank 1 waits for its own dump file to appear (the
 *        job-wide dump) and leaves.
 * overhead  (one rank) host time per ncclAllReduce call; run with and without the
 *        interposer to see what ccomm adds on the host (no CUDA here: no event costs).
 * Exit status 0 when everything held; the message says what did not.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccomm/ccomm.h"
#include "nccl/nccl_abi.h"

/* The NCCL API this program uses (what nccl.h declares), and the double's sync. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *out, void *config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err);
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, void *stream);
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                           ncclComm_t comm, void *stream);
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t comm,
                           void *stream);
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, void *stream);
ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      void *stream);
ncclResult_t ncclRecv(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, void *stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t t,
                                      ncclScalarResidence_t res, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t ncclDoubleSync(ncclComm_t comm);

#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "nccl_app rank %d: %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define NCCL(call) REQUIRE((call) == ncclSuccess, "%s", #call)

static int g_rank;

/* ---- hooks: what ccomm showed of the interposed ops -------------------------------- */

static struct {
    _Atomic int pre, start, post, bad;
    _Atomic uint64_t last_op_id;
} H;

static int interposed(const cc_op_info_t *op)
{
    return op->engine && !strcmp(op->engine, "nccl") && op->type < CC_OP_COMM_INIT;
}

static cc_status_t on_pre(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (!interposed(op)) return CC_OK;
    atomic_fetch_add(&H.pre, 1);
    if (op->op_id <= atomic_load(&H.last_op_id)) atomic_fetch_add(&H.bad, 1);
    atomic_store(&H.last_op_id, op->op_id);
    return CC_OK;
}

static void on_start(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (!interposed(op)) return;
    atomic_fetch_add(&H.start, 1);
    if (!op->t_start_ns || op->t_start_ns < op->t_enqueue_ns) atomic_fetch_add(&H.bad, 1);
}

static void on_post(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (!interposed(op)) return;
    atomic_fetch_add(&H.post, 1);
    if (op->status == CC_OK &&
        (op->t_end_ns < op->t_start_ns || !op->algorithm || strcmp(op->algorithm, "interposed")))
        atomic_fetch_add(&H.bad, 1);
}

static void add_hooks(void)
{
    cc_hook_handle_t h;
    REQUIRE(cc_hook_add_pre(NULL, on_pre, NULL, 0, &h) == CC_OK, "pre hook");
    REQUIRE(cc_hook_add_start(NULL, on_start, NULL, 0, &h) == CC_OK, "start hook");
    REQUIRE(cc_hook_add_post(NULL, on_post, NULL, 0, &h) == CC_OK, "post hook");
}

/* ---- the unique id through a file (the out-of-band exchange MPI or a store would do) --- */

static void share_id(const char *path, int rank, ncclUniqueId *id)
{
    if (rank == 0) {
        NCCL(ncclGetUniqueId(id));
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        REQUIRE(f && fwrite(id, sizeof(*id), 1, f) == 1 && fclose(f) == 0, "write %s", tmp);
        REQUIRE(rename(tmp, path) == 0, "rename to %s", path);
        return;
    }
    for (int i = 0; i < 3000; i++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t n = fread(id, sizeof(*id), 1, f);
            fclose(f);
            if (n == 1) return;
        }
        usleep(10000);
    }
    REQUIRE(0, "no unique id in %s after 30 s", path);
}

/* ---- scenarios ----------------------------------------------------------------------- */

static void collectives(ncclComm_t comm, int rank, int n)
{
    enum { N = 1000 };
    static float a[N], b[N];
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < N; i++)
            a[i] = (float)(rank + 1 + i + it);
        NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, NULL));
        NCCL(ncclDoubleSync(comm));
        for (int i = 0; i < N; i++)
            REQUIRE(b[i] == (float)(n * (n + 1) / 2 + n * (i + it)), "allreduce[%d] = %g", i, b[i]);
    }
    int32_t v[4] = {rank, rank, rank, rank};
    NCCL(ncclBroadcast(v, v, 4, ncclInt32, 1, comm, NULL));
    int32_t g[64], mine = rank * 10;
    NCCL(ncclAllGather(&mine, g, 1, ncclInt32, comm, NULL));
    int32_t rs_in[64], rs_out = -1;
    for (int r = 0; r < n; r++)
        rs_in[r] = r + rank;
    NCCL(ncclReduceScatter(rs_in, &rs_out, 1, ncclInt32, ncclSum, comm, NULL));
    NCCL(ncclDoubleSync(comm));
    REQUIRE(v[0] == 1 && v[3] == 1, "broadcast gave %d", v[0]);
    for (int r = 0; r < n; r++)
        REQUIRE(g[r] == r * 10, "allgather[%d] = %d", r, g[r]);
    REQUIRE(rs_out == n * rank + n * (n - 1) / 2, "reduce_scatter gave %d", rs_out);
}

static void ring_and_premul(ncclComm_t comm, int rank, int n)
{
    int64_t out = rank, in = -1;
    NCCL(ncclGroupStart());
    NCCL(ncclSend(&out, 1, ncclInt64, (rank + 1) % n, comm, NULL));
    NCCL(ncclRecv(&in, 1, ncclInt64, (rank + n - 1) % n, comm, NULL));
    NCCL(ncclGroupEnd());
    NCCL(ncclDoubleSync(comm));
    REQUIRE(in == (rank + n - 1) % n, "ring recv gave %lld", (long long)in);
    double x = 2.0, y = 0, scale = 0.5;
    ncclRedOp_t op;
    NCCL(ncclRedOpCreatePreMulSum(&op, &scale, ncclFloat64, ncclScalarHostImmediate, comm));
    NCCL(ncclAllReduce(&x, &y, 1, ncclFloat64, op, comm, NULL));
    NCCL(ncclRedOpDestroy(op, comm));
    NCCL(ncclDoubleSync(comm));
    REQUIRE(y == (double)n, "premul sum gave %g", y);
}

static int basic(ncclComm_t comm, int rank, int n)
{
    collectives(comm, rank, n);
    ring_and_premul(comm, rank, n);
    ncclComm_t child = NULL;
    NCCL(ncclCommSplit(comm, rank % 2, rank, &child, NULL));
    REQUIRE(child, "split gave no communicator");
    int32_t one = 1, cnt = 0;
    NCCL(ncclAllReduce(&one, &cnt, 1, ncclInt32, ncclSum, child, NULL));
    NCCL(ncclDoubleSync(child));
    REQUIRE(cnt == (n + 1 - rank % 2) / 2, "child allreduce gave %d", cnt);
    NCCL(ncclCommDestroy(child));
    NCCL(ncclCommDestroy(comm));
    /* 3 allreduce, broadcast, allgather, reduce_scatter, send, recv, premul allreduce, child
     * allreduce: every one seen by PRE, START and POST once. */
    printf("hooks pre=%d start=%d post=%d bad=%d\n", atomic_load(&H.pre), atomic_load(&H.start),
           atomic_load(&H.post), atomic_load(&H.bad));
    REQUIRE(atomic_load(&H.pre) == 10 && atomic_load(&H.start) == 10 &&
                atomic_load(&H.post) == 10 && atomic_load(&H.bad) == 0,
            "hook counts");
    return 0;
}

static int hang(ncclComm_t comm, int rank, const char *dump)
{
    float a[16] = {1}, b[16];
    for (int it = 0; it < 2; it++)
        NCCL(ncclAllReduce(a, b, 16, ncclFloat32, ncclSum, comm, NULL));
    NCCL(ncclDoubleSync(comm));
    if (rank == 1) {
        /* The bug under test: this rank never joins the third all-reduce. It keeps running
         * (its own compute) until the job-wide dump has reached it. */
        for (int i = 0; i < 600 && access(dump, F_OK) != 0; i++)
            usleep(50000);
        REQUIRE(access(dump, F_OK) == 0, "no dump at %s", dump);
        NCCL(ncclCommAbort(comm));
        return 0;
    }
    NCCL(ncclAllReduce(a, b, 16, ncclFloat32, ncclSum, comm, NULL));
    ncclResult_t s = ncclDoubleSync(comm); /* ends when ccomm's timeout aborted the comm */
    ncclResult_t err = ncclSuccess;
    NCCL(ncclCommGetAsyncError(comm, &err));
    REQUIRE(s != ncclSuccess && err == ncclRemoteError, "sync %d, async error %d", s, err);
    REQUIRE(ncclAllReduce(a, b, 16, ncclFloat32, ncclSum, comm, NULL) == ncclRemoteError,
            "a call on the aborted comm fails cleanly");
    NCCL(ncclCommAbort(comm));
    /* ccomm's watchdog writes this rank's dump in the background: stay until it is there. */
    for (int i = 0; i < 200 && access(dump, F_OK) != 0; i++)
        usleep(50000);
    REQUIRE(access(dump, F_OK) == 0, "no dump at %s", dump);
    return 0;
}

/* Host time per 4-byte all-reduce call, with or without the interposer (bench only). */
static int overhead(ncclComm_t comm)
{
    const int iters = 20000;
    float x = 1, y = 0;
    double cpu = 0;
    for (int i = 0; i < iters; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        NCCL(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, comm, NULL));
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        cpu += (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
        if (i % 1000 == 999) NCCL(ncclDoubleSync(comm));
    }
    /* The calling thread's CPU time in the call: what it costs the program's thread. */
    printf("%.3f us of the caller's CPU per ncclAllReduce call\n", cpu / iters / 1e3);
    NCCL(ncclCommDestroy(comm));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: nccl_app basic|hang rank nranks uidfile [dumpfile]\n");
        return 2;
    }
    int rank = atoi(argv[2]), n = atoi(argv[3]);
    g_rank = rank;
    add_hooks();
    ncclUniqueId id;
    share_id(argv[4], rank, &id);
    ncclComm_t comm = NULL;
    NCCL(ncclCommInitRank(&comm, n, id, rank));
    if (!strcmp(argv[1], "basic")) return basic(comm, rank, n);
    if (!strcmp(argv[1], "hang") && argc > 5) return hang(comm, rank, argv[5]);
    if (!strcmp(argv[1], "overhead")) return overhead(comm);
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
