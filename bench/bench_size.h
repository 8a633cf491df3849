/*
 * bench_size.h - the size arguments of the MPI sides of bench/compare.sh and
 * bench/put_compare.sh (mpi_bench.c, mpi_put.c): "64M" as ccperf reads it
 * (K, M, G: powers of 2). A value that is not a number reads as 0, which both
 * programs refuse.
 */
#ifndef BENCH_SIZE_H
#define BENCH_SIZE_H

#include <stdlib.h>

static inline size_t bench_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    if (*end == 'M' || *end == 'm') v *= 1048576;
    if (*end == 'G' || *end == 'g') v *= 1073741824;
    return v < 0 ? 0 : (size_t)v;
}

#endif /* BENCH_SIZE_H */
