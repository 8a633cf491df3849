/*
 * test_clock.c - op time stamps (cc__stamp_ns, lib/base/clock.c): off until
 * asked, then on the TSC where the host allows it; never going back in a
 * thread; within microseconds of CLOCK_MONOTONIC; a line moved ahead is
 * slewed back without a step back. On a host whose TSC the kernel does not
 * use, the TSC cases say "skipped" and the stamps must be clock_gettime's.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "base/clock.h"

#define TOL_NS 200000ull /* a loaded 2-core host may preempt between the reads */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Stamps for ms milliseconds: each within [before - TOL, after + TOL] of the clock, none
 * below the one before. Returns the largest lead of a stamp over the clock after it. */
static int64_t sample(long ms)
{
    uint64_t end = cc__now_ns() + (uint64_t)ms * 1000000ull, last = 0;
    int64_t lead = INT64_MIN;
    while (cc__now_ns() < end) {
        uint64_t a = cc__now_ns(), s = cc__stamp_ns(), b = cc__now_ns();
        assert_true(s >= last);
        assert_true(s + TOL_NS >= a);
        assert_true(s <= b + TOL_NS);
        if ((int64_t)(s - b) > lead) lead = (int64_t)(s - b);
        last = s;
    }
    return lead;
}

/* CCOMM_CLOCK=monotonic, and before any init: clock_gettime. */
static void test_monotonic_when_not_allowed(void **state)
{
    (void)state;
    assert_string_equal(cc__clock_source(), "monotonic");
    cc__clock_init(0);
    sleep_ms(30);
    sample(5);
    assert_string_equal(cc__clock_source(), "monotonic");
}

static int tsc_on(void)
{
    cc__clock_init(1);
    sleep_ms(30); /* past the calibration window */
    cc__stamp_ns();
    return strcmp(cc__clock_source(), "tsc") == 0;
}

static void test_tsc_line(void **state)
{
    (void)state;
    if (!tsc_on()) {
        printf("skipped: the kernel does not keep time with an invariant TSC here\n");
        skip();
    }
    sample(600); /* across a redraw (every 500 ms) */
}

/* Threads stamping at once: each thread's stamps never go back. */
static void *stamper(void *arg)
{
    long bad = 0;
    uint64_t last = 0;
    for (int i = 0; i < 2000000; i++) {
        uint64_t s = cc__stamp_ns();
        bad += s < last;
        last = s;
    }
    *(long *)arg = bad;
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    if (!tsc_on()) skip();
    pthread_t t[4];
    long bad[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, stamper, &bad[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(bad[i], 0);
    }
}

/* A line 300 us ahead is slewed back (at most 500 ppm, so over 0.6 s) and never steps back. */
static void test_slew_back(void **state)
{
    (void)state;
    if (!tsc_on()) skip();
    uint64_t before = cc__stamp_ns();
    cc__clock_test_shift(300000);
    uint64_t after = cc__stamp_ns();
    assert_true(after >= before + 250000); /* the shift took */
    uint64_t last = after, end = cc__now_ns() + 1300000000ull;
    while (cc__now_ns() < end) {
        uint64_t s = cc__stamp_ns();
        assert_true(s >= last);
        last = s;
    }
    /* Within tolerance of the clock again. */
    int64_t lead = sample(20);
    assert_true(lead < 50000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic_when_not_allowed),
        cmocka_unit_test(test_tsc_line),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_slew_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
