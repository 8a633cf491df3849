/*
 * reduce_scatter_shm.c - reduce-scatter between ranks of one host, through
 * the arena. Rank r owns block r and reduces it alone, in rank order with
 * the multi-input kernel (as allreduce_shm.c), so its bits are those an
 * allreduce of the same inputs gives for that block.
 *
 * flat (small): every rank stages its whole input in the arena, then
 *   reduces its block from the n staged copies.
 * cma (large): every rank reads block r of each peer's input straight from
 *   the peer (process_vm_readv) in cache-sized pieces and reduces them in
 *   one pass into its receive buffer; it returns once every peer is done
 *   reading its own input.
 * In place (recvbuf == sendbuf + rank x recvcount) the output overwrites
 * exactly the input block it is computed from, which no peer reads.
 */
#include "native/shm_algo.h"

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t rc = in->out_count;
    CC_CHECK(cc__shm_begin(nc, op, rc, ao));
    cc__shm_stage_input(ao);
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    CC_CHECK(cc__shm_reduce_staged(ao, (size_t)nc->rank * rc, rc, in->recvbuf));
    return cc__arena_check_quit(ao);
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t rc = in->out_count;
    CC_CHECK(cc__shm_begin(nc, op, rc, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    CC_CHECK(cc__shm_reduce_range(ao, (size_t)nc->rank * rc, rc, in->recvbuf, 0));
    return cc__arena_finish(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__reduce_scatter_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__reduce_scatter_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
