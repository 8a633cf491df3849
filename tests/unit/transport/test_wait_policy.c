/*
 * test_wait_policy.c - how a wait with only TCP requests pending chooses
 * between spinning first and sleeping in epoll at once (wait.c): the way
 * whose waits have been shorter, per size class, with the other one tried
 * one wait in 16 so a change of load is followed. Timings are fed in, so
 * the test is exact on any machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "transport.h"

/* How many of the next `waits` picks spin, learning `sleep_ns`/`spin_ns` for each. */
static int spins_of(cc__net_t *net, int cls, int waits, uint64_t sleep_ns, uint64_t spin_ns)
{
    int spins = 0;
    for (int i = 0; i < waits; i++) {
        int way = cc__tcp_wait_pick(net, cls);
        spins += way;
        cc__tcp_wait_learn(net, cls, way, way ? spin_ns : sleep_ns);
    }
    return spins;
}

/* A busy host: spinning makes the waits slower, so nearly every wait sleeps at once. */
static void test_busy_host_sleeps(void **s)
{
    (void)s;
    static cc__net_t net;
    memset(&net, 0, sizeof(net));
    spins_of(&net, 0, 64, 23000, 80000); /* learn both ways */
    assert_int_equal(spins_of(&net, 0, 160, 23000, 80000), 10); /* only the tries: 1 in 16 */
}

/* A quiet host: the spin wins, and only the tries sleep. */
static void test_quiet_host_spins(void **s)
{
    (void)s;
    static cc__net_t net;
    memset(&net, 0, sizeof(net));
    spins_of(&net, 0, 64, 23000, 10000);
    assert_int_equal(spins_of(&net, 0, 160, 23000, 10000), 150);
}

/* The load changes: the choice follows within a few dozen waits. */
static void test_follows_a_change(void **s)
{
    (void)s;
    static cc__net_t net;
    memset(&net, 0, sizeof(net));
    spins_of(&net, 0, 200, 23000, 10000);         /* quiet: spinning */
    spins_of(&net, 0, 400, 23000, 80000);         /* busy from here */
    assert_int_equal(spins_of(&net, 0, 160, 23000, 80000), 10);
    spins_of(&net, 0, 400, 23000, 10000);         /* quiet again */
    assert_int_equal(spins_of(&net, 0, 160, 23000, 10000), 150);
}

/* One stall (a descheduled peer) counts at most 4x the average: it does not flip the choice. */
static void test_one_stall(void **s)
{
    (void)s;
    static cc__net_t net;
    memset(&net, 0, sizeof(net));
    spins_of(&net, 0, 200, 23000, 10000);
    cc__tcp_wait_learn(&net, 0, 1, 1000000000ull); /* a 1 s wait while spinning */
    assert_true(net.tcp_wait_ns[0][1] < net.tcp_wait_ns[0][0]);
}

/* Size classes learn apart: small waits may spin while large ones sleep. */
static void test_classes_apart(void **s)
{
    (void)s;
    static cc__net_t net;
    memset(&net, 0, sizeof(net));
    spins_of(&net, 0, 200, 23000, 10000);
    spins_of(&net, 3, 200, 2000000, 3000000);
    assert_int_equal(spins_of(&net, 0, 160, 23000, 10000), 150);
    assert_int_equal(spins_of(&net, 3, 160, 2000000, 3000000), 10);

    cc__req_t a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    cc__req_t *r[2] = {&a, &b};
    a.len = 8;
    b.len = 4095;
    assert_int_equal(cc__tcp_wait_class(r, 2), 0);
    b.len = 4096;
    assert_int_equal(cc__tcp_wait_class(r, 2), 1);
    a.len = 64u << 10;
    assert_int_equal(cc__tcp_wait_class(r, 2), 2);
    b.len = 1u << 20;
    assert_int_equal(cc__tcp_wait_class(r, 2), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busy_host_sleeps), cmocka_unit_test(test_quiet_host_spins),
        cmocka_unit_test(test_follows_a_change), cmocka_unit_test(test_one_stall),
        cmocka_unit_test(test_classes_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
