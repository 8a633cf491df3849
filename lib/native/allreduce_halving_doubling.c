/*
 * allreduce_halving_doubling.c - Rabenseifner's allreduce: a reduce-scatter
 * by recursive halving (in round k each rank keeps half of its current
 * range, sends the other half to its partner and combines the half it
 * keeps), then an allgather by recursive doubling that retraces the rounds.
 * log2(n) rounds each way, and each rank moves about 2 (n-1)/n of the data:
 * the choice for medium messages, where the ring's n-1 rounds cost more
 * than the data. Any rank count, through the fold of
 * allreduce_recursive_doubling.c.
 *
 * Determinism: both partners of a round combine (lower virtual rank's
 * value) op (higher's); the halving rounds pair bits from the highest down,
 * so an element's total is a balanced bracket fixed by the ranks, finished
 * (and divided, for AVG) on one rank and copied from there to all.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"

#define MAX_LEVELS 32

int cc__rd_real_rank(int v, int rem);
int cc__rd_fold_in(cc__native_t *nc, cc__op_t *op, cc__reduce_fn fn, char *acc, char *tmp,
                   cc_status_t *st);
cc_status_t cc__rd_fold_out(cc__native_t *nc, cc__op_t *op, char *acc);

struct hd {
    cc__native_t *nc;
    cc__op_t *op;
    cc__reduce_fn fn;
    char *acc, *tmp;
    size_t es;
    int v, p2, rem;
    size_t lo[MAX_LEVELS], hi[MAX_LEVELS]; /* the range each round started from */
};

/* Halving: after it this rank's range [*lo, *hi) holds the total of those elements. */
static cc_status_t halve(struct hd *c, size_t *lo, size_t *hi)
{
    uint32_t step = 1;
    int lvl = 0;
    for (int mask = c->p2 / 2; mask >= 1; mask >>= 1, lvl++, step++) {
        int pv = c->v ^ mask, peer = cc__rd_real_rank(pv, c->rem);
        size_t mid = *lo + (*hi - *lo) / 2, klo = *lo, khi = mid, slo = mid, shi = *hi;
        if (c->v & mask) klo = mid, khi = *hi, slo = *lo, shi = mid;
        c->lo[lvl] = *lo;
        c->hi[lvl] = *hi;
        size_t es = c->es, klen = khi - klo;
        CC_CHECK(cc__net_sendrecv(c->nc->net, peer, c->acc + slo * es, (shi - slo) * es, peer,
                                  c->tmp, klen * es, cc__coll_tag(c->op, step),
                                  c->op->deadline_ns));
        char *keep = c->acc + klo * es;
        if (klen && c->v < pv)
            c->fn(keep, keep, c->tmp, klen);
        else if (klen)
            c->fn(keep, c->tmp, keep, klen);
        *lo = klo;
        *hi = khi;
    }
    return CC_OK;
}

/* Doubling: retrace the rounds, swapping finished ranges with the partner. */
static cc_status_t double_back(struct hd *c, size_t lo, size_t hi)
{
    int lvl = 0;
    while ((1 << (lvl + 1)) <= c->p2)
        lvl++;
    uint32_t step = 0x80;
    for (int mask = 1; mask < c->p2; mask <<= 1, step++) {
        lvl--;
        int peer = cc__rd_real_rank(c->v ^ mask, c->rem);
        /* The partner kept the other half of the range this round split. */
        size_t plo = (c->v & mask) ? c->lo[lvl] : hi, phi = (c->v & mask) ? lo : c->hi[lvl];
        size_t es = c->es;
        CC_CHECK(cc__net_sendrecv(c->nc->net, peer, c->acc + lo * es, (hi - lo) * es, peer,
                                  c->acc + plo * es, (phi - plo) * es, cc__coll_tag(c->op, step),
                                  c->op->deadline_ns));
        lo = c->lo[lvl];
        hi = c->hi[lvl];
    }
    return CC_OK;
}

cc_status_t cc__allreduce_halving_doubling(cc__native_t *nc, cc__op_t *op)
{
    size_t count = op->info.in_count, es = cc_dtype_size(op->info.dtype);
    if (!count) return CC_OK;
    struct hd c = {.nc = nc, .op = op, .es = es, .acc = op->info.recvbuf};
    CC_CHECK(cc__op_kernel(op, &c.fn));
    c.tmp = cc__native_scratch(nc, count * es);
    if (!c.tmp) return CC_ERR_NO_MEMORY;
    if (op->info.sendbuf != c.acc) memcpy(c.acc, op->info.sendbuf, count * es);
    c.p2 = cc__pow2_floor(nc->size);
    c.rem = nc->size - c.p2;
    cc_status_t st;
    c.v = cc__rd_fold_in(nc, op, c.fn, c.acc, c.tmp, &st);
    CC_CHECK(st);
    if (c.v >= 0) {
        size_t lo = 0, hi = count;
        CC_CHECK(halve(&c, &lo, &hi));
        cc__finish_avg(nc, op, c.acc + lo * es, hi - lo);
        CC_CHECK(double_back(&c, lo, hi));
    }
    return cc__rd_fold_out(nc, op, c.acc);
}
