/*
 * line_rtt.c - how far apart two CPUs are: the round trip of one cache line
 * between a thread on each (one writes 2k-1, the other answers 2k), in ns,
 * the median and the fastest of ROUNDS rounds of 20000 trips. Measures,
 * never asserts.
 *
 *   build/bin/line_rtt [ROUNDS [CPU_A CPU_B]]    default: 11 rounds, the first two CPUs
 *                                                this process may run on
 * Prints one line:
 *   line_rtt cpu A-B median M ns min F ns rounds R
 *
 * Why: on this project's 2-CPU VM the two vCPUs sit close (a trip of 72-147
 * ns) or far apart (453-537 ns) and the hypervisor moves them within
 * seconds. Everything that hands cache lines from one rank to the other (a
 * small op's flags, a staged copy) is 2-4x slower in the far placement,
 * which shows in tables as cells that halve between runs with no change
 * (docs/performance.md, "Evening of 2026-12-03"). bench/compare.sh runs this
 * before and after each launch and prints what it found.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_rounds.h"

#define TRIPS 20000

static struct {
    _Alignas(64) _Atomic long word;
    _Atomic int stop;
    _Atomic int ready; /* the answering thread: 1 pinned, -1 could not be */
} g_line;

static int g_cpu_b;

static int pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Answers every odd value with the next even one until told to stop. */
static void *answer(void *arg)
{
    (void)arg;
    if (pin(g_cpu_b) != 0) {
        atomic_store(&g_line.ready, -1);
        return NULL;
    }
    atomic_store(&g_line.ready, 1);
    for (;;) {
        long v = atomic_load_explicit(&g_line.word, memory_order_acquire);
        if (v & 1)
            atomic_store_explicit(&g_line.word, v + 1, memory_order_release);
        else if (atomic_load_explicit(&g_line.stop, memory_order_relaxed))
            return NULL;
    }
}

static int cpu_arg(const char *s, int *cpu)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v >= CPU_SETSIZE) return -1;
    *cpu = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = bench_rounds("line_rtt", argc > 2 ? 2 : argc, argv);
    if (rounds < 0) return 2;
    int a = -1, b = -1;
    if (argc == 4) {
        if (cpu_arg(argv[2], &a) || cpu_arg(argv[3], &b) || a == b) {
            fprintf(stderr, "line_rtt: CPU_A \"%s\" and CPU_B \"%s\" must be two different CPU "
                            "numbers\n", argv[2], argv[3]);
            return 2;
        }
    } else if (argc != 1 && argc != 2) {
        fprintf(stderr, "usage: line_rtt [ROUNDS [CPU_A CPU_B]]\n");
        return 2;
    } else {
        cpu_set_t s;
        if (sched_getaffinity(0, sizeof(s), &s) != 0) {
            fprintf(stderr, "line_rtt: sched_getaffinity: %s\n", strerror(errno));
            return 1;
        }
        for (int c = 0; c < CPU_SETSIZE && b < 0; c++)
            if (CPU_ISSET(c, &s)) {
                if (a < 0) a = c;
                else b = c;
            }
        if (b < 0) {
            fprintf(stderr, "line_rtt: this process may run on one CPU only: nothing to measure\n");
            return 1;
        }
    }
    g_cpu_b = b;
    if (pin(a) != 0) {
        fprintf(stderr, "line_rtt: cannot run on CPU %d\n", a);
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, answer, NULL) != 0) {
        fprintf(stderr, "line_rtt: pthread_create failed\n");
        return 1;
    }
    while (!atomic_load(&g_line.ready))
        sched_yield();
    if (atomic_load(&g_line.ready) < 0) {
        pthread_join(t, NULL);
        fprintf(stderr, "line_rtt: cannot run on CPU %d\n", b);
        return 1;
    }
    double *ns = malloc(sizeof(double) * (size_t)rounds);
    if (!ns) return 1;
    long v = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < TRIPS; i++) {
            atomic_store_explicit(&g_line.word, v + 1, memory_order_release);
            v += 2;
            while (atomic_load_explicit(&g_line.word, memory_order_acquire) != v) {
            }
        }
        ns[r] = (now_ns() - t0) / TRIPS;
    }
    atomic_store(&g_line.stop, 1);
    pthread_join(t, NULL);
    bench_sort_rounds(ns, rounds);
    printf("line_rtt cpu %d-%d median %.0f ns min %.0f ns rounds %d\n", a, b, ns[rounds / 2], ns[0],
           rounds);
    free(ns);
    return 0;
}
