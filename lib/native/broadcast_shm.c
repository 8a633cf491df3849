/*
 * broadcast_shm.c - broadcast between ranks of one host, through the arena.
 *
 * flat (small): the root stages its buffer in the arena; every other rank
 *   copies it out. The root waits for nobody (its staging area is reused
 *   only once every rank arrived at a later op).
 * cma (large): every other rank reads the root's buffer straight into its
 *   own (process_vm_readv, one copy); the root returns once all are done. On
 *   2 ranks the root writes part of it into its reader's buffer meanwhile
 *   (process_vm_writev), so both CPUs copy.
 * stream (large): the root copies its buffer through its staging area in
 *   pieces and every other rank copies each piece out as soon as it is
 *   there: two copies, but on two CPUs at once and through the cache, where
 *   cma's one copy is the kernel's, page by page, on the reader's CPU alone.
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "native/shm_algo.h"

static cc_status_t flat(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    int root = in->root;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__arena_expect(ao, bytes);
    if (nc->rank == root) {
        if (bytes) memcpy(cc__arena_stage(ao, root, bytes), in->sendbuf, bytes);
        cc__arena_post(ao);
        if (bytes && in->sendbuf != in->recvbuf) memcpy(in->recvbuf, in->sendbuf, bytes);
        return CC_OK;
    }
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    if (bytes) memcpy(in->recvbuf, cc__arena_stage(ao, root, bytes), bytes);
    return CC_OK;
}

/*
 * cma on 2 ranks from CMA_SPLIT_BYTES: in place the root has nothing to copy and would only wait
 * for its reader, so the two share the copy. The reader reads the head of the root's buffer into
 * its own; the root writes the tail into the reader's (process_vm_writev); then each waits for
 * the other's done, so neither returns while the other still touches its buffer. Out of place
 * the root copies its own buffer as well and writes an eighth. Measured 2026-12-07 20:40-20:50
 * UTC, far placement (line_rtt 440-490 ns), 4 rounds alternating, rank 0's in-place column
 * (compare.sh's), us, with a throwaway switch:
 *   CCOMM_ALGO_BROADCAST=shm_cma ccrun -n 2 ccperf broadcast -b 64K -e 16M -f 4 -n 100 -w 10 -c 0
 *   against mpirun -n 2 mpi_bench broadcast (the same sizes)
 *   64K / 256K / 1M / 4M / 16M: cma alone 5.3-5.6 / 10.6-26.5 / 45-62 / 179-250 / 1464-2459;
 *   shared 5.6-6.5 / 8.6-10.7 / 24-33 / 102-129 / 517-714; the table's choice then (flat to
 *   16K, cma to 512K, the stream) 5.6-7.6 / 12-17 / 42-47 / 179-199 / 728-747; Open MPI
 *   6.9-15 / 10.4-23 / 43-68 / 176-244 / 1465-2640.
 *   -b 32K -e 256K -f 2 -n 1000 -w 200, 4 rounds: 32K cma 4.5-5.2, shared 4.9-5.4; 64K 5.1-5.8
 *   and 5.1-5.9; 128K 6.6-7.9 and 6.0-6.8; 256K 11.3-12.6 and 9.0-9.6.
 *   Out of place, 3 rounds (-b 256K -e 16M -f 4), cma alone / an eighth written: 1M 42-50 /
 *   38-42, 4M 163-197 / 146-162, 16M 1377-2381 / 1564-1679.
 */
#define CMA_SPLIT_BYTES (128u * 1024u)

/* Bytes the reader reads; the root writes the rest. Page-aligned, so each side's copy starts on
 * a page of its own. Both sides compute it from the size and whether the root is in place. */
static size_t cma_head(size_t bytes, int root_in_place)
{
    size_t tail = root_in_place ? bytes / 2 : bytes / 8;
    return (bytes - tail) & ~(size_t)4095;
}

static cc_status_t cma_shared(cc__native_t *nc, const cc_op_info_t *in, cc__arena_op_t *ao,
                              size_t bytes)
{
    int root = in->root, peer = 1 - nc->rank;
    if (nc->rank == root) {
        size_t head = cma_head(bytes, in->sendbuf == in->recvbuf);
        CC_CHECK(cc__arena_wait_arrive(ao, peer));
        CC_CHECK(cc__arena_write(ao, peer, cc__arena_par(ao, peer)->recvbuf + head,
                                 (const char *)in->sendbuf + head, bytes - head));
        if (in->sendbuf != in->recvbuf) memcpy(in->recvbuf, in->sendbuf, bytes);
        return cc__arena_finish(ao);
    }
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    const struct cc__arena_par *rp = cc__arena_par(ao, root);
    size_t head = cma_head(bytes, rp->sendbuf == rp->recvbuf);
    cc_status_t st = cc__arena_read(ao, root, in->recvbuf, rp->sendbuf, head);
    if (st != CC_OK) {
        /* The root may still be writing into this rank's buffer: not before it is done (or gave
         * up, or died) does the buffer go back to the caller. */
        (void)cc__arena_wait_done(ao, root);
        return st;
    }
    return cc__arena_finish(ao);
}

static cc_status_t cma(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    int root = in->root;
    CC_CHECK(cc__shm_begin(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    if (nc->size == 2 && bytes >= CMA_SPLIT_BYTES) return cma_shared(nc, in, ao, bytes);
    if (nc->rank == root) {
        if (bytes && in->sendbuf != in->recvbuf) memcpy(in->recvbuf, in->sendbuf, bytes);
        for (int q = 0; q < nc->size; q++)
            if (q != root) CC_CHECK(cc__arena_wait_done(ao, q));
        return CC_OK;
    }
    CC_CHECK(cc__arena_wait_arrive(ao, root));
    CC_CHECK(cc__arena_read(ao, root, in->recvbuf, cc__arena_par(ao, root)->sendbuf, bytes));
    cc__arena_done(ao);
    return CC_OK;
}

/*
 * stream: piece k (STREAM_PIECE bytes) goes through slot k % STREAM_SLOTS of the root's data
 * area. The root writes piece k once every reader published piece k - STREAM_SLOTS as copied
 * out (prog: pieces done), then publishes k + 1; a reader copies piece k once the root
 * published k + 1, then publishes k + 1. Each side looks at the other's counter only when
 * what it saw last is used up, so a wait covers as many pieces as are ready. The root's user
 * buffer is never read by a peer: it returns after its last piece, and its staging area is
 * reused only once every reader arrived at a later op (arena.h). Readers' outputs of at least
 * CC__SHM_STREAM_OUT_BYTES are written with non-temporal stores, as the allreduce's.
 */
#define STREAM_SLOTS 4u
#define STREAM_PIECE (CC__ARENA_DATA / STREAM_SLOTS)

/*
 * From 1 MiB on 2 ranks the root stages its pieces with non-temporal stores. With ordinary
 * stores every line of a slot lives dirty in the root's cache: the reader pulls it from
 * there and the root takes it back to write the next piece through that slot, two transfers
 * of a line between the CPUs per piece. Where the two CPUs share a cache that is cheap;
 * where they do not (another core complex or socket: line_rtt about 500 ns on this VM, the
 * "far" placement) each transfer crosses the interconnect, and the 4 MiB broadcast took 3-4
 * times as long as in the close placement, and twice Open MPI's time, which reads the
 * root's buffer once (CMA) and does not care. Staged through memory the lines cross once.
 * Measured 2026-12-07 11:50-12:10 UTC, 2 ranks, rank 0's in-place column, us, runs sorted
 * by line_rtt just before and after (close: both under 250 ns; far: either above), the
 * variants alternating (a throwaway switch of this file chose the stores):
 *   ccrun -n 2 ccperf broadcast -b S -e S -n 1000 -w 10000 -c 0 --budget 256M
 *   1 MiB   ordinary: close 57-256 (35 runs, median 70), far 102-296 (5, median 268)
 *           non-temporal: close 71-110 (31, median 88), far 75-153 (9, median 94)
 *   4 MiB   ordinary: close 224-392 (23, median 322), far 844 and 1200
 *           non-temporal: close 330-499 (21, median 398), far 344-549 (4, median 401)
 *   Open MPI (mpi_bench broadcast -b 1M -e 64M -f 4, 7 launches rotating with ccomm's, 11:49
 *   UTC, 4 of them close): 1 MiB median 116, 4 MiB 446-616 (median 480). shm_cma: 4 MiB
 *   441-705 close (23 runs, median 518), 411 and 540 far.
 * So the close placement gives up a quarter at 1 and 4 MiB and stays ahead of Open MPI
 * (1.3 and 1.2 times); the far one gains 2.5-3 times and stops falling below it (0.4-0.5
 * times with ordinary stores, 1.2 with these). At 4 ranks on 2 CPUs (three readers of each
 * line) non-temporal staging was a tenth slower at 1-4 MiB and even at 16 MiB with all runs
 * close (6 alternating launches each, 1M / 4M / 16M medians 230 / 944 / 4900 ordinary,
 * 260 / 1067 / 4800 non-temporal), with no far runs to weigh: ordinary there.
 */
#define STREAM_STAGE_NT_BYTES (1u << 20)

static cc_status_t stream(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    const cc_op_info_t *in = &op->info;
    size_t bytes = in->in_count * cc_dtype_size(in->dtype);
    uint64_t steps = (bytes + STREAM_PIECE - 1) / STREAM_PIECE;
    int root = in->root, n = nc->size;
    CC_CHECK(cc__shm_begin_shallow(nc, op, in->in_count, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    char *area = cc__arena_data(ao, root);
    if (nc->rank == root) {
        const char *src = in->sendbuf;
        int nt = n == 2 && bytes >= STREAM_STAGE_NT_BYTES;
        uint64_t least = 0; /* every reader copied out this many pieces, at least */
        for (uint64_t k = 0; k < steps; k++) {
            if (k >= STREAM_SLOTS && least < k - STREAM_SLOTS + 1) {
                uint64_t have, low = UINT64_MAX;
                for (int q = 0; q < n; q++) {
                    if (q == root) continue;
                    CC_CHECK(cc__arena_wait_progress(ao, q, k - STREAM_SLOTS + 1, &have));
                    if (have < low) low = have;
                }
                least = low;
            }
            size_t off = (size_t)k * STREAM_PIECE, len = bytes - off;
            if (len > STREAM_PIECE) len = STREAM_PIECE;
            cc__shm_out_copy(area + (size_t)(k % STREAM_SLOTS) * STREAM_PIECE, src + off, len, nt);
            if (in->recvbuf != in->sendbuf) memcpy((char *)in->recvbuf + off, src + off, len);
#if defined(__SSE2__)
            if (nt) _mm_sfence(); /* the piece is in memory before the reader is told */
#endif
            cc__arena_progress(ao, k + 1);
        }
        return cc__arena_check_quit(ao);
    }
    int nt = bytes >= CC__SHM_STREAM_OUT_BYTES;
    uint64_t ready = 0; /* the root staged this many pieces, at least */
    for (uint64_t k = 0; k < steps; k++) {
        if (ready < k + 1) CC_CHECK(cc__arena_wait_progress(ao, root, k + 1, &ready));
        size_t off = (size_t)k * STREAM_PIECE, len = bytes - off;
        if (len > STREAM_PIECE) len = STREAM_PIECE;
        cc__shm_out_copy((char *)in->recvbuf + off, area + (size_t)(k % STREAM_SLOTS) * STREAM_PIECE,
                         len, nt);
        cc__arena_progress(ao, k + 1);
    }
#if defined(__SSE2__)
    if (nt) _mm_sfence(); /* the non-temporal stores are seen before the op ends */
#endif
    return cc__arena_check_quit(ao);
}

/* The table's two rows (select.c); cc__shm_run runs the other body, or the transport's
 * algorithm, when the one asked for cannot run (select_shm.c). */
cc_status_t cc__broadcast_shm_flat(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, flat, cma);
}

/* The stream's pieces: they are counted in prog's low CC__ARENA_PROG_BITS bits; a larger
 * message (2^24 pieces of 16 KiB: 256 GiB) runs cma, as every rank decides alike. */
static uint64_t stream_steps(const cc__op_t *op)
{
    size_t es = op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
    return op->info.in_count * es / STREAM_PIECE + 1;
}

cc_status_t cc__broadcast_shm_cma(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run_cma(nc, op, flat, cma, stream_steps(op), stream);
}

cc_status_t cc__broadcast_shm_stream(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run_stream(nc, op, stream_steps(op), stream, cc__broadcast_shm_cma);
}
