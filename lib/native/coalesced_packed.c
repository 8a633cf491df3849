/*
 * coalesced_packed.c - a coalesced collective (one op over several
 * buffers). Runs of small buffers are packed into one staging buffer and
 * go through the plain collective once (one message stream, one latency
 * instead of one per buffer); a buffer of at least CC__DIRECT_BYTES runs
 * alone, in place, with no packing copy. Every rank cuts the list the same
 * way (counts are the same everywhere), and a packed buffer's elements are
 * reduced by exactly the algorithm and order the plain collective would
 * use for the packed run.
 */
#include <string.h>

#include "engine/args.h"
#include "base/log.h"
#include "native/native.h"

#define CC__DIRECT_BYTES (256u * 1024u)       /* a buffer this large runs alone */
#define CC__PACK_BYTES   (4u * 1024u * 1024u) /* a pack holds at most this much per rank */

struct co {
    cc__native_t *nc;
    cc__op_t *op;
    const cc__coalesced_args_t *a;
    size_t es;
    int n, r;
};

/* The plain collective on one piece: `count` is its count argument. */
static cc_status_t run_piece(struct co *c, const void *in, void *out, size_t count)
{
    cc__op_t sub;
    cc__sub_op(&sub, c->op);
    size_t n = (size_t)c->n;
    sub.info.type = c->a->kind;
    sub.info.sendbuf = in;
    sub.info.recvbuf = out;
    sub.info.in_count = sub.info.out_count = count;
    if (c->a->kind == CC_OP_ALLGATHER) sub.info.out_count = n * count;
    if (c->a->kind == CC_OP_REDUCE_SCATTER) sub.info.in_count = n * count;
    sub.info.bytes =
        (sub.info.in_count > sub.info.out_count ? sub.info.in_count : sub.info.out_count) * c->es;
    return cc__native_run_sub(c->nc, &sub);
}

/* Gather buffers [i, j) into the pack (the input layout of the kind). */
static void pack(struct co *c, char *p, int i, int j, size_t total)
{
    const cc__coalesced_args_t *a = c->a;
    int root_only = a->kind == CC_OP_BROADCAST && c->r != c->op->info.root;
    size_t o = 0;
    for (int b = i; b < j && !root_only; b++) {
        size_t len = a->counts[b] * c->es;
        if (a->kind != CC_OP_REDUCE_SCATTER) {
            if (len) memcpy(p + o, a->sendbufs[b], len);
        } else { /* block q of the pack: every buffer's block q */
            for (int q = 0; q < c->n && len; q++)
                memcpy(p + (size_t)q * total + o, (const char *)a->sendbufs[b] + (size_t)q * len,
                       len);
        }
        o += len;
    }
}

/* Scatter the pack's result back into buffers [i, j). */
static void unpack(struct co *c, const char *p, int i, int j, size_t total)
{
    const cc__coalesced_args_t *a = c->a;
    size_t o = 0;
    for (int b = i; b < j; b++) {
        size_t len = a->counts[b] * c->es;
        if (a->kind != CC_OP_ALLGATHER) {
            if (len) memcpy(a->recvbufs[b], p + o, len);
        } else { /* rank q's part of buffer b sits in rank q's block of the pack */
            for (int q = 0; q < c->n && len; q++)
                memcpy((char *)a->recvbufs[b] + (size_t)q * len, p + (size_t)q * total + o, len);
        }
        o += len;
    }
}

static cc_status_t run_pack(struct co *c, int i, int j, size_t total)
{
    int wide = c->a->kind == CC_OP_ALLGATHER || c->a->kind == CC_OP_REDUCE_SCATTER;
    size_t in = (c->a->kind == CC_OP_REDUCE_SCATTER ? (size_t)c->n : 1) * total;
    size_t out = (c->a->kind == CC_OP_ALLGATHER ? (size_t)c->n : 1) * total;
    char *p = cc__native_buf(c->nc, &c->nc->pack, &c->nc->pack_len, wide ? in + out : in);
    if (!p) return CC_ERR_NO_MEMORY;
    char *q = wide ? p + in : p; /* the other kinds work in place */
    pack(c, p, i, j, total);
    CC_CHECK(run_piece(c, p, q, total / c->es));
    unpack(c, q, i, j, total);
    return CC_OK;
}

cc_status_t cc__coalesced_packed(cc__native_t *nc, cc__op_t *op)
{
    struct co c = {.nc = nc,
                   .op = op,
                   .a = op->extra,
                   .n = nc->size,
                   .r = nc->rank,
                   .es = cc_dtype_size(op->info.dtype)};
    const cc__coalesced_args_t *a = c.a;
    for (int i = 0; i < a->nbufs;) {
        size_t len = a->counts[i] * c.es;
        if (len >= CC__DIRECT_BYTES) {
            CC_CHECK(run_piece(&c, a->sendbufs[i], a->recvbufs[i], a->counts[i]));
            i++;
            continue;
        }
        int j = i;
        size_t total = 0;
        while (j < a->nbufs && a->counts[j] * c.es < CC__DIRECT_BYTES &&
               (j == i || total + a->counts[j] * c.es <= CC__PACK_BYTES))
            total += a->counts[j++] * c.es;
        if (total) CC_CHECK(run_pack(&c, i, j, total));
        i = j;
    }
    return CC_OK;
}
