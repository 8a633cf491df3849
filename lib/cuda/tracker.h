/*
 * tracker.h - the thread that watches GPU ops: one per process (per plugin
 * object), started on first use.
 *
 * An engine that enqueued an op on a stream between two GPU events hands
 * both to the tracker. The tracker looks at the events of the ops in flight
 * every CCOMM_GPU_POLL_US microseconds (and sleeps while there are none):
 *  - the start event completed: cc__op_started_at(op, its GPU time);
 *  - the end event completed: cc__op_finished_at(op, CC_OK, its GPU time);
 *  - the op passed its deadline: CC_ERR_TIMEOUT, which fails the comm (the
 *    ABORT chain, the job-wide dump, the engine's abort): a GPU op that
 *    never ends is a recorded timeout, not a silent hang;
 *  - its owner was aborted: the abort's status;
 *  - about every 10 ms per owner with ops in flight, the owner's error
 *    poll (ncclCommGetAsyncError); an error fails its comm.
 * Hooks run on the tracker thread, never under its lock.
 */
#ifndef CC_CUDA_TRACKER_H
#define CC_CUDA_TRACKER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "cuda/gev.h"
#include "engine/op.h"

/* One per engine communicator. Must outlive its ops (drain before freeing). */
typedef struct cc__track_owner {
    cc_comm_t *comm;          /* failed through the core on errors */
    const char *name;         /* for logs */
    _Atomic int inflight;     /* ops handed over and not yet finished */
    _Atomic int abort_reason; /* CC_OK while healthy */
    /* CC_OK, or the comm's asynchronous error with its cause in why. May be NULL. */
    cc_status_t (*poll_error)(void *arg, char *why, size_t len);
    void *poll_arg;
    uint64_t next_poll_ns; /* tracker thread only */
} cc__track_owner_t;

/*
 * Hand an op over. `op` is the engine's: a blocking op's copy (owned:
 * the tracker frees it after its POST) or an async op's work-held op (not
 * owned). The events go back to `gev` when the op ends. On error nothing
 * was taken over.
 */
cc_status_t cc__tracker_push(cc__track_owner_t *owner, cc__op_t *op, int owned,
                             const cc__gev_ops_t *gev, int device, void *ev_start, void *ev_end);

/* A heap copy of a blocking op (the door's lives on the caller's stack), or NULL; pushed
 * owned, it is freed with its POST; never pushed, free it with cc__tracker_free_copy. */
cc__op_t *cc__tracker_copy_op(const cc__op_t *op);
void cc__tracker_free_copy(cc__op_t *op);

/* Fail the owner's ops in flight with `reason` (first reason wins); wakes the tracker. */
void cc__tracker_abort(cc__track_owner_t *owner, cc_status_t reason);

/* Wait until the owner has no op in flight; CC_ERR_TIMEOUT (logged) at the deadline. */
cc_status_t cc__tracker_drain(cc__track_owner_t *owner, uint64_t deadline_ns);

#endif /* CC_CUDA_TRACKER_H */
