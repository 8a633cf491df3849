/*
 * gev.h - GPU events: points in a stream's order that complete when the
 * device gets there, with the time it got there. Two backends:
 *  - cuda: CUDA events (timing enabled) from a pool per device; the time
 *    is a reference event's host time plus cudaEventElapsedTime from it
 *    (the reference is re-taken every few seconds, so the float
 *    milliseconds keep sub-microsecond precision);
 *  - host: the host NCCL extension (nccl_abi.h), for NCCL implementations
 *    that run on host memory (the test double): same contract, no CUDA.
 * Events are taken and released by the thread that issues ops and the
 * tracker thread; query and time_ns are called by the tracker only.
 */
#ifndef CC_CUDA_GEV_H
#define CC_CUDA_GEV_H

#include <stdint.h>

#include "ccomm/status.h"
#include "nccl/nccl_abi.h"

typedef struct cc__gev_ops {
    const char *name; /* "cuda", "host" */
    /* A free event for `device` (pooled). */
    cc_status_t (*take)(int device, void **ev);
    void (*give)(void *ev);
    /* Record on `stream` (cuda) or in `comm`'s order (host). */
    cc_status_t (*record)(void *ev, void *stream, ncclComm_t comm);
    /* 1 completed, 0 not yet, -1 failed (logged). */
    int (*query)(void *ev);
    /* CLOCK_MONOTONIC ns when it completed (after query said 1); 0 = unknown. */
    uint64_t (*time_ns)(void *ev);
} cc__gev_ops_t;

/* CUDA events through cc__cudart (must be set). */
extern const cc__gev_ops_t cc__gev_cuda;

/* Host events of the host NCCL extension `h` (one per process). */
const cc__gev_ops_t *cc__gev_host(const ccomm_host_nccl_v1_t *h);

#endif /* CC_CUDA_GEV_H */
