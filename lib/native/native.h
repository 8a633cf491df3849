/*
 * native.h - ccomm's own engine (internal): host memory over the
 * communicator's net (shared memory and TCP).
 *
 * Ops run in submission order. A blocking op with nothing queued runs on
 * the caller's thread (no handoff, no wakeup); everything else goes through
 * a per-communicator worker thread, started on first use.
 *
 * An algorithm is one function, `cc__<collective>_<algorithm>`, in a file
 * of the same name; select.c holds the table that picks one per op, run.c
 * runs the one picked. An
 * algorithm reads its arguments from the op (info, counts, extra), never
 * calls cc__op_started/finished (cc__native_run does), and may post many
 * requests from the engine's pool (cc__native_reqs): when it returns an
 * error, cc__native_run withdraws whatever it left pending.
 */
#ifndef CC_NATIVE_NATIVE_H
#define CC_NATIVE_NATIVE_H

#include <pthread.h>
#include <stdatomic.h>

#include "ccomm/ccomm.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "engine/op.h"
#include "transport/net.h"

/*
 * Transport class of a communicator, as a mask (selection rows say where
 * they run). The same on every rank: SHM when every rank is on one host
 * (each then reaches every peer over shared memory), NET otherwise.
 */
enum {
    CC__TPM_SELF = 1u << 0, /* one rank */
    CC__TPM_SHM = 1u << 1,  /* every peer over shared memory */
    CC__TPM_NET = 1u << 2,  /* some peer over TCP ("tcp" or "mixed") */
    CC__TPM_ANY = 0x7u,
};

typedef struct cc__native cc__native_t;

/* An algorithm runs one op to completion; returns its status. */
typedef cc_status_t (*cc__algo_fn)(cc__native_t *nc, cc__op_t *op);

struct cc__native {
    struct cc_comm *comm;
    cc__net_t *net;
    int rank, size;
    const char *transport; /* "shm", "tcp", "mixed", "self" */
    unsigned tpm;          /* its CC__TPM_* class */

    pthread_mutex_t lock;  /* guards the queue and the worker's life */
    pthread_cond_t wake;   /* worker: something queued or stopping */
    pthread_cond_t idle;   /* drain: pending went to 0 */
    cc__op_t *head, *tail; /* queued ops, oldest first */
    _Atomic int pending;   /* queued + running on the worker */
    int worker_started, stopping;
    pthread_t worker;

    _Atomic int abort_reason; /* CC_OK, or why the engine was aborted */

    unsigned exchanges;                   /* store allgathers made while connecting */
    unsigned windows;                     /* RMA windows created (window.c: their ids) */
    size_t seg_bytes;                     /* CCOMM_PIPELINE_CHUNK */
    int seg_auto;                         /* ... it is auto (cc__pipeline_setting) */
    int desync_check;                     /* CCOMM_DESYNC_CHECK (read once: every op asks) */
    const char *forced[CC_OP_TYPE_COUNT]; /* tests' per-comm overrides (cc__native_force) */
    struct cc__arena *arena; /* an all-shm comm's control segment (transport/arena.h), or NULL */

    /* The last op's choice (run.c): a stream of like ops skips the table. The choice depends
     * only on these (select.c: type, size, transport class, overrides; the config is
     * immutable once read). fn NULL: none yet. */
    struct cc__native_choice {
        cc__algo_fn fn;
        const char *algo;
        const char *forced; /* nc->forced[type] when it was made */
        size_t in_count, out_count, bytes;
        cc_op_type_t type;
        cc_dtype_t dtype;
        unsigned tpm; /* its row's transports */
    } last;

    /* Work space, grown on demand, owned by the op that runs (one at a time). */
    void *scratch; /* algorithms' receive and staging space */
    size_t scratch_len;
    void *premul; /* PREMUL_SUM: the scaled copy of the input */
    size_t premul_len;
    void *pack; /* coalesced ops: the packed buffers */
    size_t pack_len;
    cc__req_t *reqs;     /* request pool of the running algorithm */
    cc__req_t **reqp;    /* pointers for cc__net_wait */
    int nreqs, reqs_cap; /* handed out / allocated */
};

/*
 * The choice (select.c): the algorithm the table gives op on nc, a forced
 * name (cc__native_force, then CCOMM_ALGO_<COLL>) before the rows'
 * conditions. *algo = its row's name (static), *tpm (unless NULL) the
 * transports it runs on (CC__TPM_SHM alone: a body of shm_algo.h). NULL with
 * *st set, logged, when none can run: a forced name that is no row
 * (CC_ERR_INVALID_ARG), a forced row whose transports exclude nc's, or no row
 * at all (CC_ERR_NOT_SUPPORTED). Runs nothing.
 */
cc__algo_fn cc__native_choose(const cc__native_t *nc, const cc__op_t *op, const char **algo,
                              unsigned *tpm, cc_status_t *st);

/* An op's START that the engine left to its shared-memory body (op->start_at_post), written
 * now if it is still pending: the arena's on_post (select_shm.c), and whatever runs instead of
 * a body. */
void cc__native_start_pending(void *op);

/* The running (run.c): choose, START transition, desync check, PREMUL_SUM scaling,
 * the algorithm, withdrawal of what a failed one left posted. */
cc_status_t cc__native_run(cc__native_t *nc, cc__op_t *op);

/*
 * Run `sub`, an op built by another algorithm (a coalesced piece, a phase of
 * a byte collective), with the algorithm the table picks for its type: no
 * transitions, no desync check. `sub` shares the parent's identity and tags.
 */
cc_status_t cc__native_run_sub(cc__native_t *nc, cc__op_t *sub);

/* A sub-op of op: its info, comm, deadline and premultiplier; no arguments beyond info. */
void cc__sub_op(cc__op_t *sub, const cc__op_t *op);

/* Check every CCOMM_ALGO_* name against the table (create time). */
cc_status_t cc__native_check_forced(void);

/* Tests: force `name` (static) for ops of `type` on comm (NULL: back to
 * CCOMM_ALGO_* or the table). Per-communicator serial, between ops, on every rank alike. */
cc_status_t cc__native_force(cc_comm_t *comm, cc_op_type_t type, const char *name);

/* Tests: the algorithms of `type` that can run on comm's transport (up to max names, static). */
int cc__native_algorithms(const cc_comm_t *comm, cc_op_type_t type, const char **names, int max);
/* Every row's name for `type`, whatever the transport, in table order; and the
 * CCOMM_ALGO_* variable that forces one (NULL: none). The choices of that
 * variable in base/config_table.h must be "auto" and these (test_config_typed). */
int cc__native_row_names(cc_op_type_t type, const char **names, int max);
const char *cc__native_algo_var(cc_op_type_t type);

/* Scratch space of at least len bytes, or NULL (logged). Valid until the next call. */
void *cc__native_scratch(cc__native_t *nc, size_t len);
/* The same for the two other work areas. */
void *cc__native_buf(cc__native_t *nc, void **buf, size_t *cap, size_t len);

/*
 * Requests: a zeroed pool of n for the running algorithm (NULL on no
 * memory, logged). Entries are posted with cc__net_isend/irecv and may be
 * reposted once finished. Never asked for while requests of the pool are
 * pending (it may move).
 */
cc__req_t *cc__native_reqs(cc__native_t *nc, int n);
/* Wait for the posted ones among reqs[0..n) (entries never posted are skipped). */
cc_status_t cc__native_wait(cc__native_t *nc, cc__req_t *reqs, int n, uint64_t deadline_ns);
/*
 * memcpy for a rank's own block while its messages are in flight: in pieces of
 * CC__COPY_PIECE with one progress pass of the net between them, so that a peer's
 * rendezvous is answered, and data moves, during the copy instead of after it.
 */
#define CC__COPY_PIECE (256u << 10)
void cc__native_copy(cc__native_t *nc, void *dst, const void *src, size_t len);
/* Withdraw every pending request of the pool (abort the net if one is in flight). */
void cc__native_settle(cc__native_t *nc, cc_status_t why);

/* Tag for step `step` of the collective op (internal tag space). */
static inline uint32_t cc__coll_tag(const cc__op_t *op, uint32_t step)
{
    return CC__TAG_INTERNAL | (uint32_t)((op->info.coll_seq & 0x7fffffu) << 8) | (step & 0xffu);
}

/* CCOMM_DESYNC_CHECK: all ranks agree on the op at this coll_seq, or all fail with
 * CC_ERR_MISMATCH and a message naming ranks and ops. */
cc_status_t cc__desync_check(cc__native_t *nc, cc__op_t *op);

/*
 * Block layout of a collective over ranks: block r has count(r) elements at
 * element offset displ(r). Three forms: per-rank arrays (counts, displs;
 * displs NULL means packed), `total` cut into `chunks` near-equal pieces
 * (chunks > 0, see cc__chunk), or `count` each packed in rank order.
 */
typedef struct cc__blocks {
    const size_t *counts;
    const size_t *displs;
    size_t count;
    size_t total;
    int chunks;
} cc__blocks_t;

static inline size_t cc__blk_count(const cc__blocks_t *b, int r)
{
    if (b->counts) return b->counts[r];
    if (b->chunks) {
        size_t base = b->total / (size_t)b->chunks, rem = b->total % (size_t)b->chunks;
        return base + ((size_t)r < rem ? 1 : 0);
    }
    return b->count;
}

static inline size_t cc__blk_displ(const cc__blocks_t *b, int r)
{
    if (b->counts) {
        if (b->displs) return b->displs[r];
        size_t d = 0;
        for (int q = 0; q < r; q++)
            d += b->counts[q];
        return d;
    }
    if (b->chunks) {
        size_t base = b->total / (size_t)b->chunks, rem = b->total % (size_t)b->chunks;
        return (size_t)r * base + ((size_t)r < rem ? (size_t)r : rem);
    }
    return (size_t)r * b->count;
}

/*
 * The layouts of a gather, scatter or all-to-all op, uniform or v (sb: what
 * this rank sends, rb: what it receives). Returns 0 when the uniform count
 * is 0 on every rank: nothing to move.
 */
int cc__op_blocks(const cc__native_t *nc, const cc__op_t *op, cc__blocks_t *sb, cc__blocks_t *rb);

/*
 * Post a send (send = 1) or a receive of block p of `base` (layout blk) to
 * or from every rank p but `skip`, into rq[p], neighbours first. The linear
 * algorithms are this plus a local copy.
 */
cc_status_t cc__post_blocks(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk, char *base,
                            int send, int skip, cc__req_t *rq);

/* Blocks in the binomial subtree of relative rank v (v..v+lowbit(v)-1; the root's: all n). */
static inline int cc__subtree(int v, int n)
{
    int low = v ? v & -v : n;
    return low < n - v ? low : n - v;
}

/* Largest block. */
size_t cc__blk_max(const cc__blocks_t *b, int n);

/* Elements of chunk c when count is cut into n nearly equal chunks (larger ones first). */
void cc__chunk(size_t count, int n, int c, size_t *off, size_t *len);
/* Pieces a block of `bytes` is cut into for pipelining (1 for small ones). */
int cc__nseg(const cc__native_t *nc, size_t bytes, int max);
/* The same for pieces of `seg` bytes (0: whole blocks) instead of the communicator's. */
int cc__nseg_of(size_t seg, size_t bytes, int max);
/* AVG's last step on `count` elements of the op's dtype, in place (n = comm size). */
void cc__finish_avg(const cc__native_t *nc, const cc__op_t *op, void *buf, size_t count);
/* The op's reduction kernel (SUM's for AVG and PREMUL_SUM), logged on error. */
cc_status_t cc__op_kernel(const cc__op_t *op, cc__reduce_fn *fn);
/* Nearest power of two at or below n (n >= 1). */
int cc__pow2_floor(int n);

/*
 * Ring phases shared by allreduce, reduce-scatter and allgather (and their v
 * forms). Their tags use steps step0 .. step0 + n - 2.
 * Reduce-scatter: block b of `in` (layout blk) is reduced around the ring
 * and its total lands at `out` on rank b (out may equal in + displ(rank)).
 * Allgather: rank r's block is at `own` (NULL: already in place in `buf`);
 * afterwards every block is in `buf` on every rank. Both pipeline large
 * blocks in pieces.
 */
cc_status_t cc__ring_reduce_scatter(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk,
                                    const void *in, void *out, uint32_t step0);
cc_status_t cc__ring_allgather(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk, void *buf,
                               const void *own, uint32_t step0);
/* The piece size the ring allgather cuts a largest block of `block` bytes into on n ranks
 * for an op of `type`, from the pipeline piece `chunk` (is_auto: CCOMM_PIPELINE_CHUNK=auto,
 * else the setting holds); 0: whole blocks (allgather_ring.c says why). */
size_t cc__ring_allgather_piece(int n, cc_op_type_t type, size_t block, size_t chunk, int is_auto);
/* CCOMM_PIPELINE_CHUNK (text) on n ranks: *seg the piece size (0: whole blocks), *is_auto
 * whether it was auto. -1 (and *seg 0) when text is neither auto nor a size. */
int cc__pipeline_setting(const char *text, int n, size_t *seg, int *is_auto);

/* Algorithms (one file each, see select.c for when each runs). */
cc_status_t cc__send_direct(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__recv_direct(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__barrier_dissemination(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allreduce_ring(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allreduce_recursive_doubling(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allreduce_halving_doubling(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__broadcast_binomial(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__broadcast_ring(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_binomial(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_ring(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allgather_ring(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allgatherv_ring(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allgather_bruck(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_scatter_ring(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_scatterv_ring(cc__native_t *nc, cc__op_t *op);
/* These take the uniform and the v form alike (all-to-all(v), gather(v), scatter(v)). */
cc_status_t cc__alltoall_pairwise(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__alltoall_linear(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__gather_linear(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__scatter_linear(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__gather_binomial(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__scatter_binomial(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__monitored_barrier_all_to_one(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__group_batch(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__coalesced_packed(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allgather_bytes_two_phase(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__broadcast_bytes_two_phase(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__gather_bytes_two_phase(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__scatter_bytes_two_phase(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__send_bytes_two_phase(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__recv_bytes_two_phase(cc__native_t *nc, cc__op_t *op);

#endif /* CC_NATIVE_NATIVE_H */
