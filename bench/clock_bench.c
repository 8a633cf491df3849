/*
 * clock_bench.c - what an op time stamp costs: cc__stamp_ns (the TSC line,
 * lib/base/clock.c) against cc__now_ns (clock_gettime through the vDSO), in
 * alternating rounds of one process. Measures, never asserts.
 *
 *   build/bin/clock_bench [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "bench_rounds.h"

#define READS 1000000

static double per_read(uint64_t (*fn)(void), uint64_t *sink)
{
    uint64_t t0 = cc__now_ns(), s = 0;
    for (int i = 0; i < READS; i++)
        s += fn();
    *sink += s;
    return (double)(cc__now_ns() - t0) / READS;
}

static uint64_t mono(void)
{
    return cc__now_ns();
}

int main(int argc, char **argv)
{
    int rounds = bench_rounds("clock_bench", argc, argv);
    if (rounds < 0) return 2;
    cc__clock_init(1);
    struct timespec wait = {0, 30000000}; /* past the calibration */
    nanosleep(&wait, NULL);
    uint64_t sink = 0;
    cc__stamp_ns();
    double *a = calloc((size_t)rounds, sizeof(double)), *b = calloc((size_t)rounds, sizeof(double));
    if (!a || !b) return 1;
    for (int r = 0; r < rounds; r++) {
        a[r] = per_read(mono, &sink);
        b[r] = per_read(cc__stamp_ns, &sink);
    }
    bench_sort_rounds(a, rounds);
    bench_sort_rounds(b, rounds);
    printf("clock_bench: stamps from %s; ns per read, median (fastest) of %d rounds of %d\n",
           cc__clock_source(), rounds, READS);
    printf("  cc__now_ns   (clock_gettime)  %6.1f (%6.1f)\n", a[rounds / 2], a[0]);
    printf("  cc__stamp_ns (op stamps)      %6.1f (%6.1f)\n", b[rounds / 2], b[0]);
    free(a);
    free(b);
    return (int)(sink & 0) /* keep the reads */;
}
