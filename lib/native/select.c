/*
 * select.c - which algorithm runs an op: one table, one row per
 * (collective, algorithm), tried in order; the first row whose conditions
 * hold runs. CCOMM_ALGO_<COLL> (or, in tests, cc__native_force) names a row
 * instead, skipping the conditions but not the transports it can run on.
 * This file only chooses (cc__native_choose); run.c runs what was chosen.
 *
 * Adding an algorithm is one row, and its name in CC__CHOICES_ALGO_<COLL>
 * (base/config_table.h: base cannot see this table, and test_config_typed
 * fails until the two agree). Rows of one collective go from the most
 * specific (a transport, a size window) to the fallback, which must accept
 * everything. Conditions must come out the same on every rank, so they use
 * only what every rank knows alike: the rank count, the transport class
 * (SELF, SHM when every rank is on one host, NET otherwise: the same on all
 * ranks, unlike "tcp" vs "mixed") and sel_bytes() below.
 */
#include <stdio.h>
#include <string.h>

#include "engine/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "native/native.h"
#include "native/net_algo.h"
#include "native/shm_algo.h"
#include "native/window.h"

#define K   1024u
#define ANY CC__TPM_ANY
#define SHM CC__TPM_SHM

typedef struct cc__algo_row {
    cc_op_type_t type;
    const char *name; /* the CCOMM_ALGO_<COLL> value; shown in the recorder */
    cc__algo_fn fn;
    unsigned tpm;     /* transports it can run on (CC__TPM_*) */
    int min_ranks;    /* automatic choice only with at least this many ranks (0: any) */
    int max_ranks;    /* ... and at most this many (0: any) */
    size_t max_bytes; /* ... and sel_bytes below this (0: no bound) */
    unsigned flags;   /* CC__ROW_* */
} cc__algo_row_t;

#define CC__ROW_FORCED_ONLY 1u /* never chosen automatically */
#define CC__ROW_POW2        2u /* ... only when the rank count is a power of two */

/*
 * The table. Thresholds were measured on this project's reference machine
 * (docs/collectives.md, "Selection"); the shared-memory rows of
 * lib/native/ *_shm*.c go first in each collective's block.
 *
 * Broadcast and alltoall keep shm_flat up to the arena's staging size
 * (CC__ARENA_DATA, 64 KiB: "+ 1" makes 64 KiB itself flat; above it flat
 * cannot stage the data). Measured 2026-12-01 on 2 ranks, load 9-10 on 2
 * CPUs, medians of 5 launches, us:
 *   CCOMM_TRANSPORT=auto ccrun -n 2 ccperf broadcast -b 16K -e 64K -f 4 -n 100 -w 10 -c 0
 *     (and the same with CCOMM_ALGO_BROADCAST=shm_flat)
 *     16 KiB: flat 2.69, cma 4.22;  64 KiB: flat 5.50, cma 10.53
 *   ccrun -n 2 ccperf alltoall -b 8K -e 64K -f 2 ..., CCOMM_ALGO_ALLTOALL=shm_flat
 *     16 KiB: flat 2.28, cma 4.20;  32 KiB: 2.70, 4.43;  64 KiB: 4.87, 6.33
 *   4 ranks (load 8.5, 4 launches): alltoall 16/32/64 KiB flat 18.1/23.0/32.4,
 *     cma 50.7/63.8/81.6; broadcast flat 11.8/13.6/24.3, cma 23.6/27.3/40.9
 * One copy out of the arena beats a process_vm_readv (a syscall, page
 * pinning) and the root's wait for its reader until the data stops fitting.
 *
 * Allreduce, reduce, reduce_scatter and allgather went the same way (they
 * switched at 16 KiB; their flat bodies stage at most the op's bytes).
 * Measured 2026-12-01 17:50 UTC, load 4.5-6 on 2 CPUs, medians of both
 * placements over 4 launches (2 ranks) / 3 launches (4 ranks), flat and cma
 * alternating, us at 16 / 32 / 64 KiB:
 *   CCOMM_ALGO_<COLL>=shm_flat|shm_cma ccrun -n 2 ccperf <coll> -b 16K -e 64K -f 2 -n 200 -w 20
 *     -c 0
 *   2 ranks  allreduce      flat 7.7 / 14.1 / 58.5   cma 38.0 / 85.9 / 142.1
 *            reduce         flat 3.4 / 6.3 / 12.8    cma 49.0 / 80.8 / 143.7
 *            reduce_scatter flat 4.7 / 7.3 / 14.6    cma 18.5 / 66.5 / 76.8
 *            allgather      flat 4.5 / 6.9 / 11.7    cma 4.9 / 6.0 / 17.0 (6 launches)
 *   4 ranks  allreduce      flat 15.6 / 22.1 / 40.7  cma 154.6 / 130.9 / 229.4
 *            reduce         flat 12.2 / 27.2 / 50.8  cma 111.2 / 142.7 / 219.3
 *            reduce_scatter flat 23.0 / 38.2 / 33.8  cma 99.9 / 106.3 / 152.6
 *            allgather      flat 17.1 / 19.8 / 22.5  cma 78.5 / 66.6 / 114.5
 * cma pays a syscall per peer and piece and two or three hand-overs (arrival,
 * progress, done) where flat has one. Gather and scatter were mixed at 2
 * ranks (gather 64 KiB flat 9.2, cma 8.5; scatter 32 KiB flat 13.0, cma
 * 5.1) and keep 16 KiB.
 *
 * Above flat, allreduce streams through the staging area (shm_stream) on any
 * rank count; shm_cma is kept for CCOMM_ALGO_ALLREDUCE. Measured 2026-12-01
 * 17:58-18:01 UTC, load 5-7, medians of the out-of-place column, us, stream
 * and cma alternating with Open MPI (mpi_bench, vader) in the same launches:
 *   CCOMM_ALGO_ALLREDUCE=shm_stream|shm_cma ccrun -n N ccperf allreduce -b 128K -e 32M -f 4
 *     -n 20 -w 2 -c 0   (4 launches at 2 ranks, 3 at 4, -n 10)
 *   2 ranks  128K / 512K / 2M / 8M / 32M: stream 47 / 164 / 885 / 5640 / 21219
 *            cma 85 / 1259 / 4428 / 14937 / 65595; Open MPI 164 / 1084 / 6242 / 27309 / 121534
 *   4 ranks  stream 331 / 526 / 3902 / 7815 / 42301; cma 207 / 662 / 4140 / 16096 / 69313;
 *            Open MPI 713 / 2962 / 6945 / 34087 / 216540
 * (4 ranks at 128 KiB: launches 413 / 116 / 331 against 1147 / 177 / 207, within the spread.)
 *
 * Broadcast streamed too above flat until 2026-12-07 (shm_stream: the root's pieces through
 * its staging area, broadcast_shm.c); it runs cma now, and the stream is forced only (its rows
 * below say why). On the 2026-12-03 VM Open MPI's own broadcast is
 * twice as fast without its single copy (mpirun -n 2 mpi_bench broadcast -b 1M -e 16M -f 4
 * -n 50 -w 5, with and without --mca btl_vader_single_copy_mechanism none: 1 MiB 131 / 64 us,
 * 16 MiB 4100 / 2520 us). Measured 2026-12-03 13:50 UTC, 3 launches alternating, us
 * out of place / in place (compare.sh's column), rank 0:
 *   CCOMM_ALGO_BROADCAST=shm_cma|shm_stream ccrun -n N ccperf broadcast -b 128K -e 64M -f 4
 *     -n 20 -w 3 -c 0 --budget 256M
 *   2 ranks in place 128K / 2M / 8M / 32M: stream 9.8 / 114 / 467 / 3727, 15.3 / 202 / 639 /
 *     3799, 32.6 / 577 / 2395 / 9439; cma 19.9 / 282 / 1962 / 9037, 19.9 / 276 / 2062 / 8659,
 *     17.8 / 260 / 1881 / 8526 (out of place the root copies twice: 0.8-1.7x of cma)
 *   4 ranks in place: stream 37.5 / 481 / 2398 / 10485, 32.9 / 471 / 2439 / 10248, 23.1 / 352 /
 *     2195 / 6464; cma 94.8 / 629 / 3867 / 16280, 60.9 / 659 / 4035 / 17684, 59.5 / 608 / 3662 /
 *     15864 (out of place 1.0-1.8x of cma)
 */
static const cc__algo_row_t rows[] = {
    {CC_OP_SEND, "direct", cc__send_direct, ANY, 0, 0, 0, 0},
    {CC_OP_RECV, "direct", cc__recv_direct, ANY, 0, 0, 0, 0},
    {CC_OP_BARRIER, "shm", cc__barrier_shm, SHM, 0, 0, 0, 0},
    {CC_OP_BARRIER, "dissemination", cc__barrier_dissemination, ANY, 0, 0, 0, 0},
    {CC_OP_ALLREDUCE, "shm_flat", cc__allreduce_shm_flat, SHM, 0, 0, 64 * K + 1, 0},
    {CC_OP_ALLREDUCE, "shm_stream", cc__allreduce_shm_stream, SHM, 0, 0, 0, 0},
    {CC_OP_ALLREDUCE, "shm_cma", cc__allreduce_shm_cma, SHM, 0, 0, 0, CC__ROW_FORCED_ONLY},
    {CC_OP_ALLREDUCE, "recursive_doubling", cc__allreduce_recursive_doubling, ANY, 0, 0, 16 * K, 0},
    /* On 2 ranks over TCP one exchange of the whole vector beats the ring's two steps of half
     * up to 1 MiB. 2026-12-03 14:12 UTC, 5 launches alternating, medians, us (ring / rd):
     *   bench/ab.sh --a build --a-env CCOMM_ALGO_ALLREDUCE=ring --b build
     *     --b-env CCOMM_ALGO_ALLREDUCE=recursive_doubling --transport tcp --coll allreduce
     *     --sizes "256K 512K 1M 2M 4M" --launches 5 --iters 30
     *   256K 377/319, 512K 309/236, 1M 583/499, 2M 1194/1271, 4M 2697/3806 */
    {CC_OP_ALLREDUCE, "recursive_doubling", cc__allreduce_recursive_doubling, ANY, 2, 2,
     1024 * K + 1, 0},
    {CC_OP_ALLREDUCE, "halving_doubling", cc__allreduce_halving_doubling, ANY, 0, 0, 256 * K, 0},
    /* From 4 ranks over TCP halving-doubling (2 log2 n rounds) beats the ring (2 (n - 1)) up
     * to 4 MiB on 2 CPUs. Measured 2026-12-01 20:40 UTC, load 6-7, medians of 5 launches, us
     * (ring / hd):
     *   bench/ab.sh --a build --b build --a-env CCOMM_ALGO_ALLREDUCE=ring
     *     --b-env CCOMM_ALGO_ALLREDUCE=halving_doubling --coll allreduce
     *     --sizes "64K 256K 1M" --ranks 4 --transport tcp --launches 5 --iters 100
     *   4 ranks: 64K 493/481, 256K 2467/1880, 1M 7368/5482, 4M 21375/21347, 16M 85466/100067
     * At 2 ranks both take 2 steps and only the ring pipelines them (main against this row
     * at 1 MiB: 2092 / 2723 us, 20:55 UTC), so 2 and 3 ranks keep the ring from 256 KiB.
     * Again at 4 MiB and above, 2026-12-06 04:12-04:16 UTC, 4 ranks, medians of 5 and 7
     * launches, us (ring / hd):
     *   bench/ab.sh --a build --b build --b-env CCOMM_ALGO_ALLREDUCE=halving_doubling
     *     --coll allreduce --transport tcp --ranks 4 --sizes "2M 4M 8M 16M" --launches 5 (7)
     *   2M 2829/2683; 4M 7600/6790, 8726/7235; 8M 15671/13761, 15803/15656;
     *   16M 29324/30136, 29603/28613
     * so halving-doubling runs below 8 MiB (4 MiB itself included). */
    {CC_OP_ALLREDUCE, "halving_doubling", cc__allreduce_halving_doubling, ANY, 4, 0, 8 * 1024 * K,
     0},
    {CC_OP_ALLREDUCE, "ring", cc__allreduce_ring, ANY, 0, 0, 0, 0},
    /* 2 ranks: flat up to 16 KiB, cma above. From 128 KiB the root of a 2-rank cma writes part
     * of its buffer into its reader's while the reader reads the rest (broadcast_shm.c, with
     * its figures); before that, the stream took over above 512 KiB. Measured 2026-12-07 20:55
     * UTC, far (line_rtt 450-500), 3 rounds alternating, in place, us, 1M / 4M / 16M / 64M:
     *   CCOMM_ALGO_BROADCAST=shm_cma ccrun -n 2 ccperf broadcast -b 1M -e 64M -f 4 -n 40 -w 4
     *     -c 0, against a build of a04c651 (the stream from 512 KiB) and mpi_bench
     *   cma 22.4-23.7 / 82-90 / 442-699 / 2677-4356; the stream 41.7-46.0 / 181-201 / 731-821
     *   / 3441-3881; Open MPI 43-133 / 156-194 / 1005-1367 / 5047-5463.
     * Below 512 KiB, 2026-12-07 17:55 UTC (before the shared copy), in place, medians of 5
     * rounds (close) at 16K / 32K / 64K / 128K / 256K, us:
     *   CCOMM_ALGO_BROADCAST=shm_cma ccrun -n 2 ccperf broadcast -b 16K -e 256K -f 2 -n 1000
     *     -w 2000 -c 0
     *   flat / stream 2.31 / 4.04 / 8.03 / 17.0 / 34.1; cma 2.71 / 4.07 / 7.2 / 12.8 / 25.0;
     *   Open MPI 2.99 / 4.41 / 7.4 / 14.3 / 35.6
     * and far, 3 rounds at 8K / 16K / 32K: flat 2.89-3.39 / 4.55-5.59 / 8.36-10.05, cma
     * 2.32-2.35 / 3.16-3.17 / 4.62-5.00, Open MPI 3.15-3.38 / 3.86-4.18 / 5.38-5.98. */
    {CC_OP_BROADCAST, "shm_flat", cc__broadcast_shm_flat, SHM, 0, 2, 16 * K + 1, 0},
    /* 3 and more ranks: flat while it fits the arena, cma above. The stream's root and
     * readers go through its four slots in step, and with more ranks than CPUs each step
     * waits for a reader to get a CPU; cma's readers copy on their own. Measured 2026-12-07
     * 21:40-21:50 UTC, close (line_rtt 91-109 ns), in place, us, the stream (then the
     * table's choice) / cma / Open MPI, rounds alternating:
     *   CCOMM_ALGO_BROADCAST=shm_cma ccrun -n N ccperf broadcast -b 64K -e 64M -f 4 -n 40
     *     -w 4 -c 0 (3 and 8 ranks: -b 256K -e 16M -n 20 -w 3, 2 rounds)
     *   4 ranks, 3 rounds, 64K: flat 17-28, cma 39-42, Open MPI 40-51; 256K 60-113 /
     *     45-56 / 31-46; 1M 256-455 / 118-128 / 104-134; 4M 1015-1864 / 384-403 / 329-380;
     *     16M 4191-5782 / 2632-2651 / 2584-4951; 64M 19813-21051 / 13069-13413 /
     *     12732-18746
     *   3 ranks, 1M 253-274 / 68-71 / 68-71; 4M 990-1007 / 224-230 / 220-259
     *   8 ranks, 1M 659-756 / 247-259 / 247-264; 4M 2630-3338 / 1004-1057 / 1099-1100
     * (On 2026-12-03's host the stream was ahead at 4 ranks, 1.3-1.6 times, comment above
     * the table: the single copy there ran at a third to a half of memcpy's speed.) The
     * stream stays for CCOMM_ALGO_BROADCAST=shm_stream and where ranks may not read each
     * other's memory (cc__shm_run_cma). */
    {CC_OP_BROADCAST, "shm_flat", cc__broadcast_shm_flat, SHM, 3, 0, 64 * K + 1, 0},
    {CC_OP_BROADCAST, "shm_cma", cc__broadcast_shm_cma, SHM, 0, 0, 0, 0},
    {CC_OP_BROADCAST, "shm_stream", cc__broadcast_shm_stream, SHM, 0, 0, 0, CC__ROW_FORCED_ONLY},
    /* Over TCP a stream of small broadcasts is bound by the root's sends: the ring's root
     * sends one message per op, binomial's log2(n). Measured 2026-12-01 18:15 UTC, load
     * 11-13 on 2 CPUs, medians of 5-7 launches, us (binomial / ring):
     *   bench/ab.sh --a build --b build --b-env CCOMM_ALGO_BROADCAST=ring --transport tcp
     *     --coll broadcast --sizes "64 1K 16K" --ranks R --iters 200
     *   3 ranks: 8.2/4.4, 17.4/9.8, 37.2/37.3;  4 ranks: 14.3/9.1, 24.3/12.4, 59.8/60.8;
     *   8 ranks: 28.4/12.3, 47.6/22.8, 102.5/90.2. From 16 KiB on they are alike. (Only NET
     * and SELF reach these rows: shm_cma takes every size on SHM.) */
    {CC_OP_BROADCAST, "ring", cc__broadcast_ring, ANY, 0, 0, 16 * K, 0},
    /* Above 16 KiB binomial beat the pipelined ring at every size measured, on 3, 4 and 8
     * ranks (2 CPUs: the bytes moved are (n - 1) x size either way, the ring pays more
     * pieces). 2026-12-01 20:40-20:43 UTC, load 5-7, medians of 5 launches, us (ring / bin):
     *   bench/ab.sh --a build --b build --a-env CCOMM_ALGO_BROADCAST=ring
     *     --b-env CCOMM_ALGO_BROADCAST=binomial --coll broadcast --sizes "256K 1M 4M"
     *     --ranks N --transport tcp --launches 5 --iters 20
     *   3 ranks: 256K 371/367, 1M 1445/1400, 4M 5977/5414
     *   4 ranks: 64K 319/310, 256K 771/729, 1M 2706/2032, 4M 10017/7620, 16M 38624/33160
     *   8 ranks: 256K 1510/1366, 1M 5675/4768, 4M 19823/17952
     * Not measured above 16 MiB: the ring stays there. */
    {CC_OP_BROADCAST, "binomial", cc__broadcast_binomial, ANY, 0, 0, 16 * 1024 * K + 1, 0},
    {CC_OP_BROADCAST, "ring", cc__broadcast_ring, ANY, 0, 0, 0, 0},
    {CC_OP_REDUCE, "shm_flat", cc__reduce_shm_flat, SHM, 0, 0, 64 * K + 1, 0},
    {CC_OP_REDUCE, "shm_cma", cc__reduce_shm_cma, SHM, 0, 0, 0, 0},
    {CC_OP_REDUCE, "binomial", cc__reduce_binomial, ANY, 0, 0, 128 * K, 0},
    {CC_OP_REDUCE, "ring", cc__reduce_ring, ANY, 0, 0, 0, 0},
    /* 2 ranks: flat up to 16 KiB, cma above it to 8 MiB. Measured 2026-12-07 17:55 UTC, a
     * new host (line_rtt 120-130 ns close, 460-480 far), 5 rounds alternating the automatic
     * choice (flat to 64 KiB, the stream to 512 KiB), cma and Open MPI, all close, medians,
     * us at 32K / 64K / 128K / 256K:
     *   CCOMM_ALGO_ALLGATHER=shm_cma ccrun -n 2 ccperf allgather -b 32K -e 512K -f 2 -n 500
     *     -w 1000 -c 0 (and mpirun -n 2 mpi_bench allgather, the same sizes)
     *   flat / stream 3.25 / 5.75 / 11.2 / 21.9; cma 3.53 / 5.37 / 9.4 / 18.4;
     *   Open MPI 4.1 / 6.1 / 10.3 / 19.3
     * and in one far round (line_rtt 463/480) at 64K / 256K: flat / stream 11.7 / 45.9, cma
     * 6.5 / 25.2, Open MPI 7.5 / 24.3. The flat and stream bodies move every byte through
     * the arena, from the writer's cache to the reader's; cma reads the peer's send buffer
     * once. Far, 3 rounds at 8K / 16K / 32K (-n 1000 -w 2000, 18:03 UTC): flat 2.56-2.78 /
     * 3.59-5.18 / 6.16-6.59, cma 2.62-2.71 / 3.16-3.30 / 4.18-4.48, Open MPI 3.95-4.07 /
     * 4.47-4.86 / 5.55-5.97. Close at 32K flat is ahead by 8 %, far cma by 30 %; at 16K flat
     * by 10-15 % close, cma by 10-30 % far: flat keeps 16 KiB. (4 ranks: not measured again,
     * the rows below.) */
    {CC_OP_ALLGATHER, "shm_flat", cc__allgather_shm_flat, SHM, 0, 2, 16 * K + 1, 0},
    {CC_OP_ALLGATHER, "shm_cma", cc__allgather_shm_cma, SHM, 0, 2, 8 * 1024 * K, 0},
    {CC_OP_ALLGATHER, "shm_flat", cc__allgather_shm_flat, SHM, 0, 0, 64 * K + 1, 0},
    /* 2026-12-03 14:05 UTC, 2 launches alternating, us out of place (compare.sh's column)
     * 128K / 512K / 2M / 8M / 32M, rank 0:
     *   CCOMM_ALGO_ALLGATHER=shm_cma|shm_stream ccrun -n N ccperf allgather -b 128K -e 64M
     *     -f 4 -n 20 -w 3 -c 1 --budget 256M
     *   2 ranks: stream 13.8 / 66.6 / 212 / 1214 / 5369, 10.7 / 75.2 / 191 / 1063 / 4888;
     *            cma 13.1 / 70.8 / 224 / 1349 / 8953, 12.3 / 71.1 / 214 / 1730 / 9014
     *   4 ranks: stream 28.0 / 129 / 411 / 2185 / 9720, 32.5 / 141 / 362 / 2207 / 9482;
     *            cma 45.7 / 157 / 500 / 3184 / 17357, 43.0 / 160 / 493 / 3186 / 19188
     * On 2026-12-05's host (AMD EPYC, kvm-clock, far placement) cma is ahead at 2 ranks up to
     * 4 MiB, and far behind from 8 MiB. 22:25 UTC, medians of 11 launches, us (stream / cma):
     *   bench/ab.sh --a build --a-env CCOMM_ALGO_ALLGATHER=shm_stream --b build
     *     --b-env CCOMM_ALGO_ALLGATHER=shm_cma --coll allgather --sizes "512K 1M 2M 4M 8M 16M"
     *     --launches 11
     *   2 ranks: 512K 30.3/27.0, 1M 58.6/58.0, 2M 121/115, 4M 287/248, 8M 551/672,
     *            16M 1171/2046
     *   again, 22:30 UTC: 128K 6.87/7.83, 256K 12.5/11.3, 512K 25.7/20.3, 4M 230/178
     *   the automatic choice with cma from 256K against the stream alone, old / new:
     *   bench/ab.sh --a <build of b38261f> --b build --coll allgather --sizes "..."
     *     --launches 11: 128K 1.00, 256K 0.93, 1M 1.01, 4M 1.09, 8M 1.01
     * So cma from 512 KiB to below 8 MiB on 2 ranks, the stream below, above and on more
     * ranks (2026-12-07: cma from 32 KiB on 2 ranks, the rows above). Against Open MPI (bench/compare.sh --colls allgather --ranks 2 --transports shm
     * --launches 3) the 4 MiB cell went from 0.77 (whole table of 21:59) to 0.94. */
    {CC_OP_ALLGATHER, "shm_stream", cc__allgather_shm_stream, SHM, 0, 0, 0, 0},
    {CC_OP_ALLGATHER, "shm_cma", cc__allgather_shm_cma, SHM, 0, 0, 0, 0},
    /* Bruck's log2 n rounds against the ring's n - 1, by total bytes. 2026-12-01 20:40 UTC,
     * load 6-7, medians of 5 launches, us (ring / bruck):
     *   bench/ab.sh --a build --b build --a-env CCOMM_ALGO_ALLGATHER=ring
     *     --b-env CCOMM_ALGO_ALLGATHER=bruck --coll allgather --sizes "16K 64K 256K 1M"
     *     --ranks 4 --transport tcp --launches 5 --iters 100
     *   4 ranks: 16K 229/132, 64K 226/178, 256K 1137/1029 (again 1285/1248), 512K 1603/1957,
     *            1M 2507/3358
     * Again on a quiet host, 2026-12-02 04:20-04:30 UTC (load 1-2), medians of 7-11
     * launches, us (bruck / ring):
     *   bench/ab.sh --a build --a-env CCOMM_ALGO_ALLGATHER=bruck --b build
     *     --b-env CCOMM_ALGO_ALLGATHER=ring --coll allgather --sizes "..." --ranks N
     *     --transport tcp --launches 9
     *   2 ranks: 16 15.5/13.0, 1K 17.9/14.2, 16K 21.7/18.6, 32K 19.0/18.2, 64K 25.8/24.4
     *            (another run 33.5/47.6), 128K 142/102 (137/105), 256K 233/130, 512K 530/270:
     *            one exchange either way, the ring's without Bruck's staging;
     *   3 ranks: 1K-64K within 2-5 % (0.95-0.98), 16K 65/79 in another run; 64K 103/89,
     *            128K 204/117, 256K 393/259, 512K 699/343;
     *   4 ranks: 1K 71/118, 16K 91/125, 64K 115/170 (107/155), 128K 254/221, 256K 516/376,
     *            512K 921/747.
     * So the ring at every size on 2 ranks, Bruck up to 64 KiB on 3 and 4 ranks and the
     * ring above; 5 ranks and more keep the 512 KiB bound, not measured again. */
    {CC_OP_ALLGATHER, "bruck", cc__allgather_bruck, ANY, 5, 0, 512 * K, 0},
    {CC_OP_ALLGATHER, "bruck", cc__allgather_bruck, ANY, 3, 0, 64 * K + 1, 0},
    {CC_OP_ALLGATHER, "ring", cc__allgather_ring, ANY, 0, 0, 0, 0},
    {CC_OP_ALLGATHERV, "ring", cc__allgatherv_ring, ANY, 0, 0, 0, 0},
    {CC_OP_REDUCE_SCATTER, "shm_flat", cc__reduce_scatter_shm_flat, SHM, 0, 0, 64 * K + 1, 0},
    {CC_OP_REDUCE_SCATTER, "shm_cma", cc__reduce_scatter_shm_cma, SHM, 0, 0, 0, 0},
    /* Small reduce-scatters over TCP: the whole vector allreduced by recursive doubling, 2
     * messages per rank at 4 ranks where the ring sends 3 in 3 rounds (5 ranks: 4 rounds
     * either way, but 3 of them are one fold message). From 64 KiB its full-size messages
     * pay the rendezvous and the extra bytes. Measured 2026-12-01 20:35 UTC, load 4-9 on 2
     * CPUs, medians of 5 launches (9 for the second 4-rank line), us (ring / rd):
     *   bench/ab.sh --a build --b build --a-env CCOMM_ALGO_REDUCE_SCATTER=ring
     *     --b-env CCOMM_ALGO_REDUCE_SCATTER=recursive_doubling --coll reduce_scatter
     *     --sizes "16 1K 16K 64K 256K" --ranks N --transport tcp --launches 5 --iters 300
     *   4 ranks: 16 B 165/128, 1K 176/136, 16K 193/176, 64K 260/730, 256K 1147/2298
     *            8K 184/144, 16K 213/197, 32K 201/198
     *   5 ranks: 4K 299/171, 32K 300/298;  8 ranks: 4K 770/441, 32K 943/700
     * (3 ranks keep the ring: 2 rounds, against the fold's 3.) */
    {CC_OP_REDUCE_SCATTER, "recursive_doubling", cc__reduce_scatter_rd, ANY, 4, 0, 32 * K + 1, 0},
    {CC_OP_REDUCE_SCATTER, "ring", cc__reduce_scatter_ring, ANY, 0, 0, 0, 0},
    {CC_OP_REDUCE_SCATTERV, "ring", cc__reduce_scatterv_ring, ANY, 0, 0, 0, 0},
    /* 2 ranks: flat up to 16 KiB, then cma. 2026-12-07 17:55 UTC, as allgather above, 5
     * rounds, all close, medians, us at 16K / 32K / 64K:
     *   CCOMM_ALGO_ALLTOALL=shm_cma ccrun -n 2 ccperf alltoall -b 16K -e 64K -f 2 -n 1000
     *     -w 2000 -c 0
     *   flat 2.24 / 3.52 / 6.92; cma 2.47 / 3.34 / 5.41; Open MPI 3.16 / 4.2 / 6.2
     * (in the whole table of 17:28 the 64 KiB cell, flat, was 0.55 of Open MPI in 3 far pairs);
     * far, 3 rounds at 8K / 16K / 32K: flat 2.51-2.84 / 3.99-4.50 / 7.14-8.03, cma 2.53-2.61 /
     * 3.12-3.42 / 4.16-4.71, Open MPI 3.93-3.98 / 4.46-4.61 / 5.47-5.54. 4 ranks: not
     * measured again. */
    {CC_OP_ALLTOALL, "shm_flat", cc__alltoall_shm_flat, SHM, 0, 2, 16 * K + 1, 0},
    {CC_OP_ALLTOALL, "shm_cma", cc__alltoall_shm_cma, SHM, 0, 2, 8 * 1024 * K, 0},
    {CC_OP_ALLTOALL, "shm_flat", cc__alltoall_shm_flat, SHM, 0, 0, 64 * K + 1, 0},
    /* From 8 MiB at 2 ranks the block for the peer streams through the arena (shm_stream);
     * cma below and at other rank counts. In the close placement (the two CPUs share a
     * cache) the stream matches cma from 512 KiB and is 1.3-1.7x faster from 8 MiB, in place
     * (where cma first copies the whole send buffer aside) far faster at every size. In the
     * far placement (line_rtt about 500 ns) each slot's lines cross between the CPUs twice a
     * piece (broadcast_shm.c's stream says why) and the stream falls behind cma at 4 MiB,
     * not at 16. 2026-12-07, 2 ranks, out of place, medians, us (cma / stream):
     *   bench/ab.sh --a build --a-env CCOMM_ALGO_ALLTOALL=shm_cma --b build
     *     --b-env CCOMM_ALGO_ALLTOALL=shm_stream --coll alltoall --sizes "..." --launches N
     *   11:40, 15 launches: 128K 12.8/13.2, 256K 28.4/30.3, 1M 97.6/90.1, 4M 363/339,
     *     16M 2789/2089, 64M 12761/9097
     *   11:45, 11 launches: 512K 57.0/55.6, 1M 101.7/91.8, 2M 194/196, 4M 494/442, 8M 1585/1120
     * Runs sorted by placement (ccrun -n 2 ccperf alltoall -b S -e S -n 1000 -w 10000 -c 0
     * --budget 256M, alternating, line_rtt just before and after; far: either above 250 ns),
     * 11:50-12:10:
     *   4M  close: cma 353-597 (27 runs, median 498), stream 289-622 (44, median 401)
     *       far:   cma 320-884 (38, median 420), stream 326-1167 (21, median 874)
     *   16M close: cma 2976-4894 (21, median 3748), stream 1930-2685 (23, median 2278)
     *       far:   cma 3550-5164 (4, median 3977), stream 4310 and 4644
     * (2026-12-06 04:05 UTC, out of place: 256K 13.4/14.5, 1M 48.7/58.9, 4M 194/271, 16M
     * 1591/1510, 64M 7441/7669; in place 128K 24.0/7.7, 1M 163/27.2, 4M 376/232, 16M
     * 4372/894, 64M 19120/3871.) */
    {CC_OP_ALLTOALL, "shm_cma", cc__alltoall_shm_cma, SHM, 0, 0, 8 * 1024 * K, 0},
    {CC_OP_ALLTOALL, "shm_stream", cc__alltoall_shm_stream, SHM, 0, 2, 0, 0},
    {CC_OP_ALLTOALL, "shm_cma", cc__alltoall_shm_cma, SHM, 0, 0, 0, 0},
    /* Over TCP a small op costs per message and per round, not per byte; on 2 CPUs, 4+ ranks,
     * about 12 us a message (alltoall linear at 4 ranks: 12 messages, ~150 us). Bruck sends
     * ceil(log2 n) messages in as many rounds, linear n - 1 in one: fewer at n = 4 (2 vs 3)
     * and n >= 6, not at 5 (3 rounds of 3 vs 1 of 4). Measured 2026-12-01 20:35 UTC, load 4-9
     * on 2 CPUs, medians of 5 launches, us (linear / bruck):
     *   bench/ab.sh --a build --b build --a-env CCOMM_ALGO_ALLTOALL=linear
     *     --b-env CCOMM_ALGO_ALLTOALL=bruck --coll alltoall --sizes "16 1K 4K 16K 64K"
     *     --ranks N --transport tcp --launches 5 --iters 300
     *   4 ranks: 16 B 160/135, 1K 188/146, 4K 159/143, 16K 205/165 (again 206/151),
     *            32K 195/220, 64K 249/327
     *   5 ranks: 1K 203/266, 4K 277/287, 16K 309/339, 32K 322/400
     *   6 ranks: 1K 459/336, 8K 362/292;  8 ranks: 4K 730/394, 32K 701/630 */
    {CC_OP_ALLTOALL, "bruck", cc__alltoall_bruck, ANY, 6, 0, 16 * K + 1, 0},
    {CC_OP_ALLTOALL, "bruck", cc__alltoall_bruck, ANY, 4, 0, 16 * K + 1, CC__ROW_POW2},
    /* Linear (every message posted at once) against pairwise (n - 1 exchanges in turn) above
     * 64 KiB. 2026-12-03 16:35-16:45 UTC, quiet host, 2 CPUs, medians of 5 launches, us
     * (pairwise / linear):
     *   bench/ab.sh --a build --a-env CCOMM_ALGO_ALLTOALL=pairwise --b build
     *     --b-env CCOMM_ALGO_ALLTOALL=linear --transport tcp --ranks N --coll alltoall
     *     --sizes "64K 256K 1M 4M 16M 64M" --launches 5
     *   3 ranks: 256K 212/184, 1M 584/597, 4M 3014/3208
     *   4 ranks: 64K 133/118, 128K 254/209, 256K 396/262, 1M 1119/964, 4M 4668/4154 (again
     *            5622/4676), 8M 9879/9042, 16M 15923/17956 (again 19601/19865), 64M 65527/71300
     *   8 ranks: 256K 1418/962, 1M 4399/3310, 4M 14933/11928
     * With the ranks' flows all open the kernel keeps both CPUs copying; from 16 MiB the
     * sockets' buffers are full either way and pairwise's one flow at a time is ahead. */
    {CC_OP_ALLTOALL, "linear", cc__alltoall_linear, ANY, 4, 0, 8 * 1024 * K + 1, 0},
    {CC_OP_ALLTOALL, "linear", cc__alltoall_linear, ANY, 0, 0, 256 * K + 1, 0},
    {CC_OP_ALLTOALL, "pairwise", cc__alltoall_pairwise, ANY, 0, 0, 0, 0},
    {CC_OP_ALLTOALLV, "pairwise", cc__alltoall_pairwise, ANY, 0, 0, 0, 0},
    {CC_OP_ALLTOALLV, "linear", cc__alltoall_linear, ANY, 0, 0, 0, CC__ROW_FORCED_ONLY},
    {CC_OP_GATHER, "shm_flat", cc__gather_shm_flat, SHM, 0, 0, 16 * K, 0},
    {CC_OP_GATHER, "shm_cma", cc__gather_shm_cma, SHM, 0, 0, 0, 0},
    {CC_OP_GATHER, "binomial", cc__gather_binomial, ANY, 0, 0, 64 * K, 0},
    {CC_OP_GATHER, "linear", cc__gather_linear, ANY, 0, 0, 0, 0},
    {CC_OP_GATHERV, "linear", cc__gather_linear, ANY, 0, 0, 0, 0},
    {CC_OP_SCATTER, "shm_flat", cc__scatter_shm_flat, SHM, 0, 0, 16 * K, 0},
    {CC_OP_SCATTER, "shm_cma", cc__scatter_shm_cma, SHM, 0, 0, 0, 0},
    {CC_OP_SCATTER, "binomial", cc__scatter_binomial, ANY, 0, 0, 64 * K, 0},
    {CC_OP_SCATTER, "linear", cc__scatter_linear, ANY, 0, 0, 0, 0},
    {CC_OP_SCATTERV, "linear", cc__scatter_linear, ANY, 0, 0, 0, 0},
    {CC_OP_MONITORED_BARRIER, "all_to_one", cc__monitored_barrier_all_to_one, ANY, 0, 0, 0, 0},
    {CC_OP_GROUP, "batch", cc__group_batch, ANY, 0, 0, 0, 0},
    {CC_OP_COALESCED, "packed", cc__coalesced_packed, ANY, 0, 0, 0, 0},
    {CC_OP_ALLGATHER_BYTES, "two_phase", cc__allgather_bytes_two_phase, ANY, 0, 0, 0, 0},
    {CC_OP_BROADCAST_BYTES, "two_phase", cc__broadcast_bytes_two_phase, ANY, 0, 0, 0, 0},
    {CC_OP_GATHER_BYTES, "two_phase", cc__gather_bytes_two_phase, ANY, 0, 0, 0, 0},
    {CC_OP_SCATTER_BYTES, "two_phase", cc__scatter_bytes_two_phase, ANY, 0, 0, 0, 0},
    {CC_OP_SEND_BYTES, "two_phase", cc__send_bytes_two_phase, ANY, 0, 0, 0, 0},
    {CC_OP_RECV_BYTES, "two_phase", cc__recv_bytes_two_phase, ANY, 0, 0, 0, 0},
    /* Window ops: per transport class, like the collectives. An all-shm comm (and one rank)
     * uses cross-memory attach and the shared signal segment (window_shm.c); a comm with a
     * TCP peer serves every peer over TCP (window_tcp_ops.c), since it has no arena and a
     * segment could not reach its other hosts. cc_window_create set up the one they need. */
    {CC_OP_WIN_PUT, "cma", cc__win_put_cma, SHM | CC__TPM_SELF, 0, 0, 0, 0},
    {CC_OP_WIN_PUT, "tcp", cc__win_put_tcp, CC__TPM_NET, 0, 0, 0, 0},
    {CC_OP_WIN_GET, "cma", cc__win_get_cma, SHM | CC__TPM_SELF, 0, 0, 0, 0},
    {CC_OP_WIN_GET, "tcp", cc__win_get_tcp, CC__TPM_NET, 0, 0, 0, 0},
    {CC_OP_WIN_SIGNAL, "shm", cc__win_signal_shm, SHM | CC__TPM_SELF, 0, 0, 0, 0},
    {CC_OP_WIN_SIGNAL, "tcp", cc__win_signal_tcp, CC__TPM_NET, 0, 0, 0, 0},
    {CC_OP_WIN_WAIT_SIGNAL, "shm", cc__win_wait_signal_shm, SHM | CC__TPM_SELF, 0, 0, 0, 0},
    {CC_OP_WIN_WAIT_SIGNAL, "tcp", cc__win_wait_signal_tcp, CC__TPM_NET, 0, 0, 0, 0},
    {CC_OP_WIN_FLUSH, "shm", cc__win_flush_shm, SHM | CC__TPM_SELF, 0, 0, 0, 0},
    {CC_OP_WIN_FLUSH, "tcp", cc__win_flush_tcp, CC__TPM_NET, 0, 0, 0, 0},
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The CCOMM_ALGO_* variable of a type, or NULL for types that have none. */
static const char *cfg_name(cc_op_type_t t, const char **var)
{
    const struct cc__config *c = cc__cfg();
    switch (t) {
#define CASE(T, f)                                                                                 \
    case CC_OP_##T:                                                                                \
        *var = "CCOMM_ALGO_" #T;                                                                   \
        return c->algo_##f;
        CASE(ALLREDUCE, allreduce)
        CASE(BROADCAST, broadcast)
        CASE(REDUCE, reduce)
        CASE(ALLGATHER, allgather)
        CASE(ALLGATHERV, allgatherv)
        CASE(REDUCE_SCATTER, reduce_scatter)
        CASE(REDUCE_SCATTERV, reduce_scatterv)
        CASE(ALLTOALL, alltoall)
        CASE(ALLTOALLV, alltoallv)
        CASE(GATHER, gather)
        CASE(GATHERV, gatherv)
        CASE(SCATTER, scatter)
        CASE(SCATTERV, scatterv)
        CASE(BARRIER, barrier)
#undef CASE
    default:
        *var = NULL;
        return NULL;
    }
}

/* The forced name for t (a test's override of this comm first), or NULL to choose. */
static const char *forced_name(const cc__native_t *nc, cc_op_type_t t, const char **var)
{
    const char *v = cfg_name(t, var);
    if (nc && (unsigned)t < CC_OP_TYPE_COUNT && nc->forced[t])
        return *var = "cc__native_force", nc->forced[t];
    /* v is one of the row's choices (a typed ENUM, config_table.h), each at least "shm" and
     * its NUL long: a 4-byte compare, then the NUL, spares a strcmp call on every op. */
    return v && v[0] && !(memcmp(v, "auto", 4) == 0 && v[4] == '\0') ? v : NULL;
}

static const cc__algo_row_t *find(cc_op_type_t t, const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].type == t && !strcmp(rows[i].name, name)) return &rows[i];
    return NULL;
}

/* Is row i the first of its collective with its name? (One algorithm may have two rows:
 * broadcast's ring, for small and for large sizes; it is listed once.) */
static int first_of_name(size_t i)
{
    return find(rows[i].type, rows[i].name) == &rows[i];
}

/* "ring, recursive_doubling" for the log. */
static void names_of(cc_op_type_t t, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < NROWS && o < len; i++)
        if (rows[i].type == t && first_of_name(i))
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", rows[i].name);
}

static cc_status_t unknown(cc_op_type_t t, const char *var, const char *name)
{
    char known[256];
    names_of(t, known, sizeof(known));
    cc_log_error(CC_SUBSYS_COLL, "%s=%s: %s has no algorithm of that name (known: %s)", var, name,
                 cc_op_type_name(t), known);
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc__native_check_forced(void)
{
    for (int t = 0; t < CC_OP_TYPE_COUNT; t++) {
        const char *var, *name = forced_name(NULL, (cc_op_type_t)t, &var);
        if (name && !find((cc_op_type_t)t, name)) return unknown((cc_op_type_t)t, var, name);
    }
    return CC_OK;
}

cc_status_t cc__native_force(cc_comm_t *comm, cc_op_type_t type, const char *name)
{
    cc__native_t *nc = comm->engine == &cc__native_engine ? comm->engine_state : NULL;
    if (!nc || (unsigned)type >= CC_OP_TYPE_COUNT) return CC_ERR_INVALID_ARG;
    if (name && !find(type, name)) return unknown(type, "cc__native_force", name);
    nc->forced[type] = name;
    return CC_OK;
}

int cc__native_algorithms(const cc_comm_t *comm, cc_op_type_t type, const char **names, int max)
{
    const cc__native_t *nc = comm->engine == &cc__native_engine ? comm->engine_state : NULL;
    int k = 0;
    for (size_t i = 0; nc && i < NROWS; i++)
        if (rows[i].type == type && (rows[i].tpm & nc->tpm) && first_of_name(i) && k < max)
            names[k++] = rows[i].name;
    return k;
}

int cc__native_row_names(cc_op_type_t type, const char **names, int max)
{
    int k = 0;
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].type == type && first_of_name(i) && k < max) names[k++] = rows[i].name;
    return k;
}

const char *cc__native_algo_var(cc_op_type_t type)
{
    const char *var;
    cfg_name(type, &var);
    return var;
}

/* The size that picks among algorithms: one every rank computes alike. */
static size_t sel_bytes(const cc__op_t *op, int n)
{
    size_t es = op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
    switch (op->info.type) {
    case CC_OP_GATHER:
        return (size_t)n * op->info.in_count * es; /* in: sendcount */
    case CC_OP_SCATTER:
        return (size_t)n * op->info.out_count * es; /* out: recvcount */
    case CC_OP_ALLGATHERV:
        return op->info.out_count * es; /* sum of recvcounts */
    case CC_OP_REDUCE_SCATTERV:
        return op->info.in_count * es; /* sum of recvcounts */
    case CC_OP_ALLTOALLV:
    case CC_OP_GATHERV:
    case CC_OP_SCATTERV:
        return 0; /* differs by rank: no size rows */
    default:
        return op->info.bytes;
    }
}

static const cc__algo_row_t *pick(const cc__native_t *nc, const cc__op_t *op, cc_status_t *st)
{
    const char *var, *name = forced_name(nc, op->info.type, &var);
    const cc__algo_row_t *row = name ? find(op->info.type, name) : NULL;
    *st = CC_OK;
    if (name && !row) *st = unknown(op->info.type, var, name);
    if (row && !(row->tpm & nc->tpm)) {
        cc_log_error(CC_SUBSYS_COLL, "%s=%s: that %s algorithm cannot run on transport %s", var,
                     name, cc_op_type_name(op->info.type), nc->transport);
        *st = CC_ERR_NOT_SUPPORTED;
    }
    if (name) return *st == CC_OK ? row : NULL;
    size_t b = sel_bytes(op, nc->size);
    for (size_t i = 0; i < NROWS; i++) {
        const cc__algo_row_t *r = &rows[i];
        if (r->type != op->info.type || !(r->tpm & nc->tpm) || (r->flags & CC__ROW_FORCED_ONLY))
            continue;
        if ((r->flags & CC__ROW_POW2) && (nc->size & (nc->size - 1))) continue;
        if (nc->size < r->min_ranks || (r->max_ranks && nc->size > r->max_ranks)) continue;
        if (!r->max_bytes || b < r->max_bytes) return r;
    }
    cc_log_error(CC_SUBSYS_COLL, "native engine has no algorithm for %s on transport %s",
                 cc_op_type_name(op->info.type), nc->transport);
    *st = CC_ERR_NOT_SUPPORTED;
    return NULL;
}

cc__algo_fn cc__native_choose(const cc__native_t *nc, const cc__op_t *op, const char **algo,
                              unsigned *tpm, cc_status_t *st)
{
    const cc__algo_row_t *r = pick(nc, op, st);
    *algo = r ? r->name : NULL;
    if (tpm) *tpm = r ? r->tpm : 0;
    return r ? r->fn : NULL;
}
