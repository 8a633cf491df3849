/*
 * cuda_native.h - the native CUDA engine: ccomm's own collectives on
 * device memory for the ranks of one node, over CUDA IPC (one process per
 * rank; several may share a GPU).
 *
 * An op runs in rounds of at most one IPC slot of data. A round is a
 * fixed sequence of kernels on the op's stream: copy into this rank's slot,
 * signal the peers (a flag word in each peer's region), wait for theirs,
 * read the peers' slots (reduce or copy), signal "done". Every rank issues
 * the same rounds in the same order, so the round number `seq` (counted on
 * the host at issue) names a round on every rank; slots alternate by seq
 * parity, and a rank reuses a slot only once every peer signalled "done"
 * for the round two before.
 *
 * Waits give up when the engine is aborted (a host word the wait kernel
 * polls) or the GPU clock passes the op's deadline plus a grace; they then
 * set the fault word, which the tracker's error poll turns into the op's
 * failure. Algorithms (CCOMM_CUDA_ALLREDUCE_ALGO):
 *   allreduce  one-shot (read all peers' inputs, reduce; up to 256 KiB),
 *              two-shot (each rank reduces 1/n, then all gather; up to
 *              16 MiB), ring (partial sums passed around the ring, then
 *              gathered; larger)
 *   reduce, reduce-scatter, allgather, broadcast, all-to-all, barrier:
 *              direct (each rank reads what it needs from the peers' slots)
 * Point-to-point and v-collectives are not implemented: use engine nccl.
 * RMA windows (ccomm/window.h) are: cuda_window.c.
 */
#ifndef CC_CUDA_CUDA_NATIVE_H
#define CC_CUDA_CUDA_NATIVE_H

#include <stdatomic.h>

#include "engine/engine.h"
#include "engine/window.h"
#include "cuda/tracker.h"
#include "transport/cuda_ipc.h"

typedef struct cc__cnat {
    cc_comm_t *comm;
    char name[64];
    int rank, size, device;
    cc__cuda_ipc_t ipc;
    cc__track_owner_t owner;
    uint64_t seq;           /* rounds issued on this comm (issuing thread only) */
    int *abort_h, *abort_d; /* host word (mapped) the wait kernels poll; nonzero: give up */
    int *fault_h, *fault_d; /* host word (mapped) a wait that gave up sets: 1 abort, 2 timeout */
    int64_t gt_offset;      /* GPU globaltimer - CLOCK_MONOTONIC */
    _Atomic int aborted;    /* CC_OK, or the abort's reason */
    unsigned exchanges;     /* store allgathers made */
    unsigned windows;       /* RMA windows created (their ids; cuda_window.c) */
    const cc__op_t *cur;    /* the op being issued (for its deadline) */
} cc__cnat_t;

/* An algorithm enqueues the op's rounds on the stream. */
typedef cc_status_t (*cc__cnat_algo_fn)(cc__cnat_t *x, cc__op_t *op, void *stream);

/* ---- round building blocks (native_engine.c) ---------------------------------- */

/* Start a round: its number, after waiting (on the stream) until the peers are done with the
 * slot of the same parity. */
cc_status_t cc__cnat_round(cc__cnat_t *x, void *stream, uint64_t *seq);
/* Signal every rank's flag `kind` with seq; wait until all ranks signalled this rank's. */
cc_status_t cc__cnat_signal(cc__cnat_t *x, int kind, uint64_t seq, void *stream);
cc_status_t cc__cnat_wait(cc__cnat_t *x, int kind, uint64_t seq, void *stream);
/* Signal one rank's flag `kind` / wait for one rank's flag (the ring). */
cc_status_t cc__cnat_signal_one(cc__cnat_t *x, int to, int kind, uint64_t seq, void *stream);
cc_status_t cc__cnat_wait_one(cc__cnat_t *x, int from, int kind, uint64_t seq, void *stream);
/* The round's DONE signal to everyone. */
cc_status_t cc__cnat_done(cc__cnat_t *x, uint64_t seq, void *stream);
/* Wait (on the stream) until *word (this rank's memory) >= value, with the op's deadline. */
cc_status_t cc__cnat_wait_word(cc__cnat_t *x, const uint64_t *word, uint64_t value, void *stream);

/* ---- RMA windows (cuda_window.c; ccomm/window.h, the engine table's v3 entries) ------ */

/* Collective: exchange CUDA IPC handles of every rank's region and signal words, map them. */
cc_status_t cc__cwin_create(void *state, struct cc_window *win, void *base, size_t bytes,
                            uint64_t deadline_ns);
/* Collective: a barrier through the store, then close the mappings and free the words. */
cc_status_t cc__cwin_destroy(void *state, struct cc_window *win, uint64_t deadline_ns);
/* 1 for the window op types. */
int cc__cwin_is_op(cc_op_type_t type);
/* Before an op is enqueued: its buffer must be device memory (CC_ERR_INVALID_ARG, logged). */
cc_status_t cc__cwin_check(cc__cnat_t *x, const cc__op_t *op);
/* Enqueue a window op on the stream (put, get, signal, wait_signal; flush waits for it). */
cc_status_t cc__cwin_issue(cc__cnat_t *x, cc__op_t *op, void *stream);
/* A window flush's host wait (the submit's settle step, gpu_submit.h). */
cc_status_t cc__cwin_flush(cc__cnat_t *x, cc__op_t *op, void *stream);

/* ---- algorithms ----------------------------------------------------------------- */

cc_status_t cc__cnat_allreduce(cc__cnat_t *x, cc__op_t *op, void *stream);
cc_status_t cc__cnat_reduce(cc__cnat_t *x, cc__op_t *op, void *stream);
cc_status_t cc__cnat_reduce_scatter(cc__cnat_t *x, cc__op_t *op, void *stream);
cc_status_t cc__cnat_allgather(cc__cnat_t *x, cc__op_t *op, void *stream);
cc_status_t cc__cnat_broadcast(cc__cnat_t *x, cc__op_t *op, void *stream);
cc_status_t cc__cnat_alltoall(cc__cnat_t *x, cc__op_t *op, void *stream);
cc_status_t cc__cnat_barrier(cc__cnat_t *x, cc__op_t *op, void *stream);

/* Element size of an op's data (bytes for the byte forms). */
size_t cc__cnat_esize(const cc__op_t *op);

extern const cc_engine_v3_t cc__cuda_native_engine;

#endif /* CC_CUDA_CUDA_NATIVE_H */
