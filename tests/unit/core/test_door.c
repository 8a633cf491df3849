/*
 * test_door.c - the core's door (lib/core/door.c, door_validate.c) in front
 * of a fake engine: a one-rank communicator whose engine table is the
 * native one with submit replaced by a recorder that ends each op with the
 * status the test asks for. So what reaches the engine, and what the hooks
 * see, is known exactly:
 *
 *  - validation: a bad argument is refused with the status and a message
 *    naming the function, the argument and the value; the op reaches no
 *    hook and no engine, and takes no op_id;
 *  - identity: op_id counts up by one per admitted op; coll_seq counts the
 *    collectives, p2p_seq the sends to and the receives from each peer
 *    apart; the engine sees what PRE and POST see;
 *  - a PRE veto: the caller gets the veto's status, nothing reaches the
 *    engine, POST runs once with that status, no START; blocking and async;
 *  - POST runs once per op with the engine's status; an async op the engine
 *    refuses is ended by the door (POST once, no work handle); an engine
 *    failure that breaks the communicator refuses later ops before they
 *    reach PRE or the engine.
 *
 * The rank is a forked process (a fresh op_id counter, its own stderr to
 * capture the messages).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "core/comm.h"
#include "mp.h"

/* The fake engine and what it saw. */
static struct {
    int submits;
    cc_status_t finish_with;  /* status the engine ends each op with */
    cc_status_t refuse_async; /* CC_OK, or what submit returns for an async op, unqueued */
    cc_op_info_t last;
} g_eng;

/* What the hooks saw. */
static struct {
    int pre, start, post;
    cc_status_t veto; /* what PRE returns */
    cc_op_info_t pre_info, post_info;
} g_hk;

static cc_status_t fake_submit(void *state, cc__op_t *op)
{
    (void)state;
    g_eng.submits++;
    g_eng.last = op->info;
    if (op->work && g_eng.refuse_async != CC_OK) return g_eng.refuse_async;
    cc__op_started(op);
    cc_status_t st = g_eng.finish_with;
    cc__op_finished(op, st);
    return op->work ? CC_OK : st;
}

static cc_status_t on_pre(const cc_op_info_t *op, void *user)
{
    (void)user;
    g_hk.pre++;
    g_hk.pre_info = *op;
    return g_hk.veto;
}

static void on_start(const cc_op_info_t *op, void *user)
{
    (void)op, (void)user;
    g_hk.start++;
}

static void on_post(const cc_op_info_t *op, void *user)
{
    (void)user;
    g_hk.post++;
    g_hk.post_info = *op;
}

/* Zero the counters between steps. */
static void reset(void)
{
    memset(&g_hk, 0, sizeof(g_hk));
    g_eng.submits = 0;
    g_eng.finish_with = g_eng.refuse_async = CC_OK;
}

/* A one-rank comm with the hooks above and the fake engine in front of the native one. */
static cc_engine_v1_t g_fake;
static const cc_engine_v1_t *g_real;

static cc_comm_t *open_comm(int rank, int size, const char *addr)
{
    cc_comm_t *c = NULL;
    if (cc_comm_init(&c, rank, size, addr, NULL) != CC_OK) return NULL;
    cc_hook_handle_t h;
    if (cc_hook_add_pre(c, on_pre, NULL, 0, &h) != CC_OK ||
        cc_hook_add_start(c, on_start, NULL, 0, &h) != CC_OK ||
        cc_hook_add_post(c, on_post, NULL, 0, &h) != CC_OK)
        return NULL;
    g_real = c->engine;
    g_fake = *g_real;
    g_fake.version = CC_ENGINE_VERSION_1; /* only the v1 part is copied */
    g_fake.submit = fake_submit;
    c->engine = &g_fake;
    reset();
    return c;
}

static int close_comm(cc_comm_t *c)
{
    c->engine = g_real;
    cc_status_t st = cc_comm_destroy(c);
    return st == CC_OK || st == cc_comm_get_error(c) ? 0 : 1;
}

/* stderr into a file while a call runs; the text it wrote, NUL-terminated. */
static char g_log[8192];
static int g_saved = -1;

static void capture(void)
{
    char path[] = "/tmp/cc_test_door_XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    fflush(stderr);
    g_saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

static const char *captured(void)
{
    ssize_t n = pread(2, g_log, sizeof(g_log) - 1, 0);
    g_log[n > 0 ? n : 0] = 0;
    dup2(g_saved, 2);
    close(g_saved);
    fputs(g_log, stderr); /* what the call said stays in the test's output */
    return g_log;
}

/* The call `expr` must fail with `want`, say `msg`, and reach neither a hook nor the engine. */
#define REFUSED(expr, want, msg)                                                                   \
    do {                                                                                           \
        reset();                                                                                   \
        capture();                                                                                 \
        cc_status_t st_ = (expr);                                                                  \
        const char *log_ = captured();                                                             \
        CC_TEST_REQUIRE(st_ == (want), "%s: %s, want %s", #expr, cc_status_name(st_),             \
                        cc_status_name(want));                                                     \
        CC_TEST_REQUIRE(strstr(log_, msg), "%s: the log does not say \"%s\":\n%s", #expr, msg,     \
                        log_);                                                                     \
        CC_TEST_REQUIRE(g_hk.pre == 0 && g_hk.post == 0 && g_eng.submits == 0,                    \
                        "%s: refused, yet pre %d post %d submits %d", #expr, g_hk.pre, g_hk.post, \
                        g_eng.submits);                                                            \
    } while (0)

static int validation_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = open_comm(rank, size, addr);
    CC_TEST_REQUIRE(c, "comm");
    float buf[8] = {0}, out[8];
    /* A first good op: the op_id the refused ones must not take. */
    CC_TEST_REQUIRE(cc_allreduce(c, buf, out, 4, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ok");
    uint64_t id = g_hk.pre_info.op_id;

    REFUSED(cc_barrier(NULL, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_barrier: comm (nil) is not a valid communicator (NULL)");
    REFUSED(cc_allreduce(c, NULL, out, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_allreduce: sendbuf is NULL with count 4");
    REFUSED(cc_allreduce(c, buf, out, 4, (cc_dtype_t)99, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_allreduce: dtype 99 is not a cc_dtype_t");
    REFUSED(cc_allreduce(c, buf, out, 4, CC_FLOAT32, CC_BAND, NULL, NULL), CC_ERR_NOT_SUPPORTED,
            "cc_allreduce: reduction band on f32 is not supported");
    REFUSED(cc_allreduce(c, buf, buf + 1, 4, CC_FLOAT32, CC_SUM, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_allreduce: send buffer");
    REFUSED(cc_broadcast(c, buf, out, 4, CC_FLOAT32, 5, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_broadcast: root 5 is out of range for communicator");
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.tag = -1;
    REFUSED(cc_send(c, buf, 1, CC_FLOAT32, 0, &o, NULL), CC_ERR_INVALID_ARG,
            "cc_send: opts->tag is -1");
    REFUSED(cc_recv(c, out, 1, CC_FLOAT32, 3, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_recv: peer 3 is out of range");
    REFUSED(cc_allgatherv(c, buf, out, 1, NULL, NULL, CC_FLOAT32, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_allgatherv: recvcounts is NULL");
    size_t two = 2, three = 3;
    REFUSED(cc_alltoallv(c, buf, out, &three, NULL, &two, NULL, CC_FLOAT32, NULL, NULL),
            CC_ERR_INVALID_ARG, "cc_alltoallv: sendcounts[rank] is 3 but recvcounts[0] is 2");
    REFUSED(cc_allreduce_coalesced(c, NULL, NULL, NULL, -1, CC_FLOAT32, CC_SUM, NULL, NULL),
            CC_ERR_INVALID_ARG, "cc_allreduce_coalesced: nbufs -1 needs");
    REFUSED(cc_allgather_bytes(c, buf, 4, NULL, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_allgather_bytes: out is NULL");
    int missing[1], nmissing;
    REFUSED(cc_monitored_barrier(c, 0, missing, 1, &nmissing, NULL, NULL), CC_ERR_INVALID_ARG,
            "cc_monitored_barrier: timeout_ms 0 must be in (0, 1e12]");

    /* Nothing refused took a number. */
    reset();
    CC_TEST_REQUIRE(cc_barrier(c, NULL, NULL) == CC_OK, "barrier");
    CC_TEST_REQUIRE(g_hk.pre_info.op_id == id + 1, "op_id %llu after %llu and refusals",
                    (unsigned long long)g_hk.pre_info.op_id, (unsigned long long)id);
    return close_comm(c);
}

/* One op through the door: the engine, PRE and POST must agree on its identity. */
static int issue_seen(cc_comm_t *c, cc_op_type_t type, uint64_t op_id, uint64_t coll_seq,
                      uint64_t p2p_seq)
{
    const cc_op_info_t *at[3] = {&g_hk.pre_info, &g_eng.last, &g_hk.post_info};
    const char *where[3] = {"pre", "engine", "post"};
    CC_TEST_REQUIRE(g_hk.pre == 1 && g_eng.submits == 1 && g_hk.post == 1 && g_hk.start == 1,
                    "%s: pre %d submits %d start %d post %d", cc_op_type_name(type), g_hk.pre,
                    g_eng.submits, g_hk.start, g_hk.post);
    for (int i = 0; i < 3; i++)
        CC_TEST_REQUIRE(at[i]->type == type && at[i]->op_id == op_id &&
                            at[i]->coll_seq == coll_seq && at[i]->p2p_seq == p2p_seq &&
                            at[i]->comm_id == cc_comm_id(c),
                        "%s at %s: op_id %llu coll_seq %llu p2p_seq %llu, want %llu %llu %llu",
                        cc_op_type_name(type), where[i], (unsigned long long)at[i]->op_id,
                        (unsigned long long)at[i]->coll_seq, (unsigned long long)at[i]->p2p_seq,
                        (unsigned long long)op_id, (unsigned long long)coll_seq,
                        (unsigned long long)p2p_seq);
    CC_TEST_REQUIRE(g_hk.post_info.status == CC_OK, "%s: post status %s", cc_op_type_name(type),
                    cc_status_name(g_hk.post_info.status));
    reset();
    return 0;
}

static int identity_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = open_comm(rank, size, addr);
    CC_TEST_REQUIRE(c, "comm");
    float b[4] = {0}, o[4];
    CC_TEST_REQUIRE(cc_barrier(c, NULL, NULL) == CC_OK, "barrier");
    uint64_t id = g_hk.pre_info.op_id;
    CC_TEST_REQUIRE(g_hk.pre_info.coll_seq == 1, "first collective: coll_seq %llu",
                    (unsigned long long)g_hk.pre_info.coll_seq);
    reset();
    CC_TEST_REQUIRE(cc_send(c, b, 1, CC_FLOAT32, 0, NULL, NULL) == CC_OK, "send");
    CC_TEST_REQUIRE(issue_seen(c, CC_OP_SEND, id + 1, 0, 1) == 0, "send 1");
    CC_TEST_REQUIRE(cc_send(c, b, 1, CC_FLOAT32, 0, NULL, NULL) == CC_OK, "send");
    CC_TEST_REQUIRE(issue_seen(c, CC_OP_SEND, id + 2, 0, 2) == 0, "send 2");
    CC_TEST_REQUIRE(cc_recv(c, o, 1, CC_FLOAT32, 0, NULL, NULL) == CC_OK, "recv");
    CC_TEST_REQUIRE(issue_seen(c, CC_OP_RECV, id + 3, 0, 1) == 0, "recv 1: its own count");
    CC_TEST_REQUIRE(cc_allreduce(c, b, o, 4, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    CC_TEST_REQUIRE(issue_seen(c, CC_OP_ALLREDUCE, id + 4, 2, 0) == 0, "allreduce");
    cc_work_t *w = NULL;
    CC_TEST_REQUIRE(cc_broadcast(c, b, o, 4, CC_FLOAT32, 0, NULL, &w) == CC_OK && w, "bcast");
    CC_TEST_REQUIRE(cc_work_op_id(w) == id + 5, "work names op %llu",
                    (unsigned long long)cc_work_op_id(w));
    CC_TEST_REQUIRE(cc_work_wait(w, -1) == CC_OK, "wait");
    cc_work_free(w);
    CC_TEST_REQUIRE(issue_seen(c, CC_OP_BROADCAST, id + 5, 3, 0) == 0, "async broadcast");
    CC_TEST_REQUIRE(cc_send(c, b, 1, CC_FLOAT32, 0, NULL, NULL) == CC_OK, "send");
    CC_TEST_REQUIRE(issue_seen(c, CC_OP_SEND, id + 6, 0, 3) == 0, "send 3");
    return close_comm(c);
}

static int veto_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = open_comm(rank, size, addr);
    CC_TEST_REQUIRE(c, "comm");
    float b[4] = {0}, o[4];
    for (int async = 0; async < 2; async++) {
        reset();
        g_hk.veto = CC_ERR_NOT_SUPPORTED;
        cc_work_t *w = NULL;
        cc_status_t st = cc_allreduce(c, b, o, 4, CC_FLOAT32, CC_SUM, NULL, async ? &w : NULL);
        CC_TEST_REQUIRE(st == CC_ERR_NOT_SUPPORTED, "vetoed op returned %s", cc_status_name(st));
        CC_TEST_REQUIRE(!w, "a vetoed op got a work handle");
        CC_TEST_REQUIRE(g_eng.submits == 0, "a vetoed op reached the engine (%d)", g_eng.submits);
        CC_TEST_REQUIRE(g_hk.pre == 1 && g_hk.start == 0 && g_hk.post == 1,
                        "veto: pre %d start %d post %d", g_hk.pre, g_hk.start, g_hk.post);
        CC_TEST_REQUIRE(g_hk.post_info.status == CC_ERR_NOT_SUPPORTED &&
                            g_hk.post_info.op_id == g_hk.pre_info.op_id,
                        "veto: post saw %s for op %llu", cc_status_name(g_hk.post_info.status),
                        (unsigned long long)g_hk.post_info.op_id);
    }
    /* A veto refuses one op: the communicator goes on. */
    reset();
    CC_TEST_REQUIRE(cc_comm_get_error(c) == CC_OK, "veto broke the comm");
    CC_TEST_REQUIRE(cc_allreduce(c, b, o, 4, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "after");
    CC_TEST_REQUIRE(g_eng.submits == 1 && g_hk.post == 1, "after a veto");
    return close_comm(c);
}

static int engine_fails_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = open_comm(rank, size, addr);
    CC_TEST_REQUIRE(c, "comm");
    float b[4] = {0}, o[4];
    /* An async op the engine refuses before queueing it: the door ends it. */
    g_eng.refuse_async = CC_ERR_NO_MEMORY;
    cc_work_t *w = NULL;
    cc_status_t st = cc_allreduce(c, b, o, 4, CC_FLOAT32, CC_SUM, NULL, &w);
    CC_TEST_REQUIRE(st == CC_ERR_NO_MEMORY && !w, "refused async: %s, work %p",
                    cc_status_name(st), (void *)w);
    CC_TEST_REQUIRE(g_eng.submits == 1 && g_hk.post == 1 &&
                        g_hk.post_info.status == CC_ERR_NO_MEMORY,
                    "refused async: submits %d post %d (%s)", g_eng.submits, g_hk.post,
                    cc_status_name(g_hk.post_info.status));
    /* The engine ends a blocking op with an error: the caller and POST get it, once. */
    reset();
    g_eng.finish_with = CC_ERR_TIMEOUT;
    st = cc_allreduce(c, b, o, 4, CC_FLOAT32, CC_SUM, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT, "failed op returned %s", cc_status_name(st));
    CC_TEST_REQUIRE(g_hk.start == 1 && g_hk.post == 1 && g_hk.post_info.status == CC_ERR_TIMEOUT,
                    "failed op: start %d post %d (%s)", g_hk.start, g_hk.post,
                    cc_status_name(g_hk.post_info.status));
    /* The ranks are out of step now: the comm is broken, and later ops stop at the door. */
    CC_TEST_REQUIRE(cc_comm_get_error(c) == CC_ERR_TIMEOUT, "comm error %s",
                    cc_status_name(cc_comm_get_error(c)));
    reset();
    st = cc_barrier(c, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT, "op on a broken comm: %s", cc_status_name(st));
    CC_TEST_REQUIRE(g_hk.pre == 0 && g_hk.post == 0 && g_eng.submits == 0,
                    "op on a broken comm: pre %d post %d submits %d", g_hk.pre, g_hk.post,
                    g_eng.submits);
    return close_comm(c);
}

static void test_validation(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(1, validation_rank, NULL, 60, NULL, NULL), 0);
}

static void test_identity(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(1, identity_rank, NULL, 60, NULL, NULL), 0);
}

static void test_veto(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(1, veto_rank, NULL, 60, NULL, NULL), 0);
}

static void test_engine_fails(void **s)
{
    (void)s;
    assert_int_equal(cc_test_fork_ranks(1, engine_fails_rank, NULL, 60, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_veto),
        cmocka_unit_test(test_engine_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
