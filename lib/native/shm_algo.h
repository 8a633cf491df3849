/*
 * shm_algo.h - what the native engine's shared-memory algorithms
 * (<collective>_shm.c) share: the entry that picks and runs a body
 * (select_shm.c), their building blocks, and their prototypes. They move
 * data through the transport's arena (transport/arena.h: publish, wait,
 * read peer memory); docs/performance.md, "Shared-memory algorithms".
 */
#ifndef CC_NATIVE_SHM_ALGO_H
#define CC_NATIVE_SHM_ALGO_H

#include "base/log.h"
#include "native/native.h"
#include "transport/arena.h"

/* Begin op `op` on the communicator's arena (cc__arena_begin with the op's info and deadline):
 * deep (may run ahead of its peers) as cc__shm_run decided in ao->deep, from the bytes any
 * rank's body stages (its flat size; every body stages that or nothing). An op whose START the
 * engine left to its body (op->start_at_post, native/run.c) has it written by the arena: after
 * its first publication, or before its first wait, here in cc__arena_begin too. */
static inline cc_status_t cc__shm_begin(cc__native_t *nc, cc__op_t *op, uint64_t count,
                                        cc__arena_op_t *ao)
{
    ao->on_post = op->start_at_post ? cc__native_start_pending : NULL;
    ao->on_post_arg = op;
    return cc__arena_begin(nc->arena, &op->info, count, ao->deep, op->deadline_ns, ao);
}

/* The same, never deep (the stream bodies: their pieces go through the data area whatever the
 * op's size). */
static inline cc_status_t cc__shm_begin_shallow(cc__native_t *nc, cc__op_t *op, uint64_t count,
                                                cc__arena_op_t *ao)
{
    ao->deep = 0;
    return cc__shm_begin(nc, op, count, ao);
}

/* Share c of `count` elements cut into n nearly equal parts, on `align`-element boundaries. */
static inline void cc__shm_share(size_t count, int n, int c, size_t align, size_t *off, size_t *len)
{
    size_t units = (count + align - 1) / align, base = units / (size_t)n, rem = units % (size_t)n;
    size_t u0 = (size_t)c * base + ((size_t)c < rem ? (size_t)c : rem);
    size_t u1 = u0 + base + ((size_t)c < rem ? 1 : 0);
    *off = u0 * align < count ? u0 * align : count;
    *len = (u1 * align < count ? u1 * align : count) - *off;
}

/*
 * Building blocks (allreduce_shm.c). reduce_range: reduce elements [off,
 * off + len) of every rank's input (peers' read in pieces through the
 * cache) into dst, in rank order; with `publish`, progress after each piece.
 * fetch_published: copy len elements at `src` of peer q into dst, as far as
 * q published its pieces.
 */
cc_status_t cc__shm_reduce_range(cc__arena_op_t *ao, size_t off, size_t len, void *dst,
                                 int publish);
cc_status_t cc__shm_fetch_published(cc__arena_op_t *ao, int q, uint64_t src, void *dst, size_t len);
/* Stage this rank's whole input (in_count elements) in the arena; the peers' staged inputs are
 * fetched with their arrivals (cc__arena_expect). */
void cc__shm_stage_input(cc__arena_op_t *ao);
/* dst = elements [off, off + count) of every rank's staged input, reduced in rank order. */
cc_status_t cc__shm_reduce_staged(cc__arena_op_t *ao, size_t off, size_t count, void *dst);

/*
 * An algorithm's body runs one op on the arena; cc__shm_run picks the body
 * (select_shm.c: the one asked for, or what stands in when it cannot run),
 * runs it, and ends it through cc__arena_end.
 */
typedef cc_status_t (*cc__shm_body)(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao);
cc_status_t cc__shm_run(cc__native_t *nc, cc__op_t *op, int want_cma, cc__shm_body flat,
                        cc__shm_body cma);
/* The same for a body with no alternative but the transport's algorithm (no arena). */
cc_status_t cc__shm_run_body(cc__native_t *nc, cc__op_t *op, cc__shm_body body);
/* The cma row of a collective that also streams: where the ranks cannot read each other's
 * memory (cc__arena_cma_ok) and the op does not fit flat's staging, the stream body stands in
 * (named shm_stream) rather than the transport's algorithm, when its `steps` fit (as for
 * cc__shm_run_stream); otherwise as cc__shm_run(nc, op, 1, flat, cma). */
cc_status_t cc__shm_run_cma(cc__native_t *nc, cc__op_t *op, cc__shm_body flat, cc__shm_body cma,
                            uint64_t steps, cc__shm_body stream);
/* A stream body (shm_stream) counts its phases in prog's low CC__ARENA_PROG_BITS bits: an op
 * of `steps` phases or more than they hold (UINT64_MAX: it cannot stream) runs `cma` instead
 * (named shm_cma), as every rank decides alike from the count; else the body, through
 * cc__shm_run_body. */
cc_status_t cc__shm_run_stream(cc__native_t *nc, cc__op_t *op, uint64_t steps, cc__shm_body body,
                               cc_status_t (*cma)(cc__native_t *nc, cc__op_t *op));
/* Elements per piece of shm_stream on n ranks (allreduce_stream_shm.c). */
size_t cc__shm_stream_piece(int n, size_t es);
/*
 * Outputs of at least this many bytes are written past the cache by the stream bodies
 * (cc__shm_out_copy with stream = 1: non-temporal stores, ordered by an sfence before the op
 * returns). Measured 2026-12-01 18:16 UTC, load 7-13, 2 ranks, allreduce against a build
 * without it (bench/ab.sh --a NO_NT_BUILD --b build --sizes "16M 64M" --launches 8; and
 * --sizes "1M 4M 16M 64M" --launches 6): time without / with 1.45 at 4 MiB, 1.40 at 16 MiB,
 * 1.37 at 64 MiB; below 4 MiB the output may still be in the cache when the caller reads it,
 * so it is left there.
 */
#define CC__SHM_STREAM_OUT_BYTES (4u << 20)
void cc__shm_out_copy(void *dst, const void *src, size_t len, int stream);

/* Algorithms (<collective>_shm.c): flat stages data in the arena (small), cma reads peers'
 * buffers in place (large). */
cc_status_t cc__allreduce_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allreduce_shm_cma(cc__native_t *nc, cc__op_t *op);
/* stream (large): through the arena's staging area, no process_vm_readv (allreduce_stream_shm.c). */
cc_status_t cc__allreduce_shm_stream(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__broadcast_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__broadcast_shm_cma(cc__native_t *nc, cc__op_t *op);
/* stream (large): the root's buffer through its staging area, no process_vm_readv. */
cc_status_t cc__broadcast_shm_stream(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_shm_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allgather_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__allgather_shm_cma(cc__native_t *nc, cc__op_t *op);
/* stream (large): every block through its owner's staging area (allgather_shm.c). */
cc_status_t cc__allgather_shm_stream(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_scatter_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__reduce_scatter_shm_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__alltoall_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__alltoall_shm_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__alltoall_shm_stream(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__gather_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__gather_shm_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__scatter_shm_flat(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__scatter_shm_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__barrier_shm(cc__native_t *nc, cc__op_t *op);

#endif /* CC_NATIVE_SHM_ALGO_H */
