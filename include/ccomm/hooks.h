/*
 * ccomm/hooks.h - the pre, start, post and abort hook chains.
 *
 * Every operation passes one door: validate -> identity -> PRE chain ->
 * engine -> START chain when it starts moving -> POST chain when it
 * completes (well or badly); the WAIT chain runs when a caller waits on a
 * work handle. When a communicator can no longer make
 * progress (timeout, peer lost, explicit abort, fatal signal) its ABORT chain
 * runs before its pending ops fail. ccomm's clog logger and tracepoints are
 * hooks on these same chains; its flight recorder is called by the door
 * itself at the same points, before the chains (its abort hook is on the
 * ABORT chain), and takes none of the CC_HOOK_SUBSCRIBERS slots.
 *
 * A hook is added for one communicator or for all communicators (comm NULL,
 * including those created later). Chains are read without locks; adding and
 * removing is safe from any thread at any time, including while ops run.
 * When cc_hook_remove returns, the hook is not running and will not run
 * again, so its user data may be freed.
 *
 * Hooks run on the thread that moves the op (the caller's thread, a
 * communicator's progress thread or the watchdog), in the order they were
 * added, all-comm hooks before per-comm hooks. They must be quick. An op,
 * split, create_group or destroy of the communicator a hook runs for is
 * refused there with CC_ERR_INVALID_USAGE (it would run the hook again);
 * cc_comm_abort is allowed and fails the communicator at once.
 *
 * A subscriber (cc_hook_add_subscriber) is one registration for a whole
 * op: its pre callback may set a per-op token, which is handed back to its
 * own start, post and wait calls for that op (as NCCL's profiler plugin
 * gets back the event handle of its startEvent), never to another hook.
 */
#ifndef CCOMM_HOOKS_H
#define CCOMM_HOOKS_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a hook sees of an operation. Borrowed for the duration of the hook. */
typedef struct cc_op_info {
    uint64_t op_id;          /* process-wide, from 1, shared by all comms */
    cc_comm_t *comm;         /* the communicator (borrowed; for cc_comm_* getters) */
    uint64_t comm_id;        /* the communicator's id, equal on all its ranks */
    const char *comm_name;   /* e.g. "world", "world.1" */
    int rank;                /* caller's rank in the comm */
    int size;                /* ranks in the comm */
    cc_op_type_t type;       /* CC_OP_ALLREDUCE, CC_OP_SEND, CC_OP_COMM_INIT, ... */
    uint64_t coll_seq;       /* per-comm collective number from 1; 0 for p2p/lifecycle */
    uint64_t p2p_seq;        /* per-(comm, peer) number from 1; 0 for collectives */
    int root;                /* root rank, -1 where none */
    int peer;                /* peer rank of send/recv, -1 where none */
    int tag;                 /* p2p tag */
    cc_dtype_t dtype;        /* CC_DTYPE_COUNT where none */
    cc_redop_t redop;        /* CC_REDOP_COUNT where none */
    size_t in_count;         /* elements this rank contributes (sum for v-collectives) */
    size_t out_count;        /* elements this rank receives (sum for v-collectives) */
    size_t bytes;            /* bytes of the larger of input and output */
    const void *sendbuf;     /* caller's buffers (NULL where none) */
    void *recvbuf;
    int64_t timeout_ms;      /* deadline of the op */
    int device;              /* CC_DEVICE_CPU or CUDA ordinal */
    uint64_t t_enqueue_ns;   /* CLOCK_MONOTONIC times; 0 = not reached */
    uint64_t t_start_ns;
    uint64_t t_end_ns;
    cc_status_t status;      /* POST: the op's result; otherwise CC_INPROGRESS */
    const char *engine;      /* "native", "nccl" */
    const char *algorithm;   /* set by the engine once chosen, else NULL */
    const char *transport;   /* "shm", "tcp", "mixed", or NULL */
    uint64_t parent_comm_id; /* COMM_INIT of a split/group child: the parent's id, else 0 */
    uint32_t flags;          /* CC_OP_INFO_* */
} cc_op_info_t;

/*
 * cc_op_info_t.flags.
 * CC_OP_INFO_STARTS_AT_ONCE: set before PRE on an op that will start on the
 * calling thread right after the PRE chain (a blocking op of the native
 * engine with nothing queued on its communicator), unless a PRE hook vetoes
 * it or the communicator is aborted first. A subscriber may then write what
 * it records at PRE together with its START (clog writes one record for
 * both). Calls on a communicator are serial (ccomm/comm.h); where that rule is
 * broken the op may still be queued, and it starts later.
 */
#define CC_OP_INFO_STARTS_AT_ONCE 0x1u

/* What an abort hook sees. Borrowed for the duration of the hook. */
typedef struct cc_abort_info {
    cc_comm_t *comm;            /* borrowed */
    uint64_t comm_id;
    const char *comm_name;
    int rank;
    int size;
    cc_status_t reason;         /* CC_ERR_TIMEOUT, CC_ERR_PEER_LOST, CC_ERR_ABORTED, ... */
    const char *message;        /* the cause in words, never NULL; a timeout or lost peer
                                 * says whom the op waited for where the engine knows:
                                 * "timed out; rank 0 was waiting for rank 2 (comm rank 2,
                                 * world rank 2)" */
    const cc_op_info_t *op;     /* the op that timed out or failed, or NULL */
    int signal;                 /* the fatal signal on the signal path, else 0 */
} cc_abort_info_t;

/* PRE: return CC_OK to let the op go, anything else to veto it. A vetoed op
 * is not enqueued; the POST chain still runs with the veto status so every
 * subscriber that saw PRE sees an end; the call returns the veto status. */
typedef cc_status_t (*cc_pre_hook_fn)(const cc_op_info_t *op, void *user);
/* START and POST. POST runs once per op, on completion, with status and times. */
typedef void (*cc_op_hook_fn)(const cc_op_info_t *op, void *user);
/* ABORT. */
typedef void (*cc_abort_hook_fn)(const cc_abort_info_t *info, void *user);

/* Hook flags. */
#define CC_HOOK_SIGNAL_SAFE 0x1u /* abort hook uses only async-signal-safe calls and
                                    may run from the fatal-signal handler */

/* A hook's handle: nonzero, never reused in the life of the process. */
typedef uint64_t cc_hook_handle_t;

/*
 * cc_hook_add_{pre,start,post,abort} - add a hook.
 *   comm   the communicator, or NULL for all communicators (now and later)
 *   fn     the hook (must not be NULL)
 *   user   passed back to fn (borrowed until the hook is removed)
 *   flags  0 or CC_HOOK_SIGNAL_SAFE (abort hooks only)
 *   handle out: the hook's handle, for cc_hook_remove
 * Returns CC_OK, CC_ERR_INVALID_ARG (fn or handle NULL, comm invalid, bad
 * flags), CC_ERR_INVALID_USAGE (called from inside a hook), CC_ERR_NO_MEMORY.
 * A hook of a communicator goes away with it.
 * Thread safety: any thread, any time, except from inside a hook.
 */
CC_API cc_status_t cc_hook_add_pre(cc_comm_t *comm, cc_pre_hook_fn fn, void *user, unsigned flags,
                                   cc_hook_handle_t *handle);
CC_API cc_status_t cc_hook_add_start(cc_comm_t *comm, cc_op_hook_fn fn, void *user,
                                     unsigned flags, cc_hook_handle_t *handle);
CC_API cc_status_t cc_hook_add_post(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                                    cc_hook_handle_t *handle);
/* WAIT: runs when the caller starts waiting on an op's work handle
 * (cc_work_wait), on the caller's thread, before it blocks. */
CC_API cc_status_t cc_hook_add_wait(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                                    cc_hook_handle_t *handle);
CC_API cc_status_t cc_hook_add_abort(cc_comm_t *comm, cc_abort_hook_fn fn, void *user,
                                     unsigned flags, cc_hook_handle_t *handle);

/*
 * Subscribers: one registration with a per-op token.
 *
 * For each op, the subscriber's pre runs first (in chain order, like a PRE
 * hook; it may veto) with *token = NULL; what it leaves in *token is this
 * op's token, and it is passed to this subscriber's start, post and wait
 * calls of the same op, and to no other hook's. Contract:
 *   - post runs exactly once for every op whose pre this subscriber ran,
 *     also when its own or a later pre vetoed the op (status = the veto),
 *     and for group members (each is an op: its own pre and post);
 *     start runs at most once per op, wait each time a caller starts
 *     waiting on its pending work handle, each only for such an op;
 *   - none of them runs for an op whose pre it did not run (an op that
 *     passed PRE before the subscriber was added, or that an earlier hook
 *     vetoed), so a token is never made up;
 *   - once cc_hook_remove returns, none of them runs again: the posts of
 *     ops still in flight are lost, so a token that owns memory must be
 *     reachable from `user` too and freed with it;
 *   - wait runs on the waiting thread and may overlap or follow post on
 *     another: free a token in post only if wait does not use it.
 * Any callback may be NULL (pre NULL: the token stays NULL). abort has no
 * token: it is the comm's event, not an op's.
 *
 * A process runs at most CC_HOOK_SUBSCRIBERS subscribers on one comm's ops
 * (those for all comms and those for that comm together); ccomm's flight
 * recorder is one of them while it is on.
 */
#define CC_HOOK_SUBSCRIBERS 8

typedef cc_status_t (*cc_sub_pre_fn)(const cc_op_info_t *op, void *user, void **token);
typedef void (*cc_sub_op_fn)(const cc_op_info_t *op, void *user, void *token);

typedef struct cc_subscriber {
    cc_sub_pre_fn pre;      /* as a PRE hook, and sets *token */
    cc_sub_op_fn start;     /* as START, POST and WAIT hooks, with the token */
    cc_sub_op_fn post;
    cc_sub_op_fn wait;
    cc_abort_hook_fn abort; /* as an ABORT hook (CC_HOOK_SIGNAL_SAFE applies to it) */
} cc_subscriber_t;

/*
 * cc_hook_add_subscriber - add a subscriber (copied; `sub` may be freed).
 *   comm, user, handle  as for cc_hook_add_pre; one handle removes it all
 *   flags  0 or CC_HOOK_SIGNAL_SAFE (needs an abort callback)
 * Returns CC_OK, CC_ERR_INVALID_ARG (sub or handle NULL, no callback at all,
 * comm invalid, bad flags), CC_ERR_BUSY (CC_HOOK_SUBSCRIBERS already run on
 * that comm's ops), CC_ERR_INVALID_USAGE (from inside a hook),
 * CC_ERR_NO_MEMORY. Thread safety: as cc_hook_add_pre.
 */
CC_API cc_status_t cc_hook_add_subscriber(cc_comm_t *comm, const cc_subscriber_t *sub, void *user,
                                          unsigned flags, cc_hook_handle_t *handle);

/*
 * cc_hook_remove - remove a hook (or a whole subscriber). When it returns, the hook is not running
 * on any thread and will not run again. Idempotent: CC_OK the first time,
 * CC_ERR_NOT_FOUND for a handle already removed (or never issued),
 * CC_ERR_INVALID_USAGE from inside a hook (it would wait for itself).
 * Thread safety: any thread.
 */
CC_API cc_status_t cc_hook_remove(cc_hook_handle_t handle);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_HOOKS_H */
