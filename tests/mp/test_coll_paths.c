/*
 * test_coll_paths.c - the collectives' size switches, at the switch: ops of
 * the threshold and two elements either side, checking which path
 * ran, not only that the op completed.
 *
 *  - The selection table (docs/collectives.md "Selection"): every row with
 *    a size bound (shared memory's flat/cma switch of each collective, and
 *    the TCP rows) picks its algorithm below the bound and the next row's at
 *    and above it, as the POST hook's `algorithm` and `transport` show.
 *  - Without single copy between the ranks (CCOMM_SHM_CMA_THRESHOLD=0), a
 *    cma row of a collective that streams runs its stream.
 *  - CCOMM_PIPELINE_CHUNK: the ring and chain algorithms send a block of
 *    exactly one chunk in one piece and one element more in two. The
 *    pieces are counted by the test binary's --wrap=cc__net_isend
 *    (tests/mp/CMakeLists.txt): the algorithms' sends come here first.
 *
 * The expectations are written out here, not read from select.c, so a
 * moved bound or a `<` turned into `<=` shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/config.h"
#include "native/native.h"
#include "test_coll_util.h"

#define K 1024u

/* ---- the sends the algorithms post ---- */

static _Atomic unsigned g_isends;

cc_status_t __real_cc__net_isend(cc__net_t *net, int peer, uint32_t tag, const void *buf,
                                 size_t len, cc__req_t *req);
cc_status_t __wrap_cc__net_isend(cc__net_t *net, int peer, uint32_t tag, const void *buf,
                                 size_t len, cc__req_t *req)
{
    atomic_fetch_add(&g_isends, 1);
    return __real_cc__net_isend(net, peer, tag, buf, len, req);
}

/* ---- what the POST hook saw of the last op ---- */

static const char *g_algo, *g_transport;

static void on_post(const cc_op_info_t *op, void *user)
{
    (void)user;
    g_algo = op->algorithm;
    g_transport = op->transport;
}

/* One op of `type` with `count` u8 elements per block (sum, root 0). */
static cc_status_t run_op(cc_comm_t *c, cc_op_type_t type, size_t count, char *sb, char *rb)
{
    const cc_dtype_t u8 = CC_UINT8;
    switch (type) {
    case CC_OP_ALLREDUCE:
        return cc_allreduce(c, sb, rb, count, u8, CC_SUM, NULL, NULL);
    case CC_OP_BROADCAST:
        return cc_broadcast(c, sb, rb, count, u8, 0, NULL, NULL);
    case CC_OP_REDUCE:
        return cc_reduce(c, sb, rb, count, u8, CC_SUM, 0, NULL, NULL);
    case CC_OP_ALLGATHER:
        return cc_allgather(c, sb, rb, count, u8, NULL, NULL);
    case CC_OP_REDUCE_SCATTER:
        return cc_reduce_scatter(c, sb, rb, count, u8, CC_SUM, NULL, NULL);
    case CC_OP_ALLTOALL:
        return cc_alltoall(c, sb, rb, count, u8, NULL, NULL);
    case CC_OP_GATHER:
        return cc_gather(c, sb, rb, count, u8, 0, NULL, NULL);
    case CC_OP_SCATTER:
        return cc_scatter(c, sb, rb, count, u8, 0, NULL, NULL);
    default:
        return CC_ERR_INVALID_ARG;
    }
}

/* Whose selection size is the op's whole buffer of n blocks (else one block). */
static int size_is_n_blocks(cc_op_type_t t)
{
    return t == CC_OP_ALLGATHER || t == CC_OP_REDUCE_SCATTER || t == CC_OP_ALLTOALL ||
           t == CC_OP_GATHER || t == CC_OP_SCATTER;
}

/* A size row: below `bytes` `below` runs, from `bytes` on `at`. */
struct row {
    int shm; /* 1: on an all-shm comm, 0: over TCP */
    cc_op_type_t type;
    size_t bytes;
    const char *below, *at;
    int min_n, max_n; /* only on this many ranks (0: no bound) */
};

static const struct row rows[] = {
    {1, CC_OP_ALLREDUCE, 64 * K + 1, "shm_flat", "shm_stream", 0, 0},
    /* flat while it fits the arena */
    {1, CC_OP_BROADCAST, 64 * K + 1, "shm_flat", "shm_cma", 3, 0},
    /* 2 ranks: broadcast, allgather and alltoall read the peer's memory from 16 KiB */
    {1, CC_OP_BROADCAST, 16 * K + 1, "shm_flat", "shm_cma", 2, 2},
    {1, CC_OP_BROADCAST, 16 * 1024 * K + 1, "shm_cma", "shm_cma", 2, 2}, /* no bound */
    {1, CC_OP_REDUCE, 64 * K + 1, "shm_flat", "shm_cma", 0, 0},
    {1, CC_OP_ALLGATHER, 64 * K + 1, "shm_flat", "shm_stream", 3, 0},
    {1, CC_OP_ALLGATHER, 16 * K + 1, "shm_flat", "shm_cma", 2, 2},
    {1, CC_OP_ALLGATHER, 8 * 1024 * K, "shm_cma", "shm_stream", 2, 2},
    {1, CC_OP_REDUCE_SCATTER, 64 * K + 1, "shm_flat", "shm_cma", 0, 0},
    {1, CC_OP_ALLTOALL, 64 * K + 1, "shm_flat", "shm_cma", 3, 0},
    {1, CC_OP_ALLTOALL, 16 * K + 1, "shm_flat", "shm_cma", 2, 2},
    {1, CC_OP_ALLTOALL, 8 * 1024 * K, "shm_cma", "shm_stream", 2, 2}, /* 2 ranks: from 8 MiB */
    {1, CC_OP_ALLTOALL, 8 * 1024 * K, "shm_cma", "shm_cma", 3, 0},
    {1, CC_OP_GATHER, 16 * K, "shm_flat", "shm_cma", 0, 0},
    {1, CC_OP_SCATTER, 16 * K, "shm_flat", "shm_cma", 0, 0},
    {0, CC_OP_ALLREDUCE, 1024 * K + 1, "recursive_doubling", "ring", 2, 2},
    {0, CC_OP_ALLREDUCE, 16 * K, "recursive_doubling", "halving_doubling", 3, 0},
    {0, CC_OP_ALLREDUCE, 256 * K, "halving_doubling", "ring", 3, 3},
    {0, CC_OP_ALLREDUCE, 8 * 1024 * K, "halving_doubling", "ring", 4, 0},
    {0, CC_OP_BROADCAST, 16 * 1024 * K + 1, "binomial", "ring", 0, 0},
    {0, CC_OP_REDUCE, 128 * K, "binomial", "ring", 0, 0},
    {0, CC_OP_ALLGATHER, 64 * K + 1, "bruck", "ring", 3, 4},
    {0, CC_OP_ALLGATHER, 64 * K + 1, "ring", "ring", 2, 2}, /* no Bruck on 2 ranks */
    {0, CC_OP_ALLTOALL, 16 * K + 1, "bruck", "linear", 4, 4},
    {0, CC_OP_ALLTOALL, 256 * K + 1, "linear", "pairwise", 0, 3},
    {0, CC_OP_ALLTOALL, 8 * 1024 * K + 1, "linear", "pairwise", 4, 0},
    {0, CC_OP_REDUCE_SCATTER, 32 * K + 1, "recursive_doubling", "ring", 4, 0},
    {0, CC_OP_GATHER, 64 * K, "binomial", "linear", 0, 0},
    {0, CC_OP_SCATTER, 64 * K, "binomial", "linear", 0, 0},
};

#define BUF (16 * 1024 * K + 64) /* the largest op: broadcast of 16M + 2 elements (u8) */

static int check_rows(cc_comm_t *c, int shm, char *sb, char *rb)
{
    int n = cc_comm_size(c);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *w = &rows[i];
        size_t per = size_is_n_blocks(w->type) ? (size_t)n : 1;
        if (w->shm != shm || (w->min_n && n < w->min_n) || (w->max_n && n > w->max_n)) continue;
        /* The counts just below and from the bound (the selection size is count x per, which
         * need not hit the bound exactly): two below, two at or above. */
        size_t first_at = (w->bytes + per - 1) / per;
        for (int d = -2; d <= 1; d++) {
            size_t count = first_at + (size_t)d;
            const char *want = d < 0 ? w->below : w->at;
            g_algo = g_transport = NULL;
            cc_status_t st = run_op(c, w->type, count, sb, rb);
            TC_REQUIRE(st == CC_OK, "%s of %zu: %s", cc_op_type_name(w->type), count,
                       cc_status_name(st));
            TC_REQUIRE(g_algo && !strcmp(g_algo, want),
                       "%s of %zu x u8 on %d ranks (selection size %zu, bound %zu): algorithm "
                       "%s, want %s",
                       cc_op_type_name(w->type), count, n, count * per, w->bytes,
                       g_algo ? g_algo : "(none)", want);
            TC_REQUIRE(g_transport && !strcmp(g_transport, shm ? "shm" : "tcp"), "%s: transport %s",
                       cc_op_type_name(w->type), g_transport ? g_transport : "(none)");
        }
    }
    return 0;
}

/* A pipelined algorithm, forced, and the block count that makes one piece per chunk. */
struct piped {
    cc_op_type_t type;
    const char *algo;
    int blocks; /* count = blocks x (elements per block): allreduce cuts count in n */
};

static const struct piped piped[] = {
    {CC_OP_BROADCAST, "ring", 0},      {CC_OP_REDUCE, "ring", 0},    {CC_OP_ALLGATHER, "ring", 0},
    {CC_OP_REDUCE_SCATTER, "ring", 0}, {CC_OP_ALLREDUCE, "ring", 1},
};

/* Sends of one op, summed over the ranks (the count itself is not counted). */
static int sends_of(cc_comm_t *c, const struct piped *p, size_t block, char *sb, char *rb,
                    unsigned *mine, uint64_t *all)
{
    size_t count = p->blocks ? block * (size_t)cc_comm_size(c) : block;
    atomic_store(&g_isends, 0);
    cc_status_t st = run_op(c, p->type, count, sb, rb);
    *mine = atomic_load(&g_isends);
    TC_REQUIRE(st == CC_OK, "%s %s of %zu: %s", p->algo, cc_op_type_name(p->type), count,
               cc_status_name(st));
    uint64_t v = *mine;
    st = cc_allreduce(c, &v, all, 1, CC_UINT64, CC_SUM, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "allreduce of the counts: %s", cc_status_name(st));
    return 0;
}

static int check_pipeline(cc_comm_t *c, char *sb, char *rb)
{
    uint64_t chunk = 0;
    TC_REQUIRE(cc__parse_size(cc__cfg()->pipeline_chunk, &chunk) == 0 && chunk > 1,
               "CCOMM_PIPELINE_CHUNK=%s: the test sets a size", cc__cfg()->pipeline_chunk);
    for (size_t i = 0; i < sizeof(piped) / sizeof(piped[0]); i++) {
        const struct piped *p = &piped[i];
        unsigned k[3];
        uint64_t all[3];
        tc_force(c, p->type, p->algo);
        for (int d = -1; d <= 1; d++)
            if (sends_of(c, p, chunk + (size_t)d, sb, rb, &k[d + 1], &all[d + 1])) return 1;
        tc_force(c, p->type, "");
        TC_REQUIRE(all[1] > 0, "%s %s: no sends", p->algo, cc_op_type_name(p->type));
        /* A size that is set holds on every rank count (auto's rules: test_select). */
        TC_REQUIRE(k[0] == k[1] && k[2] == 2 * k[1],
                   "%s %s with CCOMM_PIPELINE_CHUNK=%llu: blocks of %llu, %llu and %llu bytes "
                   "took %u, %u and %u sends on this rank, want k, k and 2k",
                   p->algo, cc_op_type_name(p->type), (unsigned long long)chunk,
                   (unsigned long long)chunk - 1, (unsigned long long)chunk,
                   (unsigned long long)chunk + 1, k[0], k[1], k[2]);
    }
    return 0;
}

/* One allreduce of count x dtype; the algorithm the POST hook saw must be `want`. */
static int expect_algo(cc_comm_t *c, size_t count, cc_dtype_t dt, const char *want, char *sb,
                       char *rb)
{
    g_algo = NULL;
    cc_status_t st = cc_allreduce(c, sb, rb, count, dt, CC_SUM, NULL, NULL);
    TC_REQUIRE(st == CC_OK, "allreduce of %zu x %s: %s", count, cc_dtype_name(dt),
               cc_status_name(st));
    TC_REQUIRE(g_algo && !strcmp(g_algo, want),
               "allreduce of %zu x %s after other ops: %s, want %s", count, cc_dtype_name(dt),
               g_algo ? g_algo : "(none)", want);
    return 0;
}

/* The engine reuses the last op's choice (run.c) only for an op like it: the same count in
 * another dtype crosses a bound, an override set or cleared between ops counts at once. */
static int check_reuse(cc_comm_t *c, int shm, char *sb, char *rb)
{
    /* u8 below the bound, float32 above it (over TCP on 2 ranks the bound is 1 MiB) */
    int two = cc_comm_size(c) == 2;
    size_t count = shm ? 20000 : two ? 300000 : 5000;
    const char *small = shm ? "shm_flat" : "recursive_doubling";
    const char *large = shm ? "shm_stream" : two ? "ring" : "halving_doubling";
    for (int i = 0; i < 2; i++)
        if (expect_algo(c, count, CC_UINT8, small, sb, rb)) return 1;
    if (expect_algo(c, count, CC_FLOAT32, large, sb, rb) ||
        expect_algo(c, count, CC_UINT8, small, sb, rb))
        return 1;
    tc_force(c, CC_OP_ALLREDUCE, "ring");
    if (expect_algo(c, count, CC_UINT8, "ring", sb, rb)) return 1;
    tc_force(c, CC_OP_ALLREDUCE, "");
    return expect_algo(c, count, CC_UINT8, small, sb, rb);
}

/*
 * Where the ranks may not read each other's memory (here: CCOMM_SHM_CMA_THRESHOLD=0 when the
 * communicator is made), the cma rows of the collectives that stream run the stream, not the
 * transport's algorithm (select_shm.c), and the bytes arrive. 2 ranks: 256 KiB of each.
 */
static int check_no_cma(cc_comm_t *parent, int r, char *sb, char *rb)
{
    static const cc_op_type_t types[] = {CC_OP_BROADCAST, CC_OP_ALLGATHER, CC_OP_ALLTOALL};
    const size_t bytes = 256 * K; /* the selection size of each: more than flat stages */
    setenv("CCOMM_SHM_CMA_THRESHOLD", "0", 1);
    cc__config_reload();
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_split(parent, 0, r, NULL, &c);
    unsetenv("CCOMM_SHM_CMA_THRESHOLD");
    cc__config_reload();
    TC_REQUIRE(st == CC_OK && c, "split: %s", cc_status_name(st));
    cc_hook_handle_t h;
    TC_REQUIRE(cc_hook_add_post(c, on_post, NULL, 0, &h) == CC_OK, "hook");
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t count = types[i] == CC_OP_BROADCAST ? bytes : bytes / 2;
        size_t in = types[i] == CC_OP_ALLGATHER ? count : bytes;
        for (size_t j = 0; j < in; j++) sb[j] = (char)tc_byte(r, 0, j);
        memset(rb, 0xee, bytes);
        g_algo = NULL;
        st = run_op(c, types[i], count, sb, rb);
        TC_REQUIRE(st == CC_OK, "%s without CMA: %s", cc_op_type_name(types[i]),
                   cc_status_name(st));
        TC_REQUIRE(g_algo && !strcmp(g_algo, "shm_stream"), "%s of %zu B without CMA: %s, want "
                   "shm_stream", cc_op_type_name(types[i]), bytes, g_algo ? g_algo : "(none)");
        for (size_t j = 0; j < bytes; j++) {
            /* broadcast: root 0's bytes; allgather: block q is rank q's; alltoall: block q is
             * block r of rank q's input */
            int from = types[i] == CC_OP_BROADCAST ? 0 : (int)(j / count);
            size_t at = types[i] == CC_OP_ALLTOALL ? (size_t)r * count + j % count
                        : types[i] == CC_OP_ALLGATHER ? j % count : j;
            TC_REQUIRE((unsigned char)rb[j] == tc_byte(from, 0, at),
                       "%s without CMA: byte %zu is %u, want %u", cc_op_type_name(types[i]), j,
                       (unsigned char)rb[j], tc_byte(from, 0, at));
        }
    }
    cc_hook_remove(h);
    TC_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy the split");
    return 0;
}

static int rank_main(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = tc_init(rank, size, addr);
    TC_REQUIRE(c, "init");
    cc_hook_handle_t h;
    TC_REQUIRE(cc_hook_add_post(c, on_post, NULL, 0, &h) == CC_OK, "hook");
    char *sb = calloc(1, BUF), *rb = calloc(1, BUF);
    TC_REQUIRE(sb && rb, "no memory");
    int shm = strcmp(cc__cfg()->transport, "tcp") != 0;
    if (check_rows(c, shm, sb, rb) || check_reuse(c, shm, sb, rb) || check_pipeline(c, sb, rb))
        return 1;
    if (shm && size == 2 && check_no_cma(c, rank, sb, rb)) return 1;
    free(sb);
    free(rb);
    cc_hook_remove(h);
    TC_REQUIRE(cc_comm_destroy(c) == CC_OK, "destroy");
    return 0;
}

int main(int argc, char **argv)
{
    /* Small pipeline pieces: the switch is what counts, not the size. */
    setenv("CCOMM_PIPELINE_CHUNK", "4K", 1);
    static const tc_job_t jobs[] = {{2, "auto"}, {4, "auto"}, {2, "tcp"}, {4, "tcp"}};
    return tc_main(argc, argv, rank_main, jobs, sizeof(jobs) / sizeof(jobs[0]), 300);
}
