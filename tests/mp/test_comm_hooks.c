/*
 * test_comm_hooks.c - the hook chains in a real 2-rank job:
 *  - PRE, START, POST see every op once, in order, with op_id, coll_seq,
 *    p2p_seq, times (enqueue <= start <= end) and the final status;
 *  - POST fires on completion: for an async op, before cc_work_wait returns,
 *    and not before the data arrived;
 *  - a PRE hook vetoes an op: the call returns the veto, POST sees it;
 *  - lifecycle events (init, split, destroy) pass the same chains;
 *  - four threads add and remove hooks while the main thread runs ops;
 *  - an op, async or grouped, a split or a destroy issued from inside a hook
 *    of the same communicator is CC_ERR_INVALID_USAGE (it recursed until the
 *    stack overflowed); another comm's op is fine; abort stays allowed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "mp.h"

struct seen {
    int pre, start, post, bad;
    uint64_t last_op_id;
    uint64_t last_coll_seq;
    uint64_t world_id;
    cc_op_type_t types[64];
    int ntypes;
    int lifecycle;
    int32_t *watch; /* POST of the async allreduce must see the result already */
    int watch_ok;
};

static cc_status_t on_pre(const cc_op_info_t *op, void *u)
{
    struct seen *s = u;
    s->pre++;
    if (op->op_id <= s->last_op_id) s->bad++;
    s->last_op_id = op->op_id;
    if (op->type == CC_OP_ALLREDUCE && op->in_count == 13) return CC_ERR_INVALID_USAGE; /* veto */
    return CC_OK;
}

static void on_start(const cc_op_info_t *op, void *u)
{
    struct seen *s = u;
    s->start++;
    if (op->t_start_ns < op->t_enqueue_ns) s->bad++;
}

static void on_post(const cc_op_info_t *op, void *u)
{
    struct seen *s = u;
    s->post++;
    if (s->ntypes < 64) s->types[s->ntypes++] = op->type;
    if (op->type >= CC_OP_COMM_INIT) s->lifecycle++;
    if (op->status == CC_OK && op->type != CC_OP_COMM_INIT && op->t_end_ns < op->t_start_ns) s->bad++;
    if (op->coll_seq && op->comm_id == s->world_id) {
        if (op->coll_seq != s->last_coll_seq + 1) s->bad++; /* +1 per collective of the comm */
        s->last_coll_seq = op->coll_seq;
    }
    if (s->watch && op->type == CC_OP_ALLREDUCE && op->recvbuf == s->watch)
        s->watch_ok = s->watch[0] == 3; /* 1 + 2 from two ranks */
}

static int hooks_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    struct seen s = {0};
    cc_hook_handle_t hp, hs, ho;
    /* all-comm hooks added before init also see COMM_INIT */
    CC_TEST_REQUIRE(cc_hook_add_pre(NULL, on_pre, &s, 0, &hp) == CC_OK, "add pre");
    CC_TEST_REQUIRE(cc_hook_add_start(NULL, on_start, &s, 0, &hs) == CC_OK, "add start");
    CC_TEST_REQUIRE(cc_hook_add_post(NULL, on_post, &s, 0, &ho) == CC_OK, "add post");
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(s.lifecycle == 1 && s.types[0] == CC_OP_COMM_INIT, "init seen");
    s.world_id = cc_comm_id(comm);
    int32_t v = rank + 1, out = 0;
    s.watch = &out;
    cc_work_t *w = NULL;
    CC_TEST_REQUIRE(cc_allreduce(comm, &v, &out, 1, CC_INT32, CC_SUM, NULL, &w) == CC_OK, "async");
    CC_TEST_REQUIRE(cc_work_wait(w, -1) == CC_OK, "wait");
    CC_TEST_REQUIRE(s.watch_ok, "post ran before wait returned, after the data arrived");
    cc_work_free(w);
    int32_t thirteen[13] = {0};
    cc_status_t st = cc_allreduce(comm, thirteen, thirteen, 13, CC_INT32, CC_SUM, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_INVALID_USAGE, "veto returned %s", cc_status_name(st));
    CC_TEST_REQUIRE(cc_comm_get_error(comm) == CC_OK, "a veto does not break the comm");
    int before = s.post;
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    CC_TEST_REQUIRE(s.post == before + 1, "one post per op");
    cc_comm_t *child = NULL;
    CC_TEST_REQUIRE(cc_comm_split(comm, 0, rank, NULL, &child) == CC_OK, "split");
    cc_comm_destroy(child);
    CC_TEST_REQUIRE(cc_hook_remove(hp) == CC_OK && cc_hook_remove(hs) == CC_OK, "remove");
    CC_TEST_REQUIRE(cc_hook_remove(hp) == CC_ERR_NOT_FOUND, "idempotent");
    int pre_before = s.pre;
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier 2");
    CC_TEST_REQUIRE(s.pre == pre_before, "removed hook did not run");
    cc_comm_destroy(comm);
    cc_hook_remove(ho);
    /* init, async allreduce, vetoed allreduce, barrier, split, child init, child destroy,
     * barrier 2, destroy */
    CC_TEST_REQUIRE(s.post == 9, "post count %d", s.post);
    CC_TEST_REQUIRE(s.lifecycle == 5, "lifecycle %d", s.lifecycle); /* init, split, child init, child destroy, destroy */
    CC_TEST_REQUIRE(s.bad == 0, "bad %d", s.bad);
    return 0;
}

static void test_hooks_in_a_job(void **st)
{
    (void)st;
    assert_int_equal(cc_test_fork_ranks(2, hooks_rank, NULL, 60, NULL, NULL), 0);
}

/* --- churn: add/remove from 4 threads while ops run --- */
static _Atomic int stop_churn;
static _Atomic long churn_calls;

static void counting(const cc_op_info_t *op, void *u)
{
    (void)op;
    (void)u;
    atomic_fetch_add(&churn_calls, 1);
}

static void *churn(void *arg)
{
    cc_comm_t *comm = arg;
    while (!atomic_load(&stop_churn)) {
        cc_hook_handle_t a, b;
        if (cc_hook_add_post(comm, counting, NULL, 0, &a) != CC_OK) abort();
        if (cc_hook_add_start(NULL, counting, NULL, 0, &b) != CC_OK) abort();
        if (cc_hook_remove(a) != CC_OK || cc_hook_remove(b) != CC_OK) abort();
    }
    return NULL;
}

static int churn_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn, comm);
    for (int i = 0; i < 2000; i++) {
        float x = 1, y = 0;
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
        CC_TEST_REQUIRE(y == (float)size, "sum");
    }
    atomic_store(&stop_churn, 1);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    cc_comm_destroy(comm);
    return 0;
}

static void test_hooks_churn(void **st)
{
    (void)st;
    assert_int_equal(cc_test_fork_ranks(2, churn_rank, NULL, 90, NULL, NULL), 0);
}

/* --- ops issued from inside a hook --- */

/* What the re-entering hooks saw. The depth guard stops the recursion of the old code
 * before the stack overflows, so that the test fails with a message. */
struct reenter {
    cc_comm_t *target; /* where the hook issues its op; NULL = the op's own comm */
    int depth, max_depth, runs;
    cc_status_t inner; /* what the op issued from the hook returned */
};

static void reenter(struct reenter *r, const cc_op_info_t *op)
{
    if (r->depth >= 20) return;
    r->depth++, r->runs++;
    if (r->depth > r->max_depth) r->max_depth = r->depth;
    r->inner = cc_barrier(r->target ? r->target : op->comm, NULL, NULL);
    r->depth--;
}

static cc_status_t reenter_pre(const cc_op_info_t *op, void *u)
{
    reenter(u, op);
    return CC_OK;
}

static void reenter_post(const cc_op_info_t *op, void *u)
{
    if (op->type < CC_OP_COMM_INIT) reenter(u, op);
}

/* A PRE hook that tries every kind of call on its own communicator. */
struct misuse {
    cc_status_t split, group, destroy, async, grouped, abort;
    int runs;
};

static cc_status_t misuse_pre(const cc_op_info_t *op, void *u)
{
    struct misuse *m = u;
    if (op->type != CC_OP_ALLREDUCE || m->runs++) return CC_OK;
    cc_comm_t *c = op->comm, *child = NULL;
    int zero = 0;
    float x = 1;
    cc_work_t *w = NULL;
    m->split = cc_comm_split(c, 0, 0, NULL, &child);
    m->group = cc_comm_create_group(c, &zero, 1, NULL, &child);
    m->destroy = cc_comm_destroy(c);
    m->async = cc_allreduce(c, &x, &x, 1, CC_FLOAT32, CC_SUM, NULL, &w);
    if (cc_group_start() == CC_OK) {
        m->grouped = cc_send(c, &x, 1, CC_FLOAT32, 0, NULL, NULL);
        cc_group_end(NULL, NULL);
    }
    if (child || w) m->runs = 100; /* nothing may have been made */
    return CC_OK;
}

static cc_status_t abort_pre(const cc_op_info_t *op, void *u)
{
    struct misuse *m = u;
    if (op->type == CC_OP_BARRIER && !m->runs++) m->abort = cc_comm_abort(op->comm);
    return CC_OK;
}

#define REENTERED_ONCE(r, what)                                                                    \
    CC_TEST_REQUIRE((r).max_depth == 1 && (r).inner == CC_ERR_INVALID_USAGE,                       \
                    what ": the hook ran %d deep, its op returned %s", (r).max_depth,              \
                    cc_status_name((r).inner))

static int reenter_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *a = NULL, *b = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&a, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_comm_split(a, 0, rank, NULL, &b) == CC_OK, "split");
    float x = 1, y = 0;
    cc_hook_handle_t h, h2;
    /* PRE and POST hooks of the comm, and a hook of every comm: the op is refused inside. */
    struct reenter pre = {0}, post = {0}, all = {0};
    CC_TEST_REQUIRE(cc_hook_add_pre(a, reenter_pre, &pre, 0, &h) == CC_OK, "add");
    CC_TEST_REQUIRE(cc_allreduce(a, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    REENTERED_ONCE(pre, "PRE hook of the comm");
    cc_hook_remove(h);
    CC_TEST_REQUIRE(cc_hook_add_post(a, reenter_post, &post, 0, &h) == CC_OK, "add");
    CC_TEST_REQUIRE(cc_allreduce(a, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    REENTERED_ONCE(post, "POST hook of the comm");
    cc_hook_remove(h);
    CC_TEST_REQUIRE(cc_hook_add_pre(NULL, reenter_pre, &all, 0, &h) == CC_OK, "add");
    CC_TEST_REQUIRE(cc_allreduce(a, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    REENTERED_ONCE(all, "PRE hook of every comm");
    cc_hook_remove(h);
    /* Another comm's op is fine; one back on the first comm from the second's hook is not. */
    struct reenter to_b = {b, 0, 0, 0, CC_OK}, back = {a, 0, 0, 0, CC_OK};
    CC_TEST_REQUIRE(cc_hook_add_pre(a, reenter_pre, &to_b, 0, &h) == CC_OK, "add");
    CC_TEST_REQUIRE(cc_allreduce(a, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    CC_TEST_REQUIRE(to_b.runs == 1 && to_b.inner == CC_OK, "op on another comm from a hook: %s",
                    cc_status_name(to_b.inner));
    CC_TEST_REQUIRE(cc_hook_add_pre(b, reenter_pre, &back, 0, &h2) == CC_OK, "add");
    CC_TEST_REQUIRE(cc_allreduce(a, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    REENTERED_ONCE(back, "a -> b -> a");
    CC_TEST_REQUIRE(to_b.inner == CC_OK, "b's barrier from a's hook: %s",
                    cc_status_name(to_b.inner));
    cc_hook_remove(h), cc_hook_remove(h2);
    /* Lifecycle calls, async and grouped ops: refused too, nothing made. */
    struct misuse m = {0};
    CC_TEST_REQUIRE(cc_hook_add_pre(a, misuse_pre, &m, 0, &h) == CC_OK, "add");
    CC_TEST_REQUIRE(cc_allreduce(a, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    cc_hook_remove(h);
    CC_TEST_REQUIRE(m.runs == 1, "hook ran %d times (or made a comm or work)", m.runs);
    cc_status_t want = CC_ERR_INVALID_USAGE;
    CC_TEST_REQUIRE(m.split == want && m.group == want && m.destroy == want && m.async == want &&
                        m.grouped == want,
                    "from a hook: split %s, create_group %s, destroy %s, async %s, grouped %s",
                    cc_status_name(m.split), cc_status_name(m.group), cc_status_name(m.destroy),
                    cc_status_name(m.async), cc_status_name(m.grouped));
    CC_TEST_REQUIRE(cc_comm_get_error(a) == CC_OK, "refusals broke the comm");
    /* cc_comm_abort stays allowed from anywhere: it fails the comm without passing the door. */
    struct misuse ab = {0};
    CC_TEST_REQUIRE(cc_hook_add_pre(b, abort_pre, &ab, 0, &h) == CC_OK, "add");
    cc_status_t st = cc_barrier(b, NULL, NULL);
    CC_TEST_REQUIRE(ab.runs == 1 && ab.abort == CC_OK && st == CC_ERR_ABORTED &&
                        cc_comm_get_error(b) == CC_ERR_ABORTED,
                    "abort from a hook: hook ran %d times, abort %s, barrier %s", ab.runs,
                    cc_status_name(ab.abort), cc_status_name(st));
    cc_hook_remove(h);
    cc_comm_destroy(b);
    CC_TEST_REQUIRE(cc_comm_destroy(a) == CC_OK, "destroy");
    return 0;
}

static void test_ops_from_hooks(void **st)
{
    (void)st;
    const char *env[] = {"CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(1, reenter_rank, NULL, 60, env, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hooks_in_a_job),
        cmocka_unit_test(test_hooks_churn),
        cmocka_unit_test(test_ops_from_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
