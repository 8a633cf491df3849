/*
 * clock.c - op time stamps from the TSC (cc__stamp_ns, base/clock.h).
 *
 * clock_gettime(CLOCK_MONOTONIC) costs 27-60 ns through the vDSO on the
 * virtual machines we run on, and the door stamps every op; the TSC is read
 * in 11-23 ns. Where the TSC is invariant and the kernel itself keeps time
 * with it (tsc_trusted below), a stamp is a line through the TSC:
 *
 *     t = t0 + ((tsc - c0) * mult) >> 32          (mult: ns per cycle, 32.32)
 *
 * The line is drawn by calibration against CLOCK_MONOTONIC and redrawn every
 * ANCHOR_NS by whichever thread first reads past its end: a new line starts
 * where the old one is at that moment (so stamps never go back) and aims at
 * CLOCK_MONOTONIC by the next redraw, its slope corrected by at most
 * MAX_SLEW (so stamps stay within microseconds of CLOCK_MONOTONIC: the
 * recorder's and clog's times are compared with other processes'). A line
 * behind by more than STEP_NS jumps forward instead. Readers take the line
 * under a seqlock; nothing here locks, allocates or makes a system call
 * (clock_gettime goes through the vDSO where the clocksource is tsc).
 * Until the calibration is done, and where the TSC cannot be trusted,
 * cc__stamp_ns is cc__now_ns.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

#define CALIBRATE_NS 20000000ull  /* the first line: two readings this far apart */
#define ANCHOR_NS    500000000ull /* then a new line every half second */
#define STEP_NS      1000000ll    /* a line this far behind jumps instead of slewing */
#define MAX_SLEW     2000         /* slope corrections of at most 1/2000 (500 ppm) */
#define PAIR_MAX_NS  20000ull     /* a reading taken across a preemption is retaken */

enum { OFF, CALIBRATING, TSC };

static _Atomic int g_mode = OFF;
static _Atomic int g_busy;       /* one thread at a time draws a line */
static _Atomic uint64_t g_seq;   /* the line's seqlock: odd while it is redrawn */
static _Atomic uint64_t g_c0, g_t0, g_mult, g_next_c;
/* The first reading: every line's slope is measured from it. Written once, before the
 * mode leaves OFF. */
static uint64_t g_first_c, g_first_t;

/*
 * Not ordered (no lfence, unlike the vDSO's read): 12 ns instead of 27 here
 * (bench/clock_bench). The read may run a few dozen instructions ahead of the
 * loads before it, so a stamp may precede by some nanoseconds the event it
 * marks, and two threads' stamps of events that close together may come out
 * in either order; stamps of one thread do not go back. Consumers of
 * durations clamp at 0 (the JSON dump, clog, ccdump).
 */
static inline uint64_t tsc(void)
{
#if HAVE_TSC
    return __rdtsc();
#else
    return 0;
#endif
}

#if HAVE_TSC
/* TSC cycles of the cheapest of 16 clock_gettime calls, through the vDSO or the system
 * call (use_syscall); the two are only compared with each other. */
static uint64_t cheapest(int use_syscall)
{
    uint64_t best = UINT64_MAX;
    struct timespec ts;
    for (int i = 0; i < 16; i++) {
        uint64_t a = tsc();
        if (use_syscall)
            syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
        else
            clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t b = tsc();
        if (b > a && b - a < best) best = b - a;
    }
    return best;
}
#endif

/*
 * The TSC runs at a constant rate in every state (CPUID 0x80000007 EDX bit 8)
 * and the kernel keeps time with it: its clocksource is tsc (it checked that
 * the cores agree), or kvm-clock read in user space. kvm-clock is the TSC
 * scaled by the host's figures; the kernel lets the vDSO read it only where
 * the host sets PVCLOCK_TSC_STABLE_BIT, its promise that every vCPU's TSC
 * agrees, and otherwise clock_gettime enters the kernel. So kvm-clock counts
 * when clock_gettime costs under a quarter of the system call (here 42 cycles
 * against 2250).
 */
static int tsc_trusted(void)
{
#if HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8))) return 0;
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f) return 0;
    char src[32] = "";
    if (!fgets(src, sizeof(src), f)) src[0] = '\0';
    fclose(f);
    src[strcspn(src, "\n")] = '\0';
    if (strcmp(src, "tsc") == 0) return 1;
    if (strcmp(src, "kvm-clock") != 0) return 0;
    return cheapest(0) * 4 < cheapest(1);
#else
    return 0;
#endif
}

/* A (tsc, CLOCK_MONOTONIC) pair: the TSC read on both sides, the midpoint kept;
 * *width: cycles between the two reads. Retaken when a preemption widened it
 * past PAIR_MAX_NS at `mult` (0: not known yet, any width). */
static int take_pair(uint64_t *c, uint64_t *t, uint64_t *width, uint64_t mult)
{
    for (int i = 0; i < 3; i++) {
        uint64_t c1 = tsc();
        uint64_t m = cc__now_ns();
        uint64_t c2 = tsc();
        if (c2 < c1) continue;
        if (mult && (uint64_t)(((unsigned __int128)(c2 - c1) * mult) >> 32) > PAIR_MAX_NS) continue;
        *c = c1 + (c2 - c1) / 2;
        *t = m;
        *width = c2 - c1;
        return 1;
    }
    return 0;
}

static inline uint64_t cycles_ns(uint64_t cycles, uint64_t mult)
{
    return (uint64_t)(((unsigned __int128)cycles * mult) >> 32);
}

static inline uint64_t on_line(uint64_t c, uint64_t c0, uint64_t t0, uint64_t mult)
{
    /* A reading before c0 (another core's TSC a few cycles behind) is c0's time. */
    return t0 + (c > c0 ? cycles_ns(c - c0, mult) : 0);
}

/* Publish a line, redrawn once the TSC passes next_c (the caller holds g_busy). */
static void publish(uint64_t c0, uint64_t t0, uint64_t mult, uint64_t next_c)
{
    uint64_t s = atomic_load_explicit(&g_seq, memory_order_relaxed);
    atomic_store_explicit(&g_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&g_c0, c0, memory_order_relaxed);
    atomic_store_explicit(&g_t0, t0, memory_order_relaxed);
    atomic_store_explicit(&g_mult, mult, memory_order_relaxed);
    atomic_store_explicit(&g_next_c, next_c, memory_order_relaxed);
    atomic_store_explicit(&g_seq, s + 2, memory_order_release);
}

/* Cycles in ns at mult (ns per cycle, 32.32). */
static inline uint64_t ns_cycles(uint64_t ns, uint64_t mult)
{
    return (uint64_t)(((unsigned __int128)ns << 32) / mult);
}

/* The slope from the first reading to (c, t): ns per cycle, 32.32; 0 if none. */
static uint64_t slope_to(uint64_t c, uint64_t t)
{
    if (c <= g_first_c || t <= g_first_t) return 0;
    return (uint64_t)(((unsigned __int128)(t - g_first_t) << 32) / (c - g_first_c));
}

/* The first line, CALIBRATE_NS after the first reading. 1 when drawn. */
static int calibrate(void)
{
    uint64_t c, t, w;
    if (!take_pair(&c, &t, &w, 0)) return 0;
    uint64_t mult = slope_to(c, t);
    if (!mult || cycles_ns(w, mult) > PAIR_MAX_NS) return 0;
    /* Ahead of CLOCK_MONOTONIC by the pair's width: no stamp after this is below
     * one another thread read from the clock just before (the slew takes it back). */
    publish(c, t + cycles_ns(w, mult), mult, c + ns_cycles(ANCHOR_NS, mult));
    return 1;
}

/* A new line from where the current one is at the TSC's now, aimed at CLOCK_MONOTONIC. */
static void reanchor(uint64_t c0, uint64_t t0, uint64_t mult)
{
    uint64_t c, t, w;
    if (!take_pair(&c, &t, &w, mult)) {
        /* Preempted three times: keep the line, try again in a millisecond. */
        publish(c0, t0, mult, tsc() + ns_cycles(1000000, mult));
        return;
    }
    uint64_t v = on_line(c, c0, t0, mult);
    uint64_t f = slope_to(c, t);
    if (!f) f = mult;
    uint64_t period = ns_cycles(ANCHOR_NS, f);
    int64_t err = (int64_t)(t - v); /* > 0: the line is behind */
    if (err > STEP_NS) {            /* far behind (a stopped VM, a clock step): jump */
        publish(c, t, f, c + period);
        return;
    }
    /* Gain err over the next period: slope f + err / period, clamped. */
    int64_t corr = (int64_t)((__int128)err * ((__int128)1 << 32) / (__int128)period);
    int64_t lim = (int64_t)(f / MAX_SLEW);
    if (corr > lim) corr = lim;
    if (corr < -lim) corr = -lim;
    publish(c, v, (uint64_t)((int64_t)f + corr), c + period);
}

void cc__clock_init(int allow_tsc)
{
    int expect = OFF;
    /* Once: a second call (another world in the same process) keeps the first reading. */
    if (!allow_tsc || atomic_load(&g_mode) != OFF || !tsc_trusted()) return;
    uint64_t c, t, w;
    if (!take_pair(&c, &t, &w, 0)) return;
    g_first_c = c;
    g_first_t = t;
    /* Published by the exchange: a thread that sees CALIBRATING sees the first reading. */
    atomic_compare_exchange_strong(&g_mode, &expect, CALIBRATING);
}

const char *cc__clock_source(void)
{
    return atomic_load_explicit(&g_mode, memory_order_acquire) == TSC ? "tsc" : "monotonic";
}

/* Not inline: the calibration and the redraws are the rare part. */
static uint64_t stamp_slow(int mode, uint64_t c, uint64_t c0, uint64_t t0, uint64_t mult)
{
    if (mode == CALIBRATING) {
        uint64_t m = cc__now_ns();
        if (m - g_first_t < CALIBRATE_NS ||
            atomic_exchange_explicit(&g_busy, 1, memory_order_acquire))
            return m;
        if (calibrate()) atomic_store_explicit(&g_mode, TSC, memory_order_release);
        atomic_store_explicit(&g_busy, 0, memory_order_release);
        return m;
    }
    /* Another thread redraws the line: this stamp is on the current one. */
    if (!atomic_exchange_explicit(&g_busy, 1, memory_order_acquire)) {
        if (c >= atomic_load_explicit(&g_next_c, memory_order_relaxed)) reanchor(c0, t0, mult);
        atomic_store_explicit(&g_busy, 0, memory_order_release);
    }
    return on_line(c, c0, t0, mult);
}

uint64_t cc__stamp_ns(void)
{
    int mode = atomic_load_explicit(&g_mode, memory_order_acquire);
    if (__builtin_expect(mode != TSC, 0))
        return mode == OFF ? cc__now_ns() : stamp_slow(mode, 0, 0, 0, 0);
    uint64_t s, c0, t0, mult, next;
    do {
        s = atomic_load_explicit(&g_seq, memory_order_acquire);
        c0 = atomic_load_explicit(&g_c0, memory_order_relaxed);
        t0 = atomic_load_explicit(&g_t0, memory_order_relaxed);
        mult = atomic_load_explicit(&g_mult, memory_order_relaxed);
        next = atomic_load_explicit(&g_next_c, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
    } while ((s & 1) || s != atomic_load_explicit(&g_seq, memory_order_relaxed));
    uint64_t c = tsc();
    if (__builtin_expect(c >= next, 0)) return stamp_slow(TSC, c, c0, t0, mult);
    return on_line(c, c0, t0, mult);
}

void cc__clock_test_shift(int64_t ns)
{
    while (atomic_exchange_explicit(&g_busy, 1, memory_order_acquire))
        cc__cpu_relax();
    if (atomic_load(&g_mode) == TSC) {
        uint64_t c0 = atomic_load(&g_c0), t0 = atomic_load(&g_t0), mult = atomic_load(&g_mult);
        uint64_t c = tsc();
        /* Shifted at c, and due for a redraw at once. */
        publish(c, on_line(c, c0, t0, mult) + (uint64_t)ns, mult, c);
    }
    atomic_store_explicit(&g_busy, 0, memory_order_release);
}
