/*
 * test_tokens_door.c - subscriber tokens through the door, at 2 forked ranks.
 *
 * A subscriber on all communicators allocates a record in each op's pre and
 * hands it out as the token; start, wait and post must get back that very
 * record (same op_id, same type), post frees it. A second subscriber, on the
 * world only, vetoes the third collective (on both ranks). Over blocking and
 * async collectives, a vetoed one, a group (its members are ops of their
 * own), a split and destroys, every pre must meet exactly one post with its
 * token, no record may be left, and a wait on a pending op gets its token.
 */
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
#include "mp.h"

#define MAGIC 0x70c3e5u

struct rec {
    unsigned magic;
    uint64_t op_id;
    cc_op_type_t type;
    int starts, waits;
};

/* Rank-local counts (one process per rank; ops of one rank run its hooks in turn or
 * on the progress thread, so the counters are atomic). */
static _Atomic int pres, posts, live, bad, waits_seen, member_pres, member_posts;
static _Atomic int veto_pres, veto_posts, veto_bad;

static int mine(const struct rec *r, const cc_op_info_t *op)
{
    return r && r->magic == MAGIC && r->op_id == op->op_id && r->type == op->type;
}

static cc_status_t t_pre(const cc_op_info_t *op, void *user, void **token)
{
    (void)user;
    if (*token) bad++;
    struct rec *r = calloc(1, sizeof(*r));
    if (!r) return CC_ERR_NO_MEMORY;
    *r = (struct rec){MAGIC, op->op_id, op->type, 0, 0};
    *token = r;
    pres++;
    live++;
    if (op->type == CC_OP_SEND || op->type == CC_OP_RECV) member_pres++;
    return CC_OK;
}

static void t_start(const cc_op_info_t *op, void *user, void *token)
{
    (void)user;
    struct rec *r = token;
    if (!mine(r, op) || r->starts++) bad++;
}

static void t_wait(const cc_op_info_t *op, void *user, void *token)
{
    (void)user;
    struct rec *r = token;
    if (!mine(r, op))
        bad++;
    else
        waits_seen++;
}

static void t_post(const cc_op_info_t *op, void *user, void *token)
{
    (void)user;
    struct rec *r = token;
    if (!mine(r, op)) {
        bad++;
        return;
    }
    if (op->type == CC_OP_SEND || op->type == CC_OP_RECV) member_posts++;
    r->magic = 0; /* a second post of the same token shows as a bad one */
    free(r);
    posts++;
    live--;
}

/* The world's vetoer: token = op_id, checked at post. */
static cc_status_t v_pre(const cc_op_info_t *op, void *user, void **token)
{
    (void)user;
    veto_pres++;
    *token = (void *)(uintptr_t)op->op_id;
    return op->type == CC_OP_ALLREDUCE && op->coll_seq == 3 ? CC_ERR_NOT_SUPPORTED : CC_OK;
}

static void v_post(const cc_op_info_t *op, void *user, void *token)
{
    (void)user;
    veto_posts++;
    if ((uint64_t)(uintptr_t)token != op->op_id) veto_bad++;
}

#define CALL(x) CC_TEST_REQUIRE((x) == CC_OK, "%s", #x)

static int ops(cc_comm_t *w, int rank)
{
    float x = 1, y = 0;
    CALL(cc_allreduce(w, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL));
    CALL(cc_allreduce(w, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL));
    cc_status_t st = cc_allreduce(w, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_NOT_SUPPORTED, "vetoed allreduce returned %s", cc_status_name(st));
    /* Rank 1 comes late: rank 0's wait finds the op pending and runs WAIT. */
    if (rank == 1) usleep(200000);
    cc_work_t *wk = NULL;
    CALL(cc_allreduce(w, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, &wk));
    CALL(cc_work_wait(wk, -1));
    cc_work_free(wk);
    int peer = 1 - rank;
    int32_t out = rank, in = -1;
    CALL(cc_group_start());
    CALL(cc_send(w, &out, 1, CC_INT32, peer, NULL, NULL));
    CALL(cc_recv(w, &in, 1, CC_INT32, peer, NULL, NULL));
    CALL(cc_group_end(NULL, NULL));
    CC_TEST_REQUIRE(in == peer, "group recv got %d", in);
    cc_comm_t *child = NULL;
    CALL(cc_comm_split(w, 0, rank, NULL, &child));
    CALL(cc_barrier(child, NULL, NULL));
    CALL(cc_comm_destroy(child));
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    const cc_subscriber_t all = {.pre = t_pre, .start = t_start, .post = t_post, .wait = t_wait};
    const cc_subscriber_t vetoer = {.pre = v_pre, .post = v_post};
    cc_hook_handle_t ha, hv;
    CALL(cc_hook_add_subscriber(NULL, &all, NULL, 0, &ha));
    cc_comm_t *w = NULL;
    CALL(cc_comm_init(&w, rank, size, addr, NULL));
    CALL(cc_hook_add_subscriber(w, &vetoer, NULL, 0, &hv));
    if (ops(w, rank)) return 1;
    CALL(cc_comm_destroy(w));
    CALL(cc_hook_remove(ha));
    CC_TEST_REQUIRE(bad == 0 && veto_bad == 0, "%d calls with a token not their own (vetoer %d)",
                    (int)bad, (int)veto_bad);
    /* init, 4 allreduces, send, recv, group, split, child init, barrier, 2 destroys */
    CC_TEST_REQUIRE(pres == 13 && posts == 13 && live == 0, "pres %d posts %d live %d", (int)pres,
                    (int)posts, (int)live);
    CC_TEST_REQUIRE(member_pres == 2 && member_posts == 2, "group members: pres %d posts %d",
                    (int)member_pres, (int)member_posts);
    /* The world's: 4 allreduces, send, recv, group, split, destroy (the vetoed one too). */
    CC_TEST_REQUIRE(veto_pres == 9 && veto_posts == 9, "vetoer: pres %d posts %d", (int)veto_pres,
                    (int)veto_posts);
    CC_TEST_REQUIRE(rank != 0 || waits_seen >= 1, "rank 0's wait on a pending op ran no WAIT");
    return 0;
}

static void test_tokens_through_the_door(void **state)
{
    (void)state;
    const char *env[] = {"CCOMM_TIMEOUT=30", NULL};
    assert_int_equal(cc_test_fork_ranks(2, rank_main, NULL, 90, env, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_through_the_door),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
