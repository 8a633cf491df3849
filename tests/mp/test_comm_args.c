/*
 * test_comm_args.c - bad input gets its specific status (and a log line),
 * nothing is enqueued, nothing crashes or hangs: NULL pointers, count x size
 * overflow, invalid dtype/op/rank/peer/tag/opts, a bitwise op on floats,
 * overlapping buffers, a destroyed communicator, bad init arguments, bad
 * child configs for split and create_group, a mismatched world size, an unreachable store, a port
 * in use.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/config.h"
#include "mp.h"

static cc_comm_t *solo(void)
{
    cc_comm_t *c = NULL;
    assert_int_equal(cc_comm_init(&c, 0, 1, "127.0.0.1:0", NULL), CC_OK);
    return c;
}

static int pre_count;
static cc_status_t count_pre(const cc_op_info_t *op, void *u)
{
    (void)op;
    (void)u;
    pre_count++;
    return CC_OK;
}

static void test_op_arguments(void **s)
{
    (void)s;
    cc_comm_t *c = solo();
    cc_hook_handle_t h;
    assert_int_equal(cc_hook_add_pre(c, count_pre, NULL, 0, &h), CC_OK);
    float a[4] = {0}, b[4] = {0};
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    assert_int_equal(cc_allreduce(NULL, a, b, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_allreduce(c, NULL, b, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_allreduce(c, a, NULL, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_allreduce(c, a, b, SIZE_MAX / 2, CC_FLOAT32, CC_SUM, NULL, NULL),
                     CC_ERR_INVALID_ARG);
    assert_int_equal(cc_allreduce(c, a, b, 4, (cc_dtype_t)99, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_allreduce(c, a, b, 4, CC_FLOAT32, (cc_redop_t)-3, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_allreduce(c, a, b, 4, CC_FLOAT32, CC_BXOR, NULL, NULL), CC_ERR_NOT_SUPPORTED);
    assert_int_equal(cc_allreduce(c, a, a + 1, 3, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    o.tag = -1;
    assert_int_equal(cc_send(c, a, 1, CC_FLOAT32, 0, &o, NULL), CC_ERR_INVALID_ARG);
    o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o.struct_size = 3;
    assert_int_equal(cc_barrier(c, &o, NULL), CC_ERR_INVALID_ARG);
    o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o.flags = 8;
    assert_int_equal(cc_barrier(c, &o, NULL), CC_ERR_INVALID_ARG);
    o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o.timeout_ms = -5;
    assert_int_equal(cc_barrier(c, &o, NULL), CC_ERR_INVALID_ARG);
    o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o.premul_scalar = 1.0 / 0.0;
    assert_int_equal(cc_allreduce(c, a, b, 4, CC_FLOAT32, CC_PREMUL_SUM, &o, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_send(c, a, 1, CC_FLOAT32, 1, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_recv(c, a, 1, CC_FLOAT32, -1, NULL, NULL), CC_ERR_INVALID_ARG);
    int done;
    assert_int_equal(cc_work_test(NULL, &done), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_work_wait(NULL, 0), CC_ERR_INVALID_ARG);
    /* None of those reached the door. */
    assert_int_equal(pre_count, 0);
    /* count 0 is a no-op that still passes the door. */
    assert_int_equal(cc_allreduce(c, NULL, NULL, 0, CC_FLOAT32, CC_SUM, NULL, NULL), CC_OK);
    assert_int_equal(pre_count, 1);
    /* in place is allowed; a hook of a comm as a bad handle is refused */
    assert_int_equal(cc_allreduce(c, a, a, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_OK);
    assert_int_equal(cc_hook_add_post((cc_comm_t *)a, NULL, NULL, 0, &h), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_destroy(c), CC_OK);
    assert_int_equal(cc_comm_destroy(c), CC_ERR_INVALID_ARG); /* destroyed: magic check */
    assert_int_equal(cc_allreduce(c, a, b, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_abort(c), CC_ERR_INVALID_ARG);
    assert_null(cc_comm_name(c));
}

static void test_init_arguments(void **s)
{
    (void)s;
    cc_comm_t *c = NULL;
    assert_int_equal(cc_comm_init(NULL, 0, 1, "127.0.0.1:0", NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_init(&c, 2, 2, "127.0.0.1:1", NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_init(&c, 0, 0, "127.0.0.1:1", NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_init(&c, 0, 1, NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_init(&c, 0, 1, "no-port-here", NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_comm_init(&c, 1, 2, "127.0.0.1:0", NULL), CC_ERR_INVALID_ARG);
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.struct_size = 1;
    assert_int_equal(cc_comm_init(&c, 0, 1, "127.0.0.1:0", &cfg), CC_ERR_INVALID_ARG);
    cfg = (cc_comm_config_t)CC_COMM_CONFIG_INIT;
    cfg.engine = "warp-drive";
    assert_int_equal(cc_comm_init(&c, 0, 1, "127.0.0.1:0", &cfg), CC_ERR_INVALID_ARG);
    cfg = (cc_comm_config_t)CC_COMM_CONFIG_INIT;
    cfg.device = 0; /* no CUDA plugin in this build */
    assert_int_equal(cc_comm_init(&c, 0, 1, "127.0.0.1:0", &cfg), CC_ERR_NOT_SUPPORTED);
    assert_null(c);
}

/* split and create_group check a child's config as init does, before the door (no PRE hook
 * runs) and before any plugin is loaded (device -7 gave NOT_SUPPORTED from the CUDA plugin). */
static void test_child_config(void **s)
{
    (void)s;
    cc_comm_t *c = solo(), *child = NULL;
    cc_hook_handle_t h;
    assert_int_equal(cc_hook_add_pre(c, count_pre, NULL, 0, &h), CC_OK);
    int me = 0, pre0 = pre_count;
    cc_comm_config_t bad[6];
    for (int i = 0; i < 6; i++)
        bad[i] = (cc_comm_config_t)CC_COMM_CONFIG_INIT;
    bad[0].timeout_ms = -5;
    bad[1].device = -7;
    bad[2].struct_size = 1;
    bad[3].struct_size = 1u << 20;
    bad[4].engine = "warp-drive";
    bad[5].transport = "carrier-pigeon";
    for (int i = 0; i < 6; i++) {
        child = (cc_comm_t *)(void *)&me;
        assert_int_equal(cc_comm_split(c, 0, 0, &bad[i], &child), CC_ERR_INVALID_ARG);
        assert_ptr_equal(child, (void *)&me); /* outputs are set on success only */
        assert_int_equal(cc_comm_create_group(c, &me, 1, &bad[i], &child), CC_ERR_INVALID_ARG);
        assert_ptr_equal(child, &me);
        cc_comm_t *w = NULL;
        assert_int_equal(cc_comm_init(&w, 0, 1, "127.0.0.1:0", &bad[i]), CC_ERR_INVALID_ARG);
    }
    assert_int_equal(pre_count, pre0); /* refused before the door */
    assert_int_equal(cc_comm_get_error(c), CC_OK);
    cc_comm_config_t good = CC_COMM_CONFIG_INIT;
    good.timeout_ms = 5000;
    assert_int_equal(cc_comm_split(c, 0, 0, &good, &child), CC_OK);
    assert_int_equal(cc_comm_destroy(child), CC_OK);
    assert_int_equal(cc_comm_destroy(c), CC_OK);
}

static void test_unreachable_store(void **s)
{
    (void)s;
    setenv("CCOMM_CONNECT_TIMEOUT", "1", 1);
    cc__config_reload();
    cc_comm_t *c = NULL;
    /* rank 1 never hosts; nothing listens on port 9 of loopback */
    cc_status_t st = cc_comm_init(&c, 1, 2, "127.0.0.1:9", NULL);
    assert_true(st == CC_ERR_TIMEOUT || st == CC_ERR_CONNECT);
    assert_null(c);
    unsetenv("CCOMM_CONNECT_TIMEOUT");
    cc__config_reload();
}

static void test_port_in_use(void **s)
{
    (void)s;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    listen(fd, 4);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    setenv("CCOMM_CONNECT_TIMEOUT", "2", 1);
    cc__config_reload();
    cc_comm_t *c = NULL;
    assert_int_equal(cc_comm_init(&c, 0, 2, addr, NULL), CC_ERR_BUSY);
    assert_null(c);
    close(fd);
    unsetenv("CCOMM_CONNECT_TIMEOUT");
    cc__config_reload();
}

static int size_mismatch_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    (void)size;
    cc_comm_t *c = NULL;
    /* rank 0 is told the job has 2 ranks, rank 1 that it has 3 */
    cc_status_t st = cc_comm_init(&c, rank, rank == 0 ? 2 : 3, addr, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_MISMATCH || st == CC_ERR_TIMEOUT, "rank %d: %s", rank,
                    cc_status_name(st));
    CC_TEST_REQUIRE(c == NULL, "no comm on error");
    return st == CC_ERR_MISMATCH ? 0 : 2;
}

static void test_world_size_mismatch(void **s)
{
    (void)s;
    const char *envs[] = {"CCOMM_CONNECT_TIMEOUT=3", "CCOMM_LOG_LEVEL=NONE", NULL};
    cc_test_child_t res[2];
    cc_test_fork_ranks(2, size_mismatch_rank, NULL, 30, envs, res);
    /* At least the second rank to arrive sees the mismatch at once. */
    assert_true((res[0].exited && res[0].code == 0) || (res[1].exited && res[1].code == 0));
}

int main(void)
{
    setenv("CCOMM_LOG_LEVEL", "NONE", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_arguments), cmocka_unit_test(test_init_arguments),
        cmocka_unit_test(test_child_config), cmocka_unit_test(test_unreachable_store),
        cmocka_unit_test(test_port_in_use),  cmocka_unit_test(test_world_size_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
