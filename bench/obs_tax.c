/*
 * obs_tax.c - time an 8-byte allreduce (2 float32, sum) with no hook of its
 * own, so that the only subscribers on the chains are the ones the
 * environment turns on (recorder, clog, tracepoints). bench/obs_tax.sh runs
 * it with everything on and everything off, alternating, and prints the
 * difference: the observability tax per op.
 *
 *   build/bin/ccrun -n 2 build/bin/obs_tax [ROUNDS [OPS [WARMUP]]]
 *
 * OBS_TAX_COLL=broadcast times an 8-byte broadcast from rank 0 instead (in place, whose root
 * never waits: its tax is not hidden behind a wait for the peers); allreduce is the default.
 *
 * Built with CC_OBS_TAX_MPI it is mpi_obs_tax, the same loop over MPI (MPI_Allreduce,
 * MPI_Bcast, MPI_Barrier), the peer's figure at the same resolution (ccperf and mpi_bench
 * print 10 ns steps, a fifth of an 8-byte broadcast):
 *
 *   mpirun -n 2 build/bin/mpi_obs_tax [ROUNDS [OPS [WARMUP]]]
 *
 * bench/obs_modes.sh runs it for a mode whose settings hold the word MPI.
 *
 * Prints on rank 0 one line
 *   obs_tax ns_per_op MEDIAN min MIN cpu CPU wall WALL rounds R ops N
 * MEDIAN and MIN: the median and the least over ROUNDS rounds of OPS calls of
 * the per-op time, the slower rank's per round; CPU: rank 0's process CPU time
 * (user + system, all threads: clog's writer too) per op over all rounds, and
 * WALL its elapsed time per op over the same span. With one rank per core and
 * nothing waiting, CPU is the cost of the path, scheduling noise aside.
 * The warm-up (default 10000 calls) wraps the recorder's default ring (4096
 * slots) twice, so the timed rounds are its steady state; WARMUP 0 times the
 * first lap. Before it every rank waits 30 ms, as ccperf's --settle does: op
 * stamps come from clock_gettime until the TSC line is drawn, 20 ms after init
 * (lib/base/clock.c), and without the wait most rounds of a default run timed
 * that start (1 rank, 2026-12-03: everything off 146 ns an op inside it, 102 ns
 * after; the recorder 185 and 142).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifdef CC_OBS_TAX_MPI
#include <mpi.h>
#else
#include "ccomm/ccomm.h"
#endif

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU time of the whole process (all its threads: clog's writer too). */
static double cpu_ns(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return ((double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec) * 1e9 +
           ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) * 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long arg(int argc, char **argv, int i, long dflt, long lo, long hi)
{
    if (argc <= i) return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "obs_tax: argument %d \"%s\" is not an integer in %ld .. %ld\n", i, argv[i],
                lo, hi);
        exit(2);
    }
    return v;
}

/* The library under test: a comm, one timed op (the 8-byte allreduce, or with bcast the
 * 8-byte broadcast from rank 0), a barrier, the per-round time's max over ranks. */
#ifdef CC_OBS_TAX_MPI
typedef MPI_Comm comm_t;
static int comm_open(comm_t *c, int *argc, char ***argv)
{
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return 0;
    *c = MPI_COMM_WORLD;
    return 1;
}
static int one_op(comm_t c, float *s, float *r, int bcast)
{
    if (bcast) return MPI_Bcast(r, 2, MPI_FLOAT, 0, c) == MPI_SUCCESS;
    return MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS;
}
static void barrier(comm_t c)
{
    MPI_Barrier(c);
}
static void max_over_ranks(comm_t c, double *v)
{
    MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_MAX, c);
}
static int comm_rank(comm_t c)
{
    int r = 0;
    MPI_Comm_rank(c, &r);
    return r;
}
static int comm_size(comm_t c)
{
    int n = 0;
    MPI_Comm_size(c, &n);
    return n;
}
static void comm_close(comm_t c)
{
    (void)c;
    MPI_Finalize();
}
#else
typedef cc_comm_t *comm_t;
static int comm_open(comm_t *c, int *argc, char ***argv)
{
    (void)argc, (void)argv;
    cc_status_t st = cc_comm_init_from_env(c, NULL);
    if (st != CC_OK)
        fprintf(stderr, "obs_tax: cc_comm_init_from_env failed: %s\n", cc_status_str(st));
    return st == CC_OK;
}
static int one_op(comm_t c, float *s, float *r, int bcast)
{
    if (bcast) return cc_broadcast(c, r, r, 2, CC_FLOAT32, 0, NULL, NULL) == CC_OK;
    return cc_allreduce(c, s, r, 2, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK;
}
static void barrier(comm_t c)
{
    cc_barrier(c, NULL, NULL);
}
static void max_over_ranks(comm_t c, double *v)
{
    cc_allreduce(c, v, v, 1, CC_FLOAT64, CC_MAX, NULL, NULL);
}
static int comm_rank(comm_t c)
{
    return cc_comm_rank(c);
}
static int comm_size(comm_t c)
{
    return cc_comm_size(c);
}
static void comm_close(comm_t c)
{
    cc_comm_destroy(c);
}
#endif

int main(int argc, char **argv)
{
    int rounds = (int)arg(argc, argv, 1, 21, 1, 10000);
    int ops = (int)arg(argc, argv, 2, 2000, 1, 100000000);
    long warm = arg(argc, argv, 3, 10000, 0, 100000000);
    const char *coll = getenv("OBS_TAX_COLL");
    if (coll && strcmp(coll, "allreduce") && strcmp(coll, "broadcast")) {
        fprintf(stderr, "obs_tax: OBS_TAX_COLL=\"%s\": allreduce or broadcast\n", coll);
        return 2;
    }
    int bcast = coll && !strcmp(coll, "broadcast");
    comm_t c;
    if (!comm_open(&c, &argc, &argv)) return 1;
    float s[2] = {1, 2}, r[2] = {0, 0};
    double *t = malloc(sizeof(double) * (size_t)rounds);
    if (!t) return 1;
    struct timespec settle = {0, 30 * 1000000L};
    nanosleep(&settle, NULL);
    barrier(c);
    if (bcast && comm_rank(c) == 0) r[0] = s[0], r[1] = s[1];
    for (long i = 0; i < warm; i++)
        if (!one_op(c, s, r, bcast)) return 1;
    double c0 = cpu_ns(), w0 = now_ns();
    for (int k = 0; k < rounds; k++) {
        barrier(c);
        double t0 = now_ns();
        for (int i = 0; i < ops; i++)
            if (!one_op(c, s, r, bcast)) return 1;
        t[k] = (now_ns() - t0) / ops;
        max_over_ranks(c, &t[k]);
    }
    /* Per op over all rounds, this rank's; the barriers and time exchanges are in it. */
    double n_ops = (double)rounds * ops;
    double cpu = (cpu_ns() - c0) / n_ops, wall = (now_ns() - w0) / n_ops;
    float scale = bcast ? 1.0f : (float)comm_size(c);
    int bad = r[0] != scale || r[1] != 2.0f * scale;
    if (comm_rank(c) == 0) {
        qsort(t, (size_t)rounds, sizeof(double), cmp_double);
        printf("obs_tax ns_per_op %.1f min %.1f cpu %.1f wall %.1f rounds %d ops %d%s\n",
               t[rounds / 2], t[0], cpu, wall, rounds, ops, bad ? " WRONG" : "");
    }
    free(t);
    comm_close(c);
    return bad;
}
