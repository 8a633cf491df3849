/*
 * work.c - work handles of asynchronous ops: test, wait, free.
 *
 * cc_work_wait(-1) waits for the op's own deadline plus the engine grace
 * (CC__ENGINE_GRACE_NS, engine/op.h): the engine enforces deadlines itself,
 * so passing the grace means the engine is stuck, and the communicator is
 * failed with CC_ERR_TIMEOUT rather than leaving the caller blocked forever.
 */
#include <stdlib.h>

#include "base/clock.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/work.h"

#define CC__WORK_MAGIC 0x63637772u /* "ccwr" */

struct cc_work {
    uint32_t magic;
    _Atomic int refs;
    _Atomic int user_freed; /* cc_work_free ran (a second call is refused) */
    cc__op_t op;
};

struct cc_work *cc__work_new(cc_comm_t *comm)
{
    /* Not zeroed: its op is written whole by the caller (cc__op_copy) right after. */
    struct cc_work *w = malloc(sizeof(*w));
    if (!w) {
        cc_log_error(CC_SUBSYS_CORE, "out of memory for a work handle on communicator %s",
                     comm->name);
        return NULL;
    }
    w->magic = CC__WORK_MAGIC;
    atomic_init(&w->refs, 2);
    atomic_init(&w->user_freed, 0);
    return w;
}

cc__op_t *cc__work_op(struct cc_work *work)
{
    return &work->op;
}

void cc__work_unref(struct cc_work *work)
{
    if (atomic_fetch_sub(&work->refs, 1) == 1) {
        work->magic = 0;
        free(work);
    }
}

void cc__work_discard(struct cc_work *work)
{
    work->magic = 0;
    free(work);
}

static int valid(const cc_work_t *w, const char *fn)
{
    if (w && w->magic == CC__WORK_MAGIC && !atomic_load(&w->user_freed)) return 1;
    cc_log_error(CC_SUBSYS_CORE, "%s: work %p is not a valid work handle (NULL or freed)", fn,
                 (const void *)w);
    return 0;
}

cc_status_t cc_work_test(cc_work_t *work, int *done)
{
    if (!valid(work, "cc_work_test")) return CC_ERR_INVALID_ARG;
    if (!done) {
        cc_log_error(CC_SUBSYS_CORE, "cc_work_test: done is NULL");
        return CC_ERR_INVALID_ARG;
    }
    int d = atomic_load_explicit(&work->op.done, memory_order_acquire) == 1;
    *done = d;
    return d ? work->op.info.status : CC_OK;
}

cc_status_t cc_work_wait(cc_work_t *work, int64_t timeout_ms)
{
    if (!valid(work, "cc_work_wait")) return CC_ERR_INVALID_ARG;
    cc__op_t *op = &work->op;
    if (atomic_load_explicit(&op->done, memory_order_acquire) == 1) return op->info.status;
    cc__hooks_run_op(CC__HOOK_WAIT, &op->comm->hooks, &op->info, &op->tokens);
    cc_status_t st = timeout_ms < 0 ? cc__op_wait_engine(op)
                                    : cc__op_wait_done(op, cc__deadline_after_ms(timeout_ms));
    if (st == CC_OK) return op->info.status;
    if (timeout_ms >= 0) return CC_ERR_TIMEOUT; /* the caller's wait ended, the op goes on */
    cc__comm_fail(op->comm, CC_ERR_TIMEOUT, op, "op passed its deadline and the engine did not end it");
    if (cc__op_wait_done(op, cc__now_ns() + CC__ENGINE_GRACE_NS) == CC_OK) return op->info.status;
    return CC_ERR_TIMEOUT;
}

uint64_t cc_work_op_id(const cc_work_t *work)
{
    return work && work->magic == CC__WORK_MAGIC ? work->op.info.op_id : 0;
}

cc_status_t cc_work_info(const cc_work_t *work, cc_op_info_t *info)
{
    if (!valid(work, "cc_work_info")) return CC_ERR_INVALID_ARG;
    if (!info) {
        cc_log_error(CC_SUBSYS_CORE, "cc_work_info: info is NULL");
        return CC_ERR_INVALID_ARG;
    }
    /* The acquire pairs with the engine's release of done: a finished op's status and end
     * time are visible. */
    (void)atomic_load_explicit(&work->op.done, memory_order_acquire);
    *info = work->op.info;
    return CC_OK;
}

void cc_work_free(cc_work_t *work)
{
    if (!work) return;
    if (!valid(work, "cc_work_free")) return;
    if (atomic_exchange(&work->user_freed, 1)) {
        cc_log_error(CC_SUBSYS_CORE, "cc_work_free: work %p (op %llu) freed twice", (void *)work,
                     (unsigned long long)work->op.info.op_id);
        return;
    }
    cc__work_unref(work);
}
