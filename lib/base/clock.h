/* clock.h - monotonic and realtime clocks in nanoseconds (vDSO or TSC, no syscall). */
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

/*
 * Op time stamps (the door's enqueue, start and end): CLOCK_MONOTONIC's
 * nanoseconds, read from the TSC where it is invariant and the kernel keeps
 * time with it (clock.c: a line through the TSC, redrawn every half second,
 * within microseconds of CLOCK_MONOTONIC and never going back), else
 * cc__now_ns. A stamp costs a TSC read and a multiply instead of the vDSO's
 * clock_gettime. Any thread; not in signal handlers (use cc__now_ns there).
 */
uint64_t cc__stamp_ns(void);

/* Once per process, before ops are stamped (the first communicator's
 * services): allow_tsc 0 (CCOMM_CLOCK=monotonic) keeps clock_gettime. The
 * TSC line is drawn 20 ms later; stamps come from clock_gettime until then. */
void cc__clock_init(int allow_tsc);

/* What stamps come from: "tsc" or "monotonic". */
const char *cc__clock_source(void);

/* Tests: move the TSC line by ns (it is redrawn at the next stamp). */
void cc__clock_test_shift(int64_t ns);

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
