/* clock.h - monotonic and realtime clocks in nanoseconds (vDSO, no syscall). */
#ifndef CC_BASE_CLOCK_H
#define CC_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t cc__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cc__realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Deadline arithmetic that saturates instead of wrapping: UINT64_MAX is "no
 * deadline" (the monotonic clock reaches it after 584 years of uptime), so a
 * timeout too large to add, INT64_MAX ms in particular, means forever.
 */
static inline uint64_t cc__ns_add_sat(uint64_t a, uint64_t b)
{
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* `ms` milliseconds after `base_ns`; a negative ms is no deadline too. */
static inline uint64_t cc__deadline_from(uint64_t base_ns, int64_t ms)
{
    uint64_t d;
    if (ms < 0 || __builtin_mul_overflow((uint64_t)ms, 1000000ull, &d)) return UINT64_MAX;
    return cc__ns_add_sat(base_ns, d);
}

static inline uint64_t cc__deadline_after_ms(int64_t ms)
{
    return cc__deadline_from(cc__now_ns(), ms);
}

/*
 * The pause of every spin loop (the transport's waits, the recorder's slot
 * locks): tells the CPU this is a spin, so a sibling hyperthread gets the
 * core and leaving the loop does not cost a pipeline flush.
 */
static inline void cc__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif /* CC_BASE_CLOCK_H */
