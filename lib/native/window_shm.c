/*
 * window_shm.c - the window ops on shared memory (window.h): put and get
 * as one process_vm_writev/readv each, signal as a release fence and an
 * atomic add on the target's counter for this rank followed by a futex
 * wake when the target sleeps, wait_signal with the transport's wait
 * policy (spin, yield, futex on this rank's bell) until the counter
 * reaches the count, the op's deadline, the engine's abort or the peer's
 * death. The door (lib/core/window_api.c) has checked peer, bounds and
 * the window before an op gets here.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "native/window.h"
#include "transport/arena.h"
#include "transport/shm.h"
#include "transport/transport.h"

/* Target t's line: bell, sleeping; then its counters by sender. */
struct win_line {
    _Atomic uint32_t bell;
    _Atomic uint32_t sleeping;
};

static struct win_line *line_of(const struct cc_window *w, int target)
{
    return (struct win_line *)((char *)w->seg + (size_t)target * w->block);
}

static _Atomic uint64_t *counter(const struct cc_window *w, int target, int sender)
{
    return (_Atomic uint64_t *)((char *)w->seg + (size_t)target * w->block + 64u) + sender;
}

/* One copy between this rank's buf and the peer's region. ESRCH: the peer is gone. */
static cc_status_t cma(cc__op_t *op, int write, void *buf)
{
    const struct cc_window *w = op->extra;
    int peer = op->info.peer;
    size_t len = op->info.bytes, done = 0;
    int e = cc__shm_cma(w->pids[peer], write, buf, w->bases[peer] + op->info.out_count, len, &done);
    if (!e) return CC_OK;
    op->waited_peer = peer;
    cc_log_error(CC_SUBSYS_SHM, "%s: process_vm_%s of %zu bytes at offset %llu of rank %d "
                 "(pid %d) failed after %zu bytes: %s",
                 cc_op_type_name(op->info.type), write ? "writev" : "readv", len,
                 (unsigned long long)op->info.out_count, peer, w->pids[peer], done, strerror(e));
    return e == ESRCH ? CC_ERR_PEER_LOST : CC_ERR_SYSTEM;
}

cc_status_t cc__win_put_cma(cc__native_t *nc, cc__op_t *op)
{
    (void)nc;
    return op->info.bytes ? cma(op, 1, (void *)(uintptr_t)op->info.sendbuf) : CC_OK;
}

cc_status_t cc__win_get_cma(cc__native_t *nc, cc__op_t *op)
{
    (void)nc;
    return op->info.bytes ? cma(op, 0, op->info.recvbuf) : CC_OK;
}

cc_status_t cc__win_signal_shm(cc__native_t *nc, cc__op_t *op)
{
    (void)nc;
    const struct cc_window *w = op->extra;
    int peer = op->info.peer;
    /* Earlier puts returned with their bytes in place; the release orders this thread's
     * earlier stores (and a get's reads) before the count the target acquires. */
    atomic_thread_fence(memory_order_release);
    atomic_fetch_add_explicit(counter(w, peer, w->rank), 1, memory_order_release);
    struct win_line *ln = line_of(w, peer);
    cc__fence(); /* count, then read `sleeping`: either it sees the count or we see the flag */
    if (atomic_load_explicit(&ln->sleeping, memory_order_relaxed)) {
        atomic_fetch_add(&ln->bell, 1);
        cc__futex_wake(&ln->bell);
    }
    return CC_OK;
}

struct wait_ctx {
    _Atomic uint64_t *ctr;
    uint64_t count;
};

static int reached(void *p)
{
    const struct wait_ctx *c = p;
    return atomic_load_explicit(c->ctr, memory_order_acquire) >= c->count;
}

/* Deadline, abort, or the peer's death (checked every check_ns); CC_OK to keep waiting. */
static cc_status_t stop_reason(cc__native_t *nc, cc__op_t *op, const struct wait_ctx *c,
                               uint64_t now, uint64_t *next_check)
{
    const struct cc_window *w = op->extra;
    int peer = op->info.peer;
    cc_status_t st = CC_OK;
    int ab = atomic_load_explicit(&nc->abort_reason, memory_order_acquire);
    if (ab) {
        st = (cc_status_t)ab;
    } else if (now >= op->deadline_ns) {
        st = CC_ERR_TIMEOUT;
    } else if (now >= *next_check) {
        *next_check = now + nc->arena->check_ns;
        if (cc__peer_dead(-1, w->pids[peer])) st = CC_ERR_PEER_LOST;
    }
    if (st == CC_OK) return st;
    op->waited_peer = peer;
    cc_log_error(CC_SUBSYS_SHM, "window_wait_signal: rank %d waits for a signal from rank %d: %s "
                 "(count %llu of %llu)",
                 w->rank, peer, cc_status_name(st),
                 (unsigned long long)atomic_load(c->ctr), (unsigned long long)c->count);
    return st;
}

cc_status_t cc__win_wait_signal_shm(cc__native_t *nc, cc__op_t *op)
{
    const struct cc_window *w = op->extra;
    struct wait_ctx c = {counter(w, w->rank, op->info.peer), op->info.in_count};
    struct win_line *ln = line_of(w, w->rank);
    uint64_t t0 = cc__now_ns(), next_check = t0;
    for (;;) {
        if (reached(&c)) return CC_OK;
        uint64_t now = cc__now_ns();
        CC_CHECK(stop_reason(nc, op, &c, now, &next_check));
        switch (cc__wait_stage(now - t0, nc->arena->spin_ns, CC__YIELD_NS)) {
        case CC__WAIT_SPIN: cc__cpu_relax(); break;
        case CC__WAIT_YIELD: sched_yield(); break;
        default: {
            /* Wake for the deadline and the next liveness check, whichever is first. */
            uint64_t until = op->deadline_ns < next_check ? op->deadline_ns : next_check;
            cc__bell_sleep(&ln->bell, &ln->sleeping, reached, &c, until > now ? until - now : 1,
                           0);
        }
        }
    }
}

cc_status_t cc__win_flush_shm(cc__native_t *nc, cc__op_t *op)
{
    (void)nc;
    (void)op; /* every put and get completed before it returned */
    return CC_OK;
}
