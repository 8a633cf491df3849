/*
 * allreduce_ring.c - ring allreduce: the ring reduce-scatter of
 * reduce_scatter_ring.c over count cut into n near-equal chunks, then the
 * ring allgather of allgather_ring.c. Each rank sends and receives
 * 2 (n-1)/n of the data, the least any allreduce can, which is what large
 * messages need.
 *
 * Out of place the reduce-scatter reads sendbuf and writes only the rank's
 * own chunk of recvbuf; the allgather fills the rest: no copy of the input.
 *
 * Determinism: chunk c is summed along the ring starting at rank c+1 and
 * ending at rank c (see reduce_scatter_ring.c), which alone applies AVG's
 * division; the allgather then copies those exact bits to every rank, so
 * all ranks hold the same result, run after run.
 */
#include "base/log.h"
#include "native/native.h"

cc_status_t cc__allreduce_ring(cc__native_t *nc, cc__op_t *op)
{
    size_t count = op->info.in_count, es = cc_dtype_size(op->info.dtype);
    if (!count) return CC_OK;
    int n = nc->size, r = nc->rank;
    cc__blocks_t blk = {.total = count, .chunks = n};
    char *out = op->info.recvbuf, *own = out + cc__blk_displ(&blk, r) * es;
    CC_CHECK(cc__ring_reduce_scatter(nc, op, &blk, op->info.sendbuf, own, 0));
    cc__finish_avg(nc, op, own, cc__blk_count(&blk, r));
    return cc__ring_allgather(nc, op, &blk, out, NULL, (uint32_t)(n - 1));
}
