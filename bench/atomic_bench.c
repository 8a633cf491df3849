/*
 * atomic_bench.c - what the op path's atomic instructions cost on this
 * machine, uncontended (one thread, the line in its own cache): a plain
 * store, a release store, a relaxed fetch_add (lock xadd), a CAS (lock
 * cmpxchg), a seq_cst store (xchg), a seq_cst fence, and the recorder's slot
 * lock taken and released by a CAS or by a test-and-set of its bit 0 (lock bts). An op with the
 * recorder and clog on runs about sixteen locked instructions (docs/
 * performance.md, "the observability tax"); this says what each costs.
 * Measures, never asserts.
 *
 *   build/bin/atomic_bench [ROUNDS]
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "bench_rounds.h"

#define OPS 2000000

static _Atomic uint64_t g_word;

/* Each body does OPS dependent operations on one word; `i` feeds the value so
 * the compiler keeps every one. */
static void plain(void)
{
    for (uint64_t i = 0; i < OPS; i++)
        atomic_store_explicit(&g_word, i, memory_order_relaxed);
}

static void release(void)
{
    for (uint64_t i = 0; i < OPS; i++)
        atomic_store_explicit(&g_word, i, memory_order_release);
}

static void fetch_add(void)
{
    for (uint64_t i = 0; i < OPS; i++)
        atomic_fetch_add_explicit(&g_word, 1, memory_order_relaxed);
}

static void cas(void)
{
    for (uint64_t i = 0; i < OPS; i++) {
        uint64_t cur = atomic_load_explicit(&g_word, memory_order_relaxed);
        atomic_compare_exchange_strong_explicit(&g_word, &cur, cur + 1, memory_order_relaxed,
                                                memory_order_relaxed);
    }
}

/* The recorder's slot lock, taken and released: a CAS from even to odd, then a release store
 * of the next even value. */
static void lock_cas(void)
{
    atomic_store(&g_word, 0); /* even: free */
    for (uint64_t i = 0; i < OPS; i++) {
        uint64_t s = atomic_load_explicit(&g_word, memory_order_relaxed);
        if (!(s & 1) && atomic_compare_exchange_strong_explicit(&g_word, &s, s + 1,
                                                                memory_order_acquire,
                                                                memory_order_relaxed))
            atomic_store_explicit(&g_word, s + 2, memory_order_release);
    }
}

/* The same lock with a test-and-set of bit 0 (lock bts) in place of the CAS. */
static void lock_bts(void)
{
    atomic_store(&g_word, 0);
    for (uint64_t i = 0; i < OPS; i++) {
        /* Only bit 0 of the result is used: one lock bts, no CAS loop. */
        if (atomic_fetch_or_explicit(&g_word, 1, memory_order_acquire) & 1) continue;
        uint64_t s = atomic_load_explicit(&g_word, memory_order_relaxed);
        atomic_store_explicit(&g_word, s + 1, memory_order_release);
    }
}

static void seq_store(void)
{
    for (uint64_t i = 0; i < OPS; i++)
        atomic_store(&g_word, i);
}

static void fence(void)
{
    for (uint64_t i = 0; i < OPS; i++) {
        atomic_store_explicit(&g_word, i, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
    }
}

int main(int argc, char **argv)
{
    int rounds = bench_rounds("atomic_bench", argc, argv);
    if (rounds < 0) return 2;
    static const struct {
        const char *name;
        void (*fn)(void);
    } kinds[] = {{"store (relaxed)", plain},           {"store (release)", release},
                 {"fetch_add (lock xadd)", fetch_add}, {"CAS (lock cmpxchg)", cas},
                 {"store (seq_cst: xchg)", seq_store}, {"store + seq_cst fence", fence},
                 {"slot lock, CAS + store", lock_cas}, {"slot lock, bts + store", lock_bts}};
    enum { K = sizeof(kinds) / sizeof(kinds[0]) };
    double *t = calloc((size_t)rounds * K, sizeof(double));
    if (!t) return 1;
    for (int r = 0; r < rounds; r++) /* kinds alternate: all see the same load */
        for (int k = 0; k < K; k++) {
            uint64_t t0 = cc__now_ns();
            kinds[k].fn();
            t[k * rounds + r] = (double)(cc__now_ns() - t0) / OPS;
        }
    printf("atomic_bench: ns per operation, uncontended, median (fastest) of %d rounds of %d\n",
           rounds, OPS);
    for (int k = 0; k < K; k++) {
        bench_sort_rounds(t + k * rounds, rounds);
        printf("  %-24s %6.2f (%6.2f)\n", kinds[k].name, t[k * rounds + rounds / 2], t[k * rounds]);
    }
    free(t);
    return 0;
}
