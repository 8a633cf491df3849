/*
 * door.c - the one door every operation passes.
 *
 *   validate (door_validate.c: each coll_api*.c entry point runs its
 *   cc__validate_<call> on the raw arguments, then builds the op)
 *   -> identity -> PRE -> engine -> START (cc__op_started) -> POST (cc__op_finished)
 *
 * At each transition the door calls the flight recorder itself, then runs
 * that transition's hook chain (clog, tracepoints, users' hooks). The
 * recorder is the one subscriber the door knows by name: a chain walk per
 * transition cost more than the whole record (docs/performance.md, "The
 * recorder off the chains").
 *
 * Lifecycle events (init, split, destroy, abort) pass the same chains with
 * an action in place of the engine. Nothing here locks, allocates, makes a
 * system call or formats on the path of a healthy op: ids are atomic
 * counters (bumped with plain stores while one thread writes, base/solo.h),
 * times come from the vDSO clock, and a blocking op lives on the caller's
 * stack.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "base/solo.h"
#include "core/work.h"
#include "recorder/recorder.h"

static _Atomic uint64_t g_op_id;

void cc__op_prepare(cc__op_t *op, cc_comm_t *comm, cc_op_type_t type)
{
    cc__op_zero(op);
    op->comm = comm;
    op->info.comm = comm;
    op->info.comm_id = comm->id;
    op->info.comm_name = comm->name;
    op->info.rank = comm->rank;
    op->info.size = comm->size;
    op->info.type = type;
    op->info.root = -1;
    op->info.peer = -1;
    op->waited_peer = -1;
    op->info.dtype = CC_DTYPE_COUNT;
    op->info.redop = CC_REDOP_COUNT;
    op->info.timeout_ms = comm->timeout_ms;
    op->info.device = comm->device;
    op->info.status = CC_INPROGRESS;
    op->info.engine = comm->engine ? comm->engine->name : NULL;
    op->premul_scalar = 1.0;
}

/* The process's next op id: a plain load and store while this thread is the only one that
 * writes (base/solo.h), else a locked add. */
static inline uint64_t next_op_id(void)
{
    uint64_t inside;
    if (cc__solo_enter(CC__SOLO_TAG_COUNTER, &inside)) {
        uint64_t id = atomic_load_explicit(&g_op_id, memory_order_relaxed) + 1;
        atomic_store_explicit(&g_op_id, id, memory_order_relaxed);
        cc__solo_leave();
        return id;
    }
    return atomic_fetch_add_explicit(&g_op_id, 1, memory_order_relaxed) + 1;
}

/* Number the op: op_id always; coll_seq or p2p_seq by class. */
static void assign_identity(cc__op_t *op)
{
    cc_comm_t *comm = op->comm;
    op->info.op_id = next_op_id();
    switch (op->info.type) {
#define CC__OPCLASS_CASE(name, s, cls)                                                             \
    case CC_OP_##name:                                                                             \
        CC__SEQ_##cls(op, comm);                                                                   \
        break;
#define CC__SEQ_COLL(op, comm) (op)->info.coll_seq = ++(comm)->coll_seq
#define CC__SEQ_P2P(op, comm)                                                                      \
    do {                                                                                           \
        if ((op)->info.peer >= 0) {                                                                \
            uint64_t *ctr = cc__op_is_recv((op)->info.type) ? (comm)->recv_seq : (comm)->send_seq; \
            (op)->info.p2p_seq = ++ctr[(op)->info.peer];                                           \
        }                                                                                          \
    } while (0)
#define CC__SEQ_LIFE(op, comm) (void)0
/* Window ops: the target issues nothing to match, so no p2p_seq (it would skew send/recv pairs). */
#define CC__SEQ_RMA(op, comm) (void)0
        CC_OP_TYPE_MAP(CC__OPCLASS_CASE)
#undef CC__OPCLASS_CASE
    default: break;
    }
}

int cc__op_is_recv(cc_op_type_t type)
{
    return type == CC_OP_RECV || type == CC_OP_RECV_BYTES;
}

void cc__op_started(cc__op_t *op)
{
    cc__op_started_at(op, 0);
}

void cc__op_record_pre(cc__op_t *op)
{
    if (!op->pre_held) return;
    op->pre_held = 0;
    cc__recorder_pre(&op->info, &op->rec_id);
}

void cc__op_started_at(cc__op_t *op, uint64_t t_ns)
{
    /* The compare-and-swap keeps a late START (a GPU event, a worker) from undoing an end
     * that another thread wrote. Only its own thread moves a caller-run op (native_submit):
     * a load and a store, not a locked instruction (14 % of a 16-byte shm broadcast's
     * samples at 2 ranks went to this function, perf record -e cpu-clock, 2026-12-08). */
    if (op->caller_runs) {
        if (atomic_load_explicit(&op->state, memory_order_relaxed) != CC__OP_SCHEDULED) return;
        atomic_store_explicit(&op->state, CC__OP_STARTED, memory_order_relaxed);
    } else {
        int expect = CC__OP_SCHEDULED;
        if (!atomic_compare_exchange_strong(&op->state, &expect, CC__OP_STARTED)) return;
    }
    op->info.t_start_ns = t_ns ? t_ns : cc__stamp_ns();
    if (op->pre_held) { /* PRE and START in one write of the entry: one slot lock less */
        op->pre_held = 0;
        cc__recorder_pre_start(&op->info, &op->rec_id);
    } else {
        cc__recorder_start(&op->info, op->rec_id);
    }
    cc__hooks_run_op(CC__HOOK_START, &op->comm->hooks, &op->info, &op->tokens);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Errors after the op was handed over leave the ranks out of step. */
static int is_fatal(cc_status_t st)
{
    return st < 0 && !CC_STATUS_IS_CALL_ERROR(st);
}

/* Give back what the op owns, once, whatever path ends it. */
static void release(cc__op_t *op, cc_status_t status)
{
    void (*fn)(cc__op_t *, cc_status_t) = op->release;
    op->release = NULL;
    if (fn) fn(op, status);
}

/* After this exchange a blocking caller may return and free the op.
 * Only a waiter that announced it sleeps (done == 2) costs a syscall. An op its engine
 * runs on the caller's thread has no waiter: a plain store (the exchange is a locked
 * instruction, 2.5-9 ns by bench/atomic_bench). */
static void wake_waiters(cc__op_t *op)
{
    struct cc_work *work = op->work;
    if (op->caller_runs)
        atomic_store_explicit(&op->done, 1, memory_order_release);
    else if (atomic_exchange_explicit(&op->done, 1, memory_order_acq_rel) == 2)
        futex_wake_all(&op->done);
    if (work) cc__work_unref(work);
}

void cc__op_finished(cc__op_t *op, cc_status_t status)
{
    cc__op_finished_at(op, status, 0);
}

void cc__op_finished_at(cc__op_t *op, cc_status_t status, uint64_t t_ns)
{
    cc_comm_t *comm = op->comm;
    release(op, status);
    op->info.t_end_ns = t_ns ? t_ns : cc__stamp_ns();
    op->info.status = status;
    /* Release, not seq_cst (an xchg on x86, 20 cycles an op): the state's only reader is
     * cc__op_started_at's CAS, which needs to see DONE, not what came before it. */
    atomic_store_explicit(&op->state, CC__OP_DONE, memory_order_release);
    /* An op run on the caller's thread ends where its comm's next op will be issued, with no
     * op of the comm on the engine's worker (native_submit): no locked add, as for ops_issued. */
    if (op->caller_runs)
        atomic_store_explicit(&comm->ops_done,
                              atomic_load_explicit(&comm->ops_done, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&comm->ops_done, 1, memory_order_relaxed);
    atomic_store_explicit(&comm->last_progress_ns, op->info.t_end_ns, memory_order_relaxed);
    cc__op_record_pre(op); /* an op that ended before it started */
    if (op->caller_runs) /* no other thread moves this comm's counts (native_submit) */
        cc__recorder_post_own(&op->info, op->rec_id);
    else
        cc__recorder_post(&op->info, op->rec_id);
    cc__hooks_run_op(CC__HOOK_POST, &comm->hooks, &op->info, &op->tokens);
    if (is_fatal(status) && status != CC_ERR_ABORTED)
        cc__comm_fail(comm, status, op, cc_status_str(status));
    wake_waiters(op);
}

void cc__op_member_finished(cc__op_t *op, cc_status_t status)
{
    op->info.t_end_ns = cc__stamp_ns();
    op->info.status = status;
    atomic_store_explicit(&op->state, CC__OP_DONE, memory_order_release);
    cc__op_record_pre(op);
    cc__recorder_post(&op->info, op->rec_id);
    cc__hooks_run_op(CC__HOOK_POST, &op->comm->hooks, &op->info, &op->tokens);
    wake_waiters(op);
}

/* A op that never reached the engine (veto, broken comm): end it here. */
static cc_status_t end_early(cc__op_t *op, cc_status_t status)
{
    release(op, status);
    op->info.t_end_ns = cc__stamp_ns();
    op->info.status = status;
    atomic_store_explicit(&op->state, CC__OP_DONE, memory_order_release);
    cc__op_record_pre(op);
    cc__recorder_post(&op->info, op->rec_id);
    cc__hooks_run_op(CC__HOOK_POST, &op->comm->hooks, &op->info, &op->tokens);
    return status;
}

cc_status_t cc__door_reentry(cc_comm_t *comm, cc_op_type_t type)
{
    if (!cc__hooks_running(&comm->hooks)) return CC_OK;
    cc_log_error(CC_SUBSYS_HOOKS,
                 "%s on communicator %s was called from inside one of its "
                 "hooks: refused (it would run the hook again, without end)",
                 cc_op_type_name(type), comm->name);
    return CC_ERR_INVALID_USAGE;
}

cc_status_t cc__door_admit(cc__op_t *op, const cc_op_opts_t *opts)
{
    if (opts && opts->timeout_ms > 0) op->info.timeout_ms = opts->timeout_ms;
    if (opts) op->stream = opts->stream;
    assign_identity(op);
    op->info.t_enqueue_ns = cc__stamp_ns();
    /* Saturates: a timeout too large for the clock (INT64_MAX ms) means no deadline. */
    op->deadline_ns = cc__deadline_from(op->info.t_enqueue_ns, op->info.timeout_ms);
    atomic_store_explicit(&op->state, CC__OP_SCHEDULED, memory_order_relaxed);
    if (op->pre_held)
        op->rec_id = 0; /* written by the op's START, or by whatever comes first */
    else
        cc__recorder_pre(&op->info, &op->rec_id);
    cc_status_t st = cc__hooks_run_pre(&op->comm->hooks, &op->info, &op->tokens);
    if (st != CC_OK) {
        cc_log_info(CC_SUBSYS_HOOKS, "%s (op %llu) vetoed by a pre hook: %s",
                    cc_op_type_name(op->info.type), (unsigned long long)op->info.op_id,
                    cc_status_name(st));
        end_early(op, st);
    }
    return st;
}

cc_status_t cc__door_issue(cc__op_t *tmpl, const cc_op_opts_t *opts, cc_work_t **work)
{
    cc_comm_t *comm = tmpl->comm;
    cc_status_t err = cc__door_reentry(comm, tmpl->info.type);
    if (err != CC_OK) {
        release(tmpl, err);
        return err;
    }
    err = (cc_status_t)atomic_load_explicit(&comm->error, memory_order_acquire);
    if (err != CC_OK) {
        cc_log_debug(CC_SUBSYS_CORE, "%s refused: communicator %s is broken (%s)",
                     cc_op_type_name(tmpl->info.type), comm->name, cc_status_name(err));
        release(tmpl, err);
        return err;
    }
    /* A blocking op runs in the caller's op itself (it lives until we return): no copy of
     * its 500 bytes. An async one moves into its work. */
    cc__op_t *op = tmpl;
    struct cc_work *w = NULL;
    if (work) {
        w = cc__work_new(comm);
        if (!w) {
            release(tmpl, CC_ERR_NO_MEMORY);
            return CC_ERR_NO_MEMORY;
        }
        op = cc__work_op(w);
        cc__op_copy(op, tmpl);
    }
    op->work = w;
    /* A blocking op of the native engine with nothing queued on its comm runs on this thread
     * at once (native_submit): its START follows its PRE by tens of nanoseconds, so the
     * recorder writes both in one update of the entry (docs/performance.md, "Night of
     * 2026-12-03"), and the hooks are told (clog writes its Q and S as one record). Should it
     * be queued after all (calls on the comm not serial), the engine writes the PRE alone
     * first (cc__op_record_pre). */
    op->pre_held =
        !w && comm->engine == &cc__native_engine && cc__native_runs_now(comm->engine_state);
    if (op->pre_held) op->info.flags |= CC_OP_INFO_STARTS_AT_ONCE;
    cc_status_t st = cc__door_admit(op, opts);
    if (st != CC_OK) {
        if (w) cc__work_discard(w);
        return st;
    }
    cc__log_set_comm(comm->name);
    /* Ops of a comm are issued one at a time (ccomm/comm.h): no locked add for the count. */
    atomic_store_explicit(&comm->ops_issued,
                          atomic_load_explicit(&comm->ops_issued, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&comm->last_progress_ns, op->info.t_enqueue_ns, memory_order_relaxed);
    st = comm->engine->submit(comm->engine_state, op);
    if (!w) return st;
    if (st != CC_OK) { /* refused by the engine before it was queued */
        atomic_fetch_add_explicit(&comm->ops_done, 1, memory_order_relaxed);
        end_early(op, st);
        cc__work_discard(w);
        return st;
    }
    *work = (cc_work_t *)w;
    return CC_OK;
}

cc_status_t cc__door_lifecycle(cc_comm_t *comm, cc_op_type_t type, uint64_t parent_id,
                               cc_status_t (*action)(cc_comm_t *comm, void *arg), void *arg)
{
    CC_CHECK(cc__door_reentry(comm, type));
    cc__op_t op;
    cc__op_prepare(&op, comm, type);
    op.info.parent_comm_id = parent_id;
    assign_identity(&op);
    op.info.t_enqueue_ns = cc__stamp_ns();
    atomic_store(&op.state, CC__OP_SCHEDULED);
    cc__recorder_pre(&op.info, &op.rec_id);
    cc_status_t st = cc__hooks_run_pre(&comm->hooks, &op.info, &op.tokens);
    if (st != CC_OK) return end_early(&op, st);
    cc__op_started(&op);
    st = action ? action(comm, arg) : CC_OK;
    if (comm->engine && comm->engine_state && comm->engine->transport)
        op.info.transport = comm->engine->transport(comm->engine_state);
    return end_early(&op, st);
}

/*
 * Wait for an op's done word (0 pending, 2 pending with a sleeper, 1 done):
 * spin briefly, then announce the sleep and wait on the futex, waking at
 * least every 100 ms to check the deadline.
 */
cc_status_t cc__op_wait_done(cc__op_t *op, uint64_t deadline_ns)
{
    for (int i = 0; i < 200; i++)
        if (atomic_load_explicit(&op->done, memory_order_acquire) == 1) return CC_OK;
    for (;;) {
        uint32_t v = 0;
        if (!atomic_compare_exchange_strong(&op->done, &v, 2) && v == 1) return CC_OK;
        uint64_t now = cc__now_ns();
        if (now >= deadline_ns) return CC_ERR_TIMEOUT;
        uint64_t left = deadline_ns - now;
        if (left > 100000000ull) left = 100000000ull;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        syscall(SYS_futex, (uint32_t *)&op->done, FUTEX_WAIT_PRIVATE, 2, &ts, NULL, 0);
    }
}

cc_status_t cc__op_wait_engine(cc__op_t *op)
{
    return cc__op_wait_done(op, cc__ns_add_sat(op->deadline_ns, CC__ENGINE_GRACE_NS));
}
