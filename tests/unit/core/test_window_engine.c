/*
 * test_window_engine.c - windows go through the engine table (engine.h,
 * v3), not to a named engine (lib/core/window_api.c):
 *
 *  - an engine without windows (a v1 or v2 table, or a v3 table with no
 *    win_create) gets CC_ERR_NOT_SUPPORTED from cc_window_create, with a
 *    message naming the communicator, the engine and its table version,
 *    and the engine is never called;
 *  - an engine with windows (here a fake v3 table in front of the native
 *    engine, on 2 forked ranks) gets create with the core's handle and the
 *    registered base and size, every op through submit with op->extra the
 *    handle and the peer, length and offset the caller gave, out-of-range
 *    ops refused at the door (nothing submitted), destroy with the same
 *    handle; afterwards the handle is a tombstone (CC_ERR_INVALID_USAGE);
 *  - a device communicator on a host without a usable CUDA device fails
 *    cleanly with CC_ERR_NOT_SUPPORTED naming the device (the CUDA plugin's
 *    native engine, whose windows are CUDA IPC: there is no device comm to
 *    make a window on here; tests/gpu/gpu_window.cu runs them on a GPU).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "ccomm/window.h"
#include "core/comm.h"
#include "engine/window.h"
#include "mp.h"

#define REGION 64

/* What the fake engine saw. */
static struct {
    int creates, destroys, submits;
    struct cc_window *created, *destroyed;
    void *base;
    size_t bytes;
    cc__op_t last;
} g_seen;

static const cc_engine_v1_t *g_real;
static cc_engine_v3_t g_fake3;

static cc_status_t fake_create(void *state, struct cc_window *w, void *base, size_t bytes,
                               uint64_t deadline_ns)
{
    (void)state, (void)deadline_ns;
    g_seen.creates++;
    g_seen.created = w;
    g_seen.base = base;
    g_seen.bytes = bytes;
    w->sizes = calloc((size_t)w->n, sizeof(uint64_t));
    if (!w->sizes) return CC_ERR_NO_MEMORY;
    for (int r = 0; r < w->n; r++)
        w->sizes[r] = REGION; /* every rank registers as many */
    w->eng = &g_seen;
    return CC_OK;
}

static cc_status_t fake_destroy(void *state, struct cc_window *w, uint64_t deadline_ns)
{
    (void)state, (void)deadline_ns;
    g_seen.destroys++;
    g_seen.destroyed = w;
    free(w->sizes);
    w->sizes = NULL;
    return CC_OK;
}

static cc_status_t fake_submit(void *state, cc__op_t *op)
{
    (void)state;
    g_seen.submits++;
    g_seen.last = *op;
    cc__op_started(op);
    cc__op_finished(op, CC_OK);
    return CC_OK;
}

static cc_comm_t *open_comm(int rank, int size, const char *addr)
{
    cc_comm_t *c = NULL;
    if (cc_comm_init(&c, rank, size, addr, NULL) != CC_OK) return NULL;
    g_real = c->engine;
    return c;
}

static int close_comm(cc_comm_t *c)
{
    c->engine = g_real;
    return cc_comm_destroy(c) == CC_OK ? 0 : 1;
}

/* cc_window_create on an engine without windows: refused, named, the engine untouched. */
static int refused(cc_comm_t *c, const cc_engine_v1_t *e, const char *want)
{
    char buf[REGION];
    cc_window_t *win = (cc_window_t *)&buf; /* must be set to NULL */
    memset(&g_seen, 0, sizeof(g_seen));
    c->engine = e;
    cc_status_t st = cc_window_create(c, buf, sizeof(buf), NULL, &win);
    c->engine = g_real;
    const char *why = cc_last_error();
    CC_TEST_REQUIRE(st == CC_ERR_NOT_SUPPORTED, "%s: %s", want, cc_status_name(st));
    CC_TEST_REQUIRE(win == NULL, "%s: win left %p", want, (void *)win);
    CC_TEST_REQUIRE(strstr(why, want) && strstr(why, "has no windows") && strstr(why, c->name),
                    "the message does not name the comm and say \"%s\": %s", want, why);
    CC_TEST_REQUIRE(g_seen.creates == 0 && g_seen.submits == 0, "the engine was called");
    return 0;
}

static int no_windows_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = open_comm(rank, size, addr);
    CC_TEST_REQUIRE(c, "comm");
    const cc_engine_v3_t *native = (const cc_engine_v3_t *)(const void *)g_real;
    CC_TEST_REQUIRE(g_real->version == CC_ENGINE_VERSION_3 && native->win_create,
                    "the native engine's table is version %u", g_real->version);
    cc_engine_v1_t v1 = native->v2.v1;
    v1.version = CC_ENGINE_VERSION_1;
    v1.name = "fake1";
    cc_engine_v2_t v2 = {native->v2.v1, NULL};
    v2.v1.version = CC_ENGINE_VERSION_2;
    v2.v1.name = "fake2";
    cc_engine_v3_t v3 = *native;
    v3.v2.v1.name = "fake3";
    v3.win_create = NULL;
    if (refused(c, &v1, "engine fake1 (table version 1)") ||
        refused(c, &v2.v1, "engine fake2 (table version 2)") ||
        refused(c, &v3.v2.v1, "engine fake3 (table version 3)"))
        return 1;
    return close_comm(c);
}

static int dispatch_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = open_comm(rank, size, addr);
    CC_TEST_REQUIRE(c, "comm");
    CC_TEST_REQUIRE(g_real->version == CC_ENGINE_VERSION_3, "table version %u", g_real->version);
    g_fake3 = *(const cc_engine_v3_t *)(const void *)g_real;
    g_fake3.v2.v1.name = "fakewin";
    g_fake3.v2.v1.submit = fake_submit;
    g_fake3.win_create = fake_create;
    g_fake3.win_destroy = fake_destroy;
    c->engine = &g_fake3.v2.v1;
    memset(&g_seen, 0, sizeof(g_seen));
    char region[REGION], src[REGION] = {0};
    cc_window_t *win = NULL;
    cc_status_t st = cc_window_create(c, region, sizeof(region), NULL, &win);
    CC_TEST_REQUIRE(st == CC_OK && win, "create: %s", cc_status_name(st));
    CC_TEST_REQUIRE(g_seen.creates == 1 && g_seen.created == win && g_seen.base == region &&
                        g_seen.bytes == sizeof(region) && win->comm == c && win->rank == rank &&
                        win->n == size,
                    "create saw %d calls, handle %p (win %p), base %p, bytes %zu", g_seen.creates,
                    (void *)g_seen.created, (void *)win, g_seen.base, g_seen.bytes);
    int peer = 1 - rank;
    st = cc_window_put(win, src, 16, peer, 8, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_OK && g_seen.submits == 1, "put: %s", cc_status_name(st));
    const cc__op_t *op = &g_seen.last;
    CC_TEST_REQUIRE(op->info.type == CC_OP_WIN_PUT && op->extra == win && op->info.peer == peer &&
                        op->info.bytes == 16 && op->info.out_count == 8 && op->info.sendbuf == src,
                    "put reached the engine as %s, extra %p, peer %d, bytes %zu, offset %llu",
                    cc_op_type_name(op->info.type), op->extra, op->info.peer, op->info.bytes,
                    (unsigned long long)op->info.out_count);
    CC_TEST_REQUIRE(cc_window_signal(win, peer, NULL, NULL) == CC_OK &&
                        g_seen.last.info.type == CC_OP_WIN_SIGNAL,
                    "signal");
    CC_TEST_REQUIRE(cc_window_wait_signal(win, peer, 3, NULL, NULL) == CC_OK &&
                        g_seen.last.info.type == CC_OP_WIN_WAIT_SIGNAL &&
                        g_seen.last.info.in_count == 3,
                    "wait_signal");
    /* Out of the fake's 64 bytes, or a peer outside the comm: refused, nothing submitted. */
    int before = g_seen.submits;
    CC_TEST_REQUIRE(cc_window_put(win, src, 16, peer, 56, NULL, NULL) == CC_ERR_INVALID_ARG,
                    "put past the end");
    CC_TEST_REQUIRE(cc_window_get(win, src, 1, size, 0, NULL, NULL) == CC_ERR_INVALID_ARG,
                    "get from rank %d", size);
    CC_TEST_REQUIRE(g_seen.submits == before, "refused ops reached the engine");
    st = cc_window_destroy(win);
    CC_TEST_REQUIRE(st == CC_OK && g_seen.destroys == 1 && g_seen.destroyed == win,
                    "destroy: %s, %d calls", cc_status_name(st), g_seen.destroys);
    st = cc_window_put(win, src, 1, peer, 0, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_INVALID_USAGE, "put on a destroyed window: %s",
                    cc_status_name(st));
    return close_comm(c);
}

#ifdef CC_TEST_CUDA_PLUGIN
/* Without a usable CUDA device, a device communicator cannot be made (so neither its
 * windows): a clean CC_ERR_NOT_SUPPORTED naming the device. */
static int device_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.device = 0;
    cfg.engine = "native";
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_init(&c, rank, size, addr, &cfg);
    const char *why = cc_last_error();
    CC_TEST_REQUIRE(st == CC_ERR_NOT_SUPPORTED && !c, "device comm: %s", cc_status_name(st));
    CC_TEST_REQUIRE(strstr(why, "device 0"), "the message does not name device 0: %s", why);
    return 0;
}
#endif

static void test_no_windows(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(1, no_windows_rank, NULL, 60, NULL, NULL), 0);
}

static void test_dispatch(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(2, dispatch_rank, NULL, 60, NULL, NULL), 0);
}

static void test_device_without_gpu(void **s)
{
    (void)s;
#ifndef CC_TEST_CUDA_PLUGIN
    skip(); /* no CUDA plugin in this build */
#else
    const char *env[] = {"CCOMM_CUDA_PLUGIN=" CC_TEST_CUDA_PLUGIN, NULL};
    FILE *f = popen("nvidia-smi -L 2>/dev/null | grep -c ^GPU", "r");
    int gpus = 0;
    if (f && fscanf(f, "%d", &gpus) != 1) gpus = 0;
    if (f) pclose(f);
    if (gpus > 0) skip(); /* a GPU here: tests/gpu covers device windows */
    assert_int_equal(cc_test_fork_ranks(1, device_rank, NULL, 60, env, NULL), 0);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_windows),
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_device_without_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
