/*
 * gather_shm.c - gather to a root between ranks of one host, through the
 * arena.
 *
 * flat (small): every rank stages its block; the root copies them out.
 * cma (large): the root reads every peer's block straight from its send
 *   buffer (process_vm_readv, one copy); the others return once it is done.
 * In place on the root (sendbuf == recvbuf + root x sendcount) its own
 * block stays put.
 */
#include <string.h>

#include "native/shm_algo.h"

static void own_block(const cc_op_info_t *in, size_t bytes)
{
    char *mine = (char *)in->recvbuf + (size_t)in->root * bytes;
    if (bytes && in->sendbuf != mine) memcpy(mine, in->sendbuf, bytes);
}

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (r != in->root && bytes) memcpy(cc__arena_stage(ao, r, bytes), in->sendbuf, bytes);
    cc__arena_post(ao);
    if (r != in->root) return CC_OK;
    CC_CHECK(cc__arena_wait_all(ao));
    own_block(in, bytes);
    for (int q = 0; bytes && q < n; q++)
        if (q != r)
            memcpy((char *)in->recvbuf + (size_t)q * bytes, cc__arena_stage(ao, q, bytes), bytes);
    return CC_OK;
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank, root = in->root;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    if (r != root) {
        CC_CHECK(cc__arena_wait_arrive(ao, root));
        return cc__arena_wait_done(ao, root); /* the root reads this rank's buffer until then */
    }
    CC_CHECK(cc__arena_wait_all(ao));
    own_block(in, bytes);
    for (int j = 1; j < n; j++) {
        int q = (r + j) % n;
        CC_CHECK(cc__arena_read(ao, q, (char *)in->recvbuf + (size_t)q * bytes,
                                cc__arena_par(ao, q)->sendbuf, bytes));
    }
    cc__arena_done(ao);
    return CC_OK;
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__gather_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__gather_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
