/*
 * op.h - an operation as it passes the door (internal).
 *
 * The public view handed to hooks is `info`; a hook sees nothing else of
 * the op. What a subscriber keeps per op is its token, in `tokens` (the
 * hook layer's, see hooks/chain.h); the flight recorder, which the door
 * calls itself, keeps its record id in `rec_id`. Engines
 * read the arguments and report transitions with cc__op_started() and
 * cc__op_finished().
 */
#ifndef CC_ENGINE_OP_H
#define CC_ENGINE_OP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ccomm/hooks.h"
#include "hooks/chain.h"

struct cc_comm;

enum cc__op_state {
    CC__OP_NEW = 0,   /* being built by the door */
    CC__OP_SCHEDULED, /* passed the PRE chain, handed to the engine */
    CC__OP_STARTED,   /* the engine began moving data */
    CC__OP_DONE,      /* finished; info.status holds the result */
};

typedef struct cc__op {
    cc_op_info_t info;          /* public view, what hooks see */
    struct cc_comm *comm;       /* owner */
    _Atomic int state;          /* enum cc__op_state */
    uint64_t deadline_ns;       /* CLOCK_MONOTONIC; the op fails with CC_ERR_TIMEOUT after it */
    int waited_peer;            /* engine: comm rank the op waited for when it failed by timeout
                                 * or peer loss; -1 unknown. Named in the comm's abort message. */

    /* Arguments beyond those in info. */
    const size_t *send_counts;  /* v-collectives: per-rank counts and displacements (elements) */
    const size_t *send_displs;
    const size_t *recv_counts;
    const size_t *recv_displs;
    double premul_scalar;       /* CC_PREMUL_SUM factor */
    void *stream;               /* device comms: cudaStream_t */
    const void *extra;          /* op-specific argument block (coalesced lists, byte collectives) */
    /* Called once when the op is over, whatever the path (engine, veto, refusal), before
     * its POST chain and before a waiter wakes: frees what the op owns (`owned`), hands
     * results to the caller, ends the members of a group. NULL when there is nothing to do. */
    void (*release)(struct cc__op *op, cc_status_t status);
    void *owned;                /* heap block the op owns (copied argument arrays), or NULL */

    /* The subscribers' tokens: written by the PRE chain, read by START, POST and WAIT. */
    cc__hook_tokens_t tokens;
    /* The flight recorder's record id (cc__recorder_pre), 0 = not recorded. */
    uint64_t rec_id;

    /* Engine scratch. */
    void *engine_data[4];

    /* Async completion: set by cc__op_finished, read by cc_work_*. */
    _Atomic uint32_t done;      /* futex word: 0 pending, 2 pending and a waiter sleeps, 1 done */
    /* Set by an engine that runs this blocking op to its end on the caller's own thread, in
     * its submit: nobody can wait on `done`, so the end stores it without a locked exchange. */
    unsigned char caller_runs;
    /* The door held the recorder's PRE back (door.c, cc__door_issue): the op's START writes
     * PRE and START at once, or whatever comes first writes it (cc__op_record_pre). */
    unsigned char pre_held;
    /* The engine left this op's START to its shared-memory body: written right after the
     * body publishes its arrival, or before it first waits, whichever comes first
     * (native/run.c, cc__native_start_pending). */
    unsigned char start_at_post;
    struct cc_work *work;       /* NULL for blocking ops */
    struct cc__op *next;        /* engine queues */
} cc__op_t;

/*
 * Zero an op, or copy one, with 16-byte moves. As a memset or a struct copy of this size GCC
 * writes `rep stosq` or `rep movsq`, whose start-up cost dwarfs the moves: 10 % of a 64-byte
 * shm broadcast's time at 2 ranks went to the one in cc__op_prepare (perf record -e
 * cpu-clock, 2026-12-03, docs/performance.md).
 */
#if defined(__GNUC__) && !defined(__clang__)
typedef unsigned long long cc__op_v2 __attribute__((vector_size(16), aligned(8), may_alias));
typedef unsigned long long cc__op_u1 __attribute__((aligned(8), may_alias));
_Static_assert(sizeof(cc__op_t) % 8 == 0, "an op is whole words");
#endif

static inline void cc__op_zero(cc__op_t *op)
{
#if defined(__GNUC__) && !defined(__clang__)
    cc__op_v2 *d = (cc__op_v2 *)(void *)op;
#pragma GCC unroll 40
    for (size_t i = 0; i < sizeof(*op) / 16; i++)
        d[i] = (cc__op_v2){0, 0};
    if (sizeof(*op) % 16) *(cc__op_u1 *)(void *)((char *)op + sizeof(*op) - 8) = 0;
#else
    memset(op, 0, sizeof(*op));
#endif
}

static inline void cc__op_copy(cc__op_t *dst, const cc__op_t *src)
{
#if defined(__GNUC__) && !defined(__clang__)
    cc__op_v2 *d = (cc__op_v2 *)(void *)dst;
    const cc__op_v2 *s = (const cc__op_v2 *)(const void *)src;
#pragma GCC unroll 40
    for (size_t i = 0; i < sizeof(*dst) / 16; i++)
        d[i] = s[i];
    if (sizeof(*dst) % 16)
        *(cc__op_u1 *)(void *)((char *)dst + sizeof(*dst) - 8) =
            *(const cc__op_u1 *)(const void *)((const char *)src + sizeof(*src) - 8);
#else
    memcpy(dst, src, sizeof(*dst));
#endif
}

/* Engine -> core: the op started moving data (runs the START chain). Once. */
void cc__op_started(cc__op_t *op);
/*
 * Engine -> core: the op finished with `status` (runs the POST chain, wakes
 * waiters, frees the op if its work handle was already freed). Exactly once
 * per op, from any thread.
 */
void cc__op_finished(cc__op_t *op, cc_status_t status);

/*
 * Engine -> core: a member of a group op (a send or receive issued between
 * cc_group_start and cc_group_end) finished with `status`: its POST chain
 * runs and its waiter wakes, like cc__op_finished, but it does not count as
 * an op of its own (the group op does) and does not fail the comm (the
 * group op's status does). Exactly once per member.
 */
void cc__op_member_finished(cc__op_t *op, cc_status_t status);

/*
 * The same with the time the transition happened (CLOCK_MONOTONIC ns; 0 =
 * now), for engines that learn of it after the fact: a GPU op starts and
 * ends when CUDA events recorded on its stream complete, which a polling
 * thread notices later.
 */
void cc__op_started_at(cc__op_t *op, uint64_t t_ns);
void cc__op_finished_at(cc__op_t *op, cc_status_t status, uint64_t t_ns);

/*
 * Write the recorder's PRE of an op whose PRE the door held back (op->pre_held), now; a no-op
 * for any other op. An engine that hands such an op to another thread, or lets it wait
 * before its START, calls it first: until then the recorder does not show the op.
 */
void cc__op_record_pre(cc__op_t *op);

/* Wait for op->done until the deadline (CC_ERR_TIMEOUT then). Yields the CPU. */
cc_status_t cc__op_wait_done(cc__op_t *op, uint64_t deadline_ns);

/*
 * The grace past an op's deadline for a waiter that leaves the ending to the
 * engine (cc_work_wait(-1); a blocking op queued behind async ones on the
 * native worker). Engines end every op by its deadline themselves, so
 * passing the grace means the engine is stuck: the one timer for both.
 */
#define CC__ENGINE_GRACE_NS (10ull * 1000000000ull)

/* cc__op_wait_done until op->deadline_ns + CC__ENGINE_GRACE_NS (saturating). */
cc_status_t cc__op_wait_engine(cc__op_t *op);

#endif /* CC_ENGINE_OP_H */
