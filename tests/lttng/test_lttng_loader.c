/*
 * test_lttng_loader.c - the core's side of tracing (lib/base/lttng.c, .h):
 * off unless asked; a missing or wrong provider leaves tracing off with a
 * debug line saying why; the real provider attaches once, subscribes to
 * every chain, detaches; found next to the binary by bare name and when
 * LD_PRELOADed; the emit macros call the plugin only while an event is
 * recorded and evaluate their arguments only then.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hooks/chain.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lttng.h"

static char g_self[PATH_MAX];
static char g_tmp[] = "/tmp/ccomm-lttng-loader-XXXXXX";

/* Point the loader at a configuration and start from a clean state. */
static void configure(const char *lttng, const char *provider)
{
    setenv("CCOMM_LTTNG", lttng, 1);
    if (provider)
        setenv("CCOMM_LTTNG_PROVIDER", provider, 1);
    else
        unsetenv("CCOMM_LTTNG_PROVIDER");
    cc__config_reload();
    cc__lttng_unload();
}

/* Capture LTTNG debug lines in a file for the duration of one test. */
static void log_to(const char *path)
{
    setenv("CCOMM_LOG_FILE", path, 1);
    setenv("CCOMM_LOG_LEVEL", "DEBUG", 1);
    setenv("CCOMM_LOG_SUBSYS", "LTTNG", 1);
    cc__config_reload();
    cc__log_init();
}

static void log_restore(void)
{
    setenv("CCOMM_LOG_FILE", "", 1);
    setenv("CCOMM_LOG_LEVEL", "WARN", 1);
    setenv("CCOMM_LOG_SUBSYS", "ALL", 1);
    cc__config_reload();
    cc__log_init();
}

static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[16384];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static uint32_t global_hooks(int kind)
{
    struct cc__hook_snap *s = atomic_load(&cc__global_hooks.chain[kind].snap);
    return s ? s->n : 0;
}

static void test_off_by_default(void **state)
{
    (void)state;
    configure("0", NULL);
    assert_int_equal(cc__lttng_load(), 0);
    assert_null(atomic_load(&cc__lttng_sites));
    assert_int_equal(global_hooks(CC__HOOK_PRE), 0);
    /* A site with tracing off does nothing and evaluates nothing. */
    int evaluated = 0;
    cc__lttng_xfer_begin(1, CC__LTTNG_SEND, 2, 3u, (size_t)(++evaluated), "shm");
    assert_int_equal(evaluated, 0);
}

/* Load with a provider that cannot work; the log must say `why`. */
static void expect_off(const char *provider, const char *why)
{
    char log[PATH_MAX];
    snprintf(log, sizeof(log), "%s/off.log", g_tmp);
    unlink(log);
    log_to(log);
    configure("1", provider);
    int on = cc__lttng_load();
    log_restore();
    assert_int_equal(on, 0);
    assert_null(atomic_load(&cc__lttng_sites));
    assert_int_equal(global_hooks(CC__HOOK_POST), 0);
    if (!file_contains(log, why) || !file_contains(log, "tracing off"))
        fail_msg("log %s lacks \"tracing off\" or \"%s\"", log, why);
}

static void test_missing_provider(void **state)
{
    (void)state;
    expect_off("/nonexistent/dir/libccomm-lttng.so", "/nonexistent/dir/libccomm-lttng.so");
    expect_off("libccomm-lttng-absent.so", "libccomm-lttng-absent.so");
}

static void test_not_a_provider(void **state)
{
    (void)state;
    expect_off("libc.so.6", "has no symbol " CC__LTTNG_ATTACH_SYM);
}

static cc_op_info_t sample_op(cc_op_type_t type)
{
    cc_op_info_t op = {0};
    op.op_id = 11;
    op.comm_id = 0x1234;
    op.comm_name = "world";
    op.size = 4;
    op.type = type;
    op.root = op.peer = -1;
    op.dtype = CC_FLOAT32;
    op.redop = CC_SUM;
    op.status = CC_OK;
    return op;
}

/* Every chain the plugin is on runs its hook without harm (no session). */
static void run_all_chains(void)
{
    for (int t = 0; t < CC_OP_TYPE_COUNT; t++) {
        cc_op_info_t op = sample_op((cc_op_type_t)t);
        cc__hook_tokens_t tok = {0};
        assert_int_equal(cc__hooks_run_pre(NULL, &op, &tok), CC_OK);
        cc__hooks_run_op(CC__HOOK_START, NULL, &op, &tok);
        cc__hooks_run_op(CC__HOOK_POST, NULL, &op, &tok);
    }
    cc_op_info_t op = sample_op(CC_OP_ALLREDUCE);
    cc_abort_info_t a = {.comm_id = 1,
                         .comm_name = "world",
                         .size = 4,
                         .reason = CC_ERR_TIMEOUT,
                         .message = "deadline passed",
                         .op = &op};
    cc__hooks_run_abort(NULL, &a, 0);
    a.op = NULL;
    cc__hooks_run_abort(NULL, &a, 0);
}

static void expect_attached(void)
{
    const cc__lttng_sites_v1_t *s = atomic_load(&cc__lttng_sites);
    assert_non_null(s);
    assert_true(s->struct_size >= sizeof(*s));
    assert_non_null(s->xfer_begin_on);
    assert_non_null(s->recorder_dump);
    assert_int_equal(global_hooks(CC__HOOK_PRE), 1);
    assert_int_equal(global_hooks(CC__HOOK_START), 1);
    assert_int_equal(global_hooks(CC__HOOK_POST), 1);
    assert_int_equal(global_hooks(CC__HOOK_ABORT), 1);
    assert_int_equal(global_hooks(CC__HOOK_WAIT), 0);
}

static void test_attach_detach(void **state)
{
    (void)state;
    if (!CC_TEST_PROVIDER[0]) skip();
    configure("1", CC_TEST_PROVIDER);
    assert_int_equal(cc__lttng_load(), 1);
    expect_attached();
    assert_int_equal(cc__lttng_load(), 1); /* once: no second subscription */
    expect_attached();
    run_all_chains();
    cc__lttng_unload();
    assert_null(atomic_load(&cc__lttng_sites));
    for (int k = 0; k < CC__HOOK_KINDS; k++)
        assert_int_equal(global_hooks(k), 0);
    assert_int_equal(cc__lttng_load(), 1); /* attach again after a detach */
    expect_attached();
    cc__lttng_unload();
}

/* A bare name is looked for in the directory of the code that holds the
 * loader (here the test program, linked statically) before the search path. */
static void test_found_next_to_binary(void **state)
{
    (void)state;
    if (!CC_TEST_PROVIDER[0]) skip();
    char dir[PATH_MAX], link[PATH_MAX + 64];
    snprintf(dir, sizeof(dir), "%s", g_self);
    *strrchr(dir, '/') = '\0';
    snprintf(link, sizeof(link), "%s/libccomm-lttng-test-%d.so", dir, (int)getpid());
    if (symlink(CC_TEST_PROVIDER, link) != 0) fail_msg("symlink %s: %s", link, strerror(errno));
    configure("1", strrchr(link, '/') + 1);
    int on = cc__lttng_load();
    cc__lttng_unload();
    unlink(link);
    assert_int_equal(on, 1);
}

/* The same provider through LD_PRELOAD, CCOMM_LTTNG left at 0. */
static void test_preloaded(void **state)
{
    (void)state;
    if (!CC_TEST_PROVIDER[0]) skip();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("LD_PRELOAD", CC_TEST_PROVIDER, 1);
        setenv("CCOMM_LTTNG", "0", 1);
        /* ASan wants its runtime first in the library list; the preload is first. */
        setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
        execl(g_self, g_self, "--preload-child", (char *)NULL);
        _exit(99);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static int preload_child(void)
{
    cc__config_reload();
    if (cc__lttng_load() != 1) {
        fprintf(stderr, "preload child: the preloaded provider was not attached\n");
        return 3;
    }
    return global_hooks(CC__HOOK_POST) == 1 ? 0 : 4;
}

/* ---- the emit macros against a fake plugin ----------------------------------- */

static int g_on[3];
static int g_calls;
static struct {
    uint64_t comm_id;
    int dir, peer;
    uint32_t tag;
    size_t bytes;
    const char *transport, *reason, *path;
    cc_status_t status;
} g_seen;

static void fake_xfer_begin(uint64_t comm_id, int dir, int peer, uint32_t tag, size_t bytes,
                            const char *transport)
{
    g_calls++;
    g_seen.comm_id = comm_id, g_seen.dir = dir, g_seen.peer = peer, g_seen.tag = tag;
    g_seen.bytes = bytes, g_seen.transport = transport;
}

static void fake_xfer_end(uint64_t comm_id, int dir, int peer, uint32_t tag, size_t bytes,
                          const char *transport, cc_status_t status)
{
    fake_xfer_begin(comm_id, dir, peer, tag, bytes, transport);
    g_seen.status = status;
}

static void fake_dump(const char *reason, const char *path, cc_status_t status)
{
    g_calls++;
    g_seen.reason = reason, g_seen.path = path, g_seen.status = status;
}

static const cc__lttng_sites_v1_t g_fake = {
    .struct_size = sizeof(cc__lttng_sites_v1_t),
    .xfer_begin_on = &g_on[0],
    .xfer_end_on = &g_on[1],
    .recorder_dump_on = &g_on[2],
    .xfer_begin = fake_xfer_begin,
    .xfer_end = fake_xfer_end,
    .recorder_dump = fake_dump,
};

static size_t count_eval(int *n, size_t v)
{
    ++*n;
    return v;
}

static void test_emit_macros(void **state)
{
    (void)state;
    configure("0", NULL);
    atomic_store(&cc__lttng_sites, &g_fake);
    int evals = 0;
    g_calls = 0;
    /* Plugin present, events not recorded: no call, no argument evaluated. */
    cc__lttng_xfer_begin(7, CC__LTTNG_SEND, 1, 9u, count_eval(&evals, 4096), "shm");
    cc__lttng_xfer_end(7, CC__LTTNG_RECV, 1, 9u, count_eval(&evals, 4096), "shm", CC_OK);
    cc__lttng_recorder_dump("timeout", "/x", CC_OK);
    assert_int_equal(g_calls, 0);
    assert_int_equal(evals, 0);
    /* Recorded: one call each, arguments passed through unchanged. */
    g_on[0] = 1;
    cc__lttng_xfer_begin(7, CC__LTTNG_SEND, 1, 9u, count_eval(&evals, 4096), "shm");
    assert_int_equal(g_calls, 1);
    assert_int_equal(evals, 1);
    assert_int_equal(g_seen.comm_id, 7);
    assert_int_equal(g_seen.dir, CC__LTTNG_SEND);
    assert_int_equal(g_seen.peer, 1);
    assert_int_equal(g_seen.tag, 9);
    assert_int_equal(g_seen.bytes, 4096);
    assert_string_equal(g_seen.transport, "shm");
    cc__lttng_xfer_end(8, CC__LTTNG_RECV, 2, 5u, (size_t)16, "tcp", CC_ERR_PEER_LOST);
    assert_int_equal(g_calls, 1); /* xfer_end still off */
    g_on[1] = g_on[2] = 1;
    cc__lttng_xfer_end(8, CC__LTTNG_RECV, 2, 5u, (size_t)16, "tcp", CC_ERR_PEER_LOST);
    assert_int_equal(g_calls, 2);
    assert_int_equal(g_seen.dir, CC__LTTNG_RECV);
    assert_int_equal(g_seen.status, CC_ERR_PEER_LOST);
    cc__lttng_recorder_dump("timeout", "/x/rank0.json", CC_ERR_SYSTEM);
    assert_int_equal(g_calls, 3);
    assert_string_equal(g_seen.path, "/x/rank0.json");
    assert_int_equal(g_seen.status, CC_ERR_SYSTEM);
    /* Plugin gone: nothing, whatever the words say. */
    atomic_store(&cc__lttng_sites, NULL);
    cc__lttng_recorder_dump("timeout", "/x", CC_OK);
    assert_int_equal(g_calls, 3);
    g_on[0] = g_on[1] = g_on[2] = 0;
}

int main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
    if (n <= 0) return 1;
    g_self[n] = '\0';
    if (argc > 1 && !strcmp(argv[1], "--preload-child")) return preload_child();
    if (!mkdtemp(g_tmp)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_by_default),       cmocka_unit_test(test_missing_provider),
        cmocka_unit_test(test_not_a_provider),       cmocka_unit_test(test_attach_detach),
        cmocka_unit_test(test_found_next_to_binary), cmocka_unit_test(test_preloaded),
        cmocka_unit_test(test_emit_macros),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char log[PATH_MAX];
    snprintf(log, sizeof(log), "%s/off.log", g_tmp);
    unlink(log);
    rmdir(g_tmp);
    return rc;
}
