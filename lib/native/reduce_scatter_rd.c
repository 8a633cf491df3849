/*
 * reduce_scatter_rd.c - reduce-scatter of small vectors as a recursive-
 * doubling allreduce of the whole input (allreduce_recursive_doubling.c),
 * each rank then keeping its own block.
 *
 * Why: over TCP a small op costs about one wake-up and a few syscalls per
 * message, not bytes. The ring needs n-1 rounds of one message each;
 * recursive doubling log2(n) rounds (two more, the fold, when n is not a
 * power of two), each carrying the whole vector, which is cheap while the
 * vector is small. At 4 ranks that is 2 messages per rank instead of 3,
 * and 2 rounds instead of 3 (measurements in select.c).
 *
 * Determinism: the allreduce's bracket is fixed by the ranks, so every run
 * gives the same bits; AVG is divided once, on the whole vector.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"
#include "native/net_algo.h"

cc_status_t cc__reduce_scatter_rd(cc__native_t *nc, cc__op_t *op)
{
    size_t total = op->info.in_count, es = cc_dtype_size(op->info.dtype);
    size_t own = op->info.out_count;
    if (!total) return CC_OK; /* every rank passed recvcount 0 */
    cc__reduce_fn fn;
    CC_CHECK(cc__op_kernel(op, &fn));
    char *acc = cc__native_scratch(nc, 2 * total * es);
    if (!acc) return CC_ERR_NO_MEMORY;
    memcpy(acc, op->info.sendbuf, total * es);
    CC_CHECK(cc__rd_allreduce(nc, op, fn, acc, acc + total * es));
    /* In place the output is the rank's block of the input: acc is a copy, so no overlap. */
    memcpy(op->info.recvbuf, acc + (size_t)nc->rank * own * es, own * es);
    return CC_OK;
}
