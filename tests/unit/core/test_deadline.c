/*
 * test_deadline.c - an op's deadline is its enqueue time plus its timeout,
 * saturating at "no deadline" (UINT64_MAX) instead of wrapping:
 *  - the clock.h helpers, against 128-bit arithmetic;
 *  - the door, seen from a PRE hook, for timeouts from 1 s to INT64_MAX ms
 *    (INT64_MAX wrapped to a deadline 1 ms in the past, so the op failed at
 *    once with CC_ERR_TIMEOUT and aborted the communicator);
 *  - the waits that add a grace to the deadline (cc_work_wait(-1), a
 *    blocking op queued behind an async one);
 *  - the communicator's own timeout from its config and from CCOMM_TIMEOUT
 *    (seconds; huge values mean no deadline, 0 and negative are refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/clock.h"
#include "mp.h"
#include "engine/op.h"

/* The deadline the door must compute, in exact arithmetic. */
static uint64_t want(uint64_t enq, int64_t ms)
{
    unsigned __int128 d = (unsigned __int128)enq + (unsigned __int128)(uint64_t)ms * 1000000u;
    return d > UINT64_MAX ? UINT64_MAX : (uint64_t)d;
}

static void test_helpers(void **s)
{
    (void)s;
    uint64_t base = 123456789012345ull;
    const int64_t ms[] = {0,
                          1,
                          1000,
                          18446744073709ll - 123456790,
                          18446744073709ll - 123456789,
                          18446744073709ll,
                          18446744073710ll,
                          INT64_MAX / 1000000,
                          INT64_MAX};
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        uint64_t got = cc__deadline_from(base, ms[i]);
        if (got != want(base, ms[i]))
            fail_msg("deadline_from(%llu, %lld) = %llu, want %llu", (unsigned long long)base,
                     (long long)ms[i], (unsigned long long)got,
                     (unsigned long long)want(base, ms[i]));
    }
    assert_true(cc__deadline_from(base, -1) == UINT64_MAX); /* negative: no deadline */
    assert_true(cc__ns_add_sat(UINT64_MAX - 5, 5) == UINT64_MAX);
    assert_true(cc__ns_add_sat(UINT64_MAX - 5, 6) == UINT64_MAX);
    assert_true(cc__ns_add_sat(UINT64_MAX, UINT64_MAX) == UINT64_MAX);
    assert_true(cc__ns_add_sat(7, 5) == 12);
    assert_true(cc__deadline_after_ms(INT64_MAX) == UINT64_MAX);
    uint64_t now = cc__now_ns(), d = cc__deadline_after_ms(1000);
    assert_true(d >= now + 1000000000ull && d < now + 60000000000ull);
}

/* What the PRE hook saw of the last op. */
static _Thread_local uint64_t seen_enq, seen_deadline;
static _Thread_local int64_t seen_timeout;

static cc_status_t grab(const cc_op_info_t *info, void *u)
{
    (void)u;
    seen_enq = info->t_enqueue_ns;
    seen_timeout = info->timeout_ms;
    /* A test of the door's own field: reach the op around the info it hands out. */
    const cc__op_t *op = (const cc__op_t *)(const void *)((const char *)info -
                                                          offsetof(cc__op_t, info));
    seen_deadline = op->deadline_ns;
    return CC_OK;
}

#define SAW(ms)                                                                                    \
    CC_TEST_REQUIRE(seen_deadline == want(seen_enq, ms),                                           \
                    "timeout %lld ms: deadline %llu, want %llu (enqueued at %llu)",                \
                    (long long)(ms), (unsigned long long)seen_deadline,                            \
                    (unsigned long long)want(seen_enq, ms), (unsigned long long)seen_enq)

/* Timeouts up to INT64_MAX on blocking and async ops; rank 1 comes late each time. */
static int forever_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    cc_hook_handle_t h;
    CC_TEST_REQUIRE(cc_hook_add_pre(c, grab, NULL, 0, &h) == CC_OK, "hook");
    uint64_t left_ms = (UINT64_MAX - cc__now_ns()) / 1000000u;
    const int64_t ms[] = {1000, (int64_t)left_ms - 1000000, 18446744073709ll, 18446744073710ll,
                          INT64_MAX};
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        o.timeout_ms = ms[i];
        int32_t v = rank + 1, out = 0;
        if (rank) usleep(20000);
        cc_status_t st = cc_allreduce(c, &v, &out, 1, CC_INT32, CC_SUM, &o, NULL);
        CC_TEST_REQUIRE(st == CC_OK && out == 3, "allreduce, timeout %lld ms: %s", (long long)ms[i],
                        cc_status_name(st));
        SAW(ms[i]);
    }
    /* cc_work_wait(-1) waits for the deadline plus a grace; a blocking op queued behind the
     * async one is waited for the same way. */
    int32_t v = rank + 1, a = 0, b = 0;
    cc_work_t *w = NULL;
    if (rank) usleep(100000);
    CC_TEST_REQUIRE(cc_allreduce(c, &v, &a, 1, CC_INT32, CC_SUM, &o, &w) == CC_OK, "async");
    SAW(INT64_MAX);
    cc_status_t st = cc_allreduce(c, &v, &b, 1, CC_INT32, CC_SUM, &o, NULL);
    CC_TEST_REQUIRE(st == CC_OK && b == 3, "blocking op behind an async one: %s",
                    cc_status_name(st));
    st = cc_work_wait(w, -1);
    CC_TEST_REQUIRE(st == CC_OK && a == 3, "cc_work_wait(-1): %s", cc_status_name(st));
    cc_work_free(w);
    CC_TEST_REQUIRE(cc_comm_get_error(c) == CC_OK, "comm broken: %s",
                    cc_status_name(cc_comm_get_error(c)));
    cc_hook_remove(h);
    CC_TEST_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    return 0;
}

static void test_op_timeouts(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(2, forever_rank, NULL, 60, NULL, NULL), 0);
}

/* The communicator's timeout: from its config (INT64_MAX), or CCOMM_TIMEOUT in seconds. */
static int comm_timeout_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.timeout_ms = INT64_MAX;
    cc_comm_t *c = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, arg ? NULL : &cfg) == CC_OK, "init");
    cc_hook_handle_t h;
    CC_TEST_REQUIRE(cc_hook_add_pre(c, grab, NULL, 0, &h) == CC_OK, "hook");
    if (rank) usleep(20000);
    cc_status_t st = cc_barrier(c, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_OK, "barrier: %s", cc_status_name(st));
    CC_TEST_REQUIRE(seen_timeout == INT64_MAX, "the op's timeout is %lld ms",
                    (long long)seen_timeout);
    SAW(INT64_MAX);
    cc_hook_remove(h);
    CC_TEST_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    return 0;
}

static void test_comm_timeouts(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(2, comm_timeout_rank, NULL, 60, NULL, NULL), 0);
    /* Seconds x 1000 overflowed int64 (undefined; it wrapped to a negative timeout). */
    const char *huge[] = {"CCOMM_TIMEOUT=9223372036854775807", NULL};
    assert_int_equal(cc_test_fork_ranks(2, comm_timeout_rank, "env", 60, huge, NULL), 0);
}

static int refused_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_init(&c, rank, size, addr, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_INVALID_ARG && !c, "init with %s: %s", (const char *)arg,
                    cc_status_name(st));
    return 0;
}

static void test_bad_env_timeout(void **s)
{
    (void)s;
    const char *zero[] = {"CCOMM_TIMEOUT=0", "CCOMM_LOG_LEVEL=NONE", NULL};
    const char *neg[] = {"CCOMM_TIMEOUT=-5", "CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(1, refused_rank, "CCOMM_TIMEOUT=0", 60, zero, NULL), 0);
    assert_int_equal(cc_test_fork_ranks(1, refused_rank, "CCOMM_TIMEOUT=-5", 60, neg, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_op_timeouts),
        cmocka_unit_test(test_comm_timeouts),
        cmocka_unit_test(test_bad_env_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
