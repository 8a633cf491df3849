/*
 * test_clog_job.c - clog in real jobs (forked ranks, the real op door and
 * hook chains), read back with cclog's parser and commands:
 *  - CCOMM_CLOG=..%r.. gives one file per rank with new_comm, split, sig,
 *    Q/S/E/W lines and END at exit; cclog check finds nothing wrong;
 *  - the public API attaches a logger to one comm, refuses double attaches,
 *    and an op that times out leaves its A line on disk although the rank
 *    then dies with _exit (the abort hook flushed);
 *  - a bad CCOMM_CLOG or CCOMM_CLOG_EVENTS turns clog off, not the job;
 *  - a logger hooks only the chains its events need (POST and ABORT always);
 *  - an op that starts as it is issued puts its Q and S in the ring as one record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cclog.h"
#include "clog_test_util.h"
#include "engine/comm.h"
#include "hooks/chain.h"
#include "mp.h"

static char g_pat[128]; /* CCOMM_CLOG=... of the current test */

/* The async allreduce (collective 2) holds its START for 100 ms on the engine's worker, so the
 * caller's cc_work_wait finds it unfinished and logs its W line: a 4-byte op finished first
 * now and then, and a wait on a finished op logs none. */
static void hold_async(const cc_op_info_t *op, void *user)
{
    (void)user;
    if (op->type == CC_OP_ALLREDUCE && op->coll_seq == 2) usleep(100000);
}

static int job_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    cc_hook_handle_t h;
    CC_TEST_REQUIRE(cc_hook_add_start(comm, hold_async, NULL, 0, &h) == CC_OK, "hook");
    float x = 1, y = 0;
    CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    cc_work_t *w = NULL;
    CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, &w) == CC_OK, "async");
    CC_TEST_REQUIRE(cc_work_wait(w, -1) == CC_OK, "wait");
    cc_work_free(w);
    if (size > 1) {
        int v = rank;
        cc_status_t st = rank == 0   ? cc_send(comm, &v, 1, CC_INT32, 1, NULL, NULL)
                         : rank == 1 ? cc_recv(comm, &v, 1, CC_INT32, 0, NULL, NULL)
                                     : CC_OK;
        CC_TEST_REQUIRE(st == CC_OK, "p2p %s", cc_status_name(st));
    }
    CC_TEST_REQUIRE(cc_comm_split(comm, 0, rank, NULL, &child) == CC_OK, "split");
    CC_TEST_REQUIRE(cc_barrier(child, NULL, NULL) == CC_OK, "barrier");
    cc_comm_destroy(child);
    cc_comm_destroy(comm);
    exit(0); /* not the harness's _exit: the exit handler writes the rest and END */
}

static int count(const cl_log_t *log, enum cl_kind kind, char ev)
{
    int k = 0;
    for (size_t i = 0; i < log->nentries; i++)
        k += log->entries[i].kind == kind && (!ev || log->entries[i].ev == ev);
    return k;
}

/* Run cclog on files; returns its exit status and its stdout in *out (free it). */
static int cclog(char **out, int argc, char **argv)
{
    size_t len;
    FILE *o = open_memstream(out, &len), *e = fopen("/dev/null", "w");
    int rc = cclog_main(argc, argv, o, e);
    fclose(o);
    fclose(e);
    return rc;
}

static void env_job(int n)
{
    snprintf(g_pat, sizeof(g_pat), "CCOMM_CLOG=%s/job%d.%%r.log", tmpdir_make(), n);
    const char *env[] = {g_pat, "CCOMM_CLOG_EVENTS=ALL", NULL};
    assert_int_equal(cc_test_fork_ranks(n, job_rank, NULL, 60, env, NULL), 0);
    char paths[8][256], *argv[12] = {"cclog", "check"};
    for (int r = 0; r < n; r++) {
        snprintf(paths[r], sizeof(paths[r]), "%s/job%d.%d.log", tmpdir_make(), n, r);
        argv[2 + r] = paths[r];
        cl_log_t *log = cl_log_load(paths[r], stderr);
        assert_non_null(log);
        assert_false(log->unusable);
        assert_int_equal(log->nerrors, 0);
        assert_int_equal(log->rank, r);
        assert_true(log->end_seen);
        assert_int_equal(log->dropped, 0);
        assert_int_equal(count(log, CL_NEW_COMM, 0), 2); /* world and its child */
        assert_int_equal(count(log, CL_SPLIT, 0), 1);
        assert_int_equal(count(log, CL_END_COMM, 0), 2);
        int ops = 3 + (n > 1 && r < 2); /* 2 allreduce, barrier, p2p on ranks 0 and 1 */
        assert_int_equal(count(log, CL_EVENT, 'Q'), ops);
        assert_int_equal(count(log, CL_EVENT, 'S'), ops);
        assert_int_equal(count(log, CL_EVENT, 'E'), ops);
        assert_int_equal(count(log, CL_EVENT, 'W'), 1);
        assert_int_equal(log->nsig, (uint32_t)ops - 1); /* the two allreduces share one */
        for (size_t i = 0; i < log->nentries; i++)
            if (log->entries[i].kind == CL_SPLIT) {
                char want[32];
                snprintf(want, sizeof(want), "|ranks=%s|", n == 1 ? "0" : "0-1");
                assert_non_null(strstr(log->entries[i].text, want));
            }
        cl_log_free(log);
    }
    char *out = NULL;
    int rc = cclog(&out, 2 + n, argv);
    if (rc) fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    free(out);
}

static void test_env_one_rank(void **state)
{
    (void)state;
    env_job(1);
}

static void test_env_two_ranks(void **state)
{
    (void)state;
    env_job(2);
}

/* A rank's world comm, with a logger of every event at path attached to it (in a child;
 * 0, or 1 after a failed step, as CC_TEST_REQUIRE returns). */
static int world_logged(int rank, int size, const char *addr, const char *path, cc_comm_t **comm,
                        cc_clog_t **lg)
{
    CC_TEST_REQUIRE(cc_comm_init(comm, rank, size, addr, NULL) == CC_OK, "init");
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    conf.rank = rank;
    CC_TEST_REQUIRE(cc_clog_open(path, &conf, lg) == CC_OK, "open");
    CC_TEST_REQUIRE(cc_clog_attach(*lg, *comm) == CC_OK, "attach");
    return 0;
}

static int api_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = NULL;
    cc_clog_t *lg = NULL;
    if (world_logged(rank, size, addr, arg, &comm, &lg)) return 1;
    CC_TEST_REQUIRE(cc_clog_attach(lg, comm) == CC_ERR_INVALID_USAGE, "attached twice");
    CC_TEST_REQUIRE(cc_clog_attach(lg, NULL) == CC_ERR_INVALID_USAGE, "all and one");
    CC_TEST_REQUIRE(cc_clog_detach(lg, comm) == CC_OK, "detach");
    CC_TEST_REQUIRE(cc_clog_detach(lg, comm) == CC_ERR_NOT_FOUND, "detach twice");
    CC_TEST_REQUIRE(cc_clog_attach(lg, comm) == CC_OK, "attach again");
    /* Nobody sends: the recv times out, the comm aborts, the abort hook flushes. */
    int v = 0;
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = 300;
    cc_status_t st = cc_recv(comm, &v, 1, CC_INT32, 0, &o, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT, "recv %s", cc_status_name(st));
    /* The abort chain may still be running on the watchdog: let it finish. */
    for (int i = 0; i < 200 && cc_comm_get_error(comm) == CC_OK; i++)
        usleep(10000);
    usleep(100000);
    _exit(0); /* no close, no exit handler: only what the abort flushed is there */
}

static void test_api_abort_flush(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "%s/api.log", tmpdir_make());
    assert_int_equal(cc_test_fork_ranks(1, api_rank, path, 60, NULL, NULL), 0);
    int n;
    char **l = read_lines(path, &n);
    int aborts = 0, ends = 0;
    for (int i = 0; i < n; i++) {
        aborts += strstr(l[i], "|A|") && strstr(l[i], "|reason=ERR_TIMEOUT|");
        ends += !strncmp(l[i], "END|", 4);
    }
    lines_free(l);
    assert_int_equal(aborts, 1);
    assert_int_equal(ends, 0);
    char *out = NULL, *argv[] = {"cclog", "check", path};
    assert_int_equal(cclog(&out, 3, argv), 1);
    assert_non_null(strstr(out, "aborted: ERR_TIMEOUT"));
    free(out);
}

/* Which of the comm's own chains hold a hook, as a mask of 1 << kind. */
static unsigned chains_used(cc_comm_t *comm)
{
    unsigned m = 0;
    for (int k = 0; k < CC__HOOK_KINDS; k++)
        if (atomic_load(&comm->hooks.chain[k].snap)) m |= 1u << k;
    return m;
}

/* A logger attaches a chain's hook only where one of its events needs it: a hook that
 * returns at once still costs its chain's walk on every op. */
static int chains_rank(int rank, int size, const char *addr, void *arg)
{
    const char *dir = arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    const unsigned always = 1u << CC__HOOK_POST | 1u << CC__HOOK_ABORT;
    const struct {
        unsigned events, chains;
    } cases[] = {
        {CC_CLOG_ALL, always | 1u << CC__HOOK_PRE | 1u << CC__HOOK_START | 1u << CC__HOOK_WAIT},
        {CC_CLOG_LIFECYCLE, always},
        {CC_CLOG_E, always},
        {CC_CLOG_Q | CC_CLOG_E, always | 1u << CC__HOOK_PRE},
        {CC_CLOG_S | CC_CLOG_W, always | 1u << CC__HOOK_START | 1u << CC__HOOK_WAIT},
    };
    CC_TEST_REQUIRE(chains_used(comm) == 0, "chains before: %#x", chains_used(comm));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/chains%zu.log", dir, i);
        cc_clog_t *lg = NULL;
        cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
        conf.rank = rank;
        conf.events = cases[i].events;
        CC_TEST_REQUIRE(cc_clog_open(path, &conf, &lg) == CC_OK, "open %zu", i);
        CC_TEST_REQUIRE(cc_clog_attach(lg, comm) == CC_OK, "attach %zu", i);
        CC_TEST_REQUIRE(chains_used(comm) == cases[i].chains, "case %zu: chains %#x, expected %#x",
                        i, chains_used(comm), cases[i].chains);
        /* The ops still log what was asked. */
        CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier %zu", i);
        CC_TEST_REQUIRE(cc_clog_close(lg) == CC_OK, "close %zu", i);
        CC_TEST_REQUIRE(chains_used(comm) == 0, "case %zu: chains after close %#x", i,
                        chains_used(comm));
    }
    cc_comm_destroy(comm);
    return 0;
}

static void test_hooks_follow_events(void **state)
{
    (void)state;
    const char *dir = tmpdir_make();
    assert_int_equal(cc_test_fork_ranks(1, chains_rank, (void *)dir, 60, NULL, NULL), 0);
    /* Case 3 (Q and E): the barrier's Q and E lines, no S. */
    char path[300];
    snprintf(path, sizeof(path), "%s/chains3.log", dir);
    int n, q = 0, s = 0, e = 0;
    char **l = read_lines(path, &n);
    for (int i = 0; i < n; i++) {
        q += strstr(l[i], "|Q|") != NULL;
        s += strstr(l[i], "|S|") != NULL;
        e += strstr(l[i], "|E|") != NULL;
    }
    lines_free(l);
    assert_int_equal(q, 1);
    assert_int_equal(s, 0);
    assert_int_equal(e, 1);
}

/* The flags each PRE saw, by op_id (a user's hook, after the logger's). */
static uint32_t g_flags[64];

static cc_status_t note_flags(const cc_op_info_t *op, void *user)
{
    (void)user;
    if (op->op_id < 64) /* high bit: seen */
        __atomic_store_n(&g_flags[op->op_id], op->flags | 0x80000000u, __ATOMIC_RELEASE);
    /* The fourth allreduce is vetoed: its Q waited for a START that never comes. */
    return op->type == CC_OP_ALLREDUCE && op->coll_seq == 4 ? CC_ERR_INVALID_USAGE : CC_OK;
}

/* Holds the async allreduce (collective 5) on the worker until the barrier after it (op 7)
 * passed PRE, so the barrier is issued while the allreduce is pending (bounded: 10 s). */
static void hold_fifth(const cc_op_info_t *op, void *user)
{
    (void)user;
    if (op->coll_seq != 5) return;
    for (int i = 0; i < 10000 && !__atomic_load_n(&g_flags[7], __ATOMIC_ACQUIRE); i++)
        usleep(1000);
}

static int qs_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = NULL;
    cc_clog_t *lg = NULL;
    if (world_logged(rank, size, addr, arg, &comm, &lg)) return 1;
    cc_hook_handle_t h1, h2;
    CC_TEST_REQUIRE(cc_hook_add_pre(comm, note_flags, NULL, 0, &h1) == CC_OK, "pre hook");
    CC_TEST_REQUIRE(cc_hook_add_start(comm, hold_fifth, NULL, 0, &h2) == CC_OK, "start hook");
    float x = 1, y = 0;
    /* Three blocking allreduces on an idle comm: one record for Q and S, one for E. */
    uint64_t before = cc__clog_ring_claimed(&lg->ring);
    for (int i = 0; i < 3; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
                        "allreduce %d", i);
    uint64_t claimed = cc__clog_ring_claimed(&lg->ring) - before;
    CC_TEST_REQUIRE(claimed == 6, "3 blocking ops claimed %llu records, expected 6",
                    (unsigned long long)claimed);
    cc_status_t st = cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_INVALID_USAGE, "vetoed allreduce: %s", cc_status_name(st));
    /* An async op, then a blocking one queued behind it: neither starts at once. */
    cc_work_t *w = NULL;
    CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, &w) == CC_OK, "async");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    CC_TEST_REQUIRE(cc_work_wait(w, -1) == CC_OK, "wait");
    cc_work_free(w);
    CC_TEST_REQUIRE(cc_clog_close(lg) == CC_OK, "close");
    /* op_ids: 1 is COMM_INIT, then the 3 allreduces, the vetoed one, the async, the barrier. */
    for (int id = 2; id <= 7; id++) {
        uint32_t want = id <= 5 ? CC_OP_INFO_STARTS_AT_ONCE : 0;
        CC_TEST_REQUIRE(g_flags[id] == (0x80000000u | want), "op %d: flags %#x, expected %#x", id,
                        g_flags[id] & ~0x80000000u, want);
    }
    cc_comm_destroy(comm);
    return 0;
}

/* The position of the first line holding `what` after line `from`, or -1. */
static int find_line(char **l, int n, int from, const char *what)
{
    for (int i = from + 1; i < n; i++)
        if (strstr(l[i], what)) return i;
    return -1;
}

/* An op that starts on the caller's thread as it is issued (CC_OP_INFO_STARTS_AT_ONCE) puts
 * its Q and S into the ring as one record, and its lines are those of two: Q, S, E in order
 * with their own times. A vetoed one still gets its Q (before its E); a queued one gets its Q
 * when it is queued, before the op ahead of it ends. */
static void test_q_and_s_one_record(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "%s/qs.log", tmpdir_make());
    assert_int_equal(cc_test_fork_ranks(1, qs_rank, path, 60, NULL, NULL), 0);
    int n;
    char **l = read_lines(path, &n);
    for (int id = 2; id <= 4; id++) {
        char q[32], s[32], e[32];
        snprintf(q, sizeof(q), "|Q|op_id=%d|", id);
        snprintf(s, sizeof(s), "|S|op_id=%d|", id);
        snprintf(e, sizeof(e), "|E|op_id=%d|", id);
        int iq = find_line(l, n, -1, q), is = find_line(l, n, -1, s), ie = find_line(l, n, -1, e);
        assert_true(iq >= 0 && is == iq + 1 && ie > is);
        /* Offsets: "+S.UUUUUU" at the end of each line; Q <= S <= E. */
        double tq = atof(strrchr(l[iq], '+') + 1), ts = atof(strrchr(l[is], '+') + 1),
               te = atof(strrchr(l[ie], '+') + 1);
        assert_true(tq <= ts && ts <= te);
    }
    /* The vetoed op: Q then E with the veto, no S. */
    int iq = find_line(l, n, -1, "|Q|op_id=5|"), ie = find_line(l, n, -1, "|E|op_id=5|");
    assert_true(iq >= 0 && ie > iq);
    assert_non_null(strstr(l[ie], "status=ERR_INVALID_USAGE|"));
    assert_int_equal(find_line(l, n, -1, "|S|op_id=5|"), -1);
    /* The barrier queued behind the held async op: its Q before the async op's E. */
    int bq = find_line(l, n, -1, "|Q|op_id=7|"), ae = find_line(l, n, -1, "|E|op_id=6|");
    assert_true(bq >= 0 && ae > bq);
    assert_true(find_line(l, n, ae, "|S|op_id=7|") > ae);
    lines_free(l);
}

static int plain_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    cc_comm_destroy(comm);
    return 0;
}

/* A CCOMM_* value that is not one of its choices stops the job at init (config.c). */
static int refused_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    cc_status_t st = cc_comm_init(&comm, rank, size, addr, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_INVALID_ARG && !comm, "init gave %s", cc_status_name(st));
    return 0;
}

static void test_bad_settings_leave_the_job_alone(void **state)
{
    (void)state;
    char clog[200], file[160];
    snprintf(file, sizeof(file), "%s/never.log", tmpdir_make());
    snprintf(clog, sizeof(clog), "CCOMM_CLOG=%s", file);
    const char *bad_events[] = {clog, "CCOMM_CLOG_EVENTS=Q,bogus", "CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(1, refused_rank, NULL, 60, bad_events, NULL), 0);
    struct stat st;
    assert_int_not_equal(stat(file, &st), 0);
    /* A valid list that leaves no event: no clog, and the job runs. */
    const char *no_events[] = {clog, "CCOMM_CLOG_EVENTS=^ALL", NULL};
    assert_int_equal(cc_test_fork_ranks(1, plain_rank, NULL, 60, no_events, NULL), 0);
    assert_int_not_equal(stat(file, &st), 0);
    const char *bad_path[] = {"CCOMM_CLOG=/proc/version/x/clog.%r.log", NULL};
    assert_int_equal(cc_test_fork_ranks(1, plain_rank, NULL, 60, bad_path, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_one_rank),
        cmocka_unit_test(test_env_two_ranks),
        cmocka_unit_test(test_api_abort_flush),
        cmocka_unit_test(test_hooks_follow_events),
        cmocka_unit_test(test_q_and_s_one_record),
        cmocka_unit_test(test_bad_settings_leave_the_job_alone),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tmpdir_remove();
    return failed;
}
