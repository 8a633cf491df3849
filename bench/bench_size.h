/*
 * bench_size.h - the sweep arguments of the MPI sides of bench/compare.sh and
 * bench/put_compare.sh (mpi_bench.c, mpi_put.c), as ccperf reads them: sizes
 * such as "64M" (K, M, G: powers of 2; not a number reads as 0, which both
 * programs refuse), -b -e -f -n -w --budget --settle.
 */
#ifndef BENCH_SIZE_H
#define BENCH_SIZE_H

#include <stdlib.h>
#include <string.h>

static inline size_t bench_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    if (*end == 'M' || *end == 'm') v *= 1048576;
    if (*end == 'G' || *end == 'g') v *= 1073741824;
    return v < 0 ? 0 : (size_t)v;
}

/* The sizes swept (min, min x factor, ... up to max) and the calls timed at each. */
typedef struct bench_sweep {
    size_t min_bytes, max_bytes; /* -b, -e */
    double factor;               /* -f */
    int iters, warmup;           /* -n, -w */
    size_t budget;               /* --budget: as ccperf's, at most this many bytes per size */
    int settle_ms;               /* --settle: as ccperf's, a wait after init (mpi_bench) */
} bench_sweep_t;

/* 1 when option a is one of the sweep's (its value v stored in s), else 0. */
static inline int bench_sweep_option(bench_sweep_t *s, const char *a, const char *v)
{
    if (!strcmp(a, "-b")) s->min_bytes = bench_parse_size(v);
    else if (!strcmp(a, "-e")) s->max_bytes = bench_parse_size(v);
    else if (!strcmp(a, "-f")) s->factor = atof(v);
    else if (!strcmp(a, "-n")) s->iters = atoi(v);
    else if (!strcmp(a, "-w")) s->warmup = atoi(v);
    else if (!strcmp(a, "--budget")) s->budget = bench_parse_size(v);
    else if (!strcmp(a, "--settle")) s->settle_ms = atoi(v);
    else return 0;
    return 1;
}

#endif /* BENCH_SIZE_H */
