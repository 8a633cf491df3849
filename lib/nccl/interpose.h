/*
 * interpose.h - libccomm-nccl.so, the NCCL interposer (internal).
 *
 *   LD_PRELOAD=libccomm-nccl.so python train.py
 *
 * exports NCCL's communicator and collective entry points. Each call on a
 * communicator the interposer saw created is passed through ccomm's door
 * on a "shadow" ccomm communicator (same rank, size and members; its
 * engine forwards to the real NCCL, opened with dlopen from
 * CCOMM_NCCL_LIB): PRE hooks, the flight recorder ring, clog and
 * tracepoints see it with op_id and coll_seq / p2p_seq; GPU events around
 * it give START and POST from the GPU (tracker.h); the watchdog's timeout,
 * coordinated dump and abort apply (a GPU op that never ends aborts the
 * real communicator; the program's later calls on it fail cleanly with
 * ncclRemoteError). Calls on communicators it did not see created, and
 * every NCCL function it does not export, go to the real NCCL untouched.
 *
 * The shadow communicator's id is a hash of the NCCL unique id (equal on
 * every member); its members' world ranks are exchanged through ccomm's
 * store when the launcher gave one (torchrun, ccrun, Slurm, MPI: see
 * cc_core_t.world_attach), else only this rank's is known.
 */
#ifndef CC_NCCL_INTERPOSE_H
#define CC_NCCL_INTERPOSE_H

#include <stdatomic.h>

#include "cuda/gev.h"
#include "cuda/tracker.h"
#include "nccl/nccl_lib.h"

#define IX_API __attribute__((visibility("default")))

/* One real NCCL communicator and its shadow. */
typedef struct ix_comm {
    ncclComm_t nc; /* the program's (real) communicator */
    cc_comm_t *cc; /* its shadow; NULL when it could not be made (pass-through) */
    uint64_t id;   /* the shadow's id */
    int rank, size, device;
    uint64_t splits; /* ncclCommSplit calls on it (child ids) */
    cc__track_owner_t owner;
    _Atomic int aborted; /* CC_OK, or why the real communicator was aborted */
    _Atomic int busy;    /* threads inside real calls on nc (abort waits for them) */
} ix_comm_t;

/* A real NCCL call, held by the entry point while the door runs it. */
typedef struct ix_call {
    int fn; /* enum ix_fn */
    const void *s;
    void *r;
    size_t n;
    ncclDataType_t t;
    ncclRedOp_t op;
    int root; /* root or peer */
    ncclComm_t nc;
    void *stream;
    ncclResult_t result; /* what the real call returned */
    int ran;             /* the real call was made */
} ix_call_t;

enum ix_fn {
    IX_ALLREDUCE,
    IX_BROADCAST,
    IX_REDUCE,
    IX_ALLGATHER,
    IX_REDUCE_SCATTER,
    IX_ALLTOALL,
    IX_GATHER,
    IX_SCATTER,
    IX_SEND,
    IX_RECV,
};

/* Process state: the real NCCL, the event source (NULL: ops cannot be tracked). */
typedef struct ix_state {
    const cc__nccl_lib_t *lib;
    const cc__gev_ops_t *gev;
    struct cc__world *world;
} ix_state_t;

/* The state after the first call's setup, or NULL when the real NCCL cannot be opened. */
const ix_state_t *ix_state(void);
/* The world (attached on first use), or NULL. */
struct cc__world *ix_world(void);

/* The shadow of a real communicator, or NULL. Lock-free. */
ix_comm_t *ix_lookup(ncclComm_t nc);
/* Make the shadow of a new real communicator (logged when it fails: pass-through). */
void ix_adopt(ncclComm_t nc, uint64_t id, uint64_t parent_id);

/* Run a call through the door on its shadow, or straight to NCCL without one. */
ncclResult_t ix_run(ix_call_t *call);
/* Make the real call (the engine's submit does, inside the door). */
ncclResult_t ix_forward(const ix_call_t *call);

/* Group state of the calling thread (ncclGroupStart depth). */
int ix_group_depth(void);

/* The shadow engine. */
extern const cc_engine_v1_t ix_engine;

#endif /* CC_NCCL_INTERPOSE_H */
