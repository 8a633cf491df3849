/*
 * gpu_submit.h - how a GPU engine submits an op: a copy of a blocking op
 * (the door's lives on the caller's stack), an event before and after the
 * op's work on its stream, the tracker for START and POST. Shared by the
 * NCCL engine and the native CUDA engine.
 */
#ifndef CC_CUDA_GPU_SUBMIT_H
#define CC_CUDA_GPU_SUBMIT_H

#include "cuda/gev.h"
#include "cuda/tracker.h"

/* Enqueue the op's work on `stream`; t is the op to describe (algorithm, transport). */
typedef cc_status_t (*cc__gpu_issue_fn)(void *ctx, cc__op_t *t, void *stream);

typedef struct cc__gpu_sub {
    const cc__gev_ops_t *gev;
    int device;
    ncclComm_t nc; /* for host events (host NCCL); NULL otherwise */
    cc__track_owner_t *owner;
    cc__gpu_issue_fn issue;
    /* NULL, or called once the end event is on the stream too: an op whose contract is a
     * host wait for the stream (window flush) waits here, so that nothing of it is left on
     * the stream when the call returns. */
    cc__gpu_issue_fn settle;
    void *ctx;
} cc__gpu_sub_t;

/*
 * Submit under the engine's contract (engine.h), GPU style: CC_OK once the
 * op is ordered on its stream (its POST comes from the tracker); on error
 * a blocking op is finished here with the error, an async one is left to
 * the door. The caller has the device current.
 */
cc_status_t cc__gpu_submit(const cc__gpu_sub_t *s, cc__op_t *op);

/* End a refused op as the contract wants (blocking: here; async: by the door). */
cc_status_t cc__gpu_refuse(cc__op_t *op, cc_status_t st);

#endif /* CC_CUDA_GPU_SUBMIT_H */
