/*
 * mpi_bench.c - the MPI side of bench/compare.sh: times an MPI collective
 * the way ccperf times ccomm's (same sizes, same buffer shapes, same
 * warm-up and iteration counts, time averaged over ranks, nccl-tests'
 * bus-bandwidth factors), and prints rows that compare.sh reads:
 *
 *   mpirun -n 2 mpi_bench allreduce -b 8 -e 64M -f 4 -n 20 -w 5
 *   #  size  count  time_us  algbw  busbw
 *       8      2     0.61   0.01   0.01
 *
 * Only float32 (and sum) is measured; out-of-place only. Results are
 * checked once per size, so a broken MPI cannot win.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_size.h"

typedef struct opts {
    const char *coll;
    bench_sweep_t s;
} opts_t;

static int parse(int argc, char **argv, opts_t *o)
{
    /* The settle is ccperf's default: both programs start timing after the same wait. */
    *o = (opts_t){NULL, {8, 64u << 20, 4.0, 20, 5, 0, 30}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            o->coll = a;
            continue;
        }
        if (!v) return -1;
        if (!bench_sweep_option(&o->s, a, v)) return -1;
        i++;
    }
    return o->coll && o->s.factor > 1 && o->s.iters > 0 && o->s.settle_ms >= 0 ? 0 : -1;
}

/* Elements of the call (count), of the send and of the receive buffer, as ccperf shapes them. */
static int shape(const char *coll, size_t elems, int n, size_t *count, size_t *send, size_t *recv,
                 double *factor)
{
    *factor = (double)(n - 1) / n;
    if (!strcmp(coll, "allreduce")) {
        *count = *send = *recv = elems;
        *factor = 2.0 * (n - 1) / n;
    } else if (!strcmp(coll, "broadcast") || !strcmp(coll, "sendrecv")) {
        *count = *send = *recv = elems;
        *factor = 1.0;
    } else if (!strcmp(coll, "allgather")) {
        *count = *send = elems / (size_t)n;
        *recv = *count * (size_t)n;
    } else if (!strcmp(coll, "reduce_scatter") || !strcmp(coll, "alltoall")) {
        *count = *recv = elems / (size_t)n;
        *send = *count * (size_t)n;
        if (!strcmp(coll, "alltoall")) *recv = *send;
    } else {
        return -1;
    }
    return 0;
}

static void run(const char *coll, float *s, float *r, size_t count, int n)
{
    if (!strcmp(coll, "allreduce")) {
        MPI_Allreduce(s, r, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(coll, "broadcast")) {
        MPI_Bcast(r, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    } else if (!strcmp(coll, "allgather")) {
        MPI_Allgather(s, (int)count, MPI_FLOAT, r, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
    } else if (!strcmp(coll, "reduce_scatter")) {
        MPI_Reduce_scatter_block(s, r, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(coll, "sendrecv")) { /* as ccperf's: to rank + 1, from rank - 1 */
        int me;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        MPI_Sendrecv(s, (int)count, MPI_FLOAT, (me + 1) % n, 0, r, (int)count, MPI_FLOAT,
                     (me - 1 + n) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Alltoall(s, (int)count, MPI_FLOAT, r, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
    }
    (void)n;
}

/* Inputs rank*1000 + i (exact in float for these sizes); 1 when the result is wrong. */
static int check(const char *coll, float *s, float *r, size_t count, size_t ns, int rank, int n)
{
    for (size_t i = 0; i < ns; i++)
        s[i] = (float)(rank + (int)(i % 1000));
    if (!strcmp(coll, "broadcast") && rank == 0) memcpy(r, s, count * sizeof(float));
    run(coll, s, r, count, n);
    for (size_t i = 0; i < count; i++) {
        double want, k = (double)(i % 1000);
        if (!strcmp(coll, "allreduce")) want = n * k + n * (n - 1) / 2.0;
        else if (!strcmp(coll, "broadcast")) want = k;
        else if (!strcmp(coll, "reduce_scatter"))
            want = (double)n * ((rank * count + i) % 1000) + n * (n - 1) / 2.0;
        else if (!strcmp(coll, "allgather")) want = k; /* block 0: rank 0's */
        else if (!strcmp(coll, "sendrecv")) want = (double)((rank - 1 + n) % n) + k;
        else want = (double)((rank * count + i) % 1000); /* from rank 0 */
        if (fabs(r[i] - want) > 1e-3 * fmax(1, fabs(want))) return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    opts_t o;
    size_t count, ns, nr;
    double factor;
    if (parse(argc, argv, &o) || shape(o.coll, 1, n, &count, &ns, &nr, &factor)) {
        if (!rank) fprintf(stderr, "usage: mpi_bench allreduce|broadcast|allgather|"
                                   "reduce_scatter|alltoall|sendrecv [-b N] [-e N] [-f F] [-n N] [-w N] "
                                   "[--budget N] [--settle MS]\n");
        MPI_Finalize();
        return 2;
    }
    size_t most = o.s.max_bytes / sizeof(float) * 2 + 1024;
    float *s = aligned_alloc(4096, most * sizeof(float)), *r = aligned_alloc(4096, most * sizeof(float));
    memset(s, 0, most * sizeof(float));
    memset(r, 0, most * sizeof(float));
    if (o.s.settle_ms > 0) {
        struct timespec ts = {o.s.settle_ms / 1000, (long)(o.s.settle_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (!rank) printf("# mpi_bench %s: %d ranks\n#  size  count  time_us  algbw  busbw\n", o.coll, n);
    int bad = 0;
    for (size_t size = o.s.min_bytes; size <= o.s.max_bytes; size = (size_t)(size * o.s.factor)) {
        shape(o.coll, size / sizeof(float), n, &count, &ns, &nr, &factor);
        size_t bytes = (ns > nr ? ns : nr) * sizeof(float);
        int iters = o.s.iters, warmup = o.s.warmup;
        if (o.s.budget && bytes && o.s.budget / bytes < (size_t)iters) {
            iters = (int)(o.s.budget / bytes) + 1;
            if (warmup > iters) warmup = iters;
        }
        for (int i = 0; i < warmup; i++) run(o.coll, s, r, count, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) run(o.coll, s, r, count, n);
        double t = (MPI_Wtime() - t0) / iters * 1e6, sum = 0;
        MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t = sum / n;
        int wrong = check(o.coll, s, r, count, ns, rank, n), any = 0;
        MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        bad |= any;
        double algbw = t > 0 ? bytes / t / 1e3 : 0;
        if (!rank)
            printf("%12zu %12zu %10.2f %7.2f %7.2f%s\n", bytes, count, t, algbw, algbw * factor,
                   any ? " WRONG" : "");
        fflush(stdout);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return bad;
}
