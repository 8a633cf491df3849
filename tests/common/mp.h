/*
 * mp.h - multi-rank test harness, two tiers as in Gloo's tests:
 *  - cc_test_thread_ranks: ranks as threads of this process (fast logic tests);
 *  - cc_test_fork_ranks: ranks as separate processes over real shm and TCP,
 *    each reporting by exit status, with a timeout after which every child
 *    is killed and the test fails.
 * The parent hosts a store with a job key for each run.
 *
 * A forked rank execs the test binary again at once (fork + exec, nothing
 * in between), so it starts as a fresh process: no threads, locks or ccomm
 * state inherited from the parent (its store thread, services of solo
 * communicators made by earlier tests, a sanitizer's allocator lock). A
 * constructor in mp.c recognises the child and runs the rank function,
 * found by its offset from a symbol of the same binary. So for forked ranks
 * `arg` must be NULL or a NUL-terminated string (the child gets a copy).
 */
#ifndef CC_TEST_MP_H
#define CC_TEST_MP_H

#include <sys/types.h>

#include "ccomm/ccomm.h"

typedef int (*cc_test_rank_fn)(int rank, int size, const char *store_addr, void *arg);

/* Outcome of one child. */
typedef struct cc_test_child {
    int exited;    /* 1: exited with `code`; 0: killed by `signo` */
    int code;
    int signo;
    int timed_out; /* still running at the deadline, so killed (signo SIGKILL) */
} cc_test_child_t;

/*
 * Wait for the n children pids (entries become 0 as they are reaped) until
 * timeout_s seconds have passed, then SIGKILL the rest. out[r] receives
 * each one's outcome; a failed one is described on stderr. Returns the
 * number that did not exit 0.
 */
int cc_test_reap(pid_t *pids, int n, int timeout_s, cc_test_child_t *out);

/*
 * Fork n ranks running fn; wait up to timeout_s seconds. Returns the number
 * of ranks that did not exit 0 (a timeout counts every rank still running,
 * which are killed). `out` (may be NULL) receives each child's outcome.
 * `env` (may be NULL) is a NULL-terminated list of "NAME=value" set in the
 * children before ccomm reads its configuration.
 */
int cc_test_fork_ranks(int n, cc_test_rank_fn fn, void *arg, int timeout_s,
                       const char *const *env, cc_test_child_t *out);

/* Run n ranks as threads; returns the number of ranks whose fn returned non-zero. */
int cc_test_thread_ranks(int n, cc_test_rank_fn fn, void *arg);

/* In a rank: fail loudly (message + exit code) unless cond holds. */
#define CC_TEST_REQUIRE(cond, ...)                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: requirement failed: %s: ", __FILE__, __LINE__, #cond);        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif /* CC_TEST_MP_H */
