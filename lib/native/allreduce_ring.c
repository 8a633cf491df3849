/*
 * allreduce_ring.c - ring allreduce: a reduce-scatter then an allgather
 * around the ring, each moving 1/n of the data per step.
 *
 * Determinism: chunk c is reduced along the ring starting at rank c+1 and
 * finished by rank c, which alone applies AVG's division; the allgather
 * then copies those exact bits to every rank, so all ranks hold the same
 * result, run after run.
 */
#include <string.h>

#include "kernels/kernels.h"
#include "log.h"
#include "native.h"

/* Elements of chunk c when count is cut into n nearly equal chunks. */
static void chunk(size_t count, int n, int c, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n;
    *off = (size_t)c * base + ((size_t)c < rem ? (size_t)c : rem);
    *len = base + ((size_t)c < rem ? 1 : 0);
}

/* Copy (or premultiply) the input into the output buffer, where the ring works. */
static void load_input(const cc__op_t *op, size_t bytes)
{
    const cc_op_info_t *in = &op->info;
    if (in->redop == CC_PREMUL_SUM)
        cc__kernel_scale(in->dtype, in->recvbuf, in->sendbuf, in->in_count, op->premul_scalar);
    else if (in->sendbuf != in->recvbuf && bytes)
        memcpy(in->recvbuf, in->sendbuf, bytes);
}

static cc_status_t reduce_scatter(cc__native_t *nc, cc__op_t *op, cc__reduce_fn fn, char *scratch)
{
    int n = nc->size, r = nc->rank;
    size_t es = cc_dtype_size(op->info.dtype), off, len, roff, rlen;
    char *buf = op->info.recvbuf;
    for (int s = 0; s < n - 1; s++) {
        int sc = (r - s + n) % n, rc = (r - s - 1 + n) % n;
        chunk(op->info.in_count, n, sc, &off, &len);
        chunk(op->info.in_count, n, rc, &roff, &rlen);
        cc_status_t st = cc__net_sendrecv(nc->net, (r + 1) % n, buf + off * es, len * es,
                                          (r - 1 + n) % n, scratch, rlen * es,
                                          cc__coll_tag(op, (uint32_t)s), op->deadline_ns);
        if (st != CC_OK) return st;
        fn(buf + roff * es, scratch, buf + roff * es, rlen);
    }
    return CC_OK;
}

static cc_status_t allgather(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, r = nc->rank;
    size_t es = cc_dtype_size(op->info.dtype), off, len, roff, rlen;
    char *buf = op->info.recvbuf;
    for (int s = 0; s < n - 1; s++) {
        int sc = (r - s + 1 + n) % n, rc = (r - s + n) % n;
        chunk(op->info.in_count, n, sc, &off, &len);
        chunk(op->info.in_count, n, rc, &roff, &rlen);
        cc_status_t st = cc__net_sendrecv(nc->net, (r + 1) % n, buf + off * es, len * es,
                                          (r - 1 + n) % n, buf + roff * es, rlen * es,
                                          cc__coll_tag(op, (uint32_t)(n + s)), op->deadline_ns);
        if (st != CC_OK) return st;
    }
    return CC_OK;
}

cc_status_t cc__allreduce_ring(cc__native_t *nc, cc__op_t *op)
{
    cc__reduce_fn fn;
    CC_CHECK(cc__kernel_reduce_get(op->info.dtype, op->info.redop, &fn));
    int n = nc->size, r = nc->rank;
    size_t es = cc_dtype_size(op->info.dtype), off, len;
    load_input(op, op->info.bytes);
    if (n > 1) {
        chunk(op->info.in_count, n, 0, &off, &len); /* chunk 0 is the largest */
        char *scratch = cc__native_scratch(nc, len * es + 1);
        if (!scratch) return CC_ERR_NO_MEMORY;
        CC_CHECK(reduce_scatter(nc, op, fn, scratch));
    }
    /* After the reduce-scatter this rank owns chunk (r + 1) % n, complete. */
    chunk(op->info.in_count, n, (r + 1) % n, &off, &len);
    if (op->info.redop == CC_AVG && len) {
        char *own = (char *)op->info.recvbuf + off * es;
        cc__kernel_div(op->info.dtype, own, own, len, (unsigned)n);
    }
    return n > 1 ? allgather(nc, op) : CC_OK;
}
