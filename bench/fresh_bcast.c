/*
 * fresh_bcast.c - a broadcast loop (any number of ranks) whose root writes its buffer before
 * every call, as a training step does, against the same loop over an unchanged buffer (what
 * ccperf, mpi_bench, nccl-tests and OSU time).
 *
 *   build/bin/ccrun -n 2 build/bin/fresh_bcast BYTES FRESH ITERS
 *   mpirun -n 2 build/bin/mpi_fresh_bcast BYTES FRESH ITERS
 *
 * FRESH 1: before each call the root adds one to a byte of every 64-byte line of the buffer
 * (every line of it is then modified in the root's cache); 0: it does not. Prints rank 0's
 * mean time per iteration in microseconds, the writes included. Built twice from this file:
 * with ccomm (cc_broadcast, in place) and, with CC_FRESH_MPI, with MPI (MPI_Bcast). A reader
 * that copies the root's buffer itself (a single copy, Open MPI's CMA) finds its lines in its
 * own cache again when the buffer did not change; bench/fresh_bcast.sh runs both libraries
 * both ways, with the VM's placement (docs/performance.md, "Night of 2026-12-03").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef CC_FRESH_MPI
#include <mpi.h>
#else
#include <ccomm/ccomm.h>
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    long bytes, fresh, iters;
    if (argc != 4 || parse(argv[1], 1, 1L << 30, &bytes) || parse(argv[2], 0, 1, &fresh) ||
        parse(argv[3], 1, 1L << 24, &iters)) {
        fprintf(stderr, "usage: %s BYTES (1..1G) FRESH (0 or 1) ITERS (1..16M)\n", argv[0]);
        return 2;
    }
#ifdef CC_FRESH_MPI
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#define BCAST(b) (MPI_Bcast((b), (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS)
#define BARRIER() MPI_Barrier(MPI_COMM_WORLD)
#else
    cc_comm_t *comm = NULL;
    if (cc_comm_init_from_env(&comm, NULL) != CC_OK) return 1;
    int rank = cc_comm_rank(comm);
#define BCAST(b) (cc_broadcast(comm, (b), (b), (size_t)bytes, CC_UINT8, 0, NULL, NULL) == CC_OK)
#define BARRIER() cc_barrier(comm, NULL, NULL)
#endif
    unsigned char *buf = aligned_alloc(4096, ((size_t)bytes + 4095) & ~(size_t)4095);
    if (!buf) return 1;
    memset(buf, 1, (size_t)bytes);
    int ok = 1;
    for (int i = 0; i < 200 && ok; i++)
        ok = BCAST(buf);
    BARRIER();
    double t0 = now_s();
    for (long i = 0; i < iters && ok; i++) {
        if (fresh && rank == 0)
            for (long o = 0; o < bytes; o += 64)
                buf[o]++;
        ok = BCAST(buf);
    }
    BARRIER();
    double us = (now_s() - t0) / (double)iters * 1e6;
    if (!ok) fprintf(stderr, "fresh_bcast: rank %d: a broadcast failed\n", rank);
    else if (rank == 0) printf("%.1f\n", us);
    free(buf);
#ifdef CC_FRESH_MPI
    MPI_Finalize();
#else
    cc_comm_destroy(comm);
#endif
    return ok ? 0 : 1;
}
