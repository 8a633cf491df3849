/*
 * stress.h - ops whose every field is a function of op_id, so that a reader
 * can tell a consistent entry from a torn one by looking at it alone.
 */
#ifndef REC_STRESS_H
#define REC_STRESS_H

#include "rec_util.h"

static const char *const st_algos[4] = {"ring", "tree", "recursive_doubling", "direct"};
static const cc_status_t st_status[3] = {CC_OK, CC_ERR_TIMEOUT, CC_ERR_PEER_LOST};

/* Op number i (from 0) of writer t (from 0). */
static inline void stress_op(cc__op_t *op, int t, uint64_t i)
{
    uint64_t id = ((uint64_t)(t + 1) << 32) | i;
    rec_op(op, CC_OP_ALLREDUCE, 100 + (uint64_t)t, id, i + 1);
    op->info.in_count = id * 3 + 1;
    op->info.out_count = id ^ 0x5a5a;
    op->info.bytes = id * 7;
    op->info.t_enqueue_ns = id + 11;
    op->info.timeout_ms = (int64_t)(id & 0xffff);
}

static inline void stress_run(cc__op_t *op)
{
    uint64_t id = op->info.op_id;
    cc__recorder_pre(&op->info, &REC_ID(op));
    op->info.t_start_ns = id + 12;
    op->info.algorithm = st_algos[id % 4];
    cc__recorder_start(&op->info, REC_ID(op));
    op->info.t_end_ns = id + 13;
    op->info.status = st_status[id % 3];
    cc__recorder_post(&op->info, REC_ID(op));
}

/* NULL if `e` is one consistent state of its op, else what is wrong. */
static inline const char *stress_check(const cc__fr_entry_t *e)
{
    uint64_t id = e->op_id;
    int t = (int)(id >> 32) - 1;
    if (t < 0 || t > 63) return "op id";
    if (e->comm_id != 100 + (uint64_t)t || e->coll_seq != (id & 0xffffffffu) + 1) return "comm";
    if (e->in_count != id * 3 + 1 || e->out_count != (id ^ 0x5a5a) || e->bytes != id * 7)
        return "counts";
    if (e->t_enqueue_ns != id + 11 || e->timeout_ms != (int64_t)(id & 0xffff)) return "pre times";
    if (e->state == CC__FR_SCHEDULED)
        return (e->t_start_ns || e->t_end_ns || e->algorithm[0] || e->status != CC_INPROGRESS)
                   ? "scheduled with later fields"
                   : NULL;
    if (e->t_start_ns != id + 12 || strcmp(e->algorithm, st_algos[id % 4])) return "start";
    if (e->state == CC__FR_STARTED)
        return (e->t_end_ns || e->status != CC_INPROGRESS) ? "started with end fields" : NULL;
    if (e->t_end_ns != id + 13 || e->status != (int32_t)st_status[id % 3] ||
        e->state != cc__fr_state_of_status(e->status))
        return "end";
    return NULL;
}

#endif /* REC_STRESS_H */
