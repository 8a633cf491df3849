/*
 * kernels_bench.c - throughput of the lib/kernels reduction kernels, on one
 * thread, next to memcpy and a plain `c[i] = a[i] + b[i]` loop measured in
 * the same run (this machine is noisy: compare side by side only).
 *
 *   kernels_bench [MiB] [reps]     defaults: 64 MiB, best of 7
 *
 * GB/s counts output bytes (the convention of shared/ANCHORS.md: for
 * c = a + b, 64 MiB of c per run), so memcpy and the kernels read the same
 * way. "moved" adds the bytes read: a 2-input kernel moves 3x its output.
 * A second table repeats the runs at 256 KiB, where the data stays in
 * cache and the loops' own speed shows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"

#define MAXSRC 4

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A plain loop, as the ANCHORS figure was taken; compiled with the bench. */
static void __attribute__((noinline)) plain_add(float *c, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

typedef struct bench {
    void *src[MAXSRC];
    void *dst;
    size_t bytes; /* of each buffer */
    int reps;
} bench_t;

/* What one timed run does. */
typedef enum { RUN_MEMCPY, RUN_PLAIN, RUN_PAIR, RUN_PAIR_INPLACE, RUN_MULTI } run_kind_t;

typedef struct job {
    const char *name;
    run_kind_t kind;
    cc_dtype_t dtype;
    int nsrc;
} job_t;

static void run_once(const bench_t *b, const job_t *j, cc__reduce_fn pair,
                     cc__reduce_multi_fn multi)
{
    size_t n = b->bytes / cc_dtype_size(j->dtype);
    switch (j->kind) {
    case RUN_MEMCPY:
        memcpy(b->dst, b->src[0], b->bytes);
        break;
    case RUN_PLAIN:
        plain_add(b->dst, b->src[0], b->src[1], n);
        break;
    case RUN_PAIR:
        pair(b->dst, b->src[0], b->src[1], n);
        break;
    case RUN_PAIR_INPLACE:
        pair(b->dst, b->dst, b->src[1], n);
        break;
    case RUN_MULTI:
        multi(b->dst, (const void *const *)b->src, j->nsrc, n);
        break;
    }
}

/* Best and median of b->reps runs after one warm-up run, in GB/s of output. */
static void measure(const bench_t *b, const job_t *j, cc__kernel_isa_t isa)
{
    cc__reduce_fn pair = NULL;
    cc__reduce_multi_fn multi = NULL;
    if (j->kind == RUN_PAIR || j->kind == RUN_PAIR_INPLACE) {
        if (cc__kernel_reduce_get_isa(isa, j->dtype, CC_SUM, &pair) != CC_OK) return;
    } else if (j->kind == RUN_MULTI) {
        if (cc__kernel_reduce_multi_get_isa(isa, j->dtype, CC_SUM, &multi) != CC_OK) return;
    }
    double t[64];
    int reps = b->reps < 64 ? b->reps : 64;
    /* Many runs per sample at small sizes, so that a sample lasts ~1 ms. */
    int inner = b->bytes >= (8u << 20) ? 1 : (int)((8u << 20) / b->bytes);
    run_once(b, j, pair, multi);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < inner; k++)
            run_once(b, j, pair, multi);
        t[r] = (now() - t0) / inner;
    }
    for (int i = 1; i < reps; i++) /* insertion sort: reps is small */
        for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
            double x = t[k];
            t[k] = t[k - 1];
            t[k - 1] = x;
        }
    int reads = j->kind == RUN_MULTI ? j->nsrc : (j->kind == RUN_MEMCPY ? 1 : 2);
    double gb = (double)b->bytes / 1e9;
    printf("%-26s %-8s %9.2f %9.2f %9.2f\n", j->name,
           j->kind == RUN_MEMCPY || j->kind == RUN_PLAIN ? "-" : cc__kernel_isa_name(isa),
           gb / t[0], gb / t[reps / 2], gb * (reads + 1) / t[0]);
}

static const job_t JOBS[] = {
    {"memcpy", RUN_MEMCPY, CC_UINT8, 1},
    {"plain c=a+b f32 (-O2)", RUN_PLAIN, CC_FLOAT32, 2},
    {"sum f32 c=a+b", RUN_PAIR, CC_FLOAT32, 2},
    {"sum f32 a+=b", RUN_PAIR_INPLACE, CC_FLOAT32, 2},
    {"sum bf16 c=a+b", RUN_PAIR, CC_BFLOAT16, 2},
    {"sum f16 c=a+b", RUN_PAIR, CC_FLOAT16, 2},
    {"multi sum f32, 4 inputs", RUN_MULTI, CC_FLOAT32, 4},
    {"multi sum bf16, 4 inputs", RUN_MULTI, CC_BFLOAT16, 4},
    {"multi sum f16, 4 inputs", RUN_MULTI, CC_FLOAT16, 4},
};

static void table(bench_t *b)
{
    printf("\n%zu KiB per buffer, best/median of %d runs, 1 thread\n", b->bytes >> 10, b->reps);
    printf("%-26s %-8s %9s %9s %9s\n", "kernel", "variant", "GB/s", "median", "moved");
    for (size_t i = 0; i < sizeof JOBS / sizeof JOBS[0]; i++) {
        const job_t *j = &JOBS[i];
        if (j->kind == RUN_MEMCPY || j->kind == RUN_PLAIN) {
            measure(b, j, CC__KISA_GENERIC);
            continue;
        }
        for (int isa = CC__KISA_COUNT - 1; isa >= 0; isa--)
            if (cc__kernel_isa_available((cc__kernel_isa_t)isa))
                measure(b, j, (cc__kernel_isa_t)isa);
    }
}

/* Small ordinary numbers (1.0 in every format's bits is not needed: the
 * kernels' speed does not depend on the values, only NaN-free is wanted). */
static void fill(void *p, size_t bytes)
{
    uint16_t *h = p;
    for (size_t i = 0; i < bytes / 2; i++)
        h[i] = (uint16_t)(0x3c00 + (i & 0x3ff)); /* f16 in [1, 2); as bf16/f32, finite */
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    bench_t b = {.bytes = mib << 20, .reps = argc > 2 ? atoi(argv[2]) : 7};
    if (b.bytes == 0 || b.reps < 1) {
        fprintf(stderr, "usage: %s [MiB > 0] [reps > 0]\n", argv[0]);
        return 2;
    }
    for (int k = 0; k < MAXSRC; k++) {
        b.src[k] = aligned_alloc(64, b.bytes);
        if (b.src[k] == NULL) return 1;
        fill(b.src[k], b.bytes);
    }
    b.dst = aligned_alloc(64, b.bytes);
    if (b.dst == NULL) return 1;
    memset(b.dst, 0, b.bytes); /* fault the pages in before timing */
    printf("kernels_bench: variant in use %s\n", cc__kernel_isa_name(cc__kernel_isa_best()));
    table(&b);
    size_t big = b.bytes;
    b.bytes = 256u << 10;
    b.reps = 15;
    table(&b);
    b.bytes = big;
    for (int k = 0; k < MAXSRC; k++)
        free(b.src[k]);
    free(b.dst);
    return 0;
}
