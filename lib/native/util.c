/*
 * util.c - what the native algorithms share: chunking, pipelining pieces,
 * AVG's last step, the request pool and its waits.
 *
 * The request pool lets an algorithm keep many sends and receives in
 * flight (a pipelined ring, a root receiving from every rank) without an
 * allocation per op, and lets cc__native_run withdraw whatever an algorithm
 * left pending when it fails, so no request outlives the buffers it points
 * into.
 */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "native/native.h"

void cc__chunk(size_t count, int n, int c, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n;
    *off = (size_t)c * base + ((size_t)c < rem ? (size_t)c : rem);
    *len = base + ((size_t)c < rem ? 1 : 0);
}

/*
 * auto: 256 KiB on 2 ranks, 1 MiB on 3 or more. Over TCP each piece of a large block pays a
 * rendezvous; on 4 ranks 1 MiB pieces were faster, on 2 slower. 2026-12-06 04:17-04:24 UTC,
 * medians of 5 launches, time with 256K / with 1M pieces:
 *   bench/ab.sh --a build --b build --b-env CCOMM_PIPELINE_CHUNK=1M --coll C --transport tcp
 *     --ranks N --sizes "..." --launches 5
 *   4 ranks: allgather 2M 1.12, 4M 1.41, 8M 1.21, 16M 1.12 (7 launches); reduce_scatter 4M
 *   1.49, 16M 1.03, 64M 1.03; allreduce (ring from 8 MiB) 16M 1.14, 64M 1.03; reduce 1M
 *   1.10, 4M 1.22, 16M 1.04. 3 ranks: allgather 1536K 1.05, 3M 1.41, 12M 1.05, 48M 0.97.
 *   2 ranks: allreduce 2M 0.87, 4M 0.93, 16M 0.99, 64M 1.07; reduce_scatter 2M 0.85, 4M
 *   0.92, 16M 1.04, 64M 0.94.
 */
int cc__pipeline_setting(const char *text, int n, size_t *seg, int *is_auto)
{
    *seg = 0;
    *is_auto = !text || !*text || strcmp(text, "auto") == 0;
    if (*is_auto) {
        *seg = n >= 3 ? 1024 * 1024 : 256 * 1024;
        return 0;
    }
    uint64_t v;
    if (cc__parse_size(text, &v) != 0 || v > ((uint64_t)1 << 40)) return -1;
    *seg = (size_t)v;
    return 0;
}

int cc__nseg_of(size_t seg, size_t bytes, int max)
{
    if (!seg) seg = bytes;
    size_t k = seg ? (bytes + seg - 1) / seg : 1;
    if (k < 1) k = 1;
    return k > (size_t)max ? max : (int)k;
}

int cc__nseg(const cc__native_t *nc, size_t bytes, int max)
{
    return cc__nseg_of(nc->seg_bytes, bytes, max);
}

size_t cc__blk_max(const cc__blocks_t *b, int n)
{
    if (!b->counts) return cc__blk_count(b, 0); /* uniform, or chunk 0: the largest */
    size_t m = 0;
    for (int r = 0; r < n; r++)
        if (b->counts[r] > m) m = b->counts[r];
    return m;
}

int cc__pow2_floor(int n)
{
    int p = 1;
    while (p <= n / 2)
        p <<= 1;
    return p;
}

void cc__finish_avg(const cc__native_t *nc, const cc__op_t *op, void *buf, size_t count)
{
    if (op->info.redop == CC_AVG && count && nc->size > 1)
        cc__kernel_div(op->info.dtype, buf, buf, count, (unsigned)nc->size);
}

cc_status_t cc__op_kernel(const cc__op_t *op, cc__reduce_fn *fn)
{
    cc_status_t st = cc__kernel_reduce_get(op->info.dtype, op->info.redop, fn);
    if (st != CC_OK) /* the API checked the pair: this is a bug */
        cc_log_error(CC_SUBSYS_COLL, "%s: no kernel for %s on %s (%s)",
                     cc_op_type_name(op->info.type), cc_redop_name(op->info.redop),
                     cc_dtype_name(op->info.dtype), cc_status_name(st));
    return st;
}

void *cc__native_buf(cc__native_t *nc, void **buf, size_t *cap, size_t len)
{
    if (len <= *cap && *buf) return *buf;
    void *p = realloc(*buf, len ? len : 1);
    if (!p) {
        cc_log_error(CC_SUBSYS_COLL, "out of memory for %zu bytes of work space on communicator %s",
                     len, cc_comm_name(nc->comm));
        return NULL;
    }
    *buf = p;
    *cap = len;
    return p;
}

void *cc__native_scratch(cc__native_t *nc, size_t len)
{
    return cc__native_buf(nc, &nc->scratch, &nc->scratch_len, len);
}

cc__req_t *cc__native_reqs(cc__native_t *nc, int n)
{
    for (int i = 0; i < nc->nreqs; i++) /* the pool may move: nothing of it may be pending */
        if (nc->reqs[i].kind != 0 && nc->reqs[i].status == CC_INPROGRESS) {
            cc_log_error(CC_SUBSYS_COLL,
                         "communicator %s: request %d still pending when the pool "
                         "was asked for again (a bug); withdrawing it",
                         cc_comm_name(nc->comm), i);
            cc__native_settle(nc, CC_ERR_INTERNAL);
            break;
        }
    /* At least one: callers with nothing to post (a tree's root on one rank) get a
     * non-NULL pool, and NULL keeps meaning out of memory. */
    int want = n > 0 ? n : 1;
    if (want > nc->reqs_cap) {
        cc__req_t *r = realloc(nc->reqs, (size_t)want * sizeof(*r));
        cc__req_t **p = r ? realloc(nc->reqp, (size_t)want * sizeof(*p)) : NULL;
        if (r) nc->reqs = r;
        if (!p) {
            cc_log_error(CC_SUBSYS_COLL, "out of memory for %d requests on communicator %s", n,
                         cc_comm_name(nc->comm));
            return NULL;
        }
        nc->reqp = p;
        nc->reqs_cap = want;
    }
    memset(nc->reqs, 0, (size_t)n * sizeof(*nc->reqs));
    nc->nreqs = n;
    return nc->reqs;
}

cc_status_t cc__native_wait(cc__native_t *nc, cc__req_t *reqs, int n, uint64_t deadline_ns)
{
    int k = 0;
    if (n <= 0) return CC_OK;
    /* reqs lies in the pool (or is a single request of the caller's): collect the posted ones. */
    cc__req_t *one[1];
    cc__req_t **p = n == 1 ? one : nc->reqp + (reqs - nc->reqs);
    for (int i = 0; i < n; i++)
        if (reqs[i].kind != 0) p[k++] = &reqs[i];
    return k ? cc__net_wait(nc->net, p, k, deadline_ns) : CC_OK;
}

void cc__native_copy(cc__native_t *nc, void *dst, const void *src, size_t len)
{
    if (len <= CC__COPY_PIECE) { /* one piece: nothing to interleave */
        memcpy(dst, src, len);
        return;
    }
    for (size_t o = 0; o < len; o += CC__COPY_PIECE) {
        size_t k = len - o < CC__COPY_PIECE ? len - o : CC__COPY_PIECE;
        cc__net_poll(nc->net);
        memcpy((char *)dst + o, (const char *)src + o, k);
    }
}

void cc__native_settle(cc__native_t *nc, cc_status_t why)
{
    int busy = 0;
    for (int i = 0; i < nc->nreqs; i++) {
        cc__req_t *r = &nc->reqs[i];
        if (r->kind == 0 || r->status != CC_INPROGRESS) continue;
        if (cc__net_cancel(nc->net, r, why) != CC_OK) busy = 1;
    }
    if (busy) {
        /* Bytes of some request are on the wire: only an abort frees its buffer. */
        cc_log_warn(CC_SUBSYS_COLL,
                    "communicator %s: a transfer was in flight when its op ended "
                    "(%s); aborting the connections so no buffer is used after the op",
                    cc_comm_name(nc->comm), cc_status_name(why));
        cc__net_abort(nc->net, why == CC_OK ? CC_ERR_ABORTED : why);
        cc__native_wait(nc, nc->reqs, nc->nreqs, UINT64_MAX);
    }
    nc->nreqs = 0;
}

int cc__op_blocks(const cc__native_t *nc, const cc__op_t *op, cc__blocks_t *sb, cc__blocks_t *rb)
{
    if (op->send_counts || op->recv_counts) { /* a v form: the arrays the API filled */
        *sb = (cc__blocks_t){.counts = op->send_counts, .displs = op->send_displs};
        *rb = (cc__blocks_t){.counts = op->recv_counts, .displs = op->recv_displs};
        return 1;
    }
    /* Uniform: the block is what this rank sends to, or receives from, each rank. */
    size_t in = op->info.in_count, out = op->info.out_count, n = (size_t)nc->size, cnt;
    switch (op->info.type) {
    case CC_OP_GATHER:
        cnt = in;
        break;
    case CC_OP_SCATTER:
        cnt = out;
        break;
    default:
        cnt = in / n;
        break; /* all-to-all */
    }
    *sb = *rb = (cc__blocks_t){.count = cnt};
    return cnt != 0; /* every rank passed the same count: 0 moves nothing anywhere */
}

cc_status_t cc__post_blocks(cc__native_t *nc, cc__op_t *op, const cc__blocks_t *blk, char *base,
                            int send, int skip, cc__req_t *rq)
{
    size_t es = cc_dtype_size(op->info.dtype);
    uint32_t tag = cc__coll_tag(op, 0);
    for (int i = 1; i <= nc->size; i++) { /* neighbours first, as a pairwise order would */
        int p = send ? (nc->rank + i) % nc->size : (nc->rank - i + nc->size) % nc->size;
        if (p == skip) continue;
        size_t cnt = cc__blk_count(blk, p);
        char *b = cnt ? base + cc__blk_displ(blk, p) * es : NULL;
        cc__req_t *req = &rq[p];
        CC_CHECK(send ? cc__net_isend(nc->net, p, tag, b, cnt * es, req)
                      : cc__net_irecv(nc->net, p, tag, b, cnt * es, req));
    }
    return CC_OK;
}

void cc__sub_op(cc__op_t *sub, const cc__op_t *op)
{
    /* Field by field: the op's state and done words are atomics that waiters touch. */
    memset(sub, 0, sizeof(*sub));
    sub->info = op->info;
    sub->comm = op->comm;
    sub->deadline_ns = op->deadline_ns;
    sub->premul_scalar = op->premul_scalar;
    sub->stream = op->stream;
}
