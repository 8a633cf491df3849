/*
 * alltoall_bruck.c - Bruck's all-to-all (equal blocks): ceil(log2 n)
 * rounds of one message each, where the linear and pairwise exchanges send
 * n - 1 messages. The choice for small blocks on TCP at 4 and more ranks:
 * there a message costs a wake-up and a few syscalls whatever its size
 * (select.c has the measurements).
 *
 * Rank r first rotates its blocks, tmp[i] = in[(r + i) mod n] (the block
 * for the rank i ahead). In round k (k = 1, 2, 4, ...) it sends every
 * block whose index has bit k, packed, to rank r + k and receives the same
 * indices from rank r - k into their places: a block at index i travels
 * the bits of i, i ranks in all, and then sits at its destination. So at
 * the end tmp[i] at rank r came from rank r - i: out[(r - i) mod n] = tmp[i].
 * Each round moves about half the data, about (n/2) log2(n) blocks per rank
 * in all: for large blocks the pairwise exchange's n - 1 wins.
 */
#include <string.h>

#include "base/log.h"
#include "native/native.h"
#include "native/net_algo.h"

/* Copy the blocks of tmp whose index has bit k to pk (to == 1), or back (to == 0). */
static size_t pack(char *tmp, char *pk, int n, int k, size_t bs, int to)
{
    size_t m = 0;
    for (int i = 1; i < n; i++) {
        if (!(i & k)) continue;
        if (to)
            memcpy(pk + m * bs, tmp + (size_t)i * bs, bs);
        else
            memcpy(tmp + (size_t)i * bs, pk + m * bs, bs);
        m++;
    }
    return m;
}

cc_status_t cc__alltoall_bruck(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, r = nc->rank;
    size_t bs = op->info.in_count / (size_t)n * cc_dtype_size(op->info.dtype);
    if (!bs) return CC_OK;
    const char *in = op->info.sendbuf;
    char *out = op->info.recvbuf;
    /* tmp: n blocks; then the packed blocks of a round out (at most n/2) and in. */
    char *tmp = cc__native_scratch(nc, (size_t)(2 * n) * bs);
    if (!tmp) return CC_ERR_NO_MEMORY;
    char *sp = tmp + (size_t)n * bs, *rp = sp + (size_t)(n / 2) * bs;
    for (int i = 0; i < n; i++)
        memcpy(tmp + (size_t)i * bs, in + (size_t)((r + i) % n) * bs, bs);
    uint32_t step = 0;
    for (int k = 1; k < n; k <<= 1, step++) {
        size_t m = pack(tmp, sp, n, k, bs, 1);
        CC_CHECK(cc__net_sendrecv(nc->net, (r + k) % n, sp, m * bs, (r - k + n) % n, rp, m * bs,
                                  cc__coll_tag(op, step), op->deadline_ns));
        pack(tmp, rp, n, k, bs, 0);
    }
    /* In place, in was read whole into tmp before out is written. */
    for (int i = 0; i < n; i++)
        memcpy(out + (size_t)((r - i + n) % n) * bs, tmp + (size_t)i * bs, bs);
    return CC_OK;
}
