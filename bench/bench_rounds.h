/*
 * bench_rounds.h - the rounds of the micro-benchmarks that alternate kinds in
 * one process (clock_bench.c, atomic_bench.c): the ROUNDS argument, checked,
 * and the sort that gives a kind's median and fastest round.
 */
#ifndef BENCH_ROUNDS_H
#define BENCH_ROUNDS_H

#include <stdio.h>
#include <stdlib.h>

/* argv[1] as a count of rounds in 1 .. 1000 (11 without it); -1 after saying why. */
static inline int bench_rounds(const char *prog, int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 11;
    if (rounds < 1 || rounds > 1000) {
        fprintf(stderr, "%s: ROUNDS \"%s\" is not in 1 .. 1000\n", prog, argv[1]);
        return -1;
    }
    return rounds;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sort n rounds in place: t[n / 2] is the median, t[0] the fastest. */
static inline void bench_sort_rounds(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
}

#endif /* BENCH_ROUNDS_H */
