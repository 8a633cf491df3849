/*
 * test_chain.c - hook chains: order, veto, removal by handle, idempotent
 * removal, refusal from inside a hook, and the guarantee that matters under
 * concurrency: once cc__hook_remove returns, the hook never runs again, even
 * with four threads running the chain and four adding and removing.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hooks/chain.h"

static cc__chain_set_t set;
static cc__hook_tokens_t tok; /* the ops' token record: these plain hooks leave it empty */
static char trace[64];
static size_t ntrace;

static void mark(const cc_op_info_t *op, void *user)
{
    (void)op;
    if (ntrace < sizeof(trace) - 1) trace[ntrace++] = *(const char *)user;
}

static cc_status_t veto(const cc_op_info_t *op, void *user)
{
    (void)op;
    mark(op, user);
    return CC_ERR_INVALID_USAGE;
}

static cc_status_t pass(const cc_op_info_t *op, void *user)
{
    mark(op, user);
    return CC_OK;
}

static void reset(void)
{
    memset(trace, 0, sizeof(trace));
    ntrace = 0;
}

static void test_order_and_remove(void **state)
{
    (void)state;
    cc_op_info_t op = {0};
    cc_hook_handle_t g, a, b;
    reset();
    assert_int_equal(cc__hook_add(&cc__global_hooks, CC__HOOK_POST, (void (*)(void))mark, "g", 0,
                                  NULL, &g), CC_OK);
    assert_int_equal(cc__hook_add(&set, CC__HOOK_POST, (void (*)(void))mark, "a", 0, &set, &a),
                     CC_OK);
    assert_int_equal(cc__hook_add(&set, CC__HOOK_POST, (void (*)(void))mark, "b", 0, &set, &b),
                     CC_OK);
    cc__hooks_run_op(CC__HOOK_POST, &set, &op, &tok);
    assert_string_equal(trace, "gab"); /* global first, then per-comm, in order added */
    assert_int_equal(cc__hook_remove(a), CC_OK);
    assert_int_equal(cc__hook_remove(a), CC_ERR_NOT_FOUND); /* idempotent */
    assert_int_equal(cc__hook_remove(987654321), CC_ERR_NOT_FOUND);
    reset();
    cc__hooks_run_op(CC__HOOK_POST, &set, &op, &tok);
    assert_string_equal(trace, "gb");
    reset();
    cc__hooks_run_op(CC__HOOK_START, &set, &op, &tok); /* other kinds are separate chains */
    assert_string_equal(trace, "");
    assert_int_equal(cc__hook_remove(g), CC_OK);
    cc__hooks_drop_owner(&set, &set);
    assert_int_equal(cc__hook_remove(b), CC_ERR_NOT_FOUND); /* dropped with its owner */
    reset();
    cc__hooks_run_op(CC__HOOK_POST, &set, &op, &tok);
    assert_string_equal(trace, "");
    assert_false(cc__hooks_any(&set, CC__HOOK_POST));
}

static void test_veto_stops_chain(void **state)
{
    (void)state;
    cc_op_info_t op = {0};
    cc_hook_handle_t h1, h2, h3;
    reset();
    assert_int_equal(cc__hook_add(&set, CC__HOOK_PRE, (void (*)(void))pass, "1", 0, &set, &h1), 0);
    assert_int_equal(cc__hook_add(&set, CC__HOOK_PRE, (void (*)(void))veto, "2", 0, &set, &h2), 0);
    assert_int_equal(cc__hook_add(&set, CC__HOOK_PRE, (void (*)(void))pass, "3", 0, &set, &h3), 0);
    assert_int_equal(cc__hooks_run_pre(&set, &op, &tok), CC_ERR_INVALID_USAGE);
    assert_string_equal(trace, "12");
    cc__hooks_drop_owner(&set, &set);
    assert_int_equal(cc__hooks_run_pre(&set, &op, &tok), CC_OK);
}

static int in_hook_seen;
static void probe(const cc_op_info_t *op, void *user)
{
    (void)op;
    (void)user;
    in_hook_seen = cc__hooks_in_hook();
}

static void test_in_hook_flag(void **state)
{
    (void)state;
    cc_op_info_t op = {0};
    cc_hook_handle_t h;
    assert_int_equal(cc__hook_add(&set, CC__HOOK_WAIT, (void (*)(void))probe, NULL, 0, &set, &h), 0);
    assert_false(cc__hooks_in_hook());
    cc__hooks_run_op(CC__HOOK_WAIT, &set, &op, &tok);
    assert_true(in_hook_seen);
    assert_false(cc__hooks_in_hook());
    cc__hooks_drop_owner(&set, &set);
}

/* Signal context runs only the hooks that declared themselves signal-safe. */
static void count_abort(const cc_abort_info_t *info, void *user)
{
    (void)info;
    (*(int *)user)++;
}

static void test_abort_signal_safe(void **state)
{
    (void)state;
    int safe = 0, unsafe = 0;
    cc_hook_handle_t h1, h2;
    cc_abort_info_t info = {0};
    assert_int_equal(cc__hook_add(&set, CC__HOOK_ABORT, (void (*)(void))count_abort, &safe,
                                  CC_HOOK_SIGNAL_SAFE, &set, &h1), 0);
    assert_int_equal(cc__hook_add(&set, CC__HOOK_ABORT, (void (*)(void))count_abort, &unsafe, 0,
                                  &set, &h2), 0);
    cc__hooks_run_abort(&set, &info, 1);
    assert_int_equal(safe, 1);
    assert_int_equal(unsafe, 0);
    cc__hooks_run_abort(&set, &info, 0);
    assert_int_equal(safe, 2);
    assert_int_equal(unsafe, 1);
    cc__hooks_drop_owner(&set, &set);
}

/* --- concurrency: 4 runner threads, 4 threads adding and removing --- */

struct victim {
    _Atomic int alive; /* 1 until removed; a call after removal is the bug we look for */
    _Atomic long calls;
};
static _Atomic int stop;
static _Atomic long violations;

static void touch(const cc_op_info_t *op, void *user)
{
    (void)op;
    struct victim *v = user;
    if (!atomic_load(&v->alive)) atomic_fetch_add(&violations, 1);
    atomic_fetch_add(&v->calls, 1);
}

static void *runner(void *arg)
{
    (void)arg;
    cc_op_info_t op = {0};
    while (!atomic_load(&stop)) cc__hooks_run_op(CC__HOOK_POST, &set, &op, &tok);
    return NULL;
}

static void *churner(void *arg)
{
    long *total = arg;
    for (int i = 0; i < 100; i++) {
        struct victim *v = calloc(1, sizeof(*v));
        atomic_store(&v->alive, 1);
        cc_hook_handle_t h;
        cc__chain_set_t *where = (i & 1) ? &set : &cc__global_hooks;
        if (cc__hook_add(where, CC__HOOK_POST, (void (*)(void))touch, v, 0,
                         where == &set ? (void *)&set : NULL, &h) != CC_OK)
            abort();
        /* Let the runners call it at least once (bounded: a starved runner only weakens the test). */
        for (int spin = 0; spin < 20000 && atomic_load(&v->calls) == 0; spin++) sched_yield();
        if (cc__hook_remove(h) != CC_OK) abort();
        atomic_store(&v->alive, 0); /* after remove returned: no call may follow */
        for (volatile int spin = 0; spin < 2000; spin++) {
        }
        *total += atomic_load(&v->calls);
        free(v);
    }
    return NULL;
}

static void test_concurrent_add_remove(void **state)
{
    (void)state;
    pthread_t r[4], c[4];
    long totals[4] = {0};
    atomic_store(&stop, 0);
    for (int i = 0; i < 4; i++) pthread_create(&r[i], NULL, runner, NULL);
    for (int i = 0; i < 4; i++) pthread_create(&c[i], NULL, churner, &totals[i]);
    for (int i = 0; i < 4; i++) pthread_join(c[i], NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(r[i], NULL);
    assert_int_equal(atomic_load(&violations), 0);
    long sum = totals[0] + totals[1] + totals[2] + totals[3];
    assert_true(sum > 0); /* the hooks really ran while being added and removed */
    assert_null(atomic_load(&set.chain[CC__HOOK_POST].snap));
    assert_null(atomic_load(&cc__global_hooks.chain[CC__HOOK_POST].snap));
}

/* --- reader records: threads that exit, and a fork while another thread is in a hook --- */

static void noop(const cc_op_info_t *op, void *user)
{
    (void)op;
    (void)user;
}

static void *run_once(void *arg)
{
    (void)arg;
    cc_op_info_t op = {0};
    cc__hooks_run_op(CC__HOOK_POST, &set, &op, &tok);
    return NULL;
}

/* Threads that ran hooks and exited leave no record a writer would wait on or touch. */
static void test_reader_threads_exit(void **state)
{
    (void)state;
    cc_hook_handle_t h;
    assert_int_equal(cc__hook_add(&set, CC__HOOK_POST, (void (*)(void))noop, NULL, 0, &set, &h),
                     CC_OK);
    for (int round = 0; round < 20; round++) {
        pthread_t t[8];
        for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, run_once, NULL);
        for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    }
    alarm(20); /* a writer waiting on a dead thread's record is a hang: SIGALRM fails the test */
    assert_int_equal(cc__hook_remove(h), CC_OK);
    alarm(0);
}

static _Atomic int held, release_hold;

static void hold(const cc_op_info_t *op, void *user)
{
    (void)op;
    (void)user;
    atomic_store(&held, 1);
    while (!atomic_load(&release_hold)) sched_yield();
}

static void *run_hold(void *arg)
{
    (void)arg;
    cc_op_info_t op = {0};
    cc__hooks_run_op(CC__HOOK_START, &set, &op, &tok);
    return NULL;
}

/* A child forked while another thread sits in a hook has no such thread: its writers must
 * not wait for it (the parent's records are dropped in the child). */
static void test_fork_with_reader_inside(void **state)
{
    (void)state;
    cc_hook_handle_t h;
    assert_int_equal(cc__hook_add(&set, CC__HOOK_START, (void (*)(void))hold, NULL, 0, &set, &h),
                     CC_OK);
    atomic_store(&held, 0);
    atomic_store(&release_hold, 0);
    pthread_t t;
    pthread_create(&t, NULL, run_hold, NULL);
    while (!atomic_load(&held)) sched_yield();
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        cc_hook_handle_t h2;
        /* Adding publishes a new snapshot and retires the old one: a grace period. */
        int ok = cc__hook_add(&set, CC__HOOK_START, (void (*)(void))noop, NULL, 0, &set, &h2) ==
                     CC_OK &&
                 cc__hook_remove(h2) == CC_OK;
        _exit(ok ? 0 : 1);
    }
    assert_true(pid > 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    atomic_store(&release_hold, 1);
    pthread_join(t, NULL);
    assert_true(WIFEXITED(status)); /* killed by SIGALRM: the child's writer hung */
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(cc__hook_remove(h), CC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_remove),
        cmocka_unit_test(test_veto_stops_chain),
        cmocka_unit_test(test_in_hook_flag),
        cmocka_unit_test(test_abort_signal_safe),
        cmocka_unit_test(test_concurrent_add_remove),
        cmocka_unit_test(test_reader_threads_exit),
        cmocka_unit_test(test_fork_with_reader_inside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
