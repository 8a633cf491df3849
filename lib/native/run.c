/*
 * run.c - how the native engine runs an op once select.c has chosen its
 * algorithm: the START transition, the desync check, PREMUL_SUM's scaled
 * input, the algorithm, and the withdrawal of whatever a failed algorithm
 * left posted. engine.c calls cc__native_run for each op it takes;
 * algorithms that build sub-ops call cc__native_run_sub.
 */
#include "base/log.h"
#include "native/native.h"

/* Reductions take PREMUL_SUM's factor on a scaled copy of the input. */
static int scales_input(const cc__op_t *op)
{
    cc_op_type_t t = op->info.type;
    return op->info.redop == CC_PREMUL_SUM && op->info.in_count &&
           (t == CC_OP_ALLREDUCE || t == CC_OP_REDUCE || t == CC_OP_REDUCE_SCATTER ||
            t == CC_OP_REDUCE_SCATTERV);
}

static cc_status_t run_algo(cc__native_t *nc, cc__op_t *op, cc__algo_fn fn)
{
    const void *input = op->info.sendbuf;
    if (scales_input(op)) {
        size_t len = op->info.in_count * cc_dtype_size(op->info.dtype);
        void *s = cc__native_buf(nc, &nc->premul, &nc->premul_len, len);
        if (!s) return CC_ERR_NO_MEMORY;
        cc__kernel_scale(op->info.dtype, s, input, op->info.in_count, op->premul_scalar);
        op->info.sendbuf = s;
    }
    cc_status_t st = fn(nc, op);
    op->info.sendbuf = input;
    /* Whatever a failed algorithm left posted is withdrawn before its buffers go away. */
    if (st != CC_OK) cc__native_settle(nc, st);
    return st;
}

cc_status_t cc__native_run_sub(cc__native_t *nc, cc__op_t *sub)
{
    const char *algo;
    cc_status_t st;
    cc__algo_fn fn = cc__native_choose(nc, sub, &algo, NULL, &st);
    return fn ? run_algo(nc, sub, fn) : st;
}

/*
 * cc__native_choose, remembering the last choice: ops of one type, dtype and size in a row
 * (the common case: a training step's allreduces) skip the table's walk, its forced-name
 * checks and the config's look-ups, about half the engine's own cost of an 8-byte op.
 */
static cc__algo_fn choose(cc__native_t *nc, cc__op_t *op, unsigned *tpm, cc_status_t *st)
{
    const cc_op_info_t *in = &op->info;
    struct cc__native_choice *c = &nc->last;
    const char *forced = (unsigned)in->type < CC_OP_TYPE_COUNT ? nc->forced[in->type] : NULL;
    if (c->fn && c->type == in->type && c->dtype == in->dtype && c->bytes == in->bytes &&
        c->in_count == in->in_count && c->out_count == in->out_count && c->forced == forced) {
        op->info.algorithm = c->algo;
        *tpm = c->tpm;
        return c->fn;
    }
    cc__algo_fn fn = cc__native_choose(nc, op, &op->info.algorithm, tpm, st);
    if (fn)
        *c = (struct cc__native_choice){fn,           op->info.algorithm, forced,
                                        in->in_count, in->out_count,      in->bytes,
                                        in->type,     in->dtype,          *tpm};
    return fn;
}

void cc__native_start_pending(void *arg)
{
    cc__op_t *op = arg;
    if (!op->start_at_post) return;
    op->start_at_post = 0;
    cc__op_started_at(op, op->info.t_enqueue_ns);
}

cc_status_t cc__native_run(cc__native_t *nc, cc__op_t *op)
{
    cc_status_t st;
    unsigned tpm;
    cc__algo_fn fn = choose(nc, op, &tpm, &st);
    if (!fn) return st;
    op->info.transport =
        op->info.peer >= 0 ? cc__net_transport(nc->net, op->info.peer) : nc->transport;
    /* An op run on the caller's thread starts with nothing between the door and here but
     * this dispatch (tens of nanoseconds, no wait): its enqueue stamp is its start, one TSC
     * read (14 ns) less an op. An op the worker runs starts when the worker gets to it.
     * A shared-memory body on the caller's thread has its START written by the arena, just
     * after it publishes its arrival (transport/arena.h, on_post): the recorder's write and
     * the START hooks then run while the arrival travels to the peers, not before it leaves
     * (docs/performance.md, "START after the arrival"). Every wait of the arena
     * writes a pending START first, so no rank waits with its op unrecorded. */
    if (op->caller_runs && tpm == CC__TPM_SHM && !nc->desync_check)
        op->start_at_post = 1;
    else
        cc__op_started_at(op, op->caller_runs ? op->info.t_enqueue_ns : 0);
    if (nc->desync_check && op->info.coll_seq) CC_CHECK(cc__desync_check(nc, op));
    st = run_algo(nc, op, fn);
    cc__native_start_pending(op); /* a body that neither published nor waited (an error) */
    /* Failure path only: whom the op was waiting for, for the comm's abort message. */
    if ((st == CC_ERR_TIMEOUT || st == CC_ERR_PEER_LOST) && op->waited_peer < 0)
        op->waited_peer = cc__net_stuck_peer(nc->net);
    return st;
}
