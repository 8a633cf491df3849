/*
 * allgather_shm.c - allgather between ranks of one host, through the arena.
 *
 * flat (small): every rank stages its block in the arena, then copies every
 *   peer's block out of it.
 * cma (large): every rank reads each peer's block straight from the peer's
 *   send buffer into its own receive buffer (process_vm_readv, one copy),
 *   starting with the next rank so that readers spread over the sources.
 * In place (sendbuf == recvbuf + rank x sendcount) the own block stays put.
 */
#include <string.h>

#include "native/shm_algo.h"

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (bytes) memcpy(cc__arena_stage(ao, r, bytes), in->sendbuf, bytes);
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

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__allgather_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__allgather_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
