/*
 * group.c - cc_group_start/cc_group_end (ccomm/group.h).
 *
 * The group is per thread, as in NCCL. While one is open, cc_send and
 * cc_recv pass the first half of the door at once (identity, PRE: the
 * flight recorder sees each) and are held here, per communicator. The
 * outermost cc_group_end issues each communicator's held ops as one op of
 * type GROUP whose argument block (cc__group_args_t) lists them; the engine
 * runs them together and finishes each member. The block's release ends any
 * member the engine did not (veto, broken comm, abort) and frees the block,
 * so every member that passed PRE sees its POST exactly once.
 */
#include <stdlib.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/validate.h"
#include "core/work.h"
#include "base/tls.h"

#define MAX_DEPTH 64

/* The held ops of one communicator. */
struct held {
    cc_comm_t *comm;
    cc__group_args_t *g;
    int cap;
    size_t sent, received; /* bytes, for the group op's in/out counts */
};

static _Thread_local struct {
    int depth;
    struct held *comms;
    int ncomms, cap;
} tl CC__TLS_HOT; /* cc__group_active is read by every op */

int cc__group_active(void)
{
    return tl.depth > 0;
}

cc_status_t cc_group_start(void)
{
    if (tl.depth >= MAX_DEPTH) {
        cc_log_error(CC_SUBSYS_CORE, "cc_group_start: groups nest %d deep already", MAX_DEPTH);
        return CC_ERR_INVALID_USAGE;
    }
    tl.depth++;
    return CC_OK;
}

/*
 * End the members nobody finished yet with the group's `status`, then free
 * the block. An engine that moves the members one by one ends each with its
 * own status (native); one that runs the group as a unit (NCCL) leaves them
 * to this.
 */
static void end_members(cc__group_args_t *g, cc_status_t status)
{
    for (int i = 0; g && i < g->n; i++) {
        cc__op_t *m = g->members[i];
        if (!g->ended[i]) cc__op_member_finished(m, status);
        if (g->heap[i]) free(m);
    }
    if (g) {
        free(g->members);
        free(g->ended);
        free(g->heap);
        free(g);
    }
}

static void group_release(cc__op_t *op, cc_status_t status)
{
    end_members(op->owned, status);
    op->owned = NULL;
}

/* The entry of comm in this thread's group, created on first use. */
static struct held *entry(cc_comm_t *comm)
{
    for (int i = 0; i < tl.ncomms; i++)
        if (tl.comms[i].comm == comm) return &tl.comms[i];
    if (tl.ncomms == tl.cap) {
        int cap = tl.cap ? 2 * tl.cap : 4;
        struct held *c = realloc(tl.comms, (size_t)cap * sizeof(*c));
        if (!c) return NULL;
        tl.comms = c;
        tl.cap = cap;
    }
    cc__group_args_t *g = calloc(1, sizeof(*g));
    if (!g) return NULL;
    tl.comms[tl.ncomms] = (struct held){comm, g, 0, 0, 0};
    return &tl.comms[tl.ncomms++];
}

/* Room for one more member. */
static int grow(struct held *h)
{
    cc__group_args_t *g = h->g;
    if (g->n < h->cap) return 1;
    int cap = h->cap ? 2 * h->cap : 8;
    cc__op_t **m = realloc(g->members, (size_t)cap * sizeof(*m));
    if (m) g->members = m;
    unsigned char *e = m ? realloc(g->ended, (size_t)cap) : NULL;
    if (e) g->ended = e;
    unsigned char *hp = e ? realloc(g->heap, (size_t)cap) : NULL;
    if (hp) g->heap = hp;
    if (!hp) return 0;
    h->cap = cap;
    return 1;
}

cc_status_t cc__group_hold(cc__op_t *tmpl, const cc_op_opts_t *opts, cc_work_t **work)
{
    cc_comm_t *comm = tmpl->comm;
    cc_status_t err = (cc_status_t)atomic_load_explicit(&comm->error, memory_order_acquire);
    if (err != CC_OK) return err;
    struct held *h = entry(comm);
    if (!h || !grow(h)) {
        cc_log_error(CC_SUBSYS_CORE, "out of memory for a grouped %s on communicator %s",
                     cc_op_type_name(tmpl->info.type), comm->name);
        return CC_ERR_NO_MEMORY;
    }
    struct cc_work *w = work ? cc__work_new(comm) : NULL;
    cc__op_t *m = w ? cc__work_op(w) : malloc(sizeof(*m));
    if (!m) return CC_ERR_NO_MEMORY;
    cc__op_copy(m, tmpl);
    m->work = w;
    cc_status_t st = cc__door_admit(m, opts); /* a veto ended it already */
    if (st != CC_OK) {
        if (w)
            cc__work_discard(w);
        else
            free(m);
        return st;
    }
    cc__group_args_t *g = h->g;
    g->members[g->n] = m;
    g->ended[g->n] = 0;
    g->heap[g->n++] = !w;
    if (m->info.type == CC_OP_SEND)
        h->sent += m->info.bytes;
    else
        h->received += m->info.bytes;
    if (work) *work = (cc_work_t *)w;
    return CC_OK;
}

/* Issue one communicator's held ops as one GROUP op; the op owns them from here. */
static cc_status_t issue(struct held *h, const cc_op_opts_t *opts, cc_work_t **work)
{
    cc__op_t op;
    cc__op_prepare(&op, h->comm, CC_OP_GROUP);
    op.info.in_count = h->sent; /* bytes: the members' dtypes may differ */
    op.info.out_count = h->received;
    op.info.bytes = h->sent > h->received ? h->sent : h->received;
    op.extra = op.owned = h->g;
    op.release = group_release;
    return cc__door_issue(&op, opts, work);
}

/* Several communicators: issue them all, then wait for all (never one before the others). */
static cc_status_t issue_all(struct held *list, int n, const cc_op_opts_t *opts)
{
    cc_status_t first = CC_OK;
    cc_work_t **w = calloc((size_t)n, sizeof(*w));
    if (!w) {
        for (int i = 0; i < n; i++)
            end_members(list[i].g, CC_ERR_NO_MEMORY);
        return CC_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        cc_status_t st = issue(&list[i], opts, &w[i]);
        if (st != CC_OK && first == CC_OK) first = st;
    }
    for (int i = 0; i < n; i++) {
        if (!w[i]) continue;
        cc_status_t st = cc_work_wait(w[i], -1);
        if (st != CC_OK && first == CC_OK) first = st;
        cc_work_free(w[i]);
    }
    free(w);
    return first;
}

cc_status_t cc_group_end(const cc_op_opts_t *opts, cc_work_t **work)
{
    if (tl.depth == 0) {
        cc_log_error(CC_SUBSYS_CORE, "cc_group_end: no group is open on this thread");
        return CC_ERR_INVALID_USAGE;
    }
    if (work) *work = NULL;
    if (--tl.depth > 0) return CC_OK;
    struct held *list = tl.comms;
    int n = tl.ncomms;
    tl.comms = NULL;
    tl.ncomms = tl.cap = 0;
    cc_status_t st = cc__v_opts(opts, "cc_group_end");
    if (st == CC_OK && n > 1 && work) {
        cc_log_error(CC_SUBSYS_CORE,
                     "cc_group_end: the group holds ops of %d communicators; a work "
                     "handle covers one (pass work = NULL to wait for all)",
                     n);
        st = CC_ERR_INVALID_USAGE;
    }
    if (st != CC_OK)
        for (int i = 0; i < n; i++)
            end_members(list[i].g, st);
    else if (n == 1)
        st = issue(&list[0], opts, work);
    else if (n > 1)
        st = issue_all(list, n, opts);
    free(list);
    return st;
}
