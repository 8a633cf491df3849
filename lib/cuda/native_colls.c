/*
 * native_colls.c - the native CUDA engine's direct collectives: each rank
 * puts its data in its slot, the ranks signal READY, and each reads what it
 * needs from the others' slots; in rounds of one slot (cuda_native.h).
 */
#include <string.h>

#include "cuda/cuda_native.h"
#include "kernels/kernels_cuda.h"
#include "base/log.h"

/* Elements of each of `blocks` blocks that fit a slot together. */
static size_t window(const cc__cnat_t *x, const cc__op_t *op, int blocks)
{
    size_t w = x->ipc.slot_bytes / cc__cnat_esize(op) / (size_t)blocks;
    return w ? w : 1;
}

static void *slot_at(const cc__cnat_t *x, int owner, uint64_t s, size_t byte)
{
    return (char *)cc__ipc_area(&x->ipc, owner, 0, (int)s) + byte;
}

/* Begin a round: its number; after the copies into this rank's slot, READY is exchanged. */
static cc_status_t ready(cc__cnat_t *x, uint64_t s, void *stream)
{
    CC_CHECK(cc__cnat_signal(x, CC__IPC_READY, s, stream));
    return cc__cnat_wait(x, CC__IPC_READY, s, stream);
}

cc_status_t cc__cnat_allgather(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    size_t es = cc__cnat_esize(op), m = op->info.in_count, w = window(x, op, 1);
    op->info.algorithm = "direct";
    for (size_t off = 0; off < m; off += w) {
        size_t cnt = m - off < w ? m - off : w;
        uint64_t s;
        CC_CHECK(cc__cnat_round(x, stream, &s));
        CC_CHECK(cc__cuda_copy(slot_at(x, x->rank, s, 0), (const char *)op->info.sendbuf + off * es,
                               cnt * es, stream));
        CC_CHECK(ready(x, s, stream));
        for (int p = 0; p < x->size; p++)
            CC_CHECK(cc__cuda_copy((char *)op->info.recvbuf + ((size_t)p * m + off) * es,
                                   slot_at(x, p, s, 0), cnt * es, stream));
        CC_CHECK(cc__cnat_done(x, s, stream));
    }
    return CC_OK;
}

/* Put window [off, off + cnt) of each of the n input blocks (m elements each) in the slot. */
static cc_status_t stage_blocks(cc__cnat_t *x, const cc__op_t *op, size_t m, size_t off, size_t cnt,
                                uint64_t s, void *stream)
{
    size_t es = cc__cnat_esize(op);
    for (int b = 0; b < x->size; b++)
        CC_CHECK(cc__cuda_copy(slot_at(x, x->rank, s, (size_t)b * cnt * es),
                               (const char *)op->info.sendbuf + ((size_t)b * m + off) * es,
                               cnt * es, stream));
    return CC_OK;
}

cc_status_t cc__cnat_reduce_scatter(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    size_t es = cc__cnat_esize(op), m = op->info.out_count, w = window(x, op, x->size);
    op->info.algorithm = "direct";
    for (size_t off = 0; off < m; off += w) {
        size_t cnt = m - off < w ? m - off : w;
        uint64_t s;
        CC_CHECK(cc__cnat_round(x, stream, &s));
        CC_CHECK(stage_blocks(x, op, m, off, cnt, s, stream));
        CC_CHECK(ready(x, s, stream));
        cc__cuda_reduce_t r;
        memset(&r, 0, sizeof(r));
        r.dst = (char *)op->info.recvbuf + off * es;
        for (int k = 0; k < x->size; k++)
            r.src[k] = slot_at(x, k, s, (size_t)x->rank * cnt * es);
        r.nsrc = x->size, r.n = cnt, r.dtype = op->info.dtype, r.op = op->info.redop;
        r.scale_mask = (1u << x->size) - 1u, r.premul = op->premul_scalar;
        r.avg = (unsigned)x->size;
        CC_CHECK(cc__cuda_reduce(&r, stream));
        CC_CHECK(cc__cnat_done(x, s, stream));
    }
    return CC_OK;
}

cc_status_t cc__cnat_alltoall(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    size_t es = cc__cnat_esize(op), m = op->info.in_count / (size_t)x->size;
    size_t w = window(x, op, x->size);
    op->info.algorithm = "direct";
    for (size_t off = 0; off < m; off += w) {
        size_t cnt = m - off < w ? m - off : w;
        uint64_t s;
        CC_CHECK(cc__cnat_round(x, stream, &s));
        CC_CHECK(stage_blocks(x, op, m, off, cnt, s, stream));
        CC_CHECK(ready(x, s, stream));
        for (int p = 0; p < x->size; p++) /* peer p's block for this rank */
            CC_CHECK(cc__cuda_copy((char *)op->info.recvbuf + ((size_t)p * m + off) * es,
                                   slot_at(x, p, s, (size_t)x->rank * cnt * es), cnt * es, stream));
        CC_CHECK(cc__cnat_done(x, s, stream));
    }
    return CC_OK;
}

cc_status_t cc__cnat_broadcast(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    size_t es = cc__cnat_esize(op), m = op->info.out_count, w = window(x, op, 1);
    int root = op->info.root;
    op->info.algorithm = "direct";
    for (size_t off = 0; off < m; off += w) {
        size_t cnt = m - off < w ? m - off : w;
        uint64_t s;
        CC_CHECK(cc__cnat_round(x, stream, &s));
        const char *in = (const char *)op->info.sendbuf + off * es;
        char *out = (char *)op->info.recvbuf + off * es;
        if (x->rank == root) {
            CC_CHECK(cc__cuda_copy(slot_at(x, root, s, 0), in, cnt * es, stream));
            CC_CHECK(cc__cuda_copy(out, in, cnt * es, stream)); /* nothing when in place */
        }
        CC_CHECK(ready(x, s, stream));
        if (x->rank != root) CC_CHECK(cc__cuda_copy(out, slot_at(x, root, s, 0), cnt * es, stream));
        CC_CHECK(cc__cnat_done(x, s, stream));
    }
    return CC_OK;
}

cc_status_t cc__cnat_barrier(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    uint64_t s;
    op->info.algorithm = "flags";
    CC_CHECK(cc__cnat_round(x, stream, &s));
    CC_CHECK(ready(x, s, stream));
    return cc__cnat_done(x, s, stream);
}
