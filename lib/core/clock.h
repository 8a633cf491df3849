/* clock.h - monotonic and realtime clocks in nanoseconds (vDSO, no syscall). */
#ifndef CC_CORE_CLOCK_H
#define CC_CORE_CLOCK_H

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

/* Deadline arithmetic that saturates instead of wrapping. */
static inline uint64_t cc__deadline_after_ms(int64_t ms)
{
    uint64_t now = cc__now_ns();
    if (ms < 0) return UINT64_MAX;
    uint64_t d = (uint64_t)ms * 1000000ull;
    return (d / 1000000ull != (uint64_t)ms || now + d < now) ? UINT64_MAX : now + d;
}

#endif /* CC_CORE_CLOCK_H */
