/*
 * memcpy_bench.c - this machine's copy bandwidth, on 1 thread and on 2 at
 * once: the figure the memory-traffic bound of the shared-memory allreduce
 * is made of (docs/performance.md, "The 64 MiB allreduce against memory").
 *
 *   memcpy_bench [MiB] [reps]     defaults: 64 MiB per buffer, best of 9
 *
 * Each thread copies its own src into its own dst (both first touched by
 * that thread, so the pages are faulted before timing); with 2 threads the
 * copies start together behind a barrier and a run lasts until both end.
 * "GB/s per thread" counts bytes copied (or set) per second by one thread,
 * a run lasting until its slowest thread ends; "traffic GB/s" counts what
 * memory moved for all threads together (each copied byte is read once and
 * written once: 2x; glibc's memcpy of this size stores past the cache, so
 * there is no write-allocate read).
 * memset is there too: the cost of writing alone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 2
#define MAX_REPS    1000

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct worker {
    pthread_t tid;
    pthread_barrier_t *go;
    char *src, *dst;
    size_t bytes;
    int reps, kind; /* 0: memcpy, 1: memset */
    double t[MAX_REPS]; /* seconds of each timed run */
    int failed;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    w->src = malloc(w->bytes);
    w->dst = malloc(w->bytes);
    w->failed = !w->src || !w->dst;
    if (!w->failed) {
        memset(w->src, 1, w->bytes); /* fault every page on this thread, before the clock */
        memset(w->dst, 2, w->bytes);
    }
    for (int r = 0; r < w->reps + 1; r++) { /* one untimed warm-up run */
        pthread_barrier_wait(w->go);
        double t0 = now();
        if (!w->failed && w->kind == 0) memcpy(w->dst, w->src, w->bytes);
        if (!w->failed && w->kind == 1) memset(w->dst, r & 0xff, w->bytes);
        double t = now() - t0;
        /* Every thread's copy of a run ends before the next starts: runs overlap fully. */
        pthread_barrier_wait(w->go);
        if (r) w->t[r - 1] = t;
    }
    __asm__ volatile("" ::"r"(w->dst) : "memory"); /* the copies are observable */
    free(w->src);
    free(w->dst);
    return NULL;
}

/* Run `kind` on `threads` threads at once; print one row. */
static int run(int threads, int kind, size_t bytes, int reps)
{
    worker_t w[MAX_THREADS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){.go = &go, .bytes = bytes, .reps = reps, .kind = kind};
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0) {
            fprintf(stderr, "memcpy_bench: cannot start thread %d: %s\n", i, strerror(errno));
            return 1;
        }
    }
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].tid, NULL);
        failed |= w[i].failed;
    }
    /* A run lasts until its slowest thread ends (what a 2-rank op waits for); the best run. */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = 0;
        for (int i = 0; i < threads; i++)
            if (w[i].t[r] > t) t = w[i].t[r];
        if (t < best) best = t;
    }
    pthread_barrier_destroy(&go);
    if (failed) {
        fprintf(stderr, "memcpy_bench: cannot allocate 2 buffers of %zu bytes\n", bytes);
        return 1;
    }
    double per = (double)bytes / best, all = per * threads;
    printf("| %-6s | %d | %8.2f | %8.2f | %8.2f |\n", kind == 0 ? "memcpy" : "memset", threads,
           per / 1e9, all / 1e9, (kind == 0 ? 2.0 : 1.0) * all / 1e9);
    return 0;
}

int main(int argc, char **argv)
{
    long mib = 64, reps = 9;
    char *end;
    if (argc > 1) {
        mib = strtol(argv[1], &end, 10);
        if (*end || mib < 1 || mib > 4096) {
            fprintf(stderr, "memcpy_bench: MiB must be 1..4096, not '%s'\n", argv[1]);
            return 2;
        }
    }
    if (argc > 2) {
        reps = strtol(argv[2], &end, 10);
        if (*end || reps < 1 || reps > MAX_REPS) {
            fprintf(stderr, "memcpy_bench: reps must be 1..1000, not '%s'\n", argv[2]);
            return 2;
        }
    }
    size_t bytes = (size_t)mib << 20;
    printf("%ld MiB per buffer, best of %ld runs per thread\n\n", mib, reps);
    printf("| op | threads | GB/s per thread | GB/s, all threads | traffic GB/s |\n");
    printf("|---|---|---|---|---|\n");
    int rc = 0;
    for (int threads = 1; threads <= MAX_THREADS && !rc; threads++)
        for (int kind = 0; kind < 2 && !rc; kind++)
            rc = run(threads, kind, bytes, (int)reps);
    return rc;
}
