/*
 * alltoall_shm.c - all-to-all between ranks of one host, through the arena.
 *
 * flat (small): every rank stages its whole send buffer in the arena, then
 *   copies block `rank` of every peer's staging into its receive buffer.
 * cma (large): every rank reads block `rank` of each peer's send buffer
 *   straight into block q of its receive buffer (process_vm_readv, one
 *   copy). In place the send buffer is first copied aside: a peer may still
 *   read block q of it while this rank writes the block it got from q.
 */
#include <string.h>

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
    const char *src = in->sendbuf;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    if (total && in->sendbuf == in->recvbuf) {
        char *copy = cc__arena_scratch(ao->ar, 1, total);
        if (!copy) return CC_ERR_NO_MEMORY;
        memcpy(copy, src, total);
        src = copy;
        cc__arena_par(ao, r)->sendbuf = (uint64_t)(uintptr_t)copy;
    }
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    char *out = in->recvbuf;
    if (blk) memcpy(out + (size_t)r * blk, src + (size_t)r * blk, blk);
    for (int j = 1; j < n; j++) {
        int q = (r + j) % n;
        CC_CHECK(cc__arena_read(ao, q, out + (size_t)q * blk,
                                cc__arena_par(ao, q)->sendbuf + (size_t)r * blk, blk));
    }
    return cc__arena_finish(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__alltoall_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__alltoall_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
