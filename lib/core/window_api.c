/*
 * window_api.c - the public window calls (ccomm/window.h): validation
 * (door_validate.c), then the door like every op: create and destroy as
 * lifecycle events around the engine's collective setup and barrier (the
 * engine table's v3 entries, engine.h: lib/native/window.c, the CUDA
 * plugin's lib/cuda/cuda_window.c), put/get/signal/wait_signal/flush as
 * ops its submit runs. The core owns the handle (engine/window.h): it
 * allocates it, and keeps it as a tombstone once destroyed. Engines
 * without windows (a table older than v3, or none filled) get
 * CC_ERR_NOT_SUPPORTED naming the engine.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "core/door_validate.h"
#include "engine/window.h"

/* Destroyed windows: their handles stay valid (magic CC__WIN_DEAD). */
static _Atomic(struct cc_window *) g_dead;

struct create_args {
    const cc_engine_v3_t *e3;
    void *base;
    size_t bytes;
    cc_window_t **win;
};

/* Async ops still queued would use the net while the exchange does: drain them first. */
static cc_status_t quiesce(cc_comm_t *comm, uint64_t *deadline)
{
    *deadline = cc__deadline_after_ms(comm->timeout_ms);
    return comm->engine->drain(comm->engine_state, *deadline);
}

static cc_status_t do_create(cc_comm_t *comm, void *arg)
{
    struct create_args *a = arg;
    uint64_t deadline;
    CC_CHECK(quiesce(comm, &deadline));
    struct cc_window *w = calloc(1, sizeof(*w));
    if (!w) return CC_ERR_NO_MEMORY;
    w->comm = comm;
    w->rank = comm->rank;
    w->n = comm->size;
    cc_status_t st = a->e3->win_create(comm->engine_state, w, a->base, a->bytes, deadline);
    if (st != CC_OK) {
        free(w);
        return st;
    }
    w->magic = CC__WIN_LIVE;
    *a->win = w;
    return CC_OK;
}

cc_status_t cc_window_create(cc_comm_t *comm, void *base, size_t bytes,
                             const cc_window_config_t *cfg, cc_window_t **win)
{
    CC_CHECK(cc__validate_window_create(comm, base, bytes, cfg, win));
    *win = NULL;
    const cc_engine_v3_t *e3 = cc__engine_windows(comm->engine);
    if (!e3) {
        cc_log_error(CC_SUBSYS_CORE, "cc_window_create: communicator %s runs engine %s "
                     "(table version %u), which has no windows", comm->name, comm->engine->name,
                     comm->engine->version);
        return CC_ERR_NOT_SUPPORTED;
    }
    struct create_args a = {e3, base, bytes, win};
    return cc__door_lifecycle(comm, CC_OP_WIN_CREATE, 0, do_create, &a);
}

/* Kept reachable: a later call on the handle reads the tombstone, not freed memory. */
static void bury(struct cc_window *w)
{
    w->magic = CC__WIN_DEAD;
    w->comm = NULL;
    w->sizes = NULL;
    w->eng = NULL;
    struct cc_window *head = atomic_load(&g_dead);
    do {
        w->next = head;
    } while (!atomic_compare_exchange_weak(&g_dead, &head, w));
}

static cc_status_t do_destroy(cc_comm_t *comm, void *arg)
{
    struct cc_window *w = arg;
    uint64_t deadline;
    cc_status_t st = quiesce(comm, &deadline);
    /* Created through this table: the engine cannot have changed since. */
    const cc_engine_v3_t *e3 = cc__engine_windows(comm->engine);
    cc_status_t st2 = e3->win_destroy(comm->engine_state, w, deadline);
    bury(w);
    return st != CC_OK ? st : st2;
}

cc_status_t cc_window_destroy(cc_window_t *win)
{
    CC_CHECK(cc__validate_window_destroy(win));
    return cc__door_lifecycle(win->comm, CC_OP_WIN_DESTROY, 0, do_destroy, win);
}

/* Describe a window op: peer, bytes (in_count; wait's count), target offset (out_count). */
static cc_status_t issue(cc_window_t *win, cc_op_type_t type, const void *src, void *dst,
                         size_t bytes, int peer, size_t off, uint64_t count,
                         const cc_op_opts_t *opts, cc_work_t **work)
{
    cc__op_t op;
    cc__op_prepare(&op, win->comm, type);
    op.info.peer = peer;
    op.info.sendbuf = src;
    op.info.recvbuf = dst;
    op.info.bytes = bytes;
    op.info.dtype = bytes ? CC_UINT8 : CC_DTYPE_COUNT;
    op.info.in_count = type == CC_OP_WIN_WAIT_SIGNAL ? count : bytes;
    op.info.out_count = off;
    op.extra = win;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_window_put(cc_window_t *win, const void *src, size_t bytes, int peer,
                          size_t target_offset, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_window_op(win, src, bytes, peer, target_offset, opts, "cc_window_put"));
    return issue(win, CC_OP_WIN_PUT, src, NULL, bytes, peer, target_offset, 0, opts, work);
}

cc_status_t cc_window_get(cc_window_t *win, void *dst, size_t bytes, int peer,
                          size_t target_offset, const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_window_op(win, dst, bytes, peer, target_offset, opts, "cc_window_get"));
    return issue(win, CC_OP_WIN_GET, NULL, dst, bytes, peer, target_offset, 0, opts, work);
}

cc_status_t cc_window_signal(cc_window_t *win, int peer, const cc_op_opts_t *opts,
                             cc_work_t **work)
{
    CC_CHECK(cc__validate_window_op(win, NULL, 0, peer, 0, opts, "cc_window_signal"));
    return issue(win, CC_OP_WIN_SIGNAL, NULL, NULL, 0, peer, 0, 0, opts, work);
}

cc_status_t cc_window_wait_signal(cc_window_t *win, int peer, uint64_t count,
                                  const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_window_op(win, NULL, 0, peer, 0, opts, "cc_window_wait_signal"));
    return issue(win, CC_OP_WIN_WAIT_SIGNAL, NULL, NULL, 0, peer, 0, count, opts, work);
}

cc_status_t cc_window_flush(cc_window_t *win, int peer, const cc_op_opts_t *opts)
{
    CC_CHECK(cc__validate_window_op(win, NULL, 0, peer, 0, opts, "cc_window_flush"));
    return issue(win, CC_OP_WIN_FLUSH, NULL, NULL, 0, peer, 0, 0, opts, NULL);
}
