/*
 * test_arena.c - the transport's arena (lib/transport/arena.h) on its own,
 * without an engine: ranks are forked processes joined by a net, as the
 * native engine's shared-memory algorithms use it. Publish, wait and read
 * peer memory over several ops (both parities); ranks that run different
 * ops fail with MISMATCH; sleeping waiters are woken by every post; a wait ends with the owner's abort, at the
 * deadline, and with PEER_LOST when the awaited rank is killed; no file is
 * left in CCOMM_SHM_DIR.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/clock.h"
#include "net_mp.h"
#include "transport/arena.h"
#include "tutil.h"

#define SEC      1000000000ull
#define BOUND_NS (10 * SEC) /* far above the liveness period */

static void run(int n, mp_rank_fn fn, const int *want)
{
    int codes[8];
    mp_fork(n, fn, NULL, 60, codes);
    for (int i = 0; i < n; i++)
        if (codes[i] != want[i])
            fprintf(stderr, "rank %d exited with %d, expected %d\n", i, codes[i], want[i]);
    for (int i = 0; i < n; i++)
        assert_int_equal(codes[i], want[i]);
    assert_int_equal(tu_leftovers(), 0);
}

static const int all_ok[8];

/* This rank's net and arena (NULL when either could not be made: the rank then fails). */
static cc__arena_t *open_arena(int rank, int n, uint64_t id, const _Atomic int *abort)
{
    cc__net_config_t cfg;
    cc__net_t *net = NULL;
    cc__arena_t *ar = NULL;
    mp_config(&cfg, rank, n, "auto");
    if (cc__net_create(&cfg, &net) != CC_OK) return NULL;
    if (cc__arena_create(net, id, "test", abort, &ar) != CC_OK || !ar) cc__net_destroy(net);
    return ar;
}

static void close_arena(cc__arena_t *ar)
{
    cc__net_t *net = ar->net;
    cc__arena_destroy(ar);
    cc__net_destroy(net);
}

static cc_op_info_t op_info(uint64_t seq, void *send, void *recv)
{
    cc_op_info_t in;
    memset(&in, 0, sizeof(in));
    in.type = CC_OP_ALLGATHER;
    in.coll_seq = seq;
    in.dtype = CC_UINT64;
    in.sendbuf = send;
    in.recvbuf = recv;
    in.root = -1;
    return in;
}

/* Three ops: each rank stages (rank, op) and lends a buffer; every rank reads every peer's. */
static int rank_roundtrip(int rank, int n, void *arg)
{
    (void)arg;
    static _Atomic int abort_flag;
    cc__arena_t *ar = open_arena(rank, n, 0x1234, &abort_flag);
    MP_CHECK(ar);
    for (uint64_t s = 1; s <= 3; s++) {
        uint64_t lent[64], got[64];
        for (int i = 0; i < 64; i++)
            lent[i] = (uint64_t)rank << 32 | s << 16 | (uint64_t)i;
        cc_op_info_t in = op_info(s, lent, got);
        cc__arena_op_t ao = {.on_post = NULL};
        MP_CHECK_ST(cc__arena_begin(ar, &in, 64, 0, cc__now_ns() + 30 * SEC, &ao), CC_OK);
        uint64_t *mine = cc__arena_stage(&ao, rank, 4096);
        mine[0] = (uint64_t)rank * 100 + s;
        cc__arena_post(&ao);
        MP_CHECK_ST(cc__arena_wait_all(&ao), CC_OK);
        for (int q = 0; q < n; q++) {
            MP_CHECK(((uint64_t *)cc__arena_stage(&ao, q, 4096))[0] == (uint64_t)q * 100 + s);
            if (q == rank || !cc__arena_cma_ok(ar)) continue;
            MP_CHECK_ST(cc__arena_read(&ao, q, got, cc__arena_par(&ao, q)->sendbuf, sizeof(got)),
                        CC_OK);
            MP_CHECK(got[63] == ((uint64_t)q << 32 | s << 16 | 63u));
        }
        /* The peers read `lent` until they are done. */
        MP_CHECK_ST(cc__arena_end(&ao, cc__arena_finish(&ao)), CC_OK);
    }
    close_arena(ar);
    return 0;
}

static void test_roundtrip(void **s)
{
    (void)s;
    run(3, rank_roundtrip, all_ok);
}

/* The payload of deep op s, byte i (every byte of the inline area differs per op). */
static unsigned char pattern(uint64_t s, size_t i)
{
    return (unsigned char)(s * 131u + i * 7u + 1u);
}

#define DEPTH CC__ARENA_DEPTH

/*
 * Deep ops (all data inline): rank 0 stages and posts like a broadcast's root, waiting for
 * nobody; it gets DEPTH - 1 ops ahead of readers that have not begun any, and no further
 * (op DEPTH waits until every reader arrived at op 1, so op DEPTH + 1 cannot rewrite the line
 * of op 1 before they read it). The readers then read all 3 x DEPTH ops, each with its own
 * bytes, as the lines wrap.
 */
static int rank_deep(int rank, int n, void *arg)
{
    (void)arg;
    cc__arena_t *ar = open_arena(rank, n, 0x1238, NULL);
    MP_CHECK(ar);
    struct cc__arena_ctl *root = cc__arena_ctl(ar, 0);
    if (rank != 0) {
        uint64_t until = cc__now_ns() + 30 * SEC;
        while (atomic_load(&root->par[(DEPTH - 1) % DEPTH].seq) < DEPTH - 1)
            MP_CHECK(cc__now_ns() < until);
        usleep(20000); /* had the root not waited, it would have posted op DEPTH by now */
        MP_CHECK(atomic_load(&root->par[DEPTH % DEPTH].seq) == 0);
    }
    for (uint64_t s = 1; s <= 3 * DEPTH; s++) {
        cc_op_info_t in = op_info(s, NULL, NULL);
        cc__arena_op_t ao = {.on_post = NULL};
        MP_CHECK_ST(cc__arena_begin(ar, &in, CC__ARENA_INLINE, 1, cc__now_ns() + 30 * SEC, &ao),
                    CC_OK);
        unsigned char *line = cc__arena_stage(&ao, 0, CC__ARENA_INLINE);
        MP_CHECK(line == (unsigned char *)cc__arena_par(&ao, 0)->inl);
        MP_CHECK(cc__arena_stage(&ao, 0, CC__ARENA_INLINE + 1) == cc__arena_data(&ao, 0));
        if (rank == 0)
            for (size_t i = 0; i < CC__ARENA_INLINE; i++)
                line[i] = pattern(s, i);
        cc__arena_post(&ao);
        if (rank != 0) {
            MP_CHECK_ST(cc__arena_wait_arrive(&ao, 0), CC_OK);
            for (size_t i = 0; i < CC__ARENA_INLINE; i++)
                MP_CHECK(line[i] == pattern(s, i));
        }
        MP_CHECK_ST(cc__arena_end(&ao, CC_OK), CC_OK);
    }
    close_arena(ar);
    return 0;
}

static void test_deep(void **s)
{
    (void)s;
    run(3, rank_deep, all_ok);
}

/*
 * Sleepers are woken: rank 0 posts each of 20 deep ops 5 ms late, so the others, waiting for
 * it, pass the spin and the 1 ms yield stage and sleep on their bells every op. Whatever the
 * publishes are (locked, or light with the sleepers' membarrier), each post must ring them:
 * a lost wake-up shows as a nap that ran to its timeout (the 100 ms liveness period) with
 * rank 0's arrival already there and the bell unrung.
 */
static int rank_sleepers(int rank, int n, void *arg)
{
    (void)arg;
    cc__arena_t *ar = open_arena(rank, n, 0x1239, NULL);
    MP_CHECK(ar);
    for (uint64_t s = 1; s <= 20; s++) {
        cc_op_info_t in = op_info(s, NULL, NULL);
        cc__arena_op_t ao = {.on_post = NULL};
        if (rank == 0) usleep(5000);
        MP_CHECK_ST(cc__arena_begin(ar, &in, 8, 1, cc__now_ns() + 30 * SEC, &ao), CC_OK);
        uint64_t *line = cc__arena_stage(&ao, 0, 8);
        if (rank == 0) *line = s * 1000003u;
        cc__arena_post(&ao);
        if (rank != 0) {
            MP_CHECK_ST(cc__arena_wait_arrive(&ao, 0), CC_OK);
            MP_CHECK(*line == s * 1000003u);
        }
        MP_CHECK_ST(cc__arena_end(&ao, CC_OK), CC_OK);
    }
    if (rank != 0) {
        fprintf(stderr, "rank %d: %llu naps, %llu unrung with the news there (publishes %s)\n",
                rank, (unsigned long long)ar->naps, (unsigned long long)ar->naps_unrung,
                ar->light ? "light" : "locked");
        MP_CHECK(ar->naps > 0); /* the sleep path ran: otherwise this proves nothing */
        MP_CHECK(ar->naps_unrung == 0);
    }
    close_arena(ar);
    return 0;
}

static void test_sleepers(void **s)
{
    (void)s;
    run(3, rank_sleepers, all_ok);
}

/* Rank 1 runs another op (count) at the same arena number: the others say so. */
static int rank_mismatch(int rank, int n, void *arg)
{
    (void)arg;
    cc__arena_t *ar = open_arena(rank, n, 0x1235, NULL);
    MP_CHECK(ar);
    cc_op_info_t in = op_info(1, NULL, NULL);
    cc__arena_op_t ao = {.on_post = NULL};
    MP_CHECK_ST(cc__arena_begin(ar, &in, rank == 1 ? 8 : 4, 1, cc__now_ns() + 30 * SEC, &ao),
                CC_OK);
    cc__arena_post(&ao);
    cc_status_t st = cc__arena_end(&ao, cc__arena_wait_all(&ao));
    MP_CHECK(st == CC_ERR_MISMATCH);
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    close_arena(ar);
    return 0;
}

static void test_mismatch(void **s)
{
    (void)s;
    run(2, rank_mismatch, all_ok);
}

/* The owner's flag alone (the engine also aborts the net, which rings the bell): a sleeping
 * waiter sees it within a liveness period. */
static void *abort_later(void *p)
{
    usleep(200000);
    atomic_store((_Atomic int *)p, CC_ERR_ABORTED);
    return NULL;
}

/*
 * Rank 0 waits for rank 1, which never arrives: the wait ends with the
 * owner's abort, then (a second arena op) at its deadline. Rank 1 waits at
 * the barrier.
 */
static int rank_abort_deadline(int rank, int n, void *arg)
{
    (void)arg;
    static _Atomic int abort_flag;
    cc__arena_t *ar = open_arena(rank, n, 0x1236, &abort_flag);
    MP_CHECK(ar);
    if (rank == 0) {
        cc_op_info_t in = op_info(1, NULL, NULL);
        cc__arena_op_t ao = {.on_post = NULL};
        uint64_t t0 = cc__now_ns();
        MP_CHECK_ST(cc__arena_begin(ar, &in, 0, 1, t0 + 2 * SEC, &ao), CC_OK);
        cc__arena_post(&ao);
        MP_CHECK_ST(cc__arena_wait_arrive(&ao, 1), CC_ERR_TIMEOUT);
        MP_CHECK(cc__now_ns() - t0 >= 2 * SEC && cc__now_ns() - t0 < BOUND_NS);
        pthread_t t;
        pthread_create(&t, NULL, abort_later, (void *)&abort_flag);
        t0 = cc__now_ns();
        ao.deadline_ns = t0 + 30 * SEC; /* the same op waits again, now until it is aborted */
        MP_CHECK_ST(cc__arena_wait_arrive(&ao, 1), CC_ERR_ABORTED);
        MP_CHECK(cc__now_ns() - t0 < 2 * SEC);
        pthread_join(t, NULL);
    }
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    close_arena(ar);
    return 0;
}

static void test_abort_deadline(void **s)
{
    (void)s;
    run(2, rank_abort_deadline, all_ok);
}

/* Rank 2 is killed after the arena is made; the others, waiting for it, lose it in bounded time. */
static int rank_killed(int rank, int n, void *arg)
{
    (void)arg;
    cc__arena_t *ar = open_arena(rank, n, 0x1237, NULL);
    MP_CHECK(ar);
    MP_CHECK_ST(mp_barrier(rank), CC_OK);
    if (rank == 2) raise(SIGKILL);
    cc_op_info_t in = op_info(1, NULL, NULL);
    cc__arena_op_t ao = {.on_post = NULL};
    uint64_t t0 = cc__now_ns();
    MP_CHECK_ST(cc__arena_begin(ar, &in, 0, 1, t0 + 60 * SEC, &ao), CC_OK);
    cc__arena_post(&ao);
    MP_CHECK_ST(cc__arena_end(&ao, cc__arena_wait_arrive(&ao, 2)), CC_ERR_PEER_LOST);
    MP_CHECK(cc__now_ns() - t0 < BOUND_NS);
    close_arena(ar);
    return 0;
}

static const int killed_codes[3] = {0, 0, 128 + SIGKILL};

static void test_killed(void **s)
{
    (void)s;
    run(3, rank_killed, killed_codes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_sleepers),
        cmocka_unit_test(test_mismatch),
        cmocka_unit_test(test_abort_deadline),
        cmocka_unit_test(test_killed),
    };
    return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
