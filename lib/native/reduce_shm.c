/*
 * reduce_shm.c - reduce to a root between ranks of one host, through the
 * arena. The result has the bits an allreduce of the same inputs gives
 * (multi-input kernel, rank order; see allreduce_shm.c).
 *
 * flat (small): every rank stages its input in the arena; the root reduces
 *   the n staged copies. Other ranks return at once.
 * cma (large): as the first phase of allreduce_shm.c's cma, every rank
 *   reduces its share of the vector, reading the peers' inputs in place;
 *   the root writes its share into its receive buffer, the others into a
 *   private buffer the root then reads (process_vm_readv) as far as each
 *   owner published. Every rank returns once all are done with its memory.
 */
#include "native/shm_algo.h"

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__shm_stage_input(ao);
    cc__arena_post(ao);
    if (nc->rank != in->root) return CC_OK;
    CC_CHECK(cc__arena_wait_all(ao));
    return cc__shm_reduce_staged(ao, 0, in->in_count, in->recvbuf);
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    int n = nc->size, r = nc->rank, root = in->root;
    size_t es = cc_dtype_size(in->dtype), align = CC__ARENA_LINE / es, off, len;
    cc__shm_share(in->in_count, n, r, align, &off, &len);
    char *share = r == root ? (char *)in->recvbuf + off * es : cc__arena_scratch(nc->arena, 1, len * es);
    if (!share && len) return CC_ERR_NO_MEMORY;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    /* Where this rank's share lands, for the root to read. */
    if (r != root) cc__arena_par(ao, r)->recvbuf = (uint64_t)(uintptr_t)share;
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    CC_CHECK(cc__shm_reduce_range(ao, off, len, share, 1));
    for (int j = 1; r == root && j < n; j++) {
        int q = (r + j) % n;
        size_t qoff, qlen;
        cc__shm_share(in->in_count, n, q, align, &qoff, &qlen);
        CC_CHECK(cc__shm_fetch_published(ao, q, cc__arena_par(ao, q)->recvbuf,
                                         (char *)in->recvbuf + qoff * es, qlen));
    }
    return cc__arena_finish(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__reduce_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__reduce_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
