/*
 * test_peer.c - host identity (network namespaces make separate "hosts") and
 * liveness through pidfd, which sees a zombie that kill(pid, 0) does not.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/clock.h"
#include "transport/transport.h"

static void test_same_host(void **s)
{
    (void)s;
    cc__peer_info_t a, b;
    memset(&a, 0, sizeof(a));
    assert_int_equal(cc__peer_identity(&a), CC_OK);
    assert_true(a.host[0] && a.boot_id[0] && a.netns && a.pidns);
    assert_int_equal(a.pid, getpid());
    b = a;
    assert_true(cc__peer_same_host(&a, &b));
    b.netns++;
    assert_false(cc__peer_same_host(&a, &b));
    b = a;
    b.boot_id[0] ^= 1;
    assert_false(cc__peer_same_host(&a, &b));
    b = a;
    b.host[0] ^= 1;
    assert_false(cc__peer_same_host(&a, &b));
    b = a;
    b.pidns++;
    assert_false(cc__peer_same_host(&a, &b));
    a.netns = b.netns = 0; /* unreadable namespaces never match */
    assert_false(cc__peer_same_host(&a, &b));
}

/* A process in its own network namespace is another host (exit 0), or 77 without privilege. */
static void test_netns_is_another_host(void **s)
{
    (void)s;
    pid_t pid = fork();
    if (pid == 0) {
        cc__peer_info_t a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        cc__peer_identity(&a);
        if (unshare(CLONE_NEWNET) != 0) _exit(77);
        cc__peer_identity(&b);
        _exit(cc__peer_same_host(&a, &b) || a.netns == b.netns ? 1 : 0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) skip();
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_pidfd_liveness(void **s)
{
    (void)s;
    pid_t pid = fork();
    if (pid == 0) {
        pause();
        _exit(0);
    }
    int fd = cc__peer_pidfd(pid);
    assert_true(fd >= 0);
    assert_false(cc__peer_dead(fd, pid));
    kill(pid, SIGKILL);
    uint64_t t0 = cc__now_ns();
    while (!cc__peer_dead(fd, pid) && cc__now_ns() - t0 < 5000000000ull)
        usleep(1000);
    /* Not reaped yet: a zombie, still "alive" for kill(pid, 0), dead for the pidfd. */
    assert_true(cc__peer_dead(fd, pid));
    assert_int_equal(kill(pid, 0), 0);
    close(fd);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    assert_true(cc__peer_dead(-1, pid)); /* the fallback once reaped */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_host),
        cmocka_unit_test(test_netns_is_another_host),
        cmocka_unit_test(test_pidfd_liveness),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
