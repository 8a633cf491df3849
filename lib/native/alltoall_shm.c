/*
 * alltoall_shm.c - all-to-all between ranks of one host, through the arena.
 *
 * flat (small): every rank stages its whole send buffer in the arena, then
 *   copies block `rank` of every peer's staging into its receive buffer.
 * cma (large): every rank reads block `rank` of each peer's send buffer
 *   straight into block q of its receive buffer (process_vm_readv, one
 *   copy). In place the blocks for peers are first copied aside: a peer may
 *   still read block q of it while this rank writes the block it got from q
 *   (the own block stays where it is).
 * stream (large, 2 ranks): the block for the peer goes through this rank's
 *   staging area in pieces, copied by user space on both sides (below).
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "native/shm_algo.h"

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank;
    size_t total = in->in_count * cc_dtype_size(in->dtype), blk = total / (size_t)n;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (total) memcpy(cc__arena_stage(ao, r, total), in->sendbuf, total);
    cc__arena_expect(ao, total);
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    for (int q = 0; blk && q < n; q++)
        memcpy((char *)in->recvbuf + (size_t)q * blk,
               (const char *)cc__arena_stage(ao, q, total) + (size_t)r * blk, blk);
    return cc__arena_check_quit(ao);
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank;
    size_t total = in->in_count * cc_dtype_size(in->dtype), blk = total / (size_t)n;
    int inplace = in->sendbuf == in->recvbuf;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (total && inplace) {
        /* Only the blocks peers read go aside, at their offsets; the own block stays put. */
        char *copy = cc__arena_scratch(ao->ar, 1, total);
        if (!copy) return CC_ERR_NO_MEMORY;
        for (int q = 0; q < n; q++)
            if (q != r)
                memcpy(copy + (size_t)q * blk, (const char *)in->sendbuf + (size_t)q * blk, blk);
        cc__arena_par(ao, r)->sendbuf = (uint64_t)(uintptr_t)copy;
    }
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    char *out = in->recvbuf;
    if (blk && !inplace)
        memcpy(out + (size_t)r * blk, (const char *)in->sendbuf + (size_t)r * blk, blk);
    for (int j = 1; j < n; j++) {
        int q = (r + j) % n;
        CC_CHECK(cc__arena_read(ao, q, out + (size_t)q * blk,
                                cc__arena_par(ao, q)->sendbuf + (size_t)r * blk, blk));
    }
    return cc__arena_finish(ao);
}

/*
 * stream, 2 ranks: piece t (STREAM_PIECE bytes) of the block for the peer goes through
 * slot t & 1 of this rank's data area. Phase t of a rank: stage piece t (and, out of
 * place, copy piece t of its own block to its place in the output), copy piece t - 1 of
 * the peer's block for it out of the peer's slot, publish t + 1 and wait until the peer
 * did. The ordering argument is allgather_shm.c's stream. In place, piece t - 1 of the
 * output block q is written in phase t, after its input piece went to the slot in phase
 * t - 1, and the own block stays where it is.
 */
#define STREAM_PIECE (CC__ARENA_DATA / 2)

static cc_status_t stream(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int r = nc->rank, q = 1 - r;
    size_t blk = in->in_count * cc_dtype_size(in->dtype) / 2;
    uint64_t steps = (blk + STREAM_PIECE - 1) / STREAM_PIECE, seen = 0;
    char *out = in->recvbuf;
    const char *src = in->sendbuf;
    int nt = blk * 2 >= CC__SHM_STREAM_OUT_BYTES, inplace = (const void *)src == (void *)out;
    CC_CHECK(cc__shm_begin_shallow(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    for (uint64_t t = 0; t <= steps; t++) {
        if (t < steps) {
            size_t off = (size_t)t * STREAM_PIECE, len = blk - off;
            if (len > STREAM_PIECE) len = STREAM_PIECE;
            char *slot = (char *)cc__arena_data(ao, r) + (size_t)(t & 1) * STREAM_PIECE;
            memcpy(slot, src + (size_t)q * blk + off, len);
            if (!inplace)
                cc__shm_out_copy(out + (size_t)r * blk + off, src + (size_t)r * blk + off, len, nt);
        }
        if (t >= 1) {
            size_t off = (size_t)(t - 1) * STREAM_PIECE, len = blk - off;
            if (len > STREAM_PIECE) len = STREAM_PIECE;
            const char *slot =
                (const char *)cc__arena_data(ao, q) + (size_t)((t - 1) & 1) * STREAM_PIECE;
            cc__shm_out_copy(out + (size_t)q * blk + off, slot, len, nt);
        }
        if (t == steps) break;
        cc__arena_progress(ao, t + 1);
        if (seen < t + 1) CC_CHECK(cc__arena_wait_progress(ao, q, t + 1, &seen));
    }
#if defined(__SSE2__)
    if (nt) _mm_sfence(); /* the non-temporal stores are seen before the op ends */
#endif
    return cc__arena_check_quit(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__alltoall_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

/* The stream's phases: 2 ranks only (other counts, and blocks past the phase counter, run
 * cma, as every rank decides alike). */
static uint64_t stream_steps(const cc__native_t *nc, const cc__op_t *op)
{
    size_t es = op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
    return nc->size == 2 ? op->info.in_count * es / 2 / STREAM_PIECE + 1 : UINT64_MAX;
}

cc_status_t cc__alltoall_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run_cma(nc, op, flat, cma, stream_steps(nc, op), stream);
}

cc_status_t cc__alltoall_shm_stream(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run_stream(nc, op, stream_steps(nc, op), stream, cc__alltoall_shm_cma);
}
