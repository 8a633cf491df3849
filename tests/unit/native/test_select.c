/*
 * test_select.c - the native engine's choice of algorithm (lib/native/select.c,
 * cc__native_choose), without a communicator: an engine state of the class
 * asked for (rank count, transport class) and an op of the size asked for.
 *
 *  - the rows the table gives by size, rank count and transport class, at
 *    both sides of every size threshold that the table states;
 *  - the size that picks is one every rank computes alike (gather and
 *    scatter count the whole buffer, the v forms no size at all);
 *  - a forced name (cc__native_force's per-comm override, and
 *    CCOMM_ALGO_<COLL>) skips the conditions, a forced-only row runs only
 *    when named;
 *  - refusals: a forced algorithm that cannot run on the transport
 *    (CC_ERR_NOT_SUPPORTED), a name that is no row (CC_ERR_INVALID_ARG);
 *  - every collective has an algorithm on every transport class at every size.
 *
 * The expected names are written out here, not read from the table, so a
 * row moved, dropped or given another threshold shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/config.h"
#include "native/native.h"

#define K 1024u

/* An engine state of `size` ranks on transport class `tpm` (nothing connected). */
static cc__native_t engine_of(int size, unsigned tpm)
{
    cc__native_t nc;
    memset(&nc, 0, sizeof(nc));
    nc.size = size;
    nc.tpm = tpm;
    nc.transport = tpm == CC__TPM_SHM ? "shm" : tpm == CC__TPM_SELF ? "self" : "tcp";
    return nc;
}

/* An op of `type` moving `count` floats (in and out), as the API describes it. */
static cc__op_t op_of(cc_op_type_t type, size_t count)
{
    cc__op_t op;
    memset(&op, 0, sizeof(op));
    op.info.type = type;
    op.info.dtype = CC_FLOAT32;
    op.info.redop = CC_SUM;
    op.info.root = 0;
    op.info.peer = -1;
    op.info.in_count = op.info.out_count = count;
    op.info.bytes = count * sizeof(float);
    return op;
}

/* The name chosen for type at `bytes` (a multiple of 4) on nc, or "" with *st set. */
static const char *chosen(const cc__native_t *nc, cc_op_type_t type, size_t bytes,
                          cc_status_t *st)
{
    cc__op_t op = op_of(type, bytes / sizeof(float));
    const char *algo = "unset";
    cc_status_t s = CC_ERR_INTERNAL;
    cc__algo_fn fn = cc__native_choose(nc, &op, &algo, NULL, &s);
    if (st) *st = s;
    if (!fn) {
        assert_null(algo);
        assert_int_not_equal(s, CC_OK);
        return "";
    }
    assert_int_equal(s, CC_OK);
    assert_non_null(algo);
    return algo;
}

#define EXPECT(nc, type, bytes, name) assert_string_equal(chosen(nc, type, bytes, NULL), name)

static int clean_env(void **state)
{
    (void)state;
    unsetenv("CCOMM_ALGO_ALLREDUCE");
    unsetenv("CCOMM_ALGO_ALLTOALLV");
    cc__config_reload();
    return 0;
}

/* Shared memory: the arena's rows first, flat below their window, cma above it. */
static void test_shm_rows_by_size(void **state)
{
    (void)state;
    cc__native_t nc = engine_of(4, CC__TPM_SHM);
    EXPECT(&nc, CC_OP_ALLREDUCE, 4, "shm_flat");
    EXPECT(&nc, CC_OP_ALLREDUCE, 64 * K, "shm_flat"); /* flat while it fits the arena */
    EXPECT(&nc, CC_OP_ALLREDUCE, 64 * K + 4, "shm_stream");
    EXPECT(&nc, CC_OP_ALLREDUCE, 64u << 20, "shm_stream");
    EXPECT(&nc, CC_OP_BROADCAST, 64 * K, "shm_flat"); /* 64 KiB itself stays flat */
    EXPECT(&nc, CC_OP_BROADCAST, 64 * K + 4, "shm_cma"); /* the stream: forced only */
    EXPECT(&nc, CC_OP_BROADCAST, 1u << 30, "shm_cma");
    EXPECT(&nc, CC_OP_ALLTOALL, 64 * K, "shm_flat");
    EXPECT(&nc, CC_OP_ALLTOALL, 64 * K + 4, "shm_cma");
    EXPECT(&nc, CC_OP_REDUCE, 64 * K, "shm_flat");
    EXPECT(&nc, CC_OP_REDUCE, 64 * K + 4, "shm_cma");
    EXPECT(&nc, CC_OP_ALLGATHER, 64 * K, "shm_flat");
    EXPECT(&nc, CC_OP_ALLGATHER, 64 * K + 4, "shm_stream");
    EXPECT(&nc, CC_OP_ALLGATHER, 4u << 20, "shm_stream"); /* 4 ranks: no cma window */
    /* 2 ranks: flat to 16 KiB, cma above it to below 8 MiB (select.c's measurements), the
     * stream above; broadcast runs cma at every size above 16 KiB. */
    cc__native_t two = engine_of(2, CC__TPM_SHM);
    EXPECT(&two, CC_OP_ALLGATHER, 16 * K, "shm_flat");
    EXPECT(&two, CC_OP_ALLGATHER, 16 * K + 4, "shm_cma");
    EXPECT(&two, CC_OP_ALLGATHER, 512 * K, "shm_cma");
    EXPECT(&two, CC_OP_ALLGATHER, (8u << 20) - 4, "shm_cma");
    EXPECT(&two, CC_OP_ALLGATHER, 8u << 20, "shm_stream");
    EXPECT(&two, CC_OP_BROADCAST, 16 * K, "shm_flat");
    EXPECT(&two, CC_OP_BROADCAST, 16 * K + 4, "shm_cma");
    EXPECT(&two, CC_OP_BROADCAST, 512 * K, "shm_cma");
    EXPECT(&two, CC_OP_BROADCAST, 512 * K + 4, "shm_cma");
    EXPECT(&two, CC_OP_BROADCAST, 1u << 30, "shm_cma");
    EXPECT(&two, CC_OP_REDUCE_SCATTER, 64 * K, "shm_flat"); /* no 2-rank window */
    /* Alltoall: flat to 16 KiB on 2 ranks (64 KiB on more), cma above; from 8 MiB the 2-rank
     * stream, cma on more ranks. */
    EXPECT(&two, CC_OP_ALLTOALL, 16 * K, "shm_flat");
    EXPECT(&two, CC_OP_ALLTOALL, 16 * K + 4, "shm_cma");
    EXPECT(&two, CC_OP_ALLTOALL, (8u << 20) - 4, "shm_cma");
    EXPECT(&two, CC_OP_ALLTOALL, 8u << 20, "shm_stream");
    EXPECT(&two, CC_OP_ALLTOALL, 64u << 20, "shm_stream");
    EXPECT(&nc, CC_OP_ALLTOALL, 8u << 20, "shm_cma");
    EXPECT(&nc, CC_OP_ALLTOALL, 64u << 20, "shm_cma");
    EXPECT(&nc, CC_OP_REDUCE_SCATTER, 64 * K, "shm_flat");
    EXPECT(&nc, CC_OP_REDUCE_SCATTER, 64 * K + 4, "shm_cma");
    EXPECT(&nc, CC_OP_BARRIER, 0, "shm");
    EXPECT(&nc, CC_OP_SEND, 4, "direct");
    /* No shared-memory row for the v forms: the transport's algorithm. */
    EXPECT(&nc, CC_OP_ALLGATHERV, 4, "ring");
    EXPECT(&nc, CC_OP_ALLTOALLV, 4, "pairwise");
}

/* TCP (or mixed): the network rows, smallest window first. */
static void test_net_rows_by_size(void **state)
{
    (void)state;
    cc__native_t nc = engine_of(4, CC__TPM_NET);
    EXPECT(&nc, CC_OP_ALLREDUCE, 4, "recursive_doubling");
    EXPECT(&nc, CC_OP_ALLREDUCE, 16 * K - 4, "recursive_doubling");
    EXPECT(&nc, CC_OP_ALLREDUCE, 16 * K, "halving_doubling");
    EXPECT(&nc, CC_OP_ALLREDUCE, 4 * 1024 * K, "halving_doubling");
    EXPECT(&nc, CC_OP_ALLREDUCE, 8 * 1024 * K - 4, "halving_doubling");
    EXPECT(&nc, CC_OP_ALLREDUCE, 8 * 1024 * K, "ring");
    /* 2 ranks: one exchange of the whole vector through 1 MiB, then the ring. */
    cc__native_t two = engine_of(2, CC__TPM_NET);
    EXPECT(&two, CC_OP_ALLREDUCE, 4, "recursive_doubling");
    EXPECT(&two, CC_OP_ALLREDUCE, 256 * K, "recursive_doubling");
    EXPECT(&two, CC_OP_ALLREDUCE, 1024 * K, "recursive_doubling");
    EXPECT(&two, CC_OP_ALLREDUCE, 1024 * K + 4, "ring");
    cc__native_t three = engine_of(3, CC__TPM_NET); /* 3 ranks: the ring from 256 KiB */
    EXPECT(&three, CC_OP_ALLREDUCE, 256 * K - 4, "halving_doubling");
    EXPECT(&three, CC_OP_ALLREDUCE, 256 * K, "ring");
    EXPECT(&nc, CC_OP_BROADCAST, 4, "ring");
    EXPECT(&nc, CC_OP_BROADCAST, 16 * K - 4, "ring");
    EXPECT(&nc, CC_OP_BROADCAST, 16 * K, "binomial");
    EXPECT(&nc, CC_OP_BROADCAST, 16 * 1024 * K, "binomial");
    EXPECT(&nc, CC_OP_BROADCAST, 16 * 1024 * K + 4, "ring");
    /* Allgather: Bruck from 3 ranks to 64 KiB (to 512 KiB from 5 ranks), the ring on 2. */
    EXPECT(&nc, CC_OP_ALLGATHER, 4, "bruck");
    EXPECT(&nc, CC_OP_ALLGATHER, 64 * K, "bruck");
    EXPECT(&nc, CC_OP_ALLGATHER, 64 * K + 4, "ring");
    EXPECT(&two, CC_OP_ALLGATHER, 4, "ring");
    EXPECT(&two, CC_OP_ALLGATHER, 64 * K, "ring");
    cc__native_t eight = engine_of(8, CC__TPM_NET);
    EXPECT(&eight, CC_OP_ALLGATHER, 512 * K - 4, "bruck");
    EXPECT(&eight, CC_OP_ALLGATHER, 512 * K, "ring");
    /* Linear to 8 MiB from 4 ranks, to 256 KiB on fewer. */
    EXPECT(&nc, CC_OP_ALLTOALL, 8 * 1024 * K, "linear");
    EXPECT(&nc, CC_OP_ALLTOALL, 8 * 1024 * K + 4, "pairwise");
    EXPECT(&eight, CC_OP_ALLTOALL, 8 * 1024 * K, "linear");
    EXPECT(&eight, CC_OP_ALLTOALL, 8 * 1024 * K + 4, "pairwise");
    EXPECT(&three, CC_OP_ALLTOALL, 256 * K, "linear");
    EXPECT(&three, CC_OP_ALLTOALL, 256 * K + 4, "pairwise");
    EXPECT(&two, CC_OP_ALLTOALL, 256 * K, "linear");
    EXPECT(&two, CC_OP_ALLTOALL, 256 * K + 4, "pairwise");
    /* The few-message rows by rank count: Bruck at 4 and from 6 ranks, not 5 (a power-of-two
     * row and a min_ranks row); the doubling reduce-scatter from 4; neither on 2 or 3. */
    EXPECT(&nc, CC_OP_ALLTOALL, 4, "bruck");
    EXPECT(&nc, CC_OP_ALLTOALL, 16 * K, "bruck");
    EXPECT(&nc, CC_OP_ALLTOALL, 16 * K + 4, "linear");
    EXPECT(&nc, CC_OP_REDUCE_SCATTER, 4, "recursive_doubling");
    EXPECT(&nc, CC_OP_REDUCE_SCATTER, 32 * K, "recursive_doubling");
    EXPECT(&nc, CC_OP_REDUCE_SCATTER, 32 * K + 4, "ring");
    static const struct {
        int n;
        const char *a2a, *rs;
    } by_n[] = {{2, "linear", "ring"},
                {3, "linear", "ring"},
                {5, "linear", "recursive_doubling"},
                {6, "bruck", "recursive_doubling"},
                {7, "bruck", "recursive_doubling"},
                {8, "bruck", "recursive_doubling"}};
    for (size_t i = 0; i < sizeof(by_n) / sizeof(by_n[0]); i++) {
        cc__native_t m = engine_of(by_n[i].n, CC__TPM_NET);
        EXPECT(&m, CC_OP_ALLTOALL, 1 * K, by_n[i].a2a);
        EXPECT(&m, CC_OP_REDUCE_SCATTER, 1 * K, by_n[i].rs);
    }
    EXPECT(&nc, CC_OP_BARRIER, 0, "dissemination");
    EXPECT(&nc, CC_OP_MONITORED_BARRIER, 0, "all_to_one");
    EXPECT(&nc, CC_OP_COALESCED, 4, "packed");
    EXPECT(&nc, CC_OP_SEND_BYTES, 4, "two_phase");
    /* One rank: no shared-memory row either (they need the SHM class). */
    cc__native_t one = engine_of(1, CC__TPM_SELF);
    EXPECT(&one, CC_OP_ALLREDUCE, 4, "recursive_doubling");
    EXPECT(&one, CC_OP_BARRIER, 0, "dissemination");
}

/* Gather and scatter are chosen by the whole buffer (n blocks), not one rank's block. */
static void test_size_is_the_whole_buffer(void **state)
{
    (void)state;
    cc__native_t nc = engine_of(4, CC__TPM_NET);
    cc__op_t op = op_of(CC_OP_GATHER, 0);
    const char *algo;
    cc_status_t st;
    op.info.in_count = 4 * K; /* 16 KiB per rank, 64 KiB gathered: past binomial's window */
    op.info.bytes = 4 * K * sizeof(float);
    assert_non_null(cc__native_choose(&nc, &op, &algo, NULL, &st));
    assert_string_equal(algo, "linear");
    op.info.in_count = 4 * K - 1;
    assert_non_null(cc__native_choose(&nc, &op, &algo, NULL, &st));
    assert_string_equal(algo, "binomial");
    op = op_of(CC_OP_SCATTER, 0);
    op.info.out_count = 4 * K;
    assert_non_null(cc__native_choose(&nc, &op, &algo, NULL, &st));
    assert_string_equal(algo, "linear");
    /* The v forms differ by rank: no size row may be taken for them, whatever the size. */
    op = op_of(CC_OP_GATHERV, 1);
    assert_non_null(cc__native_choose(&nc, &op, &algo, NULL, &st));
    assert_string_equal(algo, "linear");
}

/* A forced name skips the size conditions; a forced-only row runs only when named. */
static void test_forced(void **state)
{
    (void)state;
    cc__native_t nc = engine_of(4, CC__TPM_SHM);
    nc.forced[CC_OP_ALLREDUCE] = "ring";
    EXPECT(&nc, CC_OP_ALLREDUCE, 4, "ring");
    nc.forced[CC_OP_ALLREDUCE] = "shm_cma";
    EXPECT(&nc, CC_OP_ALLREDUCE, 4, "shm_cma");
    nc.forced[CC_OP_ALLREDUCE] = NULL;
    EXPECT(&nc, CC_OP_ALLREDUCE, 4, "shm_flat");

    EXPECT(&nc, CC_OP_ALLTOALLV, 4, "pairwise");
    nc.forced[CC_OP_ALLTOALLV] = "linear"; /* CC__ROW_FORCED_ONLY */
    EXPECT(&nc, CC_OP_ALLTOALLV, 4, "linear");

    /* CCOMM_ALGO_<COLL> does the same for every comm; the per-comm override wins. */
    setenv("CCOMM_ALGO_ALLREDUCE", "halving_doubling", 1);
    cc__config_reload();
    cc__native_t plain = engine_of(4, CC__TPM_SHM);
    EXPECT(&plain, CC_OP_ALLREDUCE, 4, "halving_doubling");
    plain.forced[CC_OP_ALLREDUCE] = "ring";
    EXPECT(&plain, CC_OP_ALLREDUCE, 4, "ring");
    setenv("CCOMM_ALGO_ALLREDUCE", "auto", 1);
    cc__config_reload();
    plain.forced[CC_OP_ALLREDUCE] = NULL;
    EXPECT(&plain, CC_OP_ALLREDUCE, 4, "shm_flat");
}

/* What cannot run is refused, named, and nothing is chosen. */
static void test_refusals(void **state)
{
    (void)state;
    cc_status_t st;
    cc__native_t nc = engine_of(4, CC__TPM_NET);
    nc.forced[CC_OP_ALLREDUCE] = "shm_flat"; /* a shared-memory row on TCP */
    assert_string_equal(chosen(&nc, CC_OP_ALLREDUCE, 4, &st), "");
    assert_int_equal(st, CC_ERR_NOT_SUPPORTED);
    nc.forced[CC_OP_BARRIER] = "shm";
    assert_string_equal(chosen(&nc, CC_OP_BARRIER, 0, &st), "");
    assert_int_equal(st, CC_ERR_NOT_SUPPORTED);
    nc.forced[CC_OP_ALLREDUCE] = "no_such_algorithm";
    assert_string_equal(chosen(&nc, CC_OP_ALLREDUCE, 4, &st), "");
    assert_int_equal(st, CC_ERR_INVALID_ARG);
    /* A row of another collective is no row of this one. */
    nc.forced[CC_OP_ALLREDUCE] = "bruck";
    assert_string_equal(chosen(&nc, CC_OP_ALLREDUCE, 4, &st), "");
    assert_int_equal(st, CC_ERR_INVALID_ARG);
    /* Lifecycle events have no rows: an engine asked to run one says so. */
    cc__native_t shm = engine_of(2, CC__TPM_SHM);
    assert_string_equal(chosen(&shm, CC_OP_COMM_INIT, 0, &st), "");
    assert_int_equal(st, CC_ERR_NOT_SUPPORTED);

    /* A bad CCOMM_ALGO_* name fails init (every rank alike): the typed config refuses it
     * (lib/base/config.c checks an ENUM against its choices), before the engine would. */
    assert_int_equal(cc__config_check(), CC_OK);
    assert_int_equal(cc__native_check_forced(), CC_OK);
    setenv("CCOMM_ALGO_ALLTOALLV", "no_such_algorithm", 1);
    cc__config_reload();
    assert_int_equal(cc__config_check(), CC_ERR_INVALID_ARG);
    unsetenv("CCOMM_ALGO_ALLTOALLV");
    cc__config_reload();
    assert_int_equal(cc__config_check(), CC_OK);
    assert_int_equal(cc__native_check_forced(), CC_OK);
}

/* CCOMM_PIPELINE_CHUNK: auto is 256K on 2 ranks and 1M on more; a size holds everywhere,
 * and the 2-rank ring allgather sends blocks of up to 512 KiB whole only under auto. */
static void test_pipeline_chunk(void **state)
{
    (void)state;
    size_t seg;
    int a;
    assert_int_equal(cc__pipeline_setting("auto", 2, &seg, &a), 0);
    assert_true(a && seg == 256 * K);
    assert_int_equal(cc__pipeline_setting(NULL, 3, &seg, &a), 0);
    assert_true(a && seg == 1024 * K);
    assert_int_equal(cc__pipeline_setting("auto", 8, &seg, &a), 0);
    assert_true(a && seg == 1024 * K);
    assert_int_equal(cc__pipeline_setting("4K", 8, &seg, &a), 0);
    assert_true(!a && seg == 4 * K);
    assert_int_equal(cc__pipeline_setting("0", 2, &seg, &a), 0);
    assert_true(!a && seg == 0);
    assert_int_equal(cc__pipeline_setting("lots", 2, &seg, &a), -1);
    assert_int_equal(cc__pipeline_setting("-1", 2, &seg, &a), -1);
    assert_int_equal(cc__pipeline_setting("2T", 2, &seg, &a), -1);
    /* The 2-rank allgather under auto: whole through 512 KiB, the chunk above. */
    assert_int_equal(cc__ring_allgather_piece(2, CC_OP_ALLGATHER, 512 * K, 256 * K, 1), 0);
    assert_int_equal(cc__ring_allgather_piece(2, CC_OP_ALLGATHERV, 512 * K, 256 * K, 1), 0);
    assert_int_equal(cc__ring_allgather_piece(2, CC_OP_ALLGATHER, 512 * K + 1, 256 * K, 1),
                     256 * K);
    assert_int_equal(cc__ring_allgather_piece(2, CC_OP_ALLREDUCE, 4 * K, 256 * K, 1), 256 * K);
    assert_int_equal(cc__ring_allgather_piece(2, CC_OP_ALLGATHER, 4 * K, 256 * K, 0), 256 * K);
    assert_int_equal(cc__ring_allgather_piece(4, CC_OP_ALLGATHER, 4 * K, 1024 * K, 1), 1024 * K);
}

/* Every data op has an algorithm on every transport class at every size: a fallback row. */
static void test_every_op_has_a_fallback(void **state)
{
    (void)state;
    static const unsigned classes[] = {CC__TPM_SELF, CC__TPM_SHM, CC__TPM_NET};
    static const size_t sizes[] = {0, 4, 16 * K, 64 * K + 4, 256 * K, 64u << 20};
    for (int t = 0; t < CC_OP_TYPE_COUNT; t++) {
        cc_op_type_t type = (cc_op_type_t)t;
        if (type == CC_OP_COMM_INIT || type == CC_OP_COMM_SPLIT || type == CC_OP_COMM_DESTROY ||
            type == CC_OP_COMM_ABORT || type == CC_OP_WIN_CREATE || type == CC_OP_WIN_DESTROY)
            continue; /* lifecycle events: they never reach the selection */
        for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]); c++) {
            cc__native_t nc = engine_of(classes[c] == CC__TPM_SELF ? 1 : 3, classes[c]);
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                cc_status_t st;
                const char *name = chosen(&nc, type, sizes[s], &st);
                if (!name[0])
                    fail_msg("%s on class 0x%x at %zu bytes: nothing chosen (%s)",
                             cc_op_type_name(type), classes[c], sizes[s], cc_status_name(st));
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shm_rows_by_size, clean_env, clean_env),
        cmocka_unit_test_setup_teardown(test_net_rows_by_size, clean_env, clean_env),
        cmocka_unit_test_setup_teardown(test_size_is_the_whole_buffer, clean_env, clean_env),
        cmocka_unit_test_setup_teardown(test_forced, clean_env, clean_env),
        cmocka_unit_test_setup_teardown(test_refusals, clean_env, clean_env),
        cmocka_unit_test_setup_teardown(test_every_op_has_a_fallback, clean_env, clean_env),
        cmocka_unit_test_setup_teardown(test_pipeline_chunk, clean_env, clean_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
