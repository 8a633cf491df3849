/*
 * mpi_put.c - the MPI side of bench/put_compare.sh: MPI_Put in a passive-target
 * epoch, in the patterns `ccperf put` times (docs/windows.md, "Speed against
 * Open MPI"), so that both sides do the same work per timed call:
 *
 *   --mode flush    W puts into the target's window, then MPI_Win_flush(target):
 *                   the puts are complete at the target when it returns
 *                   (osu_put_latency / osu_put_bw with their default -s flush)
 *   --mode signal   W puts, MPI_Win_flush, then an MPI_Accumulate(+1) of a
 *                   counter in the target's counter window and a flush; the target
 *                   polls its counter (MPI_Fetch_and_op NO_OP + flush) until it
 *                   counts this call: MPI-3's way of a put with notification,
 *                   against ccomm's put + signal + wait_signal
 *   --origins ring  every rank puts into rank + 1 (and waits for rank - 1)
 *   --origins one   rank 0 puts into rank 1 only (osu_put_latency's pair)
 *   --window W      puts per call; put j writes slot j mod slots of the window,
 *                   slots = min(W, max(1, 64 MiB / size)) as in ccperf
 *   --win allocate  the window from MPI_Win_allocate (OSU's default) or, with
 *   --win create    MPI_Win_create over malloc'd memory
 *
 *   mpirun -n 2 mpi_put -b 8 -e 4M -f 4 -n 1000 -w 100 --mode flush --origins one
 *   # mpi_put: 2 ranks, mode flush, window 1, origins one, win allocate
 *   #  size  time_us  algbw
 *          8     0.61   0.013
 *
 * MPI_Win_lock_all opens one epoch per size, outside the timed loop (OSU locks
 * outside it too). The time is the mean over ranks for a ring, the larger of
 * the origin's and the target's for one origin (ccperf's rules); algbw = W x
 * size / time (GB/s). Each size is checked once after timing (every byte the
 * target holds, after a barrier and MPI_Win_sync), so a broken MPI cannot win:
 * a wrong row ends in WRONG and the exit status is 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_size.h"

#define SPAN ((size_t)64 << 20) /* at most this many bytes of slots: ccperf's PERF_PUT_SPAN */

typedef struct opts {
    bench_sweep_t s;
    int window;
    int flush, one, create; /* --mode flush, --origins one, --win create */
} opts_t;

/* What one size needs: the data window, the counter window (signal mode), and who is who. */
typedef struct run {
    const opts_t *o;
    int rank, n, to, from, origin, target;
    MPI_Win win, cwin;
    char *base, *send; /* this rank's window memory; the send buffer (every slot) */
    size_t size, slots;
    uint64_t expected; /* calls counted from `from` so far (signal mode) */
} run_t;

/* One "--name value" or "-x value" pair; -1 when it is not one of ours or the value is bad. */
static int set_option(opts_t *o, const char *a, const char *v)
{
    if (bench_sweep_option(&o->s, a, v)) return 0;
    if (!strcmp(a, "--window")) o->window = atoi(v);
    else if (!strcmp(a, "--mode") && (!strcmp(v, "flush") || !strcmp(v, "signal")))
        o->flush = !strcmp(v, "flush");
    else if (!strcmp(a, "--origins") && (!strcmp(v, "one") || !strcmp(v, "ring")))
        o->one = !strcmp(v, "one");
    else if (!strcmp(a, "--win") && (!strcmp(v, "allocate") || !strcmp(v, "create")))
        o->create = !strcmp(v, "create");
    else return -1;
    return 0;
}

static int parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.s = {.min_bytes = 8, .max_bytes = 4u << 20, .factor = 2.0, .iters = 100,
                        .warmup = 10},
                  .window = 1, .flush = 1};
    for (int i = 1; i < argc; i += 2)
        if (i + 1 >= argc || set_option(o, argv[i], argv[i + 1]) != 0) return -1;
    const bench_sweep_t *w = &o->s;
    int ok = w->factor > 1 && w->iters > 0 && w->warmup >= 0 && o->window > 0 &&
             w->min_bytes > 0 && w->min_bytes <= w->max_bytes && w->max_bytes <= (1u << 30);
    return ok ? 0 : -1;
}

static unsigned char pattern(int rank, size_t i)
{
    return (unsigned char)((size_t)rank * 31 + i * 7 + 1) % 251; /* never the poison, 0xff */
}

/* One timed call: the origin's puts and flush (and counter add), the target's wait. */
static void call(run_t *r)
{
    const opts_t *o = r->o;
    if (r->origin) {
        for (int j = 0; j < o->window; j++) {
            size_t off = (size_t)j % r->slots * r->size;
            MPI_Put(r->send + off, (int)r->size, MPI_BYTE, r->to, (MPI_Aint)off, (int)r->size,
                    MPI_BYTE, r->win);
        }
        MPI_Win_flush(r->to, r->win);
        if (!o->flush) {
            /* The data is complete at the target (the flush) before the counter moves. */
            uint64_t one = 1;
            MPI_Accumulate(&one, 1, MPI_UINT64_T, r->to, r->rank, 1, MPI_UINT64_T, MPI_SUM,
                           r->cwin);
            MPI_Win_flush(r->to, r->cwin);
        }
    }
    if (r->target && !o->flush) {
        uint64_t v = 0;
        r->expected++;
        do {
            MPI_Fetch_and_op(NULL, &v, MPI_UINT64_T, r->rank, r->from, MPI_NO_OP, r->cwin);
            MPI_Win_flush(r->rank, r->cwin);
        } while (v < r->expected);
    }
}

/* Poison the target's slots, run one call, and count the bytes that are not the source's. */
static int check(run_t *r)
{
    size_t span = r->slots * r->size, bad = 0;
    MPI_Win_sync(r->win);
    memset(r->base, 0xff, span);
    MPI_Win_sync(r->win);
    MPI_Barrier(MPI_COMM_WORLD);
    call(r);
    MPI_Barrier(MPI_COMM_WORLD); /* flush mode: the target does not wait for the puts */
    MPI_Win_sync(r->win);
    if (r->target)
        for (size_t i = 0; i < span; i++)
            bad += (unsigned char)r->base[i] != pattern(r->from, i);
    return bad != 0;
}

static void open_window(run_t *r, size_t span)
{
    if (r->o->create) {
        r->base = aligned_alloc(4096, (span + 4095) / 4096 * 4096);
        memset(r->base, 0, span);
        MPI_Win_create(r->base, (MPI_Aint)span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r->win);
    } else {
        MPI_Win_allocate((MPI_Aint)span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r->base, &r->win);
        memset(r->base, 0, span);
    }
    MPI_Win_lock_all(0, r->win);
}

static void close_window(run_t *r)
{
    MPI_Win_unlock_all(r->win);
    MPI_Win_free(&r->win);
    if (r->o->create) free(r->base);
}

/* One size: time warmup + iters calls between barriers, agree on the time, check once. */
static int one_size(run_t *r, size_t size, double *t_us)
{
    const opts_t *o = r->o;
    size_t fit = SPAN / size, w = (size_t)o->window;
    r->size = size;
    r->slots = fit < 1 ? 1 : fit < w ? fit : w;
    size_t moved = size * w;
    int iters = o->s.iters, warmup = o->s.warmup;
    if (o->s.budget && o->s.budget / moved < (size_t)iters) {
        iters = (int)(o->s.budget / moved) + 1;
        if (warmup > iters) warmup = iters;
    }
    open_window(r, r->slots * size);
    for (int i = 0; i < warmup; i++) call(r);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) call(r);
    double t = (MPI_Wtime() - t0) / iters * 1e6, agreed = 0;
    MPI_Allreduce(&t, &agreed, 1, MPI_DOUBLE, o->one ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    *t_us = o->one ? agreed : agreed / r->n;
    int wrong = check(r), any = 0;
    MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    close_window(r);
    return any;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    opts_t o;
    run_t r = {.o = &o};
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.n);
    if (parse(argc, argv, &o) != 0 || r.n < 2) {
        if (!r.rank)
            fprintf(stderr, "usage: mpirun -n N (N >= 2) mpi_put [-b N] [-e N] [-f F] [-n N] "
                            "[-w N] [--budget N] [--mode flush|signal] [--window W] "
                            "[--origins ring|one] [--win allocate|create]\n");
        MPI_Finalize();
        return 2;
    }
    r.to = o.one ? 1 : (r.rank + 1) % r.n;
    r.from = o.one ? 0 : (r.rank - 1 + r.n) % r.n;
    r.origin = !o.one || r.rank == 0;
    r.target = !o.one || r.rank == 1;
    /* The largest span of slots of the sweep: max(max_bytes, min(W x max_bytes, SPAN)). */
    size_t most = o.s.max_bytes * (size_t)o.window;
    if (most > SPAN) most = SPAN;
    if (most < o.s.max_bytes) most = o.s.max_bytes;
    r.send = aligned_alloc(4096, (most + 4095) / 4096 * 4096);
    for (size_t i = 0; i < most; i++) r.send[i] = (char)pattern(r.rank, i);
    uint64_t *counters; /* counters[p]: calls rank p counted into this rank */
    MPI_Win_allocate((MPI_Aint)(r.n * sizeof(uint64_t)), sizeof(uint64_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &counters, &r.cwin);
    memset(counters, 0, r.n * sizeof(uint64_t));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, r.cwin);
    if (!r.rank)
        printf("# mpi_put: %d ranks, mode %s, window %d, origins %s, win %s\n"
               "#  size  time_us  algbw\n",
               r.n, o.flush ? "flush" : "signal", o.window, o.one ? "one" : "ring",
               o.create ? "create" : "allocate");
    int bad = 0;
    for (size_t size = o.s.min_bytes; size <= o.s.max_bytes; size = (size_t)(size * o.s.factor)) {
        double t;
        int wrong = one_size(&r, size, &t);
        bad |= wrong;
        if (!r.rank)
            printf("%12zu %10.2f %9.3f%s\n", size, t, t > 0 ? size * (double)o.window / t / 1e3 : 0,
                   wrong ? " WRONG" : "");
        fflush(stdout);
    }
    MPI_Win_unlock_all(r.cwin);
    MPI_Win_free(&r.cwin);
    free(r.send);
    MPI_Finalize();
    return bad;
}
