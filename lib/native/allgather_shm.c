/*
 * allgather_shm.c - allgather between ranks of one host, through the arena.
 *
 * flat (small): every rank stages its block in the arena, then copies every
 *   peer's block out of it.
 * cma (large): every rank reads each peer's block straight from the peer's
 *   send buffer into its own receive buffer (process_vm_readv, one copy),
 *   starting with the next rank so that readers spread over the sources.
 * stream (large): every rank's block goes through its staging area in
 *   pieces, copied by user space on both sides (broadcast_shm.c says why).
 * In place (sendbuf == recvbuf + rank x sendcount) the own block stays put.
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
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (bytes) memcpy(cc__arena_stage(ao, r, bytes), in->sendbuf, bytes);
    cc__arena_expect(ao, bytes);
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    char *out = in->recvbuf;
    for (int q = 0; bytes && q < n; q++) {
        const void *src = q == r ? in->sendbuf : cc__arena_stage(ao, q, bytes);
        if (src != out + (size_t)q * bytes) memcpy(out + (size_t)q * bytes, src, bytes);
    }
    return cc__arena_check_quit(ao);
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    char *out = in->recvbuf;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    if (bytes && in->sendbuf != out + (size_t)r * bytes)
        memcpy(out + (size_t)r * bytes, in->sendbuf, bytes);
    for (int j = 1; j < n; j++) {
        int q = (r + j) % n;
        CC_CHECK(cc__arena_read(ao, q, out + (size_t)q * bytes, cc__arena_par(ao, q)->sendbuf,
                                bytes));
    }
    return cc__arena_finish(ao);
}

/*
 * stream: piece k (STREAM_PIECE bytes) of rank q's block goes through slot k & 1 of q's data
 * area. Phase t of a rank: stage piece t of its block (and, out of place, copy it from the
 * slot to its own place in the output), copy piece t - 1 of every peer's block out of the
 * peer's slot, then publish t + 1 and wait until every peer did. What phase t reads, its
 * owner wrote before publishing t; the slot phase t writes was last read in phase t - 1,
 * which every peer finished before publishing t. No rank reads another's user buffers, and
 * the last phase's slots are reused only once every rank arrived at a later op (arena.h).
 * Outputs of at least CC__SHM_STREAM_OUT_BYTES are written with non-temporal stores.
 */
#define STREAM_PIECE (CC__ARENA_DATA / 2)

static cc_status_t stream(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    uint64_t steps = (bytes + STREAM_PIECE - 1) / STREAM_PIECE;
    char *out = in->recvbuf;
    int nt = bytes * (size_t)n >= CC__SHM_STREAM_OUT_BYTES;
    int own_in_place = in->sendbuf == out + (size_t)r * bytes;
    uint64_t seen[CC__ARENA_MAX_RANKS] = {0}; /* phases each peer was seen to finish */
    CC_CHECK(cc__shm_begin_shallow(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    for (uint64_t t = 0; t <= steps; t++) {
        if (t < steps) {
            size_t off = (size_t)t * STREAM_PIECE, len = bytes - off;
            if (len > STREAM_PIECE) len = STREAM_PIECE;
            char *slot = (char *)cc__arena_data(ao, r) + (size_t)(t & 1) * STREAM_PIECE;
            memcpy(slot, (const char *)in->sendbuf + off, len);
            if (!own_in_place) cc__shm_out_copy(out + (size_t)r * bytes + off, slot, len, nt);
        }
        if (t >= 1) {
            size_t off = (size_t)(t - 1) * STREAM_PIECE, len = bytes - off;
            if (len > STREAM_PIECE) len = STREAM_PIECE;
            for (int j = 1; j < n; j++) {
                int q = (r + j) % n;
                const char *slot =
                    (const char *)cc__arena_data(ao, q) + (size_t)((t - 1) & 1) * STREAM_PIECE;
                cc__shm_out_copy(out + (size_t)q * bytes + off, slot, len, nt);
            }
        }
        if (t == steps) break;
        cc__arena_progress(ao, t + 1);
        for (int j = 1; j < n; j++) {
            int q = (r + j) % n;
            if (seen[q] < t + 1) CC_CHECK(cc__arena_wait_progress(ao, q, t + 1, &seen[q]));
        }
    }
#if defined(__SSE2__)
    if (nt) _mm_sfence(); /* the non-temporal stores are seen before the op ends */
#endif
    return cc__arena_check_quit(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__allgather_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

/* The stream's phases: they are counted in prog's low CC__ARENA_PROG_BITS bits; a larger
 * block (2^24 pieces of 32 KiB: 512 GiB) runs cma, as every rank decides alike. */
static uint64_t stream_steps(const cc__op_t *op)
{
    size_t es = op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
    return op->info.in_count * es / STREAM_PIECE + 1;
}

cc_status_t cc__allgather_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run_cma(nc, op, flat, cma, stream_steps(op), stream);
}

cc_status_t cc__allgather_shm_stream(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run_stream(nc, op, stream_steps(op), stream, cc__allgather_shm_cma);
}
