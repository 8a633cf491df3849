/*
 * group_batch.c - a group's sends and receives (cc_group_start ..
 * cc_group_end) as one op: post every receive, then every send, and wait
 * for all of them. Because nothing waits before everything is posted, any
 * set of transfers that matches across the ranks completes, whatever order
 * each rank listed them in. Each member then finishes with its own status
 * (its POST hooks run, its work handle completes), in the order listed.
 */
#include "engine/args.h"
#include "base/log.h"
#include "native/native.h"

static cc_status_t post(cc__native_t *nc, cc__op_t *m, cc__req_t *req)
{
    const cc_op_info_t *in = &m->info;
    if (in->type == CC_OP_SEND)
        return cc__net_isend(nc->net, in->peer, (uint32_t)in->tag, in->sendbuf, in->bytes, req);
    return cc__net_irecv(nc->net, in->peer, (uint32_t)in->tag, in->recvbuf, in->bytes, req);
}

cc_status_t cc__group_batch(cc__native_t *nc, cc__op_t *op)
{
    cc__group_args_t *g = op->owned;
    cc__req_t *rq = cc__native_reqs(nc, g->n ? g->n : 1);
    if (!rq) return CC_ERR_NO_MEMORY;
    for (int i = 0; i < g->n; i++) {
        cc__op_t *m = g->members[i];
        m->info.algorithm = "batch";
        m->info.transport = cc__net_transport(nc->net, m->info.peer);
        cc__op_started(m);
    }
    /* Receives first: a message that arrives then lands in place, not in a held copy. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < g->n; i++) {
            cc__op_t *m = g->members[i];
            if ((m->info.type == CC_OP_SEND) != pass) continue;
            cc_status_t st = post(nc, m, &rq[i]);
            if (st != CC_OK && rq[i].kind == 0)
                rq[i].status = st; /* refused before it was posted */
        }
    cc_status_t st = cc__native_wait(nc, rq, g->n, op->deadline_ns);
    if (st == CC_ERR_TIMEOUT) cc__native_settle(nc, st); /* every request now has its end */
    for (int i = 0; i < g->n; i++) {
        cc_status_t ms = rq[i].status == CC_INPROGRESS ? st : rq[i].status;
        cc__op_member_finished(g->members[i], ms);
        g->ended[i] = 1;
        if (ms != CC_OK && st == CC_OK) st = ms;
    }
    return st;
}
