/*
 * allreduce_stream_shm.c - the large allreduce between ranks of one host
 * that streams through the arena's staging area instead of reading peers'
 * memory with process_vm_readv (allreduce_shm.c's cma).
 *
 * Why: on this machine a process_vm_readv copies at 1.8 GB/s into memory
 * and 2.7 GB/s into cache where memcpy does 3-6 GB/s (page pinning per 4 KiB
 * page, the kernel's copy): a 64 MiB cma allreduce spent 57 % of its cycles
 * in the kernel's copy (docs/performance.md, "The 64 MiB allreduce against
 * memory"). Here every byte is copied by user space, and memory sees only
 * what it must: each rank reads its input once and writes its output once;
 * what ranks hand each other stays in the cache.
 *
 * Rank r owns share r (n near-equal parts, line-aligned, as cma). Shares
 * are cut into pieces of P elements; step k works on piece k of every
 * share. Rank q's staging area (its data area of the op's parity) holds two
 * slots, k & 1, of n segments of P elements: segment s (s != q) is q's input
 * piece k of share s, segment q the reduced piece k of q's own share.
 *
 * Phase t of a rank (t = 0 .. K + 1, K steps), between two of its waits:
 *   reduce step t - 1: its share's piece from every rank's segment (its own
 *     from its input), in rank order, into its result segment; copy that
 *     into its output;
 *   copy out step t - 2: every other owner's result segment into its output;
 *   stage step t: its input pieces of the other shares into its segments;
 * then publish prog = t + 1 and wait until every peer did. So "every peer
 * reached t" means: all staged step t - 1 and reduced step t - 2, which is
 * what phase t reads; and the slots phase t writes were last read in phase
 * t - 1 (stage slot t & 1 by step t - 2's reducers, result slot (t - 1) & 1
 * by step t - 3's copiers), which every peer finished before publishing t.
 * One wait per step; no rank ever reads another's user buffers, so in place
 * is safe (a rank stages and reduces an input piece before it writes that
 * piece of its output) and nobody waits for a "done" at the end.
 *
 * The last phase's result slots may still be read after this rank returns:
 * the arena reuses a parity's data only once every rank arrived at the next
 * op (arena.h).
 *
 * Determinism: each element is reduced once, by its owner, with the
 * multi-input kernel over all n inputs in rank order (AVG divides after),
 * exactly as flat and cma do: the three give the same bits.
 */
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/kernels.h"
#include "native/shm_algo.h"

/* One op's geometry: shares, piece size, and where rank q's segment s of slot j is. */
typedef struct stream {
    cc__arena_op_t *ao;
    const cc_op_info_t *in;
    int n, r;
    size_t es, piece; /* element size, elements per piece */
    size_t off[CC__ARENA_MAX_RANKS], len[CC__ARENA_MAX_RANKS];
    cc__reduce_multi_fn fn;
    int stream_out; /* write the output with non-temporal stores (see out_copy) */
} stream_t;

/*
 * Copy a finished piece into the user's output (shm_algo.h). A large output does not fit in
 * the cache anyway: ordinary stores first read each line from memory (write-allocate), a
 * third of the op's memory traffic; non-temporal stores skip that read. The caller orders
 * them before the op returns (_mm_sfence, as stream_body does).
 */
void cc__shm_out_copy(void *dst, const void *src, size_t len, int stream)
{
#if defined(__SSE2__)
    if (stream && len >= 256) {
        char *d = dst;
        const char *p = src;
        size_t head = (16u - ((uintptr_t)d & 15u)) & 15u;
        memcpy(d, p, head);
        d += head, p += head, len -= head;
        for (; len >= 64; d += 64, p += 64, len -= 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)p);
            __m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(p + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(p + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
        memcpy(d, p, len);
        return;
    }
#endif
    (void)stream;
    memcpy(dst, src, len);
}

static void out_copy(const stream_t *s, void *dst, const void *src, size_t len)
{
    cc__shm_out_copy(dst, src, len, s->stream_out);
}

static char *seg(const stream_t *s, int q, uint64_t k, int share)
{
    size_t pb = s->piece * s->es;
    return (char *)cc__arena_data(s->ao, q) + ((size_t)(k & 1) * (size_t)s->n + (size_t)share) * pb;
}

/* Elements of piece k of share `share` (0 past its end), and where it starts in the vector. */
static size_t piece_of(const stream_t *s, int share, uint64_t k, size_t *at)
{
    size_t d = (size_t)k * s->piece;
    *at = s->off[share] + d;
    return d >= s->len[share] ? 0 : s->len[share] - d < s->piece ? s->len[share] - d : s->piece;
}

static void stage(const stream_t *s, uint64_t k)
{
    for (int q = 0; q < s->n; q++) {
        size_t at, m = q == s->r ? 0 : piece_of(s, q, k, &at);
        if (m) memcpy(seg(s, s->r, k, q), (const char *)s->in->sendbuf + at * s->es, m * s->es);
    }
}

static void reduce(const stream_t *s, uint64_t k)
{
    size_t at, m = piece_of(s, s->r, k, &at);
    if (!m) return;
    const void *src[CC__ARENA_MAX_RANKS];
    for (int q = 0; q < s->n; q++)
        src[q] = q == s->r ? (const char *)s->in->sendbuf + at * s->es : seg(s, q, k, s->r);
    char *res = seg(s, s->r, k, s->r);
    s->fn(res, src, s->n, m);
    if (s->in->redop == CC_AVG) cc__kernel_div(s->in->dtype, res, res, m, (unsigned)s->n);
    out_copy(s, (char *)s->in->recvbuf + at * s->es, res, m * s->es);
}

static void copy_out(const stream_t *s, uint64_t k)
{
    for (int j = 1; j < s->n; j++) {
        int q = (s->r + j) % s->n;
        size_t at, m = piece_of(s, q, k, &at);
        if (m) out_copy(s, (char *)s->in->recvbuf + at * s->es, seg(s, q, k, q), m * s->es);
    }
}

/* Publish phase t's end and wait until every peer got there too. */
static cc_status_t step_sync(stream_t *s, uint64_t t)
{
    cc__arena_progress(s->ao, t);
    for (int j = 1; j < s->n; j++) {
        uint64_t have;
        CC_CHECK(cc__arena_wait_progress(s->ao, (s->r + j) % s->n, t, &have));
    }
    return CC_OK;
}

/* Elements per piece: two slots of n segments fill the staging area, in whole lines. */
size_t cc__shm_stream_piece(int n, size_t es)
{
    size_t pb = CC__ARENA_DATA / (2u * (size_t)n);
    pb -= pb % CC__ARENA_LINE;
    return pb / es;
}

static cc_status_t stream_body(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    stream_t s = {.ao = ao, .in = &op->info, .n = nc->size, .r = nc->rank};
    s.es = cc_dtype_size(s.in->dtype);
    s.piece = cc__shm_stream_piece(s.n, s.es);
    s.stream_out = s.in->in_count * s.es >= CC__SHM_STREAM_OUT_BYTES;
    CC_CHECK(cc__kernel_reduce_multi_get(s.in->dtype, s.in->redop, &s.fn));
    CC_CHECK(cc__shm_begin_shallow(nc, op, s.in->in_count, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    uint64_t steps = 0;
    for (int q = 0; q < s.n; q++) {
        cc__shm_share(s.in->in_count, s.n, q, CC__ARENA_LINE / s.es, &s.off[q], &s.len[q]);
        uint64_t kq = (s.len[q] + s.piece - 1) / s.piece;
        if (kq > steps) steps = kq;
    }
    for (uint64_t t = 0; t < steps + 2; t++) {
        if (t >= 1 && t - 1 < steps) reduce(&s, t - 1);
        if (t >= 2) copy_out(&s, t - 2);
        if (t < steps) stage(&s, t);
        if (t < steps + 1) CC_CHECK(step_sync(&s, t + 1));
    }
#if defined(__SSE2__)
    if (s.stream_out) _mm_sfence(); /* the non-temporal stores are seen before the op ends */
#endif
    return cc__arena_check_quit(ao);
}

/*
 * The table's row (select.c). prog counts phases in its low CC__ARENA_PROG_BITS
 * bits: a vector of more pieces than that (2^24 x 16 KiB at 2 ranks: 256 GiB)
 * runs cma instead, as every rank decides alike from the count.
 */
cc_status_t cc__allreduce_shm_stream(cc__native_t *nc, cc__op_t *op)
{
    size_t es = op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
    size_t piece = cc__shm_stream_piece(nc->size, es);
    uint64_t steps = piece ? op->info.in_count / piece / (uint64_t)nc->size + 2 : UINT64_MAX;
    return cc__shm_run_stream(nc, op, steps, stream_body, cc__allreduce_shm_cma);
}
