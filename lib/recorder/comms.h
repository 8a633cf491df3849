/*
 * comms.h - the ring's communicator table (pg_config and pg_status of the
 * dump) and the lock-free comm_id -> table slot map used on the op path
 * (internal to lib/recorder).
 */
#ifndef CC_RECORDER_COMMS_H
#define CC_RECORDER_COMMS_H

#include <stdint.h>

#include "recorder/ring.h"

/* A communicator as registered. Pointers are borrowed for the call. */
typedef struct cc__fr_comm_desc {
    uint64_t comm_id;
    uint64_t parent_id; /* 0 = none */
    const char *name;
    int size;
    int rank;
    int device;
    const int32_t *world_ranks; /* `size` world ranks (-1 = unknown), or NULL */
} cc__fr_comm_desc_t;

/* pg_status counters of a comm record. */
enum cc__fr_seq_kind { CC__FR_SEQ_ENQUEUED = 0, CC__FR_SEQ_STARTED, CC__FR_SEQ_COMPLETED };

/* The table slot of comm_id, or -1. Lock-free; async-signal-safe. */
int cc__fr_comm_find(uint64_t comm_id);

/* Raised (release) after every change of the comm_id -> slot map: a slot found under one
 * value stays right while the value stays. */
extern uint64_t cc__fr_comm_gen;

/* A thread's last comm_id -> slot answer, and the map's generation it was found under. */
typedef struct cc__fr_comm_memo {
    uint64_t comm_id;
    uint64_t gen;
    int slot;
} cc__fr_comm_memo_t;

/* cc__fr_comm_find through the caller's memo: the op path, where most ops are of the same
 * comm as the one before (one load and two compares instead of a hash and a probe). */
static inline int cc__fr_comm_find_memo(cc__fr_comm_memo_t *m, uint64_t comm_id)
{
    uint64_t gen = __atomic_load_n(&cc__fr_comm_gen, __ATOMIC_ACQUIRE);
    if (__builtin_expect(m->comm_id == comm_id && m->gen == gen, 1)) return m->slot;
    m->slot = cc__fr_comm_find(comm_id);
    m->comm_id = comm_id;
    m->gen = gen;
    return m->slot;
}

/*
 * Register a comm (or, when already there, record the world ranks that were
 * unknown). Off the op path: takes a mutex. Returns the slot, or -1 when the
 * table is full (warned once; entries then carry CC__FR_NO_COMM).
 */
int cc__fr_comm_add(cc__fr_ring_t *r, const cc__fr_comm_desc_t *d);

/* Raise a pg_status counter of `slot` to `seq` (never lowers it). Lock-free. */
void cc__fr_comm_seq(cc__fr_ring_t *r, int slot, enum cc__fr_seq_kind kind, uint64_t seq);
/*
 * The same with a plain store, no CAS, for a counter that only the calling thread moves now.
 * PRE's last_enqueued: PRE runs on the thread that issues the op, and a comm's collectives
 * are issued one at a time (the door numbers them with a plain increment of coll_seq). The
 * started and completed counts of an op the native engine runs on the caller's thread with
 * nothing of its comm queued (the door's fused PRE and START, and that op's POST): the
 * progress thread lowers its pending count only after its own op's POST. Never lowers it.
 * Inline, with the bound from the process's ring struct: the op path's counters.
 */
static inline void cc__fr_comm_seq_own(cc__fr_ring_t *r, int slot, enum cc__fr_seq_kind kind,
                                       uint64_t seq)
{
    if (slot < 0 || (uint32_t)slot >= r->comm_capacity) return;
    uint64_t *w = &r->comms[slot].last_enqueued + kind;
    if (__atomic_load_n(w, __ATOMIC_RELAXED) < seq) __atomic_store_n(w, seq, __ATOMIC_RELAXED);
}

/* last_enqueued and last_started at once (`started` 0: the first only), for the door's fused
 * PRE and START: one bound check and one row for both. */
static inline void cc__fr_comm_seq2_own(cc__fr_ring_t *r, int slot, int started, uint64_t seq)
{
    if (slot < 0 || (uint32_t)slot >= r->comm_capacity) return;
    cc__fr_comm_t *c = &r->comms[slot];
    if (__atomic_load_n(&c->last_enqueued, __ATOMIC_RELAXED) < seq)
        __atomic_store_n(&c->last_enqueued, seq, __ATOMIC_RELAXED);
    if (started && __atomic_load_n(&c->last_started, __ATOMIC_RELAXED) < seq)
        __atomic_store_n(&c->last_started, seq, __ATOMIC_RELAXED);
}

/* Mark a comm destroyed or aborted (CC__FR_CF_*). Async-signal-safe. */
void cc__fr_comm_mark(cc__fr_ring_t *r, int slot, uint64_t flag, int64_t reason);

/* Forget every comm (the ring is being closed). Not concurrent with the op path. */
void cc__fr_comm_reset(void);

/* In a forked child: the parent's threads are gone, maybe holding the mutex. */
void cc__fr_comm_after_fork(void);

#endif /* CC_RECORDER_COMMS_H */
