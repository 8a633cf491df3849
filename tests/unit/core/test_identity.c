/*
 * test_identity.c - the door's numbering of every op (DESIGN.md "The one
 * door", step 2): op_id counts every op of the process from 1, across
 * communicators; coll_seq counts the collectives of each communicator from
 * 1 (0 for p2p and lifecycle ops); p2p_seq counts the sends to, and
 * separately the receives from, each peer of each communicator from 1 (0
 * for collectives, lifecycle ops and the group op), so a send and its
 * matching receive carry the same number.
 *
 * Three forked ranks (fresh processes: op_id starts at 1) issue every op
 * type there is; a PRE hook on all communicators records what the door
 * assigned, and each rank compares it with a model kept here, one op at a
 * time. The class of each type is written out below rather than taken from
 * the library's table, so a type moved to the wrong class (a broadcast
 * numbered as a lifecycle op) shows. POST must see the same identity, an op
 * refused by validation must get none, and a work handle names its op_id.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "mp.h"

#define NR     3   /* ranks */
#define MAXREC 256 /* ops recorded per rank */
#define MAXCOM 4   /* communicators per rank */

enum cls { COLL, P2P, LIFE, RMA };

/* The class of each type, as DESIGN.md and ccomm/types.h state it. */
static enum cls class_of(cc_op_type_t t)
{
    switch (t) {
    case CC_OP_SEND:
    case CC_OP_RECV:
    case CC_OP_SEND_BYTES:
    case CC_OP_RECV_BYTES:
    case CC_OP_GROUP:
        return P2P;
    case CC_OP_COMM_INIT:
    case CC_OP_COMM_SPLIT:
    case CC_OP_COMM_DESTROY:
    case CC_OP_COMM_ABORT:
    case CC_OP_WIN_CREATE:
    case CC_OP_WIN_DESTROY:
        return LIFE;
    case CC_OP_WIN_PUT: /* one-sided: the target issues nothing, so numbered by neither */
    case CC_OP_WIN_GET:
    case CC_OP_WIN_SIGNAL:
    case CC_OP_WIN_WAIT_SIGNAL:
    case CC_OP_WIN_FLUSH:
        return RMA;
    default:
        return COLL;
    }
}

static int is_recv(cc_op_type_t t)
{
    return t == CC_OP_RECV || t == CC_OP_RECV_BYTES;
}

typedef struct rec {
    cc_op_type_t type;
    uint64_t op_id, coll_seq, p2p_seq, comm_id, parent_id;
    int peer, posts;
} rec_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static rec_t g_rec[MAXREC];
static int g_nrec, g_checked, g_post_bad;

static cc_status_t on_pre(const cc_op_info_t *op, void *user)
{
    (void)user;
    pthread_mutex_lock(&g_lock);
    if (g_nrec < MAXREC)
        g_rec[g_nrec++] = (rec_t){op->type,    op->op_id,          op->coll_seq, op->p2p_seq,
                                  op->comm_id, op->parent_comm_id, op->peer,     0};
    pthread_mutex_unlock(&g_lock);
    return CC_OK;
}

/* POST: the same op_id must carry the same numbers as at PRE. */
static void on_post(const cc_op_info_t *op, void *user)
{
    (void)user;
    pthread_mutex_lock(&g_lock);
    int found = 0;
    for (int i = 0; i < g_nrec && !found; i++) {
        rec_t *r = &g_rec[i];
        if (r->op_id != op->op_id) continue;
        found = 1;
        r->posts++;
        if (r->type != op->type || r->coll_seq != op->coll_seq || r->p2p_seq != op->p2p_seq ||
            r->comm_id != op->comm_id)
            g_post_bad++;
    }
    if (!found) g_post_bad++;
    pthread_mutex_unlock(&g_lock);
}

/* The model: what the door should assign next. */
typedef struct model {
    uint64_t comm_id, coll, send[NR], recv[NR];
} model_t;

static model_t g_model[MAXCOM];
static int g_ncomm;
static uint64_t g_op_id;
static int g_seen[CC_OP_TYPE_COUNT];

static model_t *model_of(uint64_t comm_id)
{
    for (int i = 0; i < g_ncomm; i++)
        if (g_model[i].comm_id == comm_id) return &g_model[i];
    if (g_ncomm == MAXCOM) return NULL;
    g_model[g_ncomm] = (model_t){.comm_id = comm_id};
    return &g_model[g_ncomm++];
}

/* The next recorded op must be `type` on comm_id (peer for p2p) with the model's numbers. */
static int expect(uint64_t comm_id, cc_op_type_t type, int peer, const char *what)
{
    pthread_mutex_lock(&g_lock);
    int have = g_checked < g_nrec;
    rec_t r = have ? g_rec[g_checked++] : (rec_t){0};
    pthread_mutex_unlock(&g_lock);
    CC_TEST_REQUIRE(have, "%s: no op reached the PRE hook", what);
    model_t *m = model_of(comm_id);
    CC_TEST_REQUIRE(m, "%s: too many communicators", what);
    enum cls c = class_of(type);
    uint64_t op_id = ++g_op_id, coll = c == COLL ? ++m->coll : 0, p2p = 0;
    if (c == P2P && peer >= 0) p2p = ++(is_recv(type) ? m->recv : m->send)[peer];
    CC_TEST_REQUIRE(r.type == type, "%s: the op at the door is %s, want %s", what,
                    cc_op_type_name(r.type), cc_op_type_name(type));
    CC_TEST_REQUIRE(r.comm_id == comm_id, "%s: comm_id %llx, want %llx", what,
                    (unsigned long long)r.comm_id, (unsigned long long)comm_id);
    CC_TEST_REQUIRE(r.op_id == op_id, "%s: op_id %llu, want %llu", what,
                    (unsigned long long)r.op_id, (unsigned long long)op_id);
    CC_TEST_REQUIRE(r.coll_seq == coll, "%s: coll_seq %llu, want %llu", what,
                    (unsigned long long)r.coll_seq, (unsigned long long)coll);
    CC_TEST_REQUIRE(r.p2p_seq == p2p, "%s (peer %d): p2p_seq %llu, want %llu", what, peer,
                    (unsigned long long)r.p2p_seq, (unsigned long long)p2p);
    g_seen[type] = 1;
    return 0;
}

/* The call was refused before the door numbered it: nothing new at PRE, no op_id used. */
static int expect_none(const char *what)
{
    pthread_mutex_lock(&g_lock);
    int extra = g_nrec - g_checked;
    pthread_mutex_unlock(&g_lock);
    CC_TEST_REQUIRE(extra == 0, "%s: a refused call reached the PRE hook (%d ops)", what, extra);
    return 0;
}

#define CALL(call)                                                                                 \
    do {                                                                                           \
        cc_status_t st_ = (call);                                                                  \
        CC_TEST_REQUIRE(st_ == CC_OK, "%s: %s", #call, cc_status_name(st_));                       \
    } while (0)
#define EXPECT(comm, type, peer)                                                                   \
    do {                                                                                           \
        if (expect(cc_comm_id(comm), type, peer, #type)) return 1;                                 \
    } while (0)

/* Every collective type once, in an order unlike the enum's. */
static int collectives(cc_comm_t *c, int r)
{
    float a[NR * 2] = {0}, b[NR * 2] = {0};
    size_t cnt[NR] = {1, 1, 1}, dsp[NR] = {0, 1, 2};
    CALL(cc_broadcast(c, a, b, 2, CC_FLOAT32, 1, NULL, NULL));
    EXPECT(c, CC_OP_BROADCAST, -1);
    CALL(cc_allreduce(c, a, b, 2, CC_FLOAT32, CC_SUM, NULL, NULL));
    EXPECT(c, CC_OP_ALLREDUCE, -1);
    CALL(cc_barrier(c, NULL, NULL));
    EXPECT(c, CC_OP_BARRIER, -1);
    CALL(cc_reduce(c, a, b, 2, CC_FLOAT32, CC_MAX, 2, NULL, NULL));
    EXPECT(c, CC_OP_REDUCE, -1);
    CALL(cc_allgather(c, a, b, 1, CC_FLOAT32, NULL, NULL));
    EXPECT(c, CC_OP_ALLGATHER, -1);
    CALL(cc_allgatherv(c, a, b, 1, cnt, dsp, CC_FLOAT32, NULL, NULL));
    EXPECT(c, CC_OP_ALLGATHERV, -1);
    CALL(cc_reduce_scatter(c, a, b, 1, CC_FLOAT32, CC_SUM, NULL, NULL));
    EXPECT(c, CC_OP_REDUCE_SCATTER, -1);
    CALL(cc_reduce_scatterv(c, a, b, cnt, CC_FLOAT32, CC_SUM, NULL, NULL));
    EXPECT(c, CC_OP_REDUCE_SCATTERV, -1);
    CALL(cc_alltoall(c, a, b, 1, CC_FLOAT32, NULL, NULL));
    EXPECT(c, CC_OP_ALLTOALL, -1);
    CALL(cc_alltoallv(c, a, b, cnt, dsp, cnt, dsp, CC_FLOAT32, NULL, NULL));
    EXPECT(c, CC_OP_ALLTOALLV, -1);
    CALL(cc_gather(c, a, b, 1, CC_FLOAT32, 0, NULL, NULL));
    EXPECT(c, CC_OP_GATHER, -1);
    CALL(cc_gatherv(c, a, b, 1, cnt, dsp, CC_FLOAT32, 1, NULL, NULL));
    EXPECT(c, CC_OP_GATHERV, -1);
    CALL(cc_scatter(c, a, b, 1, CC_FLOAT32, 2, NULL, NULL));
    EXPECT(c, CC_OP_SCATTER, -1);
    CALL(cc_scatterv(c, a, b, cnt, dsp, 1, CC_FLOAT32, 0, NULL, NULL));
    EXPECT(c, CC_OP_SCATTERV, -1);
    int missing[NR], nmissing = 0;
    CALL(cc_monitored_barrier(c, 10000, missing, NR, &nmissing, NULL, NULL));
    EXPECT(c, CC_OP_MONITORED_BARRIER, -1);
    const void *sb[2] = {a, a + 1};
    void *rb[2] = {b, b + 1};
    size_t counts[2] = {1, 1};
    CALL(cc_allreduce_coalesced(c, sb, rb, counts, 2, CC_FLOAT32, CC_SUM, NULL, NULL));
    EXPECT(c, CC_OP_COALESCED, -1);
    cc_bytes_t *out = NULL;
    CALL(cc_allgather_bytes(c, "xy", 2, NULL, &out, NULL));
    EXPECT(c, CC_OP_ALLGATHER_BYTES, -1);
    cc_bytes_free(out), out = NULL;
    CALL(cc_broadcast_bytes(c, "xyz", 3, 2, NULL, &out, NULL));
    EXPECT(c, CC_OP_BROADCAST_BYTES, -1);
    cc_bytes_free(out), out = NULL;
    CALL(cc_gather_bytes(c, "x", 1, 1, NULL, &out, NULL));
    EXPECT(c, CC_OP_GATHER_BYTES, -1);
    cc_bytes_free(out), out = NULL;
    const void *bufs[NR] = {"a", "bb", "ccc"};
    size_t lens[NR] = {1, 2, 3};
    CALL(cc_scatter_bytes(c, r == 0 ? bufs : NULL, r == 0 ? lens : NULL, 0, NULL, &out, NULL));
    EXPECT(c, CC_OP_SCATTER_BYTES, -1);
    cc_bytes_free(out);
    return 0;
}

/* The k-th last op checked (1: the last). */
static rec_t checked(int k)
{
    pthread_mutex_lock(&g_lock);
    rec_t r = g_rec[g_checked - k];
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* A receive's p2p_seq must equal its send's: each payload is the sender's number. */
static int same_seq(int k, int32_t payload, const char *what)
{
    uint64_t got = checked(k).p2p_seq;
    CC_TEST_REQUIRE(got == (uint64_t)payload, "%s: receive numbered %llu, its send %d", what,
                    (unsigned long long)got, payload);
    return 0;
}

/*
 * Rank r sends twice to r+1 and once to r+2, then receives twice from r-1 (= r+2) and once
 * from r+1: per-peer numbers, sends and receives counted apart. Then the byte p2p ops and a
 * group (its members numbered at their calls, the group op itself by op_id only).
 */
static int p2p(cc_comm_t *c, int r)
{
    int to1 = (r + 1) % NR, to2 = (r + 2) % NR;
    uint64_t id = cc_comm_id(c);
    model_t *m = model_of(id);
    int32_t out[3] = {(int32_t)m->send[to1] + 1, (int32_t)m->send[to1] + 2,
                      (int32_t)m->send[to2] + 1},
            in[3] = {0};
    cc_work_t *w[6] = {0};
    CALL(cc_send(c, &out[0], 1, CC_INT32, to1, NULL, &w[0]));
    EXPECT(c, CC_OP_SEND, to1);
    CALL(cc_send(c, &out[1], 1, CC_INT32, to1, NULL, &w[1]));
    EXPECT(c, CC_OP_SEND, to1);
    CALL(cc_send(c, &out[2], 1, CC_INT32, to2, NULL, &w[2]));
    EXPECT(c, CC_OP_SEND, to2);
    for (int k = 0; k < 3; k++) {
        int from = k < 2 ? to2 : to1;
        CALL(cc_recv(c, &in[k], 1, CC_INT32, from, NULL, &w[3 + k]));
        EXPECT(c, CC_OP_RECV, from);
        CC_TEST_REQUIRE(cc_work_op_id(w[3 + k]) == g_op_id, "work handle op_id %llu, want %llu",
                        (unsigned long long)cc_work_op_id(w[3 + k]), (unsigned long long)g_op_id);
    }
    for (int k = 0; k < 6; k++) {
        CALL(cc_work_wait(w[k], -1));
        cc_work_free(w[k]);
    }
    /* The numbers the receives got, in order, against the senders' payloads. */
    for (int k = 0; k < 3; k++)
        if (same_seq(3 - k, in[k], "recv")) return 1;
    int32_t seq = (int32_t)m->send[to1] + 1, peer_seq = 0;
    cc_work_t *sw = NULL;
    CALL(cc_send_bytes(c, &seq, sizeof(seq), to1, NULL, &sw));
    EXPECT(c, CC_OP_SEND_BYTES, to1);
    cc_bytes_t *blob = NULL;
    CALL(cc_recv_bytes(c, to2, NULL, &blob, NULL));
    EXPECT(c, CC_OP_RECV_BYTES, to2);
    CALL(cc_work_wait(sw, -1));
    cc_work_free(sw);
    size_t len = 0;
    const void *p = cc_bytes_data(blob, 0, &len);
    CC_TEST_REQUIRE(p && len == sizeof(peer_seq), "recv_bytes: %zu bytes", len);
    memcpy(&peer_seq, p, sizeof(peer_seq));
    cc_bytes_free(blob);
    if (same_seq(1, peer_seq, "recv_bytes")) return 1;
    int32_t gs = (int32_t)m->send[to2] + 1, gr = 0;
    CALL(cc_group_start());
    CALL(cc_recv(c, &gr, 1, CC_INT32, to1, NULL, NULL));
    EXPECT(c, CC_OP_RECV, to1);
    CALL(cc_send(c, &gs, 1, CC_INT32, to2, NULL, NULL));
    EXPECT(c, CC_OP_SEND, to2);
    CALL(cc_group_end(NULL, NULL));
    EXPECT(c, CC_OP_GROUP, -1);
    return same_seq(3, gr, "grouped recv");
}

/* Window ops: create and destroy are lifecycle events; puts and the rest carry their peer
 * and no sequence number, and leave the p2p numbering of sends and receives alone. */
static int windows(cc_comm_t *c, int r)
{
    int to = (r + 1) % NR, from = (r + NR - 1) % NR;
    uint64_t mine = 0, v = (uint64_t)r, got = 0;
    cc_window_t *w = NULL;
    CALL(cc_window_create(c, &mine, sizeof(mine), NULL, &w));
    EXPECT(c, CC_OP_WIN_CREATE, -1);
    CALL(cc_window_put(w, &v, sizeof(v), to, 0, NULL, NULL));
    EXPECT(c, CC_OP_WIN_PUT, to);
    CALL(cc_window_signal(w, to, NULL, NULL));
    EXPECT(c, CC_OP_WIN_SIGNAL, to);
    CALL(cc_window_wait_signal(w, from, 1, NULL, NULL));
    EXPECT(c, CC_OP_WIN_WAIT_SIGNAL, from);
    CC_TEST_REQUIRE(mine == (uint64_t)from, "window: %llu from rank %d", (unsigned long long)mine,
                    from);
    CALL(cc_window_get(w, &got, sizeof(got), to, 0, NULL, NULL));
    EXPECT(c, CC_OP_WIN_GET, to);
    CALL(cc_window_flush(w, to, NULL));
    EXPECT(c, CC_OP_WIN_FLUSH, to);
    CC_TEST_REQUIRE(cc_window_put(w, &v, sizeof(v), to, 1, NULL, NULL) == CC_ERR_INVALID_ARG,
                    "a put past the end was accepted");
    if (expect_none("window put past the end")) return 1;
    CALL(cc_window_destroy(w));
    EXPECT(c, CC_OP_WIN_DESTROY, -1);
    return 0;
}

/* Lifecycle ops, and a second communicator: its own coll_seq and p2p_seq, one op_id. */
static int lifecycle(cc_comm_t *world, int r)
{
    cc_comm_t *child = NULL;
    CALL(cc_comm_split(world, 0, NR - 1 - r, NULL, &child));
    EXPECT(world, CC_OP_COMM_SPLIT, -1);
    EXPECT(child, CC_OP_COMM_INIT, -1);
    uint64_t parent = checked(1).parent_id;
    CC_TEST_REQUIRE(parent == cc_comm_id(world), "child's init: parent %llx, want %llx",
                    (unsigned long long)parent, (unsigned long long)cc_comm_id(world));
    float x = 1, y;
    for (int i = 0; i < 2; i++) { /* interleaved: each comm counts its own */
        CALL(cc_allreduce(child, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL));
        EXPECT(child, CC_OP_ALLREDUCE, -1);
        CALL(cc_broadcast(world, &x, &y, 1, CC_FLOAT32, 0, NULL, NULL));
        EXPECT(world, CC_OP_BROADCAST, -1);
    }
    if (p2p(child, cc_comm_rank(child))) return 1;
    CALL(cc_barrier(world, NULL, NULL)); /* every rank is done with child before the abort */
    EXPECT(world, CC_OP_BARRIER, -1);
    CALL(cc_comm_abort(child));
    EXPECT(child, CC_OP_COMM_ABORT, -1);
    uint64_t child_id = cc_comm_id(child);
    cc_comm_destroy(child);
    if (expect(child_id, CC_OP_COMM_DESTROY, -1, "destroy of the aborted child")) return 1;
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_hook_handle_t hp, hq;
    CALL(cc_hook_add_pre(NULL, on_pre, NULL, 0, &hp));
    CALL(cc_hook_add_post(NULL, on_post, NULL, 0, &hq));
    cc_comm_t *world = NULL;
    CALL(cc_comm_init(&world, rank, size, addr, NULL));
    EXPECT(world, CC_OP_COMM_INIT, -1);
    if (collectives(world, rank) || p2p(world, rank) || collectives(world, rank)) return 1;
    float x = 1, y;
    CC_TEST_REQUIRE(cc_allreduce(world, &x, &y, 1, CC_DTYPE_COUNT, CC_SUM, NULL, NULL) ==
                        CC_ERR_INVALID_ARG,
                    "allreduce of a bad dtype was accepted");
    if (expect_none("allreduce of a bad dtype")) return 1;
    CC_TEST_REQUIRE(cc_send(world, &x, 1, CC_FLOAT32, NR, NULL, NULL) == CC_ERR_INVALID_ARG,
                    "send to rank %d of %d was accepted", NR, NR);
    if (expect_none("send to a rank out of range")) return 1;
    if (windows(world, rank) || p2p(world, rank)) return 1;
    if (lifecycle(world, rank)) return 1;
    cc_work_t *w = NULL;
    CALL(cc_allreduce(world, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, &w));
    EXPECT(world, CC_OP_ALLREDUCE, -1);
    CC_TEST_REQUIRE(cc_work_op_id(w) == g_op_id, "async allreduce: work op_id %llu, want %llu",
                    (unsigned long long)cc_work_op_id(w), (unsigned long long)g_op_id);
    CALL(cc_work_wait(w, -1));
    cc_work_free(w);
    uint64_t world_id = cc_comm_id(world);
    CALL(cc_comm_destroy(world));
    if (expect(world_id, CC_OP_COMM_DESTROY, -1, "destroy of world")) return 1;
    if (expect_none("after the last op")) return 1;
    for (int t = 0; t < CC_OP_TYPE_COUNT; t++)
        CC_TEST_REQUIRE(g_seen[t], "no %s was issued: the test misses a type",
                        cc_op_type_name((cc_op_type_t)t));
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nrec; i++)
        CC_TEST_REQUIRE(g_rec[i].posts == 1, "%s (op %llu) saw %d POSTs",
                        cc_op_type_name(g_rec[i].type), (unsigned long long)g_rec[i].op_id,
                        g_rec[i].posts);
    CC_TEST_REQUIRE(g_post_bad == 0, "%d POSTs with another identity than their PRE", g_post_bad);
    pthread_mutex_unlock(&g_lock);
    cc_hook_remove(hp);
    cc_hook_remove(hq);
    return 0;
}

static void test_every_op_numbered(void **state)
{
    (void)state;
    const char *env[] = {"CCOMM_TIMEOUT=15", NULL};
    assert_int_equal(cc_test_fork_ranks(NR, rank_main, NULL, 60, env, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_numbered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
