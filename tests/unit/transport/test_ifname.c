/* test_ifname.c - CCOMM_SOCKET_IFNAME in NCCL_SOCKET_IFNAME's syntax: prefixes, =exact, ^exclude.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "transport/ifname.h"

static void test_match(void **state)
{
    (void)state;
    assert_true(cc__ifname_match("eth", "eth0"));
    assert_true(cc__ifname_match("eth", "eth10"));
    assert_false(cc__ifname_match("eth", "ib0"));
    assert_true(cc__ifname_match("ib,eth", "eth1"));
    assert_true(cc__ifname_match("=eth0", "eth0"));
    assert_false(cc__ifname_match("=eth0", "eth01"));
    assert_false(cc__ifname_match("^docker,lo", "docker0"));
    assert_false(cc__ifname_match("^docker,lo", "lo"));
    assert_true(cc__ifname_match("^docker,lo", "eth0"));
    assert_true(cc__ifname_match("^=docker", "docker0")); /* exact: docker0 is not "docker" */
    assert_false(cc__ifname_match("^=docker0", "docker0"));
    assert_true(cc__ifname_match("", "anything"));
    assert_false(cc__ifname_match("eth,,", "lo")); /* empty items match nothing */
}

static void test_pick(void **state)
{
    (void)state;
    char addr[64], ifname[64];
    assert_int_equal(cc__ifname_pick("=lo", addr, sizeof(addr), ifname, sizeof(ifname)), CC_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_string_equal(ifname, "lo");
    assert_int_equal(cc__ifname_pick("lo", addr, sizeof(addr), ifname, sizeof(ifname)), CC_OK);
    assert_string_equal(addr, "127.0.0.1");
    assert_int_equal(cc__ifname_pick("nosuchif", addr, sizeof(addr), ifname, sizeof(ifname)),
                     CC_ERR_NOT_FOUND);
    /* Excluding lo picks another interface, if this machine has one that is up. */
    if (cc__ifname_pick("^lo", addr, sizeof(addr), ifname, sizeof(ifname)) == CC_OK)
        assert_string_not_equal(ifname, "lo");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
