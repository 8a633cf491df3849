/*
 * allreduce_recursive_doubling.c - recursive doubling: in round k every
 * rank swaps its whole vector with the rank whose number differs in bit k
 * and combines the two; after log2(n) rounds every rank has the total.
 * Latency log2(n) messages, each of the full size: the choice for small
 * messages. Also the fold that makes any rank count a power of two, shared
 * with allreduce_halving_doubling.c.
 *
 * Non-power-of-two fix-up (MPICH's): with p2 the largest power of two <= n
 * and rem = n - p2, ranks 2i and 2i+1 (i < rem) fold first: the even one
 * sends its input to the odd one, which combines x[2i] op x[2i+1] and takes
 * part as virtual rank i; ranks >= 2 rem take part as virtual rank r - rem.
 * At the end each odd folded rank sends the result back to its partner.
 *
 * Determinism: both partners of a round compute (lower virtual rank's
 * value) op (higher's) with the same operand order, so they hold the same
 * bits; the total is a balanced bracket fixed by the ranks:
 *   round 0: (v0 op v1), (v2 op v3), ...; round 1: (v0v1 op v2v3), ...
 * and the folded ranks receive those bits. AVG divides the total, the same
 * bits everywhere, once.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"
#include "native/net_algo.h"

int cc__rd_real_rank(int v, int rem)
{
    return v < rem ? 2 * v + 1 : v + rem;
}

int cc__rd_fold_in(cc__native_t *nc, cc__op_t *op, cc__reduce_fn fn, char *acc, char *tmp,
                   cc_status_t *st)
{
    int r = nc->rank, rem = nc->size - cc__pow2_floor(nc->size);
    size_t bytes = op->info.in_count * cc_dtype_size(op->info.dtype);
    *st = CC_OK;
    if (r >= 2 * rem) return r - rem;
    if (r % 2 == 0) { /* sits out: its input goes to r+1 */
        *st = cc__net_send(nc->net, r + 1, cc__coll_tag(op, 0), acc, bytes, op->deadline_ns);
        return -1;
    }
    *st = cc__net_recv(nc->net, r - 1, cc__coll_tag(op, 0), tmp, bytes, op->deadline_ns);
    if (*st == CC_OK) fn(acc, tmp, acc, op->info.in_count); /* the lower rank's value first */
    return r / 2;
}

cc_status_t cc__rd_fold_out(cc__native_t *nc, cc__op_t *op, char *acc)
{
    int r = nc->rank, rem = nc->size - cc__pow2_floor(nc->size);
    size_t bytes = op->info.in_count * cc_dtype_size(op->info.dtype);
    if (r >= 2 * rem) return CC_OK;
    uint32_t tag = cc__coll_tag(op, 0xffu);
    if (r % 2) return cc__net_send(nc->net, r - 1, tag, acc, bytes, op->deadline_ns);
    return cc__net_recv(nc->net, r + 1, tag, acc, bytes, op->deadline_ns);
}

/* The allreduce of op's in_count elements in acc (tmp: as many, scratch); reduce_scatter_rd.c
 * runs it on a copy of its whole input. */
cc_status_t cc__rd_allreduce(cc__native_t *nc, cc__op_t *op, cc__reduce_fn fn, char *acc, char *tmp)
{
    size_t count = op->info.in_count, bytes = count * cc_dtype_size(op->info.dtype);
    int p2 = cc__pow2_floor(nc->size), rem = nc->size - p2;
    cc_status_t st;
    int v = cc__rd_fold_in(nc, op, fn, acc, tmp, &st);
    CC_CHECK(st);
    uint32_t step = 1;
    for (int mask = 1; v >= 0 && mask < p2; mask <<= 1, step++) {
        int pv = v ^ mask, peer = cc__rd_real_rank(pv, rem);
        CC_CHECK(cc__net_sendrecv(nc->net, peer, acc, bytes, peer, tmp, bytes,
                                  cc__coll_tag(op, step), op->deadline_ns));
        if (v < pv)
            fn(acc, acc, tmp, count);
        else
            fn(acc, tmp, acc, count);
    }
    if (v >= 0) cc__finish_avg(nc, op, acc, count);
    return cc__rd_fold_out(nc, op, acc);
}

cc_status_t cc__allreduce_recursive_doubling(cc__native_t *nc, cc__op_t *op)
{
    size_t count = op->info.in_count, bytes = count * cc_dtype_size(op->info.dtype);
    if (!count) return CC_OK;
    cc__reduce_fn fn;
    CC_CHECK(cc__op_kernel(op, &fn));
    char *acc = op->info.recvbuf, *tmp = cc__native_scratch(nc, bytes);
    if (!tmp) return CC_ERR_NO_MEMORY;
    if (op->info.sendbuf != acc) memcpy(acc, op->info.sendbuf, bytes);
    return cc__rd_allreduce(nc, op, fn, acc, tmp);
}
