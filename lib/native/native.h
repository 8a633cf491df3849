/*
 * native.h - ccomm's own engine (internal): host memory over the
 * communicator's net (shared memory and TCP).
 *
 * Ops run in submission order. A blocking op with nothing queued runs on
 * the caller's thread (no handoff, no wakeup); everything else goes through
 * a per-communicator worker thread, started on first use.
 */
#ifndef CC_NATIVE_NATIVE_H
#define CC_NATIVE_NATIVE_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"
#include "op.h"
#include "transport/net.h"

typedef struct cc__native {
    struct cc_comm *comm;
    cc__net_t *net;
    int rank, size;
    const char *transport;      /* "shm", "tcp", "mixed", "self" */

    pthread_mutex_t lock;       /* guards the queue and the worker's life */
    pthread_cond_t wake;        /* worker: something queued or stopping */
    pthread_cond_t idle;        /* drain: pending went to 0 */
    cc__op_t *head, *tail;      /* queued ops, oldest first */
    _Atomic int pending;        /* queued + running on the worker */
    int worker_started, stopping;
    pthread_t worker;

    _Atomic int abort_reason;   /* CC_OK, or why the engine was aborted */

    unsigned exchanges;         /* store allgathers made while connecting */
    struct cc__arena *arena;    /* shared control segment of an all-shm comm (shm_arena.h), or NULL */
    void *scratch;              /* per-comm work space, grown on demand */
    size_t scratch_len;
} cc__native_t;

/* An algorithm runs one op to completion; returns its status. */
typedef cc_status_t (*cc__algo_fn)(cc__native_t *nc, cc__op_t *op);

/* Pick and run the algorithm for op (started transition included). */
cc_status_t cc__native_run(cc__native_t *nc, cc__op_t *op);

/* Scratch space of at least len bytes, or NULL (logged). Valid until the next call. */
void *cc__native_scratch(cc__native_t *nc, size_t len);

/* Tag for step `step` of the collective op (internal tag space). */
static inline uint32_t cc__coll_tag(const cc__op_t *op, uint32_t step)
{
    return CC__TAG_INTERNAL | (uint32_t)((op->info.coll_seq & 0x7fffffu) << 8) | (step & 0xffu);
}

/* CCOMM_DESYNC_CHECK: all ranks agree on the op at this coll_seq, or all fail with
 * CC_ERR_MISMATCH and a message naming ranks and ops. */
cc_status_t cc__desync_check(cc__native_t *nc, cc__op_t *op);

/* Algorithms (one file each). */
cc_status_t cc__send_direct(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__recv_direct(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__barrier_dissemination(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allreduce_ring(cc__native_t *nc, cc__op_t *op);

#endif /* CC_NATIVE_NATIVE_H */
