/*
 * nccl_engine.h - the NCCL-backed engine (internal to lib/nccl).
 *
 * Every ccomm op on a device communicator becomes NCCL calls on the op's
 * stream (opts->stream; NULL is the legacy default stream), between two
 * GPU events that the tracker (lib/cuda/tracker.h) watches for the op's
 * start and end. ops.c maps each op type to its NCCL calls: one table row
 * per type.
 *
 * A call returns when the op is ordered on its stream, as NCCL's do; its
 * POST runs when the GPU finished it. So a blocking call (work == NULL) is
 * "enqueued" on return, and the engine keeps its own copy of the op.
 */
#ifndef CC_NCCL_NCCL_ENGINE_H
#define CC_NCCL_NCCL_ENGINE_H

#include <stdatomic.h>

#include "cuda/gev.h"
#include "cuda/tracker.h"
#include "engine/engine.h"
#include "nccl/nccl_lib.h"

typedef struct cc__ncclx {
    cc_comm_t *comm;
    char name[64];
    int rank, size, device;
    const cc__nccl_lib_t *lib;
    const cc__gev_ops_t *gev; /* cuda, or host for a host-memory NCCL */
    ncclComm_t nc;
    cc__track_owner_t owner;
    _Atomic int busy;     /* threads inside NCCL calls on nc: abort waits for them */
    _Atomic int aborted;  /* CC_OK, or the abort's reason (nc is gone) */
    void *barrier_buf;    /* one int32 on the device for barriers */
    int32_t host_barrier; /* the same for a host-memory NCCL */
} cc__ncclx_t;

/* Issue op's NCCL calls on `stream`. CC_OK, or the mapped NCCL error (logged). */
typedef cc_status_t (*cc__nccl_issue_fn)(cc__ncclx_t *x, const cc__op_t *op, void *stream);

typedef struct cc__nccl_row {
    cc__nccl_issue_fn issue;
    const char *algorithm; /* what the recorder shows before NCCL tells more */
} cc__nccl_row_t;

/* The row for an op type, or NULL when NCCL cannot run it (logged by the caller). */
const cc__nccl_row_t *cc__nccl_row(cc_op_type_t type);

/* The engine's table (a v2 table: v1 plus ncclCommSplit). */
extern const cc_engine_v2_t cc__nccl_engine;

/* Log an NCCL error for `what` on x and map it. */
cc_status_t cc__ncclx_err(cc__ncclx_t *x, ncclResult_t r, const char *what);

#endif /* CC_NCCL_NCCL_ENGINE_H */
