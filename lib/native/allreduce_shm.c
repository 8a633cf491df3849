/*
 * allreduce_shm.c - allreduce between ranks of one host, through the arena.
 *
 * flat (small): every rank stages its input in its arena slot, then every
 *   rank reduces all n slots itself. One publication, one wait, no second
 *   phase: the latency of a few cache-line transfers.
 * cma (large): rank r owns share r of the vector. It reads share r of every
 *   peer's input straight from the peer's memory (process_vm_readv) in
 *   cache-sized pieces and reduces the n pieces in one pass into its own
 *   output, publishing each finished piece; then it reads the other shares
 *   from their owners' outputs into its own, as far as they are published.
 *   Each byte of input is read from memory once, each byte of output
 *   written once per rank.
 *
 * Determinism: both reduce element i as in[0] op in[1] op ... op in[n-1]
 * with the multi-input kernel (rank order, left to right, 16-bit floats
 * accumulated in float32 and rounded once), AVG dividing the sum by n
 * afterwards (PREMUL_SUM inputs come scaled: select.c's run_algo). In flat every rank does
 * exactly that; in cma the owner of share r does it once and the others
 * copy its bits. So every rank holds the same bits, the two algorithms give
 * the same bits, and so do in-place and out-of-place calls.
 */
#include <string.h>

#include "kernels/kernels.h"
#include "base/log.h"
#include "native/shm_algo.h"

/* Bytes of the pipeline's pieces for ops whose n inputs stream through the cache. */
static size_t shm_piece(int nranks, size_t elem_size)
{
    /* n - 1 peers' pieces plus the output stay within about half of a 1 MiB L2. */
    size_t piece = (512u * 1024u) / (size_t)(nranks > 2 ? nranks - 1 : 1);
    if (piece > 256u * 1024u) piece = 256u * 1024u;
    if (piece < 16u * 1024u) piece = 16u * 1024u;
    return piece - piece % (elem_size * CC__ARENA_LINE);
}

void cc__shm_stage_input(cc__arena_op_t *ao)
{
    const cc_op_info_t *in = ao->info;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    if (bytes) memcpy(cc__arena_stage(ao, ao->ar->rank, bytes), in->sendbuf, bytes);
    cc__arena_expect(ao, bytes);
}

cc_status_t cc__shm_reduce_staged(cc__arena_op_t *ao, size_t off, size_t count, void *dst)
{
    const cc_op_info_t *in = ao->info;
    int n = ao->ar->n;
    size_t es = cc_dtype_size(in->dtype), bytes = in->in_count * es;
    cc__reduce_multi_fn fn;
    CC_CHECK(cc__kernel_reduce_multi_get(in->dtype, in->redop, &fn));
    if (!count) return CC_OK;
    const void *src[CC__ARENA_MAX_RANKS];
    for (int q = 0; q < n; q++)
        src[q] = (const char *)cc__arena_stage(ao, q, bytes) + off * es;
    fn(dst, src, n, count);
    if (in->redop == CC_AVG) cc__kernel_div(in->dtype, dst, dst, count, (unsigned)n);
    return CC_OK;
}

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    /* A few elements travel in the arrival line itself: one line per peer in all. */
    cc__shm_stage_input(ao);
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    CC_CHECK(cc__shm_reduce_staged(ao, 0, in->in_count, in->recvbuf));
    /* Nobody waits for a done here: a peer that gave up after arriving must still fail us. */
    return cc__arena_check_quit(ao);
}

/* Reduce piece [o, o + m): peers' pieces come through scratch, this rank's is read in place. */
static cc_status_t reduce_piece(cc__arena_op_t *ao, cc__reduce_multi_fn fn, char *scratch,
                                size_t piece_bytes, size_t o, size_t m, char *dst)
{
    const cc_op_info_t *in = ao->info;
    int n = ao->ar->n, r = ao->ar->rank;
    size_t es = cc_dtype_size(in->dtype);
    const void *src[CC__ARENA_MAX_RANKS];
    for (int q = 0; q < n; q++) {
        if (q == r) {
            src[q] = (const char *)in->sendbuf + o * es;
            continue;
        }
        char *tmp = scratch + (size_t)q * piece_bytes;
        CC_CHECK(cc__arena_read(ao, q, tmp, cc__arena_par(ao, q)->sendbuf + o * es, m * es));
        src[q] = tmp;
    }
    fn(dst, src, n, m);
    if (in->redop == CC_AVG) cc__kernel_div(in->dtype, dst, dst, m, (unsigned)n);
    return CC_OK;
}

cc_status_t cc__shm_reduce_range(cc__arena_op_t *ao, size_t off, size_t len, void *dst,
                                 int publish)
{
    const cc_op_info_t *in = ao->info;
    size_t es = cc_dtype_size(in->dtype), piece = shm_piece(ao->ar->n, es) / es;
    cc__reduce_multi_fn fn;
    CC_CHECK(cc__kernel_reduce_multi_get(in->dtype, in->redop, &fn));
    char *scratch = cc__arena_scratch(ao->ar, 0, (size_t)ao->ar->n * piece * es);
    if (!scratch) return CC_ERR_NO_MEMORY;
    uint64_t k = 0;
    for (size_t d = 0; d < len; d += piece) {
        size_t m = len - d < piece ? len - d : piece;
        CC_CHECK(reduce_piece(ao, fn, scratch, piece * es, off + d, m, (char *)dst + d * es));
        if (publish) cc__arena_progress(ao, ++k);
    }
    return CC_OK;
}

cc_status_t cc__shm_fetch_published(cc__arena_op_t *ao, int q, uint64_t src, void *dst,
                                    size_t len)
{
    size_t es = cc_dtype_size(ao->info->dtype), piece = shm_piece(ao->ar->n, es) / es;
    uint64_t have = 0, total = (len + piece - 1) / piece;
    size_t d = 0;
    while (d < len) {
        CC_CHECK(cc__arena_wait_progress(ao, q, have + 1, &have));
        size_t upto = have >= total ? len : (size_t)have * piece;
        CC_CHECK(cc__arena_read(ao, q, (char *)dst + d * es, src + d * es, (upto - d) * es));
        d = upto;
    }
    return CC_OK;
}

/* Phase 2: copy every other share from its owner's output, as far as it is published. */
static cc_status_t gather_shares(cc__arena_op_t *ao)
{
    const cc_op_info_t *in = ao->info;
    int n = ao->ar->n, r = ao->ar->rank;
    size_t es = cc_dtype_size(in->dtype);
    for (int j = 1; j < n; j++) {
        int q = (r + j) % n;
        size_t off, len;
        cc__shm_share(in->in_count, n, q, CC__ARENA_LINE / es, &off, &len);
        CC_CHECK(cc__shm_fetch_published(ao, q, cc__arena_par(ao, q)->recvbuf + off * es,
                                         (char *)in->recvbuf + off * es, len));
    }
    return CC_OK;
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t es = cc_dtype_size(in->dtype), off, len;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    cc__shm_share(in->in_count, nc->size, nc->rank, CC__ARENA_LINE / es, &off, &len);
    CC_CHECK(cc__shm_reduce_range(ao, off, len, (char *)in->recvbuf + off * es, 1));
    CC_CHECK(gather_shares(ao));
    /* Peers may still read this rank's input and share: the buffers stay lent until all are done. */
    return cc__arena_finish(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__allreduce_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

cc_status_t cc__allreduce_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 1, flat, cma);
}
