/*
 * clog_ring.h - the bounded lock-free ring between the op path and the clog
 * writer thread (internal).
 *
 * Many producers (the threads that run hooks), one consumer (the writer).
 * Each slot carries a sequence word, as in Vyukov's bounded MPMC queue: a
 * producer claims position p with one CAS on `tail` when slot p % cap says it
 * is free for lap p / cap, copies its record in and publishes it by storing
 * p + 1 in the slot's sequence word; the consumer takes slot `head` once its
 * word reads head + 1 and frees it for the next lap by storing head + cap.
 * A full ring never blocks a producer: the record is dropped and counted.
 * While the process has one writing thread (base/solo.h), that thread claims
 * with a plain load and store of `tail` instead of the CAS (clog_ring.c).
 */
#ifndef CC_CLOG_RING_H
#define CC_CLOG_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

/* What a record says happened. */
enum cc__clog_kind {
    CC__CLOG_REC_Q = 1, /* op enqueued (PRE) */
    CC__CLOG_REC_S,     /* op started (START) */
    CC__CLOG_REC_E,     /* op ended (POST) */
    CC__CLOG_REC_W,     /* caller waits on the op (WAIT) */
    CC__CLOG_REC_A,     /* comm aborts (ABORT) */
    CC__CLOG_REC_NEW,   /* comm created (POST of COMM_INIT) */
    CC__CLOG_REC_END,   /* comm destroyed (POST of COMM_DESTROY) */
    CC__CLOG_REC_QS,    /* op enqueued and started at once (START of an op with
                         * CC_OP_INFO_STARTS_AT_ONCE): the Q line at t_ref_ns, the S line at t_ns */
};

#define CC__CLOG_NAME_MAX 64 /* bytes of a comm name kept, with the NUL */

/*
 * One event, fixed size so the op path only copies. Op events carry the
 * whole signature so the writer can number it without any state shared
 * with the op path.
 */
struct cc__clog_rec {
    uint8_t kind;   /* enum cc__clog_kind */
    uint8_t type;   /* cc_op_type_t */
    uint8_t dtype;  /* cc_dtype_t; CC_DTYPE_COUNT = none */
    uint8_t redop;  /* cc_redop_t; CC_REDOP_COUNT = none */
    int32_t status; /* E: the op's status; A: the abort reason */
    int32_t root;   /* -1 = none */
    int32_t peer;   /* -1 = none */
    int32_t rank;   /* NEW: rank in the comm */
    int32_t size;   /* NEW: ranks in the comm */
    uint64_t op_id; /* 0 = none (A without a culprit op) */
    uint64_t seq;   /* coll_seq, or p2p_seq for point-to-point */
    uint64_t comm_id;
    uint64_t t_ns;     /* CLOCK_MONOTONIC time of the event */
    uint64_t t_ref_ns; /* E: when the measured duration began; QS: the enqueue; NEW: parent id */
    uint64_t in_count;
    uint64_t out_count;
    /* Owned heap block or NULL. NEW: the comm's name, a NUL, then its ranks list (children
     * only); A: the comm's name, a NUL, then the message. Op events carry no name: the
     * writer knows it by comm_id from the comm's NEW record, which always comes first. */
    char *text;
};

/* Cache-line aligned so neighbouring producers do not share a slot's lines. */
struct cc__clog_slot {
    alignas(64) _Atomic uint64_t seq; /* == pos: free for position pos; == pos + 1: holds it */
    struct cc__clog_rec rec;
};

/* Two cache lines a record: ccomm/clog.h's ring_records comment says so. */
_Static_assert(sizeof(struct cc__clog_slot) == 128, "clog slot is two cache lines");

struct cc__clog_ring {
    struct cc__clog_slot *slots;
    uint64_t cap;                         /* power of two */
    alignas(64) _Atomic uint64_t tail;    /* next position to claim (producers) */
    alignas(64) _Atomic uint64_t dropped; /* records refused because the ring was full */
    alignas(64) uint64_t head;            /* next position to take (consumer only) */
};

/* Allocate `cap` slots (a power of two >= 2). 0 or -1 (out of memory). */
int cc__clog_ring_init(struct cc__clog_ring *r, uint64_t cap);
/* Free the slots and the text of records never taken. Consumer side only. */
void cc__clog_ring_fini(struct cc__clog_ring *r);
/* Producer: copy *rec in. 1 = queued; 0 = ring full, counted as dropped
 * (rec->text stays the caller's). Lock-free, never blocks. */
int cc__clog_ring_push(struct cc__clog_ring *r, const struct cc__clog_rec *rec);
/*
 * Producer, in place (the op path: the record is written once, into its
 * slot): claim the next position, fill every field of the record returned,
 * then publish it. NULL = ring full, counted as dropped. Between the two
 * calls the consumer waits at that slot, so nothing that pushes may run
 * there (queue a comm's NEW record before claiming).
 */
struct cc__clog_rec *cc__clog_ring_claim(struct cc__clog_ring *r, uint64_t *pos);
static inline void cc__clog_ring_publish(struct cc__clog_ring *r, uint64_t pos)
{
    /* The release store publishes the fields: the consumer's acquire load sees them whole. */
    atomic_store_explicit(&r->slots[pos & (r->cap - 1)].seq, pos + 1, memory_order_release);
}
/* Consumer: take the oldest record. 1 = taken; 0 = empty, or the oldest
 * claimed slot is not published yet. */
int cc__clog_ring_pop(struct cc__clog_ring *r, struct cc__clog_rec *out);
/* Consumer, in place: the oldest published record (NULL as pop's 0), read
 * where it lies until cc__clog_ring_release hands its slot back. */
struct cc__clog_rec *cc__clog_ring_peek(struct cc__clog_ring *r);
void cc__clog_ring_release(struct cc__clog_ring *r);

/* Positions claimed so far: a flush waits until the consumer passed it. */
static inline uint64_t cc__clog_ring_claimed(struct cc__clog_ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_acquire);
}

#endif /* CC_CLOG_RING_H */
