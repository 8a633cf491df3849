/*
 * ccomm/window.h - one-sided communication (RMA) through registered
 * windows: a rank writes into (put) or reads from (get) a region another
 * rank registered, and tells it with a counted signal, without the target
 * issuing a matching operation.
 *
 * Transports today: ranks of one host over shared memory only. A put or a
 * get is one process_vm_writev/readv (cross-memory attach, single copy)
 * between the caller's buffer and the peer's registered region; signals
 * are 64-bit counters, one per (window, target, sender), in a small
 * shared segment per window (0600 file in the per-user shm dir, unlinked
 * once every rank mapped it). A communicator with a peer over TCP gets
 * CC_ERR_NOT_SUPPORTED from cc_window_create, naming the peer and its
 * transport; so does one whose ranks may not read each other's memory
 * (ptrace scope, another user). TCP (a target-side progress path) and
 * CUDA IPC windows are not implemented yet.
 *
 * Ordering: a put has completed when it returns (process_vm_writev
 * returns after the bytes are in the target's memory), and a signal is a
 * release fence, then an atomic add on the target's counter for this
 * sender. So every put a rank issued to a peer before a signal, in program
 * order on one thread, is visible to that peer once its cc_window_wait_signal
 * for that signal returned. cc_window_flush has nothing left to wait for
 * on this transport and returns CC_OK; call it anyway where a later
 * transport may queue puts.
 *
 * Every window op passes the op door like a collective: it is numbered
 * (op_id; no coll_seq or p2p_seq: the target issues nothing to match),
 * seen by the hooks and recorded by the flight recorder with its type
 * ("window_put", ...), its peer, in_count = bytes moved (the count waited
 * for by wait_signal), out_count = the target offset, and its timings.
 * Create and destroy are lifecycle events ("window_create",
 * "window_destroy").
 *
 * Threads: ops on one window, like ops on its communicator, are issued by
 * one thread at a time. A window must be destroyed before its
 * communicator.
 */
#ifndef CCOMM_WINDOW_H
#define CCOMM_WINDOW_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cc_window cc_window_t;

/* Creation options: start from CC_WINDOW_CONFIG_INIT. flags is reserved, must be 0. */
typedef struct cc_window_config {
    size_t struct_size; /* sizeof(cc_window_config_t) */
    unsigned flags;
} cc_window_config_t;

#define CC_WINDOW_CONFIG_INIT {sizeof(cc_window_config_t), 0u}

/*
 * cc_window_create - register [base, base + bytes) of this rank's memory
 * as its part of a new window over comm. Collective: every rank of comm
 * calls it, in the same order relative to its other windows; sizes may
 * differ per rank (0 with base NULL registers nothing). The memory stays
 * the caller's and must outlive the window.
 *   cfg  NULL for the defaults
 *   win  out: the new window
 * Returns CC_OK; CC_ERR_INVALID_ARG for a NULL win, a NULL base with
 * bytes > 0, bad cfg; CC_ERR_NOT_SUPPORTED when a peer is not on shared
 * memory or cannot be read by process_vm_readv (the message names it);
 * the error of the exchange (timeout, peer lost) otherwise.
 */
CC_API cc_status_t cc_window_create(cc_comm_t *comm, void *base, size_t bytes,
                                    const cc_window_config_t *cfg, cc_window_t **win);

/*
 * cc_window_put - copy bytes from src into peer's region at target_offset.
 * Complete (visible at the target) when it returns CC_OK, or when its work
 * handle completes. bytes 0 is a no-op that still passes the door. peer
 * must be another rank; target_offset + bytes must fit in the size peer
 * registered (CC_ERR_INVALID_ARG naming both, nothing written).
 */
CC_API cc_status_t cc_window_put(cc_window_t *win, const void *src, size_t bytes, int peer,
                                 size_t target_offset, const cc_op_opts_t *opts, cc_work_t **work);

/* cc_window_get - copy bytes from peer's region at target_offset into dst; rules as put. */
CC_API cc_status_t cc_window_get(cc_window_t *win, void *dst, size_t bytes, int peer,
                                 size_t target_offset, const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_window_signal - add 1 to peer's counter for this rank in this window,
 * after every earlier put of this thread to peer is visible, and wake
 * peer if it sleeps in cc_window_wait_signal.
 */
CC_API cc_status_t cc_window_signal(cc_window_t *win, int peer, const cc_op_opts_t *opts,
                                    cc_work_t **work);

/*
 * cc_window_wait_signal - wait until this rank's counter for signals from
 * peer reaches count (the total since the window was created: the n-th
 * signal is count n). Spins, yields, then sleeps on a futex; fails with
 * CC_ERR_TIMEOUT at the op's deadline (opts->timeout_ms, else the comm's)
 * and CC_ERR_PEER_LOST when peer's process died, naming peer and the count
 * it reached.
 */
CC_API cc_status_t cc_window_wait_signal(cc_window_t *win, int peer, uint64_t count,
                                         const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_window_flush - wait until every put and get of this rank to peer has
 * completed. Blocking; on shared memory they complete before they return,
 * so this returns CC_OK at once (after the same checks as put).
 */
CC_API cc_status_t cc_window_flush(cc_window_t *win, int peer, const cc_op_opts_t *opts);

/*
 * cc_window_destroy - end the window. Collective over its communicator's
 * ranks (a barrier: no peer writes into this rank's memory afterwards).
 * Returns the barrier's status; the window is gone whatever it returns. A
 * later call on the handle gets CC_ERR_INVALID_USAGE (the handle stays a
 * small tombstone so that it never points at freed memory).
 */
CC_API cc_status_t cc_window_destroy(cc_window_t *win);

#ifdef __cplusplus
}
#endif

#endif /* CCOMM_WINDOW_H */
