/* gpu_submit.c - events around an op's GPU work, then the tracker (see gpu_submit.h). */
#include <stdlib.h>

#include "cuda/gputime.h"
#include "cuda/gpu_submit.h"
#include "base/log.h"

cc_status_t cc__gpu_refuse(cc__op_t *op, cc_status_t st)
{
    if (!op->work) cc__op_finished(op, st);
    return st;
}

cc_status_t cc__gpu_submit(const cc__gpu_sub_t *s, cc__op_t *op)
{
    cc__op_t *t = op->work ? op : cc__tracker_copy_op(op);
    if (!t) return cc__gpu_refuse(op, CC_ERR_NO_MEMORY);
    void *ev[2] = {NULL, NULL}, *stream = t->stream;
    cc_status_t st = s->gev->take(s->device, &ev[0]);
    if (st == CC_OK) st = s->gev->take(s->device, &ev[1]);
    if (st == CC_OK) st = s->gev->record(ev[0], stream, s->nc);
    if (st == CC_OK) {
        cc__gputime_enter(t);
        st = s->issue(s->ctx, t, stream);
        cc__gputime_leave();
    }
    if (st == CC_OK) st = s->gev->record(ev[1], stream, s->nc);
    if (st == CC_OK && s->settle) st = s->settle(s->ctx, t, stream);
    if (st == CC_OK) st = cc__tracker_push(s->owner, t, t != op, s->gev, s->device, ev[0], ev[1]);
    if (st == CC_OK) return CC_OK;
    s->gev->give(ev[0]);
    s->gev->give(ev[1]);
    if (t != op) cc__tracker_free_copy(t);
    return cc__gpu_refuse(op, st);
}
