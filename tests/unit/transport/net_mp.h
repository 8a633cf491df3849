/*
 * net_mp.h - the transport tests' harness: run N ranks as forked processes
 * (or as threads) that share an allgather over a MAP_SHARED anonymous
 * mapping with a barrier, below any store. (Forked without exec, unlike
 * tests/common/mp.h's ranks: the mapping must survive into the child.)
 * Children are reaped by tests/common/mp.h's cc_test_reap.
 *
 * A rank function returns 0 on success; forked ranks report by exit status
 * and the parent asserts on it. Inside a rank use MP_CHECK, never cmocka's
 * asserts (they would unwind into the parent's copy of the test runner).
 */
#ifndef CC_TEST_NET_MP_H
#define CC_TEST_NET_MP_H

#include <stdint.h>
#include <stdio.h>

#include "transport/net.h"

typedef int (*mp_rank_fn)(int rank, int size, void *arg);

/* Exit code of a rank that was still running at the timeout (killed). */
#define MP_TIMED_OUT 124

/*
 * Fork n ranks running fn(rank, n, arg); wait at most timeout_s seconds, then
 * SIGKILL the rest. codes[r] = exit status, 128 + signal when killed by one,
 * MP_TIMED_OUT when it ran out of time. Returns the number of ranks whose
 * code is not 0.
 */
int mp_fork(int n, mp_rank_fn fn, void *arg, int timeout_s, int *codes);

/* The same with threads in this process (TSan sees the lock-free code). */
int mp_threads(int n, mp_rank_fn fn, void *arg, int timeout_s, int *codes);

/* A net config for this rank: the shared allgather, a job id per run. */
void mp_config(cc__net_config_t *cfg, int rank, int size, const char *transport);

/* Allgather-based barrier among the ranks (CC_OK or CC_ERR_TIMEOUT). */
cc_status_t mp_barrier(int rank);

/* The world's job id (segment names contain it). */
const char *mp_job(void);

#define MP_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#define MP_CHECK_ST(call, want)                                                                    \
    do {                                                                                           \
        cc_status_t mp_st_ = (call);                                                               \
        if (mp_st_ != (want)) {                                                                    \
            fprintf(stderr, "rank check failed at %s:%d: %s returned %s, expected %s\n", __FILE__, \
                    __LINE__, #call, cc_status_name(mp_st_), cc_status_name(want));                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif /* CC_TEST_NET_MP_H */
