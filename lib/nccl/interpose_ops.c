/*
 * interpose_ops.c - the interposer's operations: NCCL's collective and
 * point-to-point entry points, their passage through the door, and the
 * shadow engine's submit (see interpose.h).
 *
 * Outside a group, submit records a GPU event, makes the real call,
 * records a second event, and hands the op to the tracker. Inside
 * ncclGroupStart/End NCCL launches nothing until the outermost
 * ncclGroupEnd, so the members' events are recorded around that call
 * instead: each member then starts and ends with the group, as on the GPU.
 */
#include <stdlib.h>
#include <string.h>

#include "ccomm/ccomm.h"
#include "cuda/cudart.h"
#include "cuda/gputime.h"
#include "cuda/shim.h"
#include "nccl/interpose.h"
#include "base/log.h"

#define GROUP_MAX 1024 /* members tracked per group; more pass unrecorded (logged) */

typedef struct member {
    cc__op_t *op; /* the tracker's copy */
    ix_comm_t *ix;
    void *stream;
} member_t;

static __thread int t_depth;
static __thread member_t t_members[GROUP_MAX];
static __thread int t_nmembers;

int ix_group_depth(void)
{
    return t_depth;
}

ncclResult_t ix_forward(const ix_call_t *c)
{
    const cc__nccl_lib_t *l = ix_state()->lib;
    switch (c->fn) {
    case IX_ALLREDUCE:
        return l->AllReduce(c->s, c->r, c->n, c->t, c->op, c->nc, c->stream);
    case IX_BROADCAST:
        return l->Broadcast(c->s, c->r, c->n, c->t, c->root, c->nc, c->stream);
    case IX_REDUCE:
        return l->Reduce ? l->Reduce(c->s, c->r, c->n, c->t, c->op, c->root, c->nc, c->stream)
                         : ncclInvalidUsage;
    case IX_ALLGATHER:
        return l->AllGather ? l->AllGather(c->s, c->r, c->n, c->t, c->nc, c->stream)
                            : ncclInvalidUsage;
    case IX_REDUCE_SCATTER:
        return l->ReduceScatter ? l->ReduceScatter(c->s, c->r, c->n, c->t, c->op, c->nc, c->stream)
                                : ncclInvalidUsage;
    case IX_ALLTOALL:
        return l->AlltoAll ? l->AlltoAll(c->s, c->r, c->n, c->t, c->nc, c->stream)
                           : ncclInvalidUsage;
    case IX_GATHER:
        return l->Gather ? l->Gather(c->s, c->r, c->n, c->t, c->root, c->nc, c->stream)
                         : ncclInvalidUsage;
    case IX_SCATTER:
        return l->Scatter ? l->Scatter(c->s, c->r, c->n, c->t, c->root, c->nc, c->stream)
                          : ncclInvalidUsage;
    case IX_SEND:
        return l->Send(c->s, c->n, c->t, c->root, c->nc, c->stream);
    case IX_RECV:
        return l->Recv(c->r, c->n, c->t, c->root, c->nc, c->stream);
    default:
        return ncclInternalError;
    }
}

/* What hooks and the recorder see of the call. */
static void describe(const ix_comm_t *ix, const ix_call_t *c, cc__op_t *op)
{
    static const cc_op_type_t types[] = {
        CC_OP_ALLREDUCE, CC_OP_BROADCAST, CC_OP_REDUCE,  CC_OP_ALLGATHER, CC_OP_REDUCE_SCATTER,
        CC_OP_ALLTOALL,  CC_OP_GATHER,    CC_OP_SCATTER, CC_OP_SEND,      CC_OP_RECV};
    cc__core->op_prepare(op, ix->cc, types[c->fn]);
    cc_op_info_t *i = &op->info;
    size_t n = c->n, all = c->n * (size_t)ix->size;
    int is_root = ix->rank == c->root;
    i->dtype = cc__nccl_dtype_back(c->t);
    size_t es = i->dtype < CC_DTYPE_COUNT ? cc_dtype_size(i->dtype) : 1;
    i->sendbuf = c->s;
    i->recvbuf = c->r;
    switch (c->fn) {
    case IX_ALLREDUCE:
        i->in_count = i->out_count = n;
        break;
    case IX_BROADCAST:
    case IX_REDUCE:
        i->root = c->root, i->in_count = i->out_count = n;
        break;
    case IX_ALLGATHER:
        i->in_count = n, i->out_count = all;
        break;
    case IX_REDUCE_SCATTER:
        i->in_count = all, i->out_count = n;
        break;
    case IX_ALLTOALL:
        i->in_count = i->out_count = all;
        break;
    case IX_GATHER:
        i->root = c->root, i->in_count = n, i->out_count = is_root ? all : 0;
        break;
    case IX_SCATTER:
        i->root = c->root, i->in_count = is_root ? all : 0, i->out_count = n;
        break;
    case IX_SEND:
        i->peer = c->root, i->in_count = n;
        break;
    case IX_RECV:
        i->peer = c->root, i->out_count = n;
        break;
    default:
        break;
    }
    if (c->fn == IX_ALLREDUCE || c->fn == IX_REDUCE || c->fn == IX_REDUCE_SCATTER)
        i->redop = cc__nccl_redop_back(c->op);
    i->bytes = (i->in_count > i->out_count ? i->in_count : i->out_count) * es;
    op->stream = c->stream;
    op->extra = c;
}

ncclResult_t ix_run(ix_call_t *c)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    ix_comm_t *ix = ix_lookup(c->nc);
    if (!ix) return ix_forward(c); /* not ours: untouched */
    if (atomic_load(&ix->aborted) != CC_OK) return ncclRemoteError;
    cc__op_t op;
    describe(ix, c, &op);
    cc__core->door_issue(&op, NULL, NULL);
    if (c->ran) return c->result;
    /* Refused before the call (a PRE hook's veto, a comm ccomm already failed). */
    return atomic_load(&ix->aborted) != CC_OK ? ncclRemoteError : ncclInvalidUsage;
}

/* Make the comm's device current for events (CUDA only); *prev: the one to restore, or -1. */
static void use_device(const ix_comm_t *ix, int *prev)
{
    int cur = -1;
    *prev = -1;
    if (ix_state()->gev != &cc__gev_cuda || cc__cudart->GetDevice(&cur) != 0 || cur == ix->device)
        return;
    if (cc__cudart->SetDevice(ix->device) == 0) *prev = cur;
}

static void restore_device(int prev)
{
    if (prev >= 0) cc__cudart->SetDevice(prev);
}

/* The real call, counted so an abort waits for it to leave NCCL. */
static void call_real(ix_comm_t *ix, ix_call_t *c, const cc__op_t *op)
{
    atomic_fetch_add(&ix->busy, 1);
    cc__gputime_enter(op);
    c->result = ix_forward(c);
    cc__gputime_leave();
    c->ran = 1;
    atomic_fetch_sub(&ix->busy, 1);
}

/* Record the op's events around a real call already made (groups) or to be made (c != NULL). */
static cc_status_t issue_tracked(ix_comm_t *ix, cc__op_t *t, ix_call_t *c)
{
    const cc__gev_ops_t *g = ix_state()->gev;
    void *ev[2] = {NULL, NULL};
    int prev;
    use_device(ix, &prev);
    cc_status_t st = g->take(ix->device, &ev[0]);
    if (st == CC_OK) st = g->take(ix->device, &ev[1]);
    if (st == CC_OK) st = g->record(ev[0], t->stream, ix->nc);
    if (c) call_real(ix, c, t);
    if (st == CC_OK) st = g->record(ev[1], t->stream, ix->nc);
    restore_device(prev);
    if (st == CC_OK && c && c->result != ncclSuccess && c->result != ncclInProgress)
        st = cc__nccl_status(c->result);
    if (st == CC_OK) st = cc__tracker_push(&ix->owner, t, 1, g, ix->device, ev[0], ev[1]);
    if (st != CC_OK) {
        g->give(ev[0]);
        g->give(ev[1]);
    }
    return st;
}

cc_status_t cc__ix_submit(void *state, cc__op_t *op)
{
    ix_comm_t *ix = state;
    ix_call_t *c = (ix_call_t *)op->extra;
    /* The door's op lives on the entry point's stack: the tracker gets a copy. */
    cc__op_t *t = cc__tracker_copy_op(op);
    if (t) {
        t->info.algorithm = "interposed";
        t->info.transport = "nccl";
    }
    if (t && t_depth > 0 && t_nmembers < GROUP_MAX) {
        call_real(ix, c, t);
        if (c->result == ncclSuccess || c->result == ncclInProgress) {
            t_members[t_nmembers++] = (member_t){t, ix, c->stream};
            return CC_OK;
        }
    } else if (t && t_depth == 0) {
        cc_status_t st = issue_tracked(ix, t, c);
        if (st == CC_OK) return CC_OK;
    } else if (!c->ran) {
        /* Out of memory or a full group: the program's call still happens, unfollowed. */
        cc_log_warn(CC_SUBSYS_NCCL, "nccl interposer: %s (op %llu) not followed on the GPU",
                    cc_op_type_name(op->info.type), (unsigned long long)op->info.op_id);
        call_real(ix, c, op);
        cc__tracker_free_copy(t);
        cc__op_finished(op, cc__nccl_status(c->result));
        return cc__nccl_status(c->result);
    }
    cc__tracker_free_copy(t);
    cc_status_t st = c->ran ? cc__nccl_status(c->result) : CC_ERR_INTERNAL;
    if (st == CC_OK) st = CC_ERR_INTERNAL; /* the events failed (logged) */
    cc__op_finished(op, st);
    return st;
}

/* ---- NCCL's entry points ------------------------------------------------------- */

#define RUN(...)                                                                                   \
    do {                                                                                           \
        ix_call_t c_ = {__VA_ARGS__};                                                              \
        return ix_run(&c_);                                                                        \
    } while (0)

IX_API ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t,
                                  ncclRedOp_t op, ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_ALLREDUCE, .s = s, .r = r, .n = n, .t = t, .op = op, .nc = comm, .stream = stream);
}

IX_API ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                                  ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_BROADCAST, .s = s, .r = r, .n = n, .t = t, .root = root, .nc = comm,
        .stream = stream);
}

IX_API ncclResult_t ncclBcast(void *buf, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                              void *stream)
{
    return ncclBroadcast(buf, buf, n, t, root, comm, stream);
}

IX_API ncclResult_t ncclReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               int root, ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_REDUCE, .s = s, .r = r, .n = n, .t = t, .op = op, .root = root, .nc = comm,
        .stream = stream);
}

IX_API ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t,
                                  ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_ALLGATHER, .s = s, .r = r, .n = n, .t = t, .nc = comm, .stream = stream);
}

IX_API ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t,
                                      ncclRedOp_t op, ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_REDUCE_SCATTER, .s = s, .r = r, .n = n, .t = t, .op = op, .nc = comm,
        .stream = stream);
}

IX_API ncclResult_t ncclAlltoAll(const void *s, void *r, size_t n, ncclDataType_t t,
                                 ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_ALLTOALL, .s = s, .r = r, .n = n, .t = t, .nc = comm, .stream = stream);
}

IX_API ncclResult_t ncclGather(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                               ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_GATHER, .s = s, .r = r, .n = n, .t = t, .root = root, .nc = comm,
        .stream = stream);
}

IX_API ncclResult_t ncclScatter(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                                ncclComm_t comm, void *stream)
{
    RUN(.fn = IX_SCATTER, .s = s, .r = r, .n = n, .t = t, .root = root, .nc = comm,
        .stream = stream);
}

IX_API ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                             void *stream)
{
    RUN(.fn = IX_SEND, .s = s, .n = n, .t = t, .root = peer, .nc = comm, .stream = stream);
}

IX_API ncclResult_t ncclRecv(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                             void *stream)
{
    RUN(.fn = IX_RECV, .r = r, .n = n, .t = t, .root = peer, .nc = comm, .stream = stream);
}

IX_API ncclResult_t ncclGroupStart(void)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    ncclResult_t r = s->lib->GroupStart();
    if (r == ncclSuccess) t_depth++;
    return r;
}

/* The outermost ncclGroupEnd launches the group: events around it for every member. */
IX_API ncclResult_t ncclGroupEnd(void)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    if (t_depth != 1 || t_nmembers == 0) {
        if (t_depth > 0) t_depth--;
        return s->lib->GroupEnd();
    }
    const cc__gev_ops_t *g = s->gev;
    int n = t_nmembers;
    void *ev[GROUP_MAX][2];
    for (int i = 0; i < n; i++) {
        member_t *m = &t_members[i];
        int prev;
        ev[i][0] = ev[i][1] = NULL;
        use_device(m->ix, &prev);
        if (g->take(m->ix->device, &ev[i][0]) != CC_OK || g->take(m->ix->device, &ev[i][1]) ||
            g->record(ev[i][0], m->stream, m->ix->nc) != CC_OK) {
            g->give(ev[i][0]);
            g->give(ev[i][1]);
            ev[i][0] = ev[i][1] = NULL;
        }
        restore_device(prev);
    }
    cc__gputime_enter(t_members[0].op);
    ncclResult_t r = s->lib->GroupEnd();
    cc__gputime_leave();
    t_depth = 0;
    t_nmembers = 0;
    for (int i = 0; i < n; i++) {
        member_t *m = &t_members[i];
        cc_status_t st = r == ncclSuccess || r == ncclInProgress ? CC_OK : cc__nccl_status(r);
        int prev;
        use_device(m->ix, &prev);
        if (st == CC_OK && !ev[i][0]) st = CC_ERR_INTERNAL;
        if (st == CC_OK) st = g->record(ev[i][1], m->stream, m->ix->nc);
        restore_device(prev);
        if (st == CC_OK)
            st = cc__tracker_push(&m->ix->owner, m->op, 1, g, m->ix->device, ev[i][0], ev[i][1]);
        if (st != CC_OK) {
            g->give(ev[i][0]);
            g->give(ev[i][1]);
            cc__op_finished(m->op, st);
            cc__tracker_free_copy(m->op);
        }
    }
    return r;
}
