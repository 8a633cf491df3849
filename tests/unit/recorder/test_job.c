/*
 * test_job.c - the recorder in real 2-rank jobs (forked ranks, real store,
 * real op door and hook chains):
 *  - every op and lifecycle event lands in the ring with the right state,
 *    ids and comm table (world and a split child with their world ranks);
 *  - cc_recorder_dump(NULL) writes the PyTorch-format dump, profiling names
 *    in comm ranks, pg_status counting the comm's collectives;
 *  - an abort marks the pending op and the comm, and the op ends "aborted";
 *  - a rank killed with SIGKILL leaves a readable ring behind.
 */
#include <dirent.h>
#include <pthread.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "mp.h"
#include "rec_util.h"

static char env_rec[320], env_dump[320];
static const char *job_env[] = {"CCOMM_JOB_ID=rectest", env_rec, env_dump,
                                "CCOMM_RECORDER_ENTRIES=256", NULL};

static int setup(void **state)
{
    (void)state;
    rec_make_dir();
    snprintf(env_rec, sizeof(env_rec), "CCOMM_RECORDER_DIR=%s/rings", rec_dir);
    snprintf(env_dump, sizeof(env_dump), "CCOMM_DUMP_DIR=%s/dumps", rec_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rec_remove_dir();
    return 0;
}

static json_t *find_entry(json_t *entries, const char *profiling_name, json_int_t seq)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "profiling_name"));
        json_int_t s = json_integer_value(json_object_get(e, "collective_seq_id")) +
                       json_integer_value(json_object_get(e, "p2p_seq_id"));
        if (p && !strcmp(p, profiling_name) && s == seq) return e;
    }
    return NULL;
}

static const char *state_of(json_t *e)
{
    return json_string_value(json_object_get(e, "state"));
}

/* One rank: ops on world and on a split child, then the default dump. */
static int ops_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_recorder_ring_path() != NULL, "the ring is open");
    float x[4] = {1, 2, 3, 4}, y[4];
    for (int i = 0; i < 3; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, x, y, 4, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    int32_t v = 7;
    if (rank == 0)
        CC_TEST_REQUIRE(cc_send(comm, &v, 1, CC_INT32, 1, NULL, NULL) == CC_OK, "send");
    else
        CC_TEST_REQUIRE(cc_recv(comm, &v, 1, CC_INT32, 0, NULL, NULL) == CC_OK, "recv");
    CC_TEST_REQUIRE(cc_comm_split(comm, 0, size - rank, NULL, &child) == CC_OK, "split");
    CC_TEST_REQUIRE(cc_allreduce(child, x, y, 4, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar2");
    CC_TEST_REQUIRE(cc_recorder_dump(NULL) == CC_OK, "dump");
    cc_comm_destroy(child);
    cc_comm_destroy(comm);
    return 0;
}

static json_t *load_file(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: %s", path, err.text);
    return j;
}

static json_t *load_dump(int rank)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/dumps/rectest/rank%d.json", rec_dir, rank);
    return load_file(path);
}

static void check_dump(int rank)
{
    json_t *j = load_dump(rank), *entries = json_object_get(j, "entries");
    assert_int_equal(json_integer_value(json_object_get(j, "rank")), rank);
    json_t *cfg = json_object_get(j, "pg_config");
    assert_int_equal(json_object_size(cfg), 2);
    const char *key;
    json_t *pg;
    int world_seen = 0, child_seen = 0;
    json_object_foreach(cfg, key, pg)
    {
        const char *desc = json_string_value(json_object_get(pg, "desc"));
        const char *ranks = json_string_value(json_object_get(pg, "ranks"));
        if (!strcmp(desc, "world"))
            world_seen = !strcmp(ranks, "[0, 1]");
        else
            child_seen = !strcmp(ranks, "[1, 0]"); /* key = size - rank reverses the order */
    }
    assert_true(world_seen && child_seen);
    for (int s = 1; s <= 3; s++) {
        json_t *e = find_entry(entries, "ccomm:all_reduce", s);
        assert_non_null(e);
        assert_string_equal(state_of(e), "completed");
        assert_int_equal(json_integer_value(json_array_get(
                             json_array_get(json_object_get(e, "input_sizes"), 0), 0)),
                         4);
    }
    json_t *p2p = find_entry(entries, rank == 0 ? "ccomm:send 0->1" : "ccomm:recv 1<-0", 1);
    assert_non_null(p2p);
    assert_string_equal(state_of(p2p), "completed");
    assert_true(json_is_true(json_object_get(p2p, "is_p2p")));
    json_t *st = json_object_get(json_object_get(j, "pg_status"), "0");
    assert_true(atoi(json_string_value(json_object_get(st, "last_completed_collective"))) >= 3);
    /* init, split of world, init of the child: under ccomm.lifecycle */
    json_t *life = json_object_get(json_object_get(j, "ccomm"), "lifecycle");
    assert_true(json_array_size(life) >= 3);
    json_decref(j);
}

static void test_ops_and_dump(void **state)
{
    (void)state;
    assert_int_equal(cc_test_fork_ranks(2, ops_rank, NULL, 60, job_env, NULL), 0);
    check_dump(0);
    check_dump(1);
}

/* Rank 0 waits for a message that never comes, then aborts the comm and
 * dumps to `arg` (a path of its own: the watchdog writes rank0.json at the
 * abort, before the op has ended, and default dumps never overwrite). */
static int abort_rank(int rank, int size, const char *addr, void *arg)
{
    const char *path = arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 0) {
        int32_t v;
        cc_work_t *w = NULL;
        CC_TEST_REQUIRE(cc_recv(comm, &v, 1, CC_INT32, 1, NULL, &w) == CC_OK, "recv");
        CC_TEST_REQUIRE(cc_comm_abort(comm) == CC_OK, "abort");
        cc_status_t st = cc_work_wait(w, 10000);
        CC_TEST_REQUIRE(st == CC_ERR_ABORTED, "wait: %s", cc_status_name(st));
        cc_work_free(w);
        CC_TEST_REQUIRE(cc_recorder_dump(path) == CC_OK, "dump");
    } else {
        /* Stay until rank 0 aborts: leaving first would end rank 0's recv with PEER_LOST. */
        int32_t v;
        cc_status_t st = cc_recv(comm, &v, 1, CC_INT32, 0, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "rank 1 sees the abort as a lost peer: %s",
                        cc_status_name(st));
    }
    cc_comm_destroy(comm);
    return 0;
}

static void test_abort(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof(path), "%s/abort.json", rec_dir);
    cc_test_fork_ranks(2, abort_rank, path, 60, job_env, NULL); /* rank 1 may see the abort */
    json_t *j = load_file(path);
    json_t *recv = find_entry(json_object_get(j, "entries"), "ccomm:recv 0<-1", 1);
    assert_non_null(recv);
    json_t *x = json_object_get(recv, "ccomm");
    assert_string_equal(json_string_value(json_object_get(x, "state")), "aborted");
    assert_string_equal(json_string_value(json_object_get(x, "status")), "ERR_ABORTED");
    assert_true(json_is_true(json_object_get(x, "abort_seen")));
    assert_string_not_equal(state_of(recv), "completed");
    json_t *comm = json_array_get(json_object_get(json_object_get(j, "ccomm"), "comms"), 0);
    assert_true(json_is_true(json_object_get(comm, "aborted")));
    json_decref(j);
}

/*
 * A blocking op queued behind an async one (the progress thread runs it later) is in the
 * ring as SCHEDULED while it waits: the door holds back only the PRE of an op that starts
 * at once. Rank 0 issues an async allreduce and then a blocking one while rank 1 is late;
 * a thread of rank 0 reads its own ring meanwhile.
 */
static uint32_t seen_state[2];
static int seen_count;

static void *look_at_ring(void *arg)
{
    (void)arg;
    usleep(300 * 1000);
    cc__fr_reader_t *r = NULL;
    cc__fr_snapshot_t *s = NULL;
    if (cc__fr_reader_open(cc_recorder_ring_path(), &r, NULL, 0) != CC_OK) return NULL;
    if (cc__fr_reader_snapshot(r, &s, NULL, 0) == CC_OK) {
        uint64_t first = UINT64_MAX;
        for (uint32_t i = 0; i < s->nentries; i++) {
            const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
            if (e->type == CC_OP_ALLREDUCE && e->op_id < first) first = e->op_id;
        }
        for (uint32_t i = 0; i < s->nentries; i++) {
            const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
            if (e->type != CC_OP_ALLREDUCE || e->op_id - first > 1) continue;
            seen_state[e->op_id - first] = e->state;
            seen_count++;
        }
        cc__fr_snapshot_free(s);
    }
    cc__fr_reader_close(r);
    return NULL;
}

static int queued_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    float x = 1, y = 0, z = 0;
    if (rank == 1) {
        usleep(900 * 1000);
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
                        "first");
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &z, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
                        "second");
    } else {
        cc_work_t *w = NULL;
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, &w) == CC_OK,
                        "async");
        pthread_t t;
        CC_TEST_REQUIRE(pthread_create(&t, NULL, look_at_ring, NULL) == 0, "thread");
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &z, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
                        "blocking");
        pthread_join(t, NULL);
        CC_TEST_REQUIRE(cc_work_wait(w, 10000) == CC_OK, "wait");
        cc_work_free(w);
        CC_TEST_REQUIRE(seen_count == 2, "both allreduces in the ring while rank 1 was late "
                        "(saw %d)", seen_count);
        CC_TEST_REQUIRE(seen_state[0] == CC__FR_STARTED, "the async one started: %u",
                        seen_state[0]);
        CC_TEST_REQUIRE(seen_state[1] == CC__FR_SCHEDULED, "the blocking one waits: %u",
                        seen_state[1]);
    }
    CC_TEST_REQUIRE(y == 2 && z == 2, "sums %g %g", y, z);
    cc_comm_destroy(comm);
    return 0;
}

static void test_queued_op_scheduled(void **state)
{
    (void)state;
    assert_int_equal(cc_test_fork_ranks(2, queued_rank, NULL, 60, job_env, NULL), 0);
}

/* Rank 1 dies by SIGKILL after a few ops; its ring stays readable. */
static int kill_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    float x = 1, y;
    for (int i = 0; i < 20; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
                        "ar");
    if (rank == 1) raise(SIGKILL);
    cc_comm_abort(comm);
    cc_comm_destroy(comm);
    return 0;
}

static void test_killed_rank_ring(void **state)
{
    (void)state;
    cc_test_child_t out[2];
    cc_test_fork_ranks(2, kill_rank, NULL, 60, job_env, out);
    assert_true(!out[1].exited && out[1].signo == SIGKILL);
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/rings/rectest", rec_dir);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int found = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, "rank1.", 6)) continue;
        char path[700];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        cc__fr_reader_t *r = NULL;
        cc__fr_snapshot_t *s = NULL;
        assert_int_equal(cc__fr_reader_open(path, &r, NULL, 0), CC_OK);
        assert_int_equal(cc__fr_reader_snapshot(r, &s, NULL, 0), CC_OK);
        assert_false(s->live);
        assert_int_equal(s->hdr.closed_ns, 0);
        assert_int_equal(s->hdr.rank, 1);
        assert_int_equal(s->ncorrupt + s->ntorn, 0);
        int completed = 0;
        for (uint32_t i = 0; i < s->nentries; i++) {
            const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
            if (e->type != CC_OP_ALLREDUCE) continue;
            completed += e->state == CC__FR_COMPLETED;
            /* A blocking op the native engine runs on the caller's thread: the door writes
             * its PRE and START at once, started at its enqueue time, with the names START
             * knows (the algorithm, the transport). */
            assert_int_equal(e->t_start_ns, e->t_enqueue_ns);
            assert_true(e->t_end_ns >= e->t_start_ns);
            assert_true(e->algorithm[0] && e->transport[0]);
            assert_string_equal(e->engine, "native");
        }
        assert_int_equal(completed, 20);
        assert_true(s->ncomms >= 1 && s->comms[0].size == 2);
        cc__fr_snapshot_free(s);
        cc__fr_reader_close(r);
        found++;
    }
    closedir(d);
    assert_int_equal(found, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ops_and_dump, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_op_scheduled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_rank_ring, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
