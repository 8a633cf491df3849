/*
 * test_tokens.c - the subscriber token contract of lib/hooks (see
 * ccomm/hooks.h, "Subscribers"), on the chains directly:
 *   - what a subscriber's pre sets comes back to its start, post and wait
 *     for the same op, and to nobody else (two subscribers, one global and
 *     one per-comm, plain hooks beside them);
 *   - a vetoing pre still gets its post, with its token; a subscriber the
 *     veto kept from pre gets nothing of that op;
 *   - a subscriber added after an op's pre, or removed before its post, or
 *     a newer one that took over the slot, is not called for that op;
 *   - slots: CC_HOOK_SUBSCRIBERS per op (global and per-comm together),
 *     CC_ERR_BUSY past that, and per-comm slots are per comm;
 *   - under concurrency (runner threads with ops of their own, threads
 *     adding and removing subscribers) no call ever carries a token its
 *     subscriber did not set for that op, and none follows its removal.
 * The door's side (group members, async waits, vetoes through the public
 * API) is test_tokens_door.c.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "hooks/chain.h"

static cc__chain_set_t comm_a, comm_b; /* two communicators' sets */

/* A subscriber that checks its tokens: token = (its tag << 32) | op_id. */
struct sub {
    uint64_t tag;
    cc_status_t verdict; /* what pre returns */
    int pres, starts, posts, waits;
    int bad; /* calls whose token was not the one pre set for that op */
    cc_status_t last_post_status;
};

static uint64_t tok_of(const struct sub *s, const cc_op_info_t *op)
{
    return s->tag << 32 | op->op_id;
}

static cc_status_t s_pre(const cc_op_info_t *op, void *user, void **token)
{
    struct sub *s = user;
    if (*token != NULL) s->bad++; /* pre starts from NULL, not from what another left */
    s->pres++;
    *token = (void *)(uintptr_t)tok_of(s, op);
    return s->verdict;
}

static void check(struct sub *s, const cc_op_info_t *op, void *token)
{
    if ((uint64_t)(uintptr_t)token != tok_of(s, op)) s->bad++;
}

static void s_start(const cc_op_info_t *op, void *user, void *token)
{
    ((struct sub *)user)->starts++;
    check(user, op, token);
}

static void s_post(const cc_op_info_t *op, void *user, void *token)
{
    struct sub *s = user;
    s->posts++;
    s->last_post_status = op->status;
    check(s, op, token);
}

static void s_wait(const cc_op_info_t *op, void *user, void *token)
{
    ((struct sub *)user)->waits++;
    check(user, op, token);
}

static const cc_subscriber_t full = {
    .pre = s_pre, .start = s_start, .post = s_post, .wait = s_wait};

/* A plain PRE hook beside the subscribers: it must keep working as before. */
static int plain_pres;
static cc_status_t plain_pre(const cc_op_info_t *op, void *user)
{
    (void)op, (void)user;
    plain_pres++;
    return CC_OK;
}

/* One op through the chains of `set` as the door runs them; returns the PRE verdict. */
static cc_status_t run(cc__chain_set_t *set, cc_op_info_t *op, cc__hook_tokens_t *tok)
{
    memset(tok, 0, sizeof(*tok));
    op->status = CC_INPROGRESS;
    cc_status_t st = cc__hooks_run_pre(set, op, tok);
    if (st == CC_OK) {
        cc__hooks_run_op(CC__HOOK_START, set, op, tok);
        cc__hooks_run_op(CC__HOOK_WAIT, set, op, tok);
    }
    op->status = st == CC_OK ? CC_OK : st;
    cc__hooks_run_op(CC__HOOK_POST, set, op, tok);
    return st;
}

static void test_token_round_trip_and_isolation(void **state)
{
    (void)state;
    struct sub g = {.tag = 1}, a = {.tag = 2};
    cc_hook_handle_t hg, ha, hp;
    assert_int_equal(cc__hook_add_subscriber(&cc__global_hooks, &full, &g, 0, NULL, &hg), CC_OK);
    assert_int_equal(
        cc__hook_add(&comm_a, CC__HOOK_PRE, (void (*)(void))plain_pre, NULL, 0, &comm_a, &hp),
        CC_OK);
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &a, 0, &comm_a, &ha), CC_OK);
    assert_int_not_equal(cc__hook_slot(hg), cc__hook_slot(ha)); /* one op carries both */
    cc__hook_tokens_t tok;
    for (uint64_t id = 1; id <= 5; id++) {
        cc_op_info_t op = {.op_id = id};
        assert_int_equal(run(&comm_a, &op, &tok), CC_OK);
        /* Each slot holds what its own subscriber set, readable by its handle only. */
        assert_int_equal((uintptr_t)cc__hook_token(&tok, hg, cc__hook_slot(hg)), tok_of(&g, &op));
        assert_int_equal((uintptr_t)cc__hook_token(&tok, ha, cc__hook_slot(ha)), tok_of(&a, &op));
        assert_null(cc__hook_token(&tok, hg, cc__hook_slot(ha)));
    }
    /* An op of another comm: only the global subscriber sees it. */
    cc_op_info_t other = {.op_id = 6};
    assert_int_equal(run(&comm_b, &other, &tok), CC_OK);
    assert_int_equal(g.pres, 6);
    assert_int_equal(g.starts, 6);
    assert_int_equal(g.waits, 6);
    assert_int_equal(g.posts, 6);
    assert_int_equal(a.pres, 5);
    assert_int_equal(a.posts, 5);
    assert_int_equal(plain_pres, 5);
    assert_int_equal(g.bad + a.bad, 0);
    assert_int_equal(cc__hook_remove(hg), CC_OK);
    assert_int_equal(cc__hook_remove(hg), CC_ERR_NOT_FOUND); /* one handle removed it all */
    for (int k = 0; k < CC__HOOK_KINDS; k++)
        assert_null(atomic_load(&cc__global_hooks.chain[k].snap));
    cc__hooks_drop_owner(&comm_a, &comm_a);
    assert_int_equal(cc__hook_remove(ha), CC_ERR_NOT_FOUND); /* dropped with its comm */
    plain_pres = 0;
}

static void test_veto(void **state)
{
    (void)state;
    struct sub first = {.tag = 1}, vetoer = {.tag = 2, .verdict = CC_ERR_INVALID_USAGE},
               after = {.tag = 3};
    cc_hook_handle_t h1, h2, h3;
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &first, 0, &comm_a, &h1), CC_OK);
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &vetoer, 0, &comm_a, &h2), CC_OK);
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &after, 0, &comm_a, &h3), CC_OK);
    cc__hook_tokens_t tok;
    cc_op_info_t op = {.op_id = 77};
    assert_int_equal(run(&comm_a, &op, &tok), CC_ERR_INVALID_USAGE);
    /* Both that saw PRE get their POST, with their tokens and the veto status. */
    assert_int_equal(first.posts, 1);
    assert_int_equal(vetoer.posts, 1);
    assert_int_equal(vetoer.last_post_status, CC_ERR_INVALID_USAGE);
    assert_int_equal(first.starts + vetoer.starts, 0);
    /* The veto kept the third from PRE: nothing of this op reaches it. */
    assert_int_equal(after.pres + after.starts + after.posts + after.waits, 0);
    assert_int_equal(first.bad + vetoer.bad + after.bad, 0);
    cc__hooks_drop_owner(&comm_a, &comm_a);
}

/* Added after an op's PRE, removed before its POST, or a newcomer in a freed slot. */
static void test_membership_changes_mid_op(void **state)
{
    (void)state;
    struct sub early = {.tag = 1}, late = {.tag = 2}, heir = {.tag = 3};
    cc_hook_handle_t he, hl, hh;
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &early, 0, &comm_a, &he), CC_OK);
    int slot = cc__hook_slot(he);
    cc__hook_tokens_t tok = {0};
    cc_op_info_t op = {.op_id = 9, .status = CC_INPROGRESS};
    assert_int_equal(cc__hooks_run_pre(&comm_a, &op, &tok), CC_OK);
    /* A subscriber added now did not see this op's PRE: not called for it. */
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &late, 0, &comm_a, &hl), CC_OK);
    cc__hooks_run_op(CC__HOOK_START, &comm_a, &op, &tok);
    assert_int_equal(early.starts, 1);
    assert_int_equal(late.starts, 0);
    /* Removed before POST: its POST is lost, as documented. */
    assert_int_equal(cc__hook_remove(he), CC_OK);
    /* A newcomer takes the freed slot: the op's record there is not its own. */
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &heir, 0, &comm_a, &hh), CC_OK);
    assert_int_equal(cc__hook_slot(hh), slot);
    op.status = CC_OK;
    cc__hooks_run_op(CC__HOOK_POST, &comm_a, &op, &tok);
    assert_int_equal(early.posts, 0);
    assert_int_equal(late.posts + late.pres, 0);
    assert_int_equal(heir.posts + heir.pres, 0);
    /* The next op reaches both, each with its own token. */
    cc_op_info_t next = {.op_id = 10};
    assert_int_equal(run(&comm_a, &next, &tok), CC_OK);
    assert_int_equal(late.posts, 1);
    assert_int_equal(heir.posts, 1);
    assert_int_equal(early.bad + late.bad + heir.bad, 0);
    cc__hooks_drop_owner(&comm_a, &comm_a);
}

/* No pre: the token stays NULL, and the op still records that the subscriber saw it. */
static void post_null(const cc_op_info_t *op, void *user, void *token)
{
    (void)op;
    if (token == NULL) (*(int *)user)++;
}

static void test_no_pre_callback(void **state)
{
    (void)state;
    int nulls = 0;
    const cc_subscriber_t s = {.post = post_null};
    cc_hook_handle_t h;
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &s, &nulls, 0, &comm_a, &h), CC_OK);
    cc__hook_tokens_t tok;
    cc_op_info_t op = {.op_id = 1};
    run(&comm_a, &op, &tok);
    assert_int_equal(nulls, 1);
    cc__hooks_drop_owner(&comm_a, &comm_a);
}

static void test_slots(void **state)
{
    (void)state;
    struct sub s[CC_HOOK_SUBSCRIBERS + 2];
    memset(s, 0, sizeof(s));
    cc_hook_handle_t h[CC_HOOK_SUBSCRIBERS + 2];
    const int half = CC_HOOK_SUBSCRIBERS / 2;
    for (int i = 0; i < half; i++) /* half for all comms */
        assert_int_equal(cc__hook_add_subscriber(&cc__global_hooks, &full, &s[i], 0, NULL, &h[i]),
                         CC_OK);
    for (int i = half; i < CC_HOOK_SUBSCRIBERS; i++) /* the rest on comm_a */
        assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &s[i], 0, &comm_a, &h[i]), CC_OK);
    cc_hook_handle_t extra;
    assert_int_equal(cc__hook_add_subscriber(&comm_a, &full, &s[8], 0, &comm_a, &extra),
                     CC_ERR_BUSY);
    assert_int_equal(cc__hook_add_subscriber(&cc__global_hooks, &full, &s[8], 0, NULL, &extra),
                     CC_ERR_BUSY); /* a global one would share comm_a's ops */
    /* comm_b's slots are its own: the same numbers comm_a uses are free there. */
    assert_int_equal(cc__hook_add_subscriber(&comm_b, &full, &s[9], 0, &comm_b, &extra), CC_OK);
    assert_true(cc__hook_slot(extra) >= half);
    cc__hook_tokens_t tok;
    cc_op_info_t op = {.op_id = 3};
    assert_int_equal(run(&comm_a, &op, &tok), CC_OK);
    for (int i = 0; i < CC_HOOK_SUBSCRIBERS; i++) {
        assert_int_equal(s[i].posts, 1);
        assert_int_equal(s[i].bad, 0);
    }
    assert_int_equal(s[9].posts, 0);
    /* A freed slot can be taken again. */
    assert_int_equal(cc__hook_remove(h[0]), CC_OK);
    cc__hooks_drop_owner(&comm_b, &comm_b);
    assert_int_equal(cc__hook_add_subscriber(&cc__global_hooks, &full, &s[8], 0, NULL, &extra),
                     CC_OK);
    assert_int_equal(cc__hook_remove(extra), CC_OK);
    for (int i = 1; i < half; i++)
        assert_int_equal(cc__hook_remove(h[i]), CC_OK);
    cc__hooks_drop_owner(&comm_a, &comm_a);
}

/* The public call checks its arguments (comm NULL: the global set). */
static void test_public_arguments(void **state)
{
    (void)state;
    cc_hook_handle_t h;
    const cc_subscriber_t none = {0}, pre_only = {.pre = s_pre};
    assert_int_equal(cc_hook_add_subscriber(NULL, NULL, NULL, 0, &h), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_hook_add_subscriber(NULL, &full, NULL, 0, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_hook_add_subscriber(NULL, &none, NULL, 0, &h), CC_ERR_INVALID_ARG);
    /* CC_HOOK_SIGNAL_SAFE speaks of an abort callback; unknown flags are refused. */
    assert_int_equal(cc_hook_add_subscriber(NULL, &pre_only, NULL, CC_HOOK_SIGNAL_SAFE, &h),
                     CC_ERR_INVALID_ARG);
    assert_int_equal(cc_hook_add_subscriber(NULL, &pre_only, NULL, 0x8u, &h), CC_ERR_INVALID_ARG);
    struct sub s = {.tag = 5};
    assert_int_equal(cc_hook_add_subscriber(NULL, &full, &s, 0, &h), CC_OK);
    assert_int_equal(cc_hook_remove(h), CC_OK);
}

/* --- concurrency: runners with ops of their own, churners adding and removing --- */

struct victim {
    struct sub s;
    _Atomic int alive; /* 1 until removed; a call after removal is a bug */
    _Atomic long calls;
};
static _Atomic int stop;
static _Atomic long violations;

static void note(struct victim *v, const cc_op_info_t *op, void *token)
{
    if (!atomic_load(&v->alive)) atomic_fetch_add(&violations, 1);
    if ((uint64_t)(uintptr_t)token != tok_of(&v->s, op)) atomic_fetch_add(&violations, 1);
    atomic_fetch_add(&v->calls, 1);
}

static cc_status_t v_pre(const cc_op_info_t *op, void *user, void **token)
{
    struct victim *v = user;
    if (!atomic_load(&v->alive) || *token) atomic_fetch_add(&violations, 1);
    *token = (void *)(uintptr_t)tok_of(&v->s, op);
    return CC_OK;
}

static void v_op(const cc_op_info_t *op, void *user, void *token)
{
    note(user, op, token);
}

static const cc_subscriber_t victim_sub = {.pre = v_pre, .start = v_op, .post = v_op};

static void *runner(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 24, n = 0;
    cc__hook_tokens_t tok;
    while (!atomic_load(&stop)) {
        cc_op_info_t op = {.op_id = base + ++n};
        run(&comm_a, &op, &tok);
    }
    return NULL;
}

static void *churner(void *arg)
{
    long *total = arg;
    static _Atomic uint64_t next_tag = 100;
    for (int i = 0; i < 100; i++) {
        struct victim *v = calloc(1, sizeof(*v));
        v->s.tag = atomic_fetch_add(&next_tag, 1);
        atomic_store(&v->alive, 1);
        cc__chain_set_t *where = (i & 1) ? &comm_a : &cc__global_hooks;
        cc_hook_handle_t h;
        if (cc__hook_add_subscriber(where, &victim_sub, v, 0, where == &comm_a ? &comm_a : NULL,
                                    &h) != CC_OK)
            abort();
        for (int spin = 0; spin < 20000 && atomic_load(&v->calls) == 0; spin++)
            sched_yield();
        if (cc__hook_remove(h) != CC_OK) abort();
        atomic_store(&v->alive, 0); /* after remove returned: no call may follow */
        for (volatile int spin = 0; spin < 2000; spin++) {
        }
        *total += atomic_load(&v->calls);
        free(v);
    }
    return NULL;
}

static void test_concurrent_tokens(void **state)
{
    (void)state;
    pthread_t r[3], c[3]; /* 3 + 3: with 8 slots, no churner is ever refused one */
    long totals[3] = {0};
    atomic_store(&stop, 0);
    for (int i = 0; i < 3; i++)
        pthread_create(&r[i], NULL, runner, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_create(&c[i], NULL, churner, &totals[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(c[i], NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(r[i], NULL);
    assert_int_equal(atomic_load(&violations), 0);
    assert_true(totals[0] + totals[1] + totals[2] > 0); /* they really ran while churned */
    for (int k = 0; k < CC__HOOK_KINDS; k++) {
        assert_null(atomic_load(&comm_a.chain[k].snap));
        assert_null(atomic_load(&cc__global_hooks.chain[k].snap));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_round_trip_and_isolation),
        cmocka_unit_test(test_veto),
        cmocka_unit_test(test_membership_changes_mid_op),
        cmocka_unit_test(test_no_pre_callback),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_public_arguments),
        cmocka_unit_test(test_concurrent_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
