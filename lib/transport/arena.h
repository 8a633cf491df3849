/*
 * arena.h - the shared-memory transport's arena: one control segment per
 * communicator whose ranks all live on one host, and the three things the
 * native engine's shared-memory algorithms (lib/native/<coll>_shm.c) are built
 * from: publish (arrival, progress, done), wait (for a peer's counter),
 * and read a peer's memory (process_vm_readv). docs/performance.md,
 * "Shared-memory algorithms", says how the algorithms use them.
 *
 * The arena is one file-backed shared mapping per communicator, made by
 * rank 0 when the engine creates it and unlinked once every rank mapped it.
 * Each rank owns a slot and is the only writer of it:
 *
 *   slot:  arrival[K] | prog | done | sleeping | base, quit | desc[K] | data[2]
 *
 * Arena ops are numbered 1, 2, ... in the order every rank issues them (the
 * same on all ranks). Op s uses arrival line s % K (K = CC__ARENA_DEPTH) and
 * the data of parity s & 1. A rank rewrites data parity p for op s only
 * after every peer arrived at op s - 1, that is, finished op s - 2, the
 * last op that used p; an op whose data all fits in the arrival lines (a
 * "deep" op, CC__ARENA_INLINE bytes) only waits until every peer arrived
 * at op s - K + 1, when line s % K is free. So a rooted op that waits for
 * nobody (a small broadcast's root) runs up to K - 1 ops ahead of its
 * readers, and a reader that gets the CPU once catches up on all of them:
 * on a host with fewer CPUs than ranks that is what keeps the ranks from
 * handing the CPUs over once per op. Counters only grow:
 *
 *   arrival[s%K].seq = s  the rank arrived at op s: its buffer addresses
 *                       and any data it stages for op s are published
 *   prog   = s<<24 | k  the first k pieces of this rank's share of op s are
 *                       final (pipelined phases read as far as it says)
 *   done   = s          this rank no longer reads its peers' memory for op s;
 *                       a rank returns from an op that lends its user buffers
 *                       to peers (process_vm_readv) only once all are done
 *
 * Waiting polls one word with the transport's wait policy (transport.h,
 * cc__wait_stage: spin for the net's spin budget, none when ranks outnumber
 * CPUs, then sched_yield, then sleep on the rank's shm mailbox bell), with
 * the op's deadline, the owner's abort flag, the net's abort and peer
 * liveness checked throughout.
 *
 * The arena knows nothing of engines or ops: an op is described by its
 * public cc_op_info_t (identity, buffers, for the signature and messages)
 * and a deadline; the engine's abort flag is lent at creation.
 *
 * Thread safety: everything runs on the thread that runs the op (ops of a
 * communicator are serial); abort comes in through the net or the owner's
 * abort flag from any thread.
 */
#ifndef CC_TRANSPORT_ARENA_H
#define CC_TRANSPORT_ARENA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ccomm/hooks.h"
#include "ccomm/status.h"
#include "transport/net.h"

#define CC__ARENA_LINE      64u
#define CC__ARENA_DATA      (64u * 1024u) /* staging bytes per rank and parity */
#define CC__ARENA_PROG_BITS 24            /* prog: low bits count pieces */
#define CC__ARENA_MAX_RANKS 64            /* larger communicators get no arena */
/* Arrival slots per rank: a deep op runs up to DEPTH - 1 ops ahead. Measured at 4 ranks on 2
 * CPUs, builds differing in this value only (and the control block's size), in-place
 * broadcast, 2026-12-07 15:20-15:35 UTC: bench/ab.sh --coll broadcast --in-place --ranks 4
 * --sizes "16 64 256" --iters 20000 --launches 7 (5): 16 against 64, 1.05/0.63, 1.13/0.57,
 * 1.18/0.63 us (1.7-2.0x); 32 against 64 1.24/1.38/1.01; 64 against 128 1.10/1.17/1.08.
 * 2 ranks, allreduce 8 and 64 B (--launches 9): 16 against 64 0.98 and 1.00, against 128
 * 0.91 and 0.98. So 64: a reader that gets the CPU catches up on more ops, the ranks hand
 * the CPUs over less often (perf stat, depth 16: 103732 context switches in 0.7 s of a
 * 4-rank broadcast of 16 B, Open MPI 28571). On 2026-12-01, with ops 3x slower, 16 and 32
 * were within the noise (docs/performance.md). */
#define CC__ARENA_DEPTH     64
/* How many ops back a deep op's flow-control check looks first (arena_sync.c, wait_arrived). */
#define CC__ARENA_PROBE     4
/* Payload bytes that travel in the arrival lines: 24 in the first line with the arrival
 * itself (one line per peer for an 8-byte allreduce), up to 280 in the first five. */
#define CC__ARENA_INLINE    280u

/*
 * A rank's arrival at an op: five lines per slot, the first holding the
 * arrival, the addresses and 24 payload bytes, so a tiny op costs each peer
 * one line to read. seq is stored last (release); the rest is valid once it
 * reads the op's number.
 */
struct cc__arena_par {
    _Atomic uint64_t seq; /* arena op number: the owner arrived at it */
    uint64_t sig;         /* hash of the op's description (equal on every rank) */
    uint64_t sendbuf;     /* addresses in the owner's address space */
    uint64_t recvbuf;
    uint64_t aux; /* the algorithm's own (reduce: where a non-root put its share) */
    char inl[CC__ARENA_INLINE]; /* a small op's payload */
};

/* The op's description, read only to explain a mismatch of sig. */
struct cc__arena_desc {
    uint64_t coll_seq;
    uint64_t count; /* the algorithm's size parameter (elements), equal on every rank */
    int32_t type, dtype, redop, root;
    char pad[CC__ARENA_LINE - 32];
};

/* One rank's slot; every line is written by its owner only. */
struct cc__arena_ctl {
    struct cc__arena_par par[CC__ARENA_DEPTH];
    _Atomic uint64_t prog;
    char pad1[CC__ARENA_LINE - 8];
    _Atomic uint64_t done;
    char pad2[CC__ARENA_LINE - 8];
    _Atomic uint32_t sleeping; /* the owner sleeps (or is about to) on its bell */
    _Atomic int32_t cpu;       /* the CPU the owner last waited on (-1: unknown) */
    char pad3[CC__ARENA_LINE - 8];
    uint64_t base;         /* the owner's address of the mapping (CMA probe at creation) */
    _Atomic uint64_t quit; /* the owner gave up on this op (error): peers stop waiting for it */
    char pad4[CC__ARENA_LINE - 16];
    struct cc__arena_desc desc[CC__ARENA_DEPTH];
};

/* The first page of the arena, written by rank 0 before anyone else maps it. */
struct cc__arena_hdr {
    uint64_t magic;   /* CC__ARENA_MAGIC */
    uint32_t version; /* CC__ARENA_VERSION */
    uint32_t nranks;
    uint64_t comm_id;
    uint64_t stride; /* bytes from one slot to the next */
    int32_t creator_pid;
};

#define CC__ARENA_MAGIC     0x616e657261636363ull /* "cccarena" */
#define CC__ARENA_VERSION   3u /* 3: 64 arrival slots of five lines (2: 16) */
#define CC__ARENA_HDR_BYTES 4096u
#define CC__ARENA_CTL_BYTES 32768u /* 64 x 320 + 64 x 64 + 4 x 64 = 24832 bytes used */
#define CC__ARENA_STRIDE    (CC__ARENA_CTL_BYTES + 2u * CC__ARENA_DATA)

/* This rank's handle on the arena. */
typedef struct cc__arena {
    cc__net_t *net;
    const _Atomic int *abort; /* the owner's abort reason (nonzero: stop waiting), or NULL */
    char name[64];            /* the communicator's, for messages */
    uint64_t comm_id;
    void *base; /* the mapping: header page, then one slot per rank */
    size_t len;
    int n, rank;
    int *pids;             /* by rank, for process_vm_readv */
    int cma_ok;            /* every rank can read every peer (agreed at creation) */
    int light;             /* publishes are release stores, sleepers fence with membarrier
                            * (every rank registered for it; agreed at creation) */
    int claim;             /* the CPU prefetches for writing (x86: PREFETCHW; arena_sync.c) */
    uint64_t naps;         /* sleeps on the bell */
    uint64_t naps_unrung;  /* of those, ended by their timeout with the awaited word already
                            * there: lost wake-ups (tests) */
    uint64_t seq;          /* number of the last arena op begun */
    uint64_t all_arrived;  /* every rank arrived at least at this op */
    uint64_t spin_ns;      /* spin budget of a wait (0: ranks outnumber CPUs) */
    uint64_t check_ns;     /* liveness period (CCOMM_PEER_CHECK_MS) */
    int cpu;               /* the CPU this rank last published in its slot */
    uint64_t next_move_ns; /* earliest time this rank may leave a CPU it shares (arena_sync.c) */
    char path[512];        /* the file until it is unlinked (rank 0) */
    void *scratch[2];      /* cc__arena_scratch */
    size_t scratch_len[2];
} cc__arena_t;

static inline struct cc__arena_ctl *cc__arena_ctl(const cc__arena_t *ar, int rank)
{
    return (struct cc__arena_ctl *)((char *)ar->base + CC__ARENA_HDR_BYTES +
                                    (size_t)rank * CC__ARENA_STRIDE);
}

/* One op in flight on the arena. */
typedef struct cc__arena_op {
    cc__arena_t *ar;
    const cc_op_info_t *info; /* the op (its signature, buffers, and names in messages) */
    uint64_t deadline_ns;     /* CLOCK_MONOTONIC; waits fail with CC_ERR_TIMEOUT after it */
    uint64_t seq;             /* this op's arena number */
    int par;                  /* seq & 1: the data parity */
    int slot;                 /* seq % CC__ARENA_DEPTH: the arrival line */
    int deep;                 /* the caller's `deep` (set before begin by cc__shm_run) */
    int ahead;                /* payload lines after the first fetched with an arrival (expect) */
    /* Set by the caller before cc__arena_begin (NULL: none). Called once, then cleared: right
     * after this op's first publication (cc__arena_post), or before its first wait that does
     * not end at once (cc__arena_begin's too), whichever comes first. The native engine writes
     * the op's START there, so that the flight recorder's write overlaps the arrival's way to
     * the peers, yet no rank ever waits with its op unrecorded. */
    void (*on_post)(void *arg);
    void *on_post_arg;
} cc__arena_op_t;

/*
 * Make the arena (collective over the net's ranks: every rank of an
 * all-shm communicator of 2+ ranks calls it). abort: a flag of the owner
 * that, once nonzero, ends every wait with its value (may be NULL); name:
 * the communicator's, for messages. CC_OK with *out NULL when it could not
 * be made (logged; the algorithms then fall back on the net); errors only
 * for a peer lost or a timeout on the way, which fail the creation.
 */
cc_status_t cc__arena_create(cc__net_t *net, uint64_t comm_id, const char *name,
                             const _Atomic int *abort, cc__arena_t **out);
void cc__arena_destroy(cc__arena_t *ar);
/* Peers' memory can be read with process_vm_readv (probed at creation, agreed by all). */
int cc__arena_cma_ok(const cc__arena_t *ar);

/*
 * Start op `info` on the arena: number it, wait until this rank's arrival
 * line (and, unless `deep`, its data parity) may be rewritten, and fill its
 * params (not yet published). count: the algorithm's size parameter (see
 * desc), part of the signature. deep: the op stages at most
 * CC__ARENA_INLINE bytes on any rank (cc__arena_stage then never gives the
 * data area) and may run ahead of its peers (see the top). info must stay
 * valid until the op ends.
 */
cc_status_t cc__arena_begin(cc__arena_t *ar, const cc_op_info_t *info, uint64_t count, int deep,
                            uint64_t deadline_ns, cc__arena_op_t *ao);
/* This rank's (or a peer's) arrival line and staging data of the op's parity (inline: a small
 * op asks for them once per rank). */
static inline struct cc__arena_par *cc__arena_par(cc__arena_op_t *ao, int rank)
{
    return &cc__arena_ctl(ao->ar, rank)->par[ao->slot];
}

static inline void *cc__arena_data(cc__arena_op_t *ao, int rank)
{
    return (char *)cc__arena_ctl(ao->ar, rank) + CC__ARENA_CTL_BYTES +
           (size_t)ao->par * CC__ARENA_DATA;
}

/* Where a rank stages `bytes` of this op: the arrival line when they fit, else its data area. */
static inline void *cc__arena_stage(cc__arena_op_t *ao, int rank, size_t bytes)
{
    return bytes <= CC__ARENA_INLINE ? (void *)cc__arena_par(ao, rank)->inl
                                     : cc__arena_data(ao, rank);
}
/* This op stages (and reads of each peer) `bytes` of inline payload; called before the post.
 * cc__arena_wait_arrive asks for a peer's lines beyond the arrival line while it looks at the
 * arrival (2026-12-05, 2 ranks, far placement, 3 launches alternating: allreduce 32-128 B
 * 0.66-0.73 -> 0.55-0.65 us), and cc__arena_post asks for as many lines of this rank's next
 * slot, to write them (arena_sync.c, claim_next). */
static inline void cc__arena_expect(cc__arena_op_t *ao, size_t bytes)
{
    const size_t first = CC__ARENA_LINE - offsetof(struct cc__arena_par, inl);
    ao->ahead = bytes > first && bytes <= CC__ARENA_INLINE
                    ? (int)((bytes - first + CC__ARENA_LINE - 1) / CC__ARENA_LINE)
                    : 0;
}
/* Publish the arrival (addresses and staged data become visible) and wake sleepers. */
void cc__arena_post(cc__arena_op_t *ao);
/* Wait until `peer` arrived at this op, then check that it runs the same op
 * (CC_ERR_MISMATCH, logged, when not). */
cc_status_t cc__arena_wait_arrive(cc__arena_op_t *ao, int peer);
/* The same for every peer. */
cc_status_t cc__arena_wait_all(cc__arena_op_t *ao);
/* Publish prog = the first `pieces` pieces of this rank's share are final. */
void cc__arena_progress(cc__arena_op_t *ao, uint64_t pieces);
/* Wait until `peer` published at least `pieces` pieces of this op; *have: how many it has. */
cc_status_t cc__arena_wait_progress(cc__arena_op_t *ao, int peer, uint64_t pieces, uint64_t *have);
/* done = seq, then wait until every peer is done (its reads of this rank's buffers are over). */
cc_status_t cc__arena_finish(cc__arena_op_t *ao);
/* The same, waiting for one peer only (the root of a broadcast waits for all; others for none). */
void cc__arena_done(cc__arena_op_t *ao);
cc_status_t cc__arena_wait_done(cc__arena_op_t *ao, int peer);

/*
 * Every algorithm ends through here: on an error this rank tells its peers
 * it gave up on the op (quit = seq), so they fail too instead of completing
 * an op this rank abandoned or waiting for it until their deadline.
 */
cc_status_t cc__arena_end(cc__arena_op_t *ao, cc_status_t st);
/* CC_OK unless a peer gave up on this op (CC_ERR_PEER_LOST, logged). */
cc_status_t cc__arena_check_quit(cc__arena_op_t *ao);

/* Copy len bytes at address `src` of `peer` into dst (process_vm_readv, one copy). */
cc_status_t cc__arena_read(cc__arena_op_t *ao, int peer, void *dst, uint64_t src, size_t len);
/* Copy len bytes at src into address `dst` of `peer` (process_vm_writev, one copy). The peer
 * must be in the op and must not return before this rank says it is done (cc__arena_finish). */
cc_status_t cc__arena_write(cc__arena_op_t *ao, int peer, uint64_t dst, const void *src, size_t len);

/* Work space `which` (0 or 1) of at least len bytes, owned by the arena (one op at a time),
 * or NULL (logged). Growing one leaves the other where it is. */
void *cc__arena_scratch(cc__arena_t *ar, int which, size_t len);

#endif /* CC_TRANSPORT_ARENA_H */
