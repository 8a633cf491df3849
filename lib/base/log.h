/*
 * log.h - ccomm's logger.
 *
 *   cc_log_warn(CC_SUBSYS_TCP, "connect to rank %d (%s) failed: %s", peer, addr, strerror(e));
 *
 * Every line carries time, host, pid, rank and communicator. The enabled
 * check is one load and a compare, made before any formatting. Messages are
 * lowercase, name the object and the value, and say the cause.
 * Levels and subsystems come from CCOMM_LOG_LEVEL and CCOMM_LOG_SUBSYS.
 */
#ifndef CC_BASE_LOG_H
#define CC_BASE_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

enum cc__log_level {
    CC_LOG_LEVEL_NONE = 0,
    CC_LOG_LEVEL_ERROR,
    CC_LOG_LEVEL_WARN,
    CC_LOG_LEVEL_INFO,
    CC_LOG_LEVEL_DEBUG,
    CC_LOG_LEVEL_TRACE
};

#define CC__SUBSYS_MAP(X)                                                                          \
    X(CORE) X(INIT) X(BOOTSTRAP) X(NET) X(SHM) X(TCP) X(COLL) X(HOOKS) X(RECORDER) X(CLOG)        \
        X(WATCHDOG) X(LTTNG) X(CUDA) X(NCCL) X(TOOLS)

enum cc__subsys_bit {
#define CC__SUBSYS_BIT(name) CC__SUBSYS_BIT_##name,
    CC__SUBSYS_MAP(CC__SUBSYS_BIT)
#undef CC__SUBSYS_BIT
};
#define CC__SUBSYS_MASKDEF(name) CC_SUBSYS_##name = 1u << CC__SUBSYS_BIT_##name,
enum cc__subsys { CC__SUBSYS_MAP(CC__SUBSYS_MASKDEF) CC_SUBSYS_ALL = 0xffffffffu };
#undef CC__SUBSYS_MASKDEF

extern _Atomic int cc__log_level;     /* current level, set from CCOMM_LOG_LEVEL */
extern _Atomic uint32_t cc__log_mask; /* enabled subsystems */

/* Relaxed loads: a plain load on x86, and no data race when init runs beside logging threads. */
#define cc__log_on(lvl, sub)                                                                       \
    ((lvl) <= atomic_load_explicit(&cc__log_level, memory_order_relaxed) &&                        \
     (atomic_load_explicit(&cc__log_mask, memory_order_relaxed) & (uint32_t)(sub)))

void cc__log_write(int level, uint32_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with a va_list (the plugins' log shim forwards through it). */
void cc__log_vwrite(int level, uint32_t subsys, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Counts every error line, logged or filtered (tests assert it stays 0). */
void cc__log_count_error(void);
uint64_t cc__log_error_count(void);

#define CC__LOG(lvl, sub, ...)                                                                     \
    do {                                                                                           \
        if (cc__log_on(lvl, sub)) cc__log_write(lvl, sub, __VA_ARGS__);                            \
    } while (0)

/* An error: counted, kept as the calling thread's last error (cc_last_error, even when the
 * level hides error lines), and logged when the level lets it through. Off the op path. */
void cc__log_error(uint32_t subsys, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cc__log_verror(uint32_t subsys, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
#define cc_log_error(sub, ...) cc__log_error(sub, __VA_ARGS__)
#define cc_log_warn(sub, ...) CC__LOG(CC_LOG_LEVEL_WARN, sub, __VA_ARGS__)
#define cc_log_info(sub, ...) CC__LOG(CC_LOG_LEVEL_INFO, sub, __VA_ARGS__)
#define cc_log_debug(sub, ...) CC__LOG(CC_LOG_LEVEL_DEBUG, sub, __VA_ARGS__)
#define cc_log_trace(sub, ...) CC__LOG(CC_LOG_LEVEL_TRACE, sub, __VA_ARGS__)

/* Read the level, mask and file from the configuration (called at init; safe to repeat). */
void cc__log_init(void);
/* Context printed on every line: the process's world rank (-1 = unknown). */
void cc__log_set_rank(int rank);
/* The communicator the calling thread works for (borrowed string; NULL = none). */
void cc__log_set_comm(const char *name);
/* Async-signal-safe: write(2) `msg` with the line prefix, no allocation, no locks. */
void cc__log_signal_safe(const char *msg);

/* Propagate an error, leaving a trail at debug level. */
#define CC_CHECK(call)                                                                             \
    do {                                                                                           \
        cc_status_t cc__st = (call);                                                               \
        if (cc__st < 0) {                                                                          \
            cc_log_debug(CC_SUBSYS_CORE, "%s:%d: %s -> %s", __FILE__, __LINE__, #call,              \
                         cc_status_name(cc__st));                                                  \
            return cc__st;                                                                         \
        }                                                                                          \
    } while (0)

/* The same, jumping to a cleanup label with the status in `var`. */
#define CC_CHECK_GOTO(call, var, label)                                                            \
    do {                                                                                           \
        (var) = (call);                                                                            \
        if ((var) < 0) {                                                                           \
            cc_log_debug(CC_SUBSYS_CORE, "%s:%d: %s -> %s", __FILE__, __LINE__, #call,              \
                         cc_status_name(var));                                                     \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#endif /* CC_BASE_LOG_H */
