/*
 * ccomm/window.h - one-sided communication (RMA) through registered
 * windows: a rank writes into (put) or reads from (get) a region another
 * rank registered, and tells it with a counted signal, without the target
 * issuing a matching operation.
 *
 * Transports. On a communicator whose ranks all share one host over
 * shared memory, a put or a get is one process_vm_writev/readv
 * (cross-memory attach, single copy) between the caller's buffer and the
 * peer's registered region; signals are 64-bit counters, one per (window,
 * target, sender), in a small shared segment per window (0600 file in the
 * per-user shm dir, unlinked once every rank mapped it). Such a
 * communicator whose ranks may not read each other's memory (ptrace scope,
 * another user) gets CC_ERR_NOT_SUPPORTED from cc_window_create. On a
 * communicator with any peer over TCP (CCOMM_TRANSPORT=tcp, ranks on
 * several hosts, or a mix of hosts and shm) every peer is served over TCP,
 * same-host peers too: one connection per ordered pair, made at creation
 * to a listener on the address the communicator's TCP transport uses, and
 * a progress thread per window at each rank that applies the requests of
 * its peers in the order each peer sent them (puts received straight into
 * the region, signals counted, gets and flushes answered), so the target
 * calls nothing while they land. On a device communicator of the native
 * CUDA engine, windows are device memory mapped through CUDA IPC, and the
 * ops are stream-ordered (docs/windows.md, "On CUDA devices"); other
 * engines get CC_ERR_NOT_SUPPORTED from cc_window_create.
 *
 * Completion and ordering. A put has completed at the origin when it
 * returns: the source buffer may be reused. On shared memory the bytes are
 * then in the target's memory; over TCP they may still be on the wire. A
 * signal is ordered after every put this thread issued to the same peer
 * before it: on shared memory by a release fence before the atomic add on
 * the target's counter for this sender, over TCP because the target's
 * thread counts it only after it received every earlier put of this origin
 * into place. So every put a rank issued to a peer before a signal, in
 * program order on one thread, is visible to that peer once its
 * cc_window_wait_signal for that signal returned. cc_window_flush(peer)
 * returns once every earlier put and get of this rank to peer has
 * completed at the peer (over TCP: the peer answered a flush request it
 * handles after everything sent before it); on shared memory there is
 * nothing left to wait for.
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
 * bytes > 0, bad cfg; CC_ERR_NOT_SUPPORTED when the ranks of an all-shm
 * communicator cannot read each other by process_vm_readv; CC_ERR_CONNECT
 * or CC_ERR_SYSTEM when the TCP connections of the window cannot be made
 * (the message names the peer); the error of the exchange (timeout, peer
 * lost) otherwise. Over TCP it starts one thread and opens 2 (n - 1)
 * sockets and one eventfd, released by cc_window_destroy.
 */
CC_API cc_status_t cc_window_create(cc_comm_t *comm, void *base, size_t bytes,
                                    const cc_window_config_t *cfg, cc_window_t **win);

/*
 * cc_window_put - copy bytes from src into peer's region at target_offset.
 * Complete when it returns CC_OK, or when its work handle completes: src
 * may be reused; the bytes are visible at the target then on shared
 * memory, and over TCP once a later signal was waited for by the target,
 * or once a later cc_window_flush to peer returned here and the target
 * learnt of it from this rank (a barrier, a message: the ordering then
 * comes from the sockets on that path, which ThreadSanitizer does not see
 * across processes, as it does not see another process's
 * process_vm_writev on shared memory). bytes 0 is a no-op that still passes the door. peer
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
 * and CC_ERR_PEER_LOST when peer's process died (over TCP: its connection
 * ended without the destroy's goodbye), naming peer and the count it
 * reached; CC_ERR_PROTOCOL over TCP when peer sent a request this rank
 * refused (out of its region: logged, the connection closed).
 */
CC_API cc_status_t cc_window_wait_signal(cc_window_t *win, int peer, uint64_t count,
                                         const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_window_flush - wait until every put and get of this rank to peer has
 * completed at peer (remote completion). Blocking; on shared memory they
 * complete before they return, so this returns CC_OK at once (after the
 * same checks as put); over TCP it is one round trip to peer's progress
 * thread. CC_ERR_TIMEOUT at the op's deadline, CC_ERR_PEER_LOST when peer
 * is gone.
 */
CC_API cc_status_t cc_window_flush(cc_window_t *win, int peer, const cc_op_opts_t *opts);

/*
 * cc_window_destroy - end the window. Collective over its communicator's
 * ranks (a barrier: no peer writes into this rank's memory afterwards;
 * over TCP, after the barrier, it also waits, to the comm's timeout, until
 * each peer's last request was applied here, then ends the progress
 * thread and closes the sockets).
 * Returns the barrier's status; the window is gone whatever it returns. A
 * later call on the handle gets CC_ERR_INVALID_USAGE (the handle stays a
 * small tombstone so that it never points at freed memory).
 */
CC_API cc_status_t cc_window_destroy(cc_window_t *win);

#ifdef __cplusplus
}
#endif

#endif /* CCOMM_WINDOW_H */
