/*
 * scatter_shm.c - scatter from a root between ranks of one host, through
 * the arena.
 *
 * flat (small): the root stages its whole send buffer; every rank copies
 *   its block out.
 * cma (large): every rank reads its block straight from the root's send
 *   buffer (process_vm_readv, one copy); the root returns once all are done.
 * In place on the root (recvbuf == sendbuf + root x recvcount) its own
 * block stays put.
 */
#include <string.h>

#include "native/shm_algo.h"

static void own_block(const cc_op_info_t *in, size_t bytes)
{
    const char *mine = (const char *)in->sendbuf + (size_t)in->root * bytes;
    if (bytes && in->recvbuf != mine) memcpy(in->recvbuf, mine, bytes);
}

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int r = nc->rank, root = in->root;
    size_t bytes = in->out_count * cc_dtype_size(in->dtype), total = (size_t)nc->size * bytes;
    CC_CHECK(cc__shm_begin(nc, op, in->out_count, ao));
    if (r == root && total) memcpy(cc__arena_stage(ao, root, total), in->sendbuf, total);
    cc__arena_post(ao);
    if (r == root) {
        own_block(in, bytes);
        return CC_OK;
    }
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    if (bytes)
        memcpy(in->recvbuf, (const char *)cc__arena_stage(ao, root, total) + (size_t)r * bytes,
               bytes);
    return CC_OK;
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int r = nc->rank, root = in->root;
    size_t bytes = in->out_count * cc_dtype_size(in->dtype);
    CC_CHECK(cc__shm_begin(nc, op, in->out_count, ao));
    cc__arena_post(ao);
    if (r == root) {
        own_block(in, bytes);
        for (int q = 0; q < nc->size; q++)
            if (q != root) CC_CHECK(cc__arena_wait_done(ao, q));
        return CC_OK;
    }
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    CC_CHECK(cc__arena_read(ao, root, in->recvbuf,
                            cc__arena_par(ao, root)->sendbuf + (size_t)r * bytes, bytes));
    cc__arena_done(ao);
    return CC_OK;
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__scatter_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__scatter_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
