/*
 * native_allreduce.c - the native CUDA engine's all-reduce (one-shot,
 * two-shot, ring) and reduce, in rounds of one IPC slot (see
 * cuda_native.h for rounds, flags and slots).
 *
 * Element order: one- and two-shot reduce each element over ranks 0..n-1
 * in one pass (16-bit floats accumulate in float32: the host multi
 * kernel's bits); the ring accumulates along the ring and its bits may
 * differ from those in the last place for 16-bit floats, like a host ring.
 * Every rank gets the same bits either way (each element is reduced once
 * and copied).
 */
#include <string.h>

#include "base/config.h"
#include "cuda/cuda_native.h"
#include "kernels/kernels_cuda.h"
#include "base/log.h"

#define ONESHOT_MAX (256u << 10)
#define TWOSHOT_MAX (16u << 20)

/* A reduction over every rank's area (kind res, parity of seq) at byte offset `at`. */
static cc_status_t reduce_all(cc__cnat_t *x, const cc__op_t *op, void *dst, uint64_t s, int res,
                              size_t at, size_t n, void *stream)
{
    cc__cuda_reduce_t r;
    memset(&r, 0, sizeof(r));
    r.dst = dst;
    for (int k = 0; k < x->size; k++)
        r.src[k] = (char *)cc__ipc_area(&x->ipc, k, res, (int)s) + at;
    r.nsrc = x->size;
    r.n = n;
    r.dtype = op->info.dtype;
    r.op = op->info.redop;
    r.scale_mask = (1u << x->size) - 1u;
    r.premul = op->premul_scalar;
    r.avg = (unsigned)x->size;
    return cc__cuda_reduce(&r, stream);
}

/* One round of a one-shot all-reduce (root < 0) or reduce (only the root reduces). */
static cc_status_t oneshot_round(cc__cnat_t *x, const cc__op_t *op, size_t off, size_t cnt,
                                 int root, void *stream)
{
    size_t es = cc__cnat_esize(op);
    uint64_t s;
    CC_CHECK(cc__cnat_round(x, stream, &s));
    void *slot = cc__ipc_area(&x->ipc, x->rank, 0, (int)s);
    CC_CHECK(cc__cuda_copy(slot, (const char *)op->info.sendbuf + off * es, cnt * es, stream));
    CC_CHECK(cc__cnat_signal(x, CC__IPC_READY, s, stream));
    CC_CHECK(cc__cnat_wait(x, CC__IPC_READY, s, stream));
    if (root < 0 || root == x->rank)
        CC_CHECK(reduce_all(x, op, (char *)op->info.recvbuf + off * es, s, 0, 0, cnt, stream));
    return cc__cnat_done(x, s, stream);
}

/* Parts of a chunk: n pieces of q elements (the last shorter), q a multiple of 16 bytes. */
static size_t part_q(size_t cnt, int n, size_t es)
{
    size_t vec = es < 16 ? 16 / es : 1, q = (cnt + (size_t)n - 1) / (size_t)n;
    return (q + vec - 1) / vec * vec;
}

static size_t part_len(size_t cnt, size_t q, int p)
{
    size_t lo = q * (size_t)p;
    return lo >= cnt ? 0 : (cnt - lo < q ? cnt - lo : q);
}

/* Two-shot: every rank reduces its part from all slots, then every rank gathers all parts. */
static cc_status_t twoshot_round(cc__cnat_t *x, const cc__op_t *op, size_t off, size_t cnt,
                                 void *stream)
{
    size_t es = cc__cnat_esize(op), q = part_q(cnt, x->size, es);
    uint64_t s;
    CC_CHECK(cc__cnat_round(x, stream, &s));
    void *slot = cc__ipc_area(&x->ipc, x->rank, 0, (int)s);
    CC_CHECK(cc__cuda_copy(slot, (const char *)op->info.sendbuf + off * es, cnt * es, stream));
    CC_CHECK(cc__cnat_signal(x, CC__IPC_READY, s, stream));
    CC_CHECK(cc__cnat_wait(x, CC__IPC_READY, s, stream));
    size_t mine = q * (size_t)x->rank, my_len = part_len(cnt, q, x->rank);
    char *res = (char *)cc__ipc_area(&x->ipc, x->rank, 1, (int)s) + mine * es;
    if (my_len) CC_CHECK(reduce_all(x, op, res, s, 0, mine * es, my_len, stream));
    CC_CHECK(cc__cnat_signal(x, CC__IPC_STAGE, s, stream));
    CC_CHECK(cc__cnat_wait(x, CC__IPC_STAGE, s, stream));
    for (int p = 0; p < x->size; p++) {
        size_t len = part_len(cnt, q, p), at = q * (size_t)p * es;
        const char *src = (const char *)cc__ipc_area(&x->ipc, p, 1, (int)s) + at;
        if (len)
            CC_CHECK(
                cc__cuda_copy((char *)op->info.recvbuf + off * es + at, src, len * es, stream));
    }
    return cc__cnat_done(x, s, stream);
}

/*
 * Ring: at step k (1..n-1) rank r adds its input's part c = (r - k) mod n to
 * the previous rank's sum of that part (pulled from its result area); after
 * n-1 steps rank r holds the whole sum of part (r + 1) mod n, and every
 * rank gathers the n sums. Each step waits for the previous rank's step.
 */
static cc_status_t ring_step(cc__cnat_t *x, const cc__op_t *op, size_t off, size_t cnt, size_t q,
                             uint64_t s, int k, void *stream)
{
    int n = x->size, prev = (x->rank + n - 1) % n, c = ((x->rank - k) % n + n) % n;
    size_t es = cc__cnat_esize(op), len = part_len(cnt, q, c), at = q * (size_t)c * es;
    cc__cuda_reduce_t r;
    memset(&r, 0, sizeof(r));
    r.dst = (char *)cc__ipc_area(&x->ipc, x->rank, 1, (int)s) + at;
    r.n = len;
    r.dtype = op->info.dtype;
    r.op = op->info.redop;
    r.premul = op->premul_scalar;
    r.avg = k == n - 1 ? (unsigned)n : 0u; /* AVG: the last step divides the whole sum */
    const char *in = (const char *)op->info.sendbuf + off * es + at;
    uint64_t tick = s * CC__IPC_MAX_RANKS; /* ring flags grow by round and step */
    if (k == 0) {
        r.src[0] = in, r.nsrc = 1, r.scale_mask = 1u;
    } else {
        CC_CHECK(cc__cnat_wait_one(x, prev, CC__IPC_RING, tick + (uint64_t)k - 1, stream));
        r.src[0] = (const char *)cc__ipc_area(&x->ipc, prev, 1, (int)s) + at;
        r.src[1] = in, r.nsrc = 2, r.scale_mask = 2u; /* the sum so far is already scaled */
    }
    if (len) CC_CHECK(cc__cuda_reduce(&r, stream));
    return cc__cnat_signal_one(x, (x->rank + 1) % n, CC__IPC_RING, tick + (uint64_t)k, stream);
}

static cc_status_t ring_round(cc__cnat_t *x, const cc__op_t *op, size_t off, size_t cnt,
                              void *stream)
{
    int n = x->size;
    size_t es = cc__cnat_esize(op), q = part_q(cnt, n, es);
    uint64_t s;
    CC_CHECK(cc__cnat_round(x, stream, &s));
    for (int k = 0; k < n; k++)
        CC_CHECK(ring_step(x, op, off, cnt, q, s, k, stream));
    CC_CHECK(cc__cnat_signal(x, CC__IPC_STAGE, s, stream));
    CC_CHECK(cc__cnat_wait(x, CC__IPC_STAGE, s, stream));
    for (int p = 0; p < n; p++) {
        int c = (p + 1) % n; /* rank p holds the whole sum of part p + 1 */
        size_t len = part_len(cnt, q, c), at = q * (size_t)c * es;
        const char *src = (const char *)cc__ipc_area(&x->ipc, p, 1, (int)s) + at;
        if (len)
            CC_CHECK(
                cc__cuda_copy((char *)op->info.recvbuf + off * es + at, src, len * es, stream));
    }
    return cc__cnat_done(x, s, stream);
}

typedef cc_status_t (*round_fn)(cc__cnat_t *, const cc__op_t *, size_t, size_t, void *);

static cc_status_t oneshot_all(cc__cnat_t *x, const cc__op_t *op, size_t off, size_t cnt, void *s)
{
    return oneshot_round(x, op, off, cnt, -1, s);
}

/* The algorithm by size, unless CCOMM_CUDA_ALLREDUCE_ALGO names one. */
static round_fn pick(const cc__op_t *op, const char **name)
{
    const char *want = cc__cfg()->cuda_allreduce_algo;
    size_t bytes = op->info.bytes;
    if (!strcmp(want, "oneshot") ||
        (strcmp(want, "twoshot") && strcmp(want, "ring") && bytes <= ONESHOT_MAX))
        return *name = "oneshot", oneshot_all;
    if (!strcmp(want, "twoshot") || (strcmp(want, "ring") && bytes <= TWOSHOT_MAX))
        return *name = "twoshot", twoshot_round;
    return *name = "ring", ring_round;
}

cc_status_t cc__cnat_allreduce(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    size_t es = cc__cnat_esize(op), per = x->ipc.slot_bytes / es, n = op->info.in_count;
    round_fn fn = pick(op, &op->info.algorithm);
    for (size_t off = 0; off < n; off += per) /* every rank has the same n: the same rounds */
        CC_CHECK(fn(x, op, off, n - off < per ? n - off : per, stream));
    return CC_OK;
}

cc_status_t cc__cnat_reduce(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    size_t es = cc__cnat_esize(op), per = x->ipc.slot_bytes / es, n = op->info.in_count;
    op->info.algorithm = "oneshot";
    for (size_t off = 0; off < n; off += per)
        CC_CHECK(oneshot_round(x, op, off, n - off < per ? n - off : per, op->info.root, stream));
    return CC_OK;
}
