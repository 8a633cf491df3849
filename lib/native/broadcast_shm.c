/*
 * broadcast_shm.c - broadcast between ranks of one host, through the arena.
 *
 * flat (small): the root stages its buffer in the arena; every other rank
 *   copies it out. The root waits for nobody (its staging area is reused
 *   only once every rank arrived at a later op).
 * cma (large): every other rank reads the root's buffer straight into its
 *   own (process_vm_readv, one copy); the root returns once all are done.
 */
#include <string.h>

#include "native/shm_algo.h"

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    int root = in->root;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (nc->rank == root) {
        if (bytes) memcpy(cc__arena_stage(ao, root, bytes), in->sendbuf, bytes);
        cc__arena_post(ao);
        if (bytes && in->sendbuf != in->recvbuf) memcpy(in->recvbuf, in->sendbuf, bytes);
        return CC_OK;
    }
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    if (bytes) memcpy(in->recvbuf, cc__arena_stage(ao, root, bytes), bytes);
    return CC_OK;
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    int root = in->root;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    if (nc->rank == root) {
        if (bytes && in->sendbuf != in->recvbuf) memcpy(in->recvbuf, in->sendbuf, bytes);
        for (int q = 0; q < nc->size; q++)
            if (q != root) CC_CHECK(cc__arena_wait_done(ao, q));
        return CC_OK;
    }
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    CC_CHECK(cc__arena_read(ao, root, in->recvbuf, cc__arena_par(ao, root)->sendbuf, bytes));
    cc__arena_done(ao);
    return CC_OK;
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__broadcast_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__broadcast_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
