/*
 * test_hang_path.c - issue 4's promises, end to end in real jobs:
 *  - one rank of 4 stops calling collectives: the others end with
 *    CC_ERR_TIMEOUT; every rank (the stuck one too) writes its JSON dump
 *    within a bounded time; the 4 ring files are readable after the
 *    processes are gone; each rank has a clog file;
 *  - the dump signal (SIGUSR2) writes a dump;
 *  - a fatal signal marks the ring header and the peer sees PEER_LOST;
 *  - a rank stopped with SIGSTOP is noticed through heartbeats long before
 *    the op's own deadline;
 *  - CCOMM_ABORT_ON_TIMEOUT ends the process after the dump;
 *  - CCOMM_DESYNC_CHECK fails every rank with CC_ERR_MISMATCH;
 *  - a rank that waits in a shared-memory op has that op's entry, `started`
 *    (the engine writes START after the arrival is published, and before
 *    any wait: native/run.c), whether it waits for its peers' arrivals or,
 *    a broadcast root run ahead, for a free arrival line.
 */
#include <dirent.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "mp.h"
#include "recorder/reader.h"
#include "tmpdir.h"

static char dir[64];
static char env_rings[128], env_dumps[128], env_clog[160];

/* A directory per test; the one before it, and the last at the end, are removed. */
static void fresh_dirs(void)
{
    td_remove();
    assert_int_equal(td_make("cc-hang", 0700), 0);
    snprintf(dir, sizeof(dir), "%s", td_dir);
    snprintf(env_rings, sizeof(env_rings), "CCOMM_RECORDER_DIR=%s/rings", dir);
    snprintf(env_dumps, sizeof(env_dumps), "CCOMM_DUMP_DIR=%s/dumps", dir);
    snprintf(env_clog, sizeof(env_clog), "CCOMM_CLOG=%s/clog/rank%%r.log", dir);
}

/* Files under dir/sub/<job>/ (one job per test) whose name starts with prefix and ends with suffix. */
static int find_files(const char *sub, const char *prefix, const char *suffix, char out[][1024], int max)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *job;
    while ((job = readdir(d)) && n < max) {
        if (job->d_name[0] == '.') continue;
        char jp[512];
        snprintf(jp, sizeof(jp), "%.250s/%.255s", path, job->d_name);
        DIR *j = opendir(jp);
        struct dirent *f;
        while (j && (f = readdir(j)) && n < max) {
            size_t l = strlen(f->d_name), sl = strlen(suffix);
            if (strncmp(f->d_name, prefix, strlen(prefix)) || l < sl || strcmp(f->d_name + l - sl, suffix))
                continue;
            snprintf(out[n++], 1024, "%.500s/%.255s", jp, f->d_name);
        }
        if (j) closedir(j);
    }
    closedir(d);
    return n;
}

static time_t mtime(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_mtime : 0;
}

/* --- one rank stops calling collectives --- */
static int stuck_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    float x[256] = {0};
    for (int i = 0; i < 2; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, x, x, 256, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "warm");
    if (rank == 3) {
        sleep(6); /* stuck in "compute": its watchdog thread still answers the job's dump request */
        cc_comm_destroy(comm);
        return 0;
    }
    cc_status_t st = cc_allreduce(comm, x, x, 256, CC_FLOAT32, CC_SUM, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT || st == CC_ERR_PEER_LOST, "got %s", cc_status_name(st));
    CC_TEST_REQUIRE(cc_comm_get_error(comm) != CC_OK, "comm broken");
    cc_comm_destroy(comm);
    return 0;
}

static void test_stuck_rank_dumps_everywhere(void **s)
{
    (void)s;
    fresh_dirs();
    const char *env[] = {env_rings, env_dumps, env_clog, "CCOMM_TIMEOUT=2", "CCOMM_LOG_LEVEL=ERROR", NULL};
    assert_int_equal(cc_test_fork_ranks(4, stuck_rank, NULL, 60, env, NULL), 0);
    char files[16][1024];
    time_t first = 0, last = 0;
    for (int r = 0; r < 4; r++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "rank%d.", r);
        int n = find_files("dumps", prefix, ".json", files, 16);
        assert_true(n >= 1); /* every rank dumped, the stuck one too */
        json_error_t err;
        json_t *j = json_load_file(files[0], 0, &err);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "version")), "2.10");
        assert_int_equal(json_integer_value(json_object_get(j, "rank")), r);
        assert_true(json_array_size(json_object_get(j, "entries")) >= 2);
        json_decref(j);
        time_t t = mtime(files[0]);
        if (!first || t < first) first = t;
        if (t > last) last = t;
    }
    assert_true(last - first <= 4); /* all written at about the same moment */
    int nrings = find_files("rings", "rank", ".ccfr", files, 16);
    assert_int_equal(nrings, 4);
    for (int i = 0; i < nrings; i++) { /* readable after the processes are gone */
        cc__fr_reader_t *rd = NULL;
        cc__fr_snapshot_t *snap = NULL;
        char err[256];
        assert_int_equal(cc__fr_reader_open(files[i], &rd, err, sizeof(err)), CC_OK);
        assert_int_equal(cc__fr_reader_snapshot(rd, &snap, err, sizeof(err)), CC_OK);
        assert_false(snap->live);
        int timed_out = 0;
        for (uint32_t k = 0; k < snap->nentries; k++)
            timed_out |= cc__fr_snap_entry(snap, k)->state == CC__FR_TIMED_OUT;
        assert_true(timed_out || snap->hdr.rank == 3 || snap->nentries >= 2);
        cc__fr_snapshot_free(snap);
        cc__fr_reader_close(rd);
    }
    for (int r = 0; r < 4; r++) {
        char p[256], line[128];
        snprintf(p, sizeof(p), "%s/clog/rank%d.log", dir, r);
        FILE *f = fopen(p, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof(line), f));
        assert_true(!strncmp(line, "V|1|", 4));
        fclose(f);
    }
}

/* --- the dump signal --- */
static int signal_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    raise(SIGUSR2);
    sleep(1); /* the watchdog writes it off the signal context */
    cc_comm_destroy(comm);
    return 0;
}

static void test_dump_signal(void **s)
{
    (void)s;
    fresh_dirs();
    const char *env[] = {env_rings, env_dumps, NULL};
    assert_int_equal(cc_test_fork_ranks(1, signal_rank, NULL, 30, env, NULL), 0);
    char files[4][1024];
    assert_int_equal(find_files("dumps", "rank0", ".json", files, 4), 1);
}

/* --- a fatal signal --- */
static int segv_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 1) {
        usleep(200000);
        raise(SIGSEGV);
    }
    char b[4];
    cc_status_t st = cc_recv(comm, b, 4, CC_UINT8, 1, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "recv from the crashed rank: %s", cc_status_name(st));
    cc_comm_destroy(comm);
    return 0;
}

static void test_fatal_signal_marks_ring(void **s)
{
    (void)s;
    fresh_dirs();
    /* Under ASan its SEGV handler would turn the signal into exit status 1. */
    const char *env[] = {env_rings, env_dumps, "CCOMM_LOG_LEVEL=NONE",
                         "ASAN_OPTIONS=handle_segv=0", NULL};
    cc_test_child_t res[2];
    cc_test_fork_ranks(2, segv_rank, NULL, 30, env, res);
    assert_true(res[0].exited && res[0].code == 0);
    assert_int_equal(res[1].signo, SIGSEGV);
    char files[4][1024];
    assert_int_equal(find_files("rings", "rank1.", ".ccfr", files, 4), 1);
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *snap = NULL;
    char err[256];
    assert_int_equal(cc__fr_reader_open(files[0], &rd, err, sizeof(err)), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(rd, &snap, err, sizeof(err)), CC_OK);
    assert_int_equal(snap->hdr.fatal_signal, SIGSEGV);
    cc__fr_snapshot_free(snap);
    cc__fr_reader_close(rd);
}

/* --- SIGSTOP: heartbeats notice it before the 60 s deadline --- */
static int stopped_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    char pidfile[128];
    snprintf(pidfile, sizeof(pidfile), "%s/stopped.pid", (const char *)arg);
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    if (rank == 2) {
        FILE *f = fopen(pidfile, "w");
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        raise(SIGSTOP);
        _exit(0);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    float x = 1;
    cc_status_t st = cc_allreduce(comm, &x, &x, 1, CC_FLOAT32, CC_SUM, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "stopped peer: %s", cc_status_name(st));
    CC_TEST_REQUIRE(dt < 20, "noticed after %.1f s", dt);
    if (rank == 0) { /* end the stopped rank */
        FILE *f = fopen(pidfile, "r");
        int pid = 0;
        if (f && fscanf(f, "%d", &pid) == 1 && pid > 0) kill(pid, SIGKILL);
        if (f) fclose(f);
    }
    cc_comm_destroy(comm);
    return 0;
}

static void test_sigstop_heartbeat(void **s)
{
    (void)s;
    fresh_dirs();
    const char *env[] = {env_rings, env_dumps, "CCOMM_HEARTBEAT_MS=200", "CCOMM_TIMEOUT=60",
                         "CCOMM_LOG_LEVEL=NONE", NULL};
    cc_test_child_t res[3];
    cc_test_fork_ranks(3, stopped_rank, dir, 60, env, res);
    assert_true(res[0].exited && res[0].code == 0);
    assert_true(res[1].exited && res[1].code == 0);
    assert_int_equal(res[2].signo, SIGKILL);
}

/* --- CCOMM_ABORT_ON_TIMEOUT --- */
static int abort_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    if (rank == 1) {
        sleep(4);
        return 0;
    }
    float x = 1;
    cc_allreduce(comm, &x, &x, 1, CC_FLOAT32, CC_SUM, NULL, NULL);
    return 5; /* not reached: the process ends with SIGABRT */
}

static void test_abort_on_timeout(void **s)
{
    (void)s;
    fresh_dirs();
    const char *env[] = {env_rings, env_dumps, "CCOMM_TIMEOUT=1", "CCOMM_ABORT_ON_TIMEOUT=1",
                         "CCOMM_LOG_LEVEL=NONE", NULL};
    cc_test_child_t res[2];
    cc_test_fork_ranks(2, abort_rank, NULL, 30, env, res);
    assert_int_equal(res[0].signo, SIGABRT);
    char files[4][1024];
    assert_true(find_files("dumps", "rank0", ".json", files, 4) >= 1); /* dumped first */
}

/* --- desync check --- */
static int desync_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    float x[1024] = {0};
    CC_TEST_REQUIRE(cc_allreduce(comm, x, x, 1024, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "same");
    cc_status_t st = rank == 2 ? cc_barrier(comm, NULL, NULL)
                               : cc_allreduce(comm, x, x, 1024, CC_FLOAT32, CC_SUM, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_ERR_MISMATCH, "rank %d: %s", rank, cc_status_name(st));
    cc_comm_destroy(comm);
    return 0;
}

static void test_desync(void **s)
{
    (void)s;
    fresh_dirs();
    const char *env[] = {env_rings, env_dumps, "CCOMM_DESYNC_CHECK=1", "CCOMM_LOG_LEVEL=NONE", NULL};
    assert_int_equal(cc_test_fork_ranks(3, desync_rank, NULL, 30, env, NULL), 0);
}

/* Over TCP no arena compares the ops: what fails them is the check alone (the engine reads
 * CCOMM_DESYNC_CHECK once, at the communicator's creation). */
static void test_desync_tcp(void **s)
{
    (void)s;
    fresh_dirs();
    const char *env[] = {env_rings,          env_dumps,         "CCOMM_DESYNC_CHECK=1",
                         "CCOMM_TRANSPORT=tcp", "CCOMM_TIMEOUT=10", "CCOMM_LOG_LEVEL=NONE",
                         NULL};
    assert_int_equal(cc_test_fork_ranks(3, desync_rank, NULL, 30, env, NULL), 0);
}

/* --- a rank waiting in a shared-memory op is on record --- */

/* The newest entry of rank 0's ring under CCOMM_RECORDER_DIR (a child's environment). */
static int newest_of_rank0(cc__fr_entry_t *out)
{
    const char *rings = getenv("CCOMM_RECORDER_DIR");
    if (!rings) return -1;
    char path[1200] = "";
    DIR *d = opendir(rings);
    struct dirent *job;
    while (d && !path[0] && (job = readdir(d))) {
        if (job->d_name[0] == '.') continue;
        char jp[512];
        snprintf(jp, sizeof(jp), "%.250s/%.255s", rings, job->d_name);
        DIR *j = opendir(jp);
        struct dirent *f;
        while (j && (f = readdir(j)))
            if (!strncmp(f->d_name, "rank0.", 6) && strstr(f->d_name, ".ccfr"))
                snprintf(path, sizeof(path), "%s/%.255s", jp, f->d_name);
        if (j) closedir(j);
    }
    if (d) closedir(d);
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *snap = NULL;
    char err[256];
    if (!path[0] || cc__fr_reader_open(path, &rd, err, sizeof(err)) != CC_OK) return -1;
    int rc = -1;
    if (cc__fr_reader_snapshot(rd, &snap, err, sizeof(err)) == CC_OK) {
        uint64_t best = 0;
        for (uint32_t k = 0; k < snap->nentries; k++) {
            const cc__fr_entry_t *e = cc__fr_snap_entry(snap, k);
            if (e->record_id > best) best = e->record_id, *out = *e, rc = 0;
        }
        cc__fr_snapshot_free(snap);
    }
    cc__fr_reader_close(rd);
    return rc;
}

/* arg "allreduce": rank 0 waits for rank 1's arrival (after publishing its own). "stream": the
 * same with 1 MiB that the job's CCOMM_ALGO_ALLREDUCE=shm_stream streams. "broadcast": rank 0,
 * the root of 8-byte broadcasts that need no reader's answer, runs ahead until its arena has no
 * free arrival line, and waits in cc__arena_begin, before it publishes. Rank 1 looks at rank
 * 0's ring meanwhile, then joins. */
static int waiting_rank(int rank, int size, const char *addr, void *arg)
{
    int bcast = !strcmp((const char *)arg, "broadcast");
    size_t count = strcmp((const char *)arg, "stream") ? 1 : 128 * 1024;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    double *x = calloc(count, sizeof(double));
    CC_TEST_REQUIRE(x != NULL, "memory");
    int nops = bcast ? 3 * 64 : 1; /* the arena's arrival lines: CC__ARENA_DEPTH (64) */
    cc_op_type_t type = bcast ? CC_OP_BROADCAST : CC_OP_ALLREDUCE;
    for (int i = 0; i < 2; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, x, x, count, CC_FLOAT64, CC_SUM, NULL, NULL) == CC_OK,
                        "warm");
    if (rank == 1) {
        usleep(1500 * 1000); /* rank 0 waits now */
        cc__fr_entry_t e;
        CC_TEST_REQUIRE(newest_of_rank0(&e) == 0, "rank 0's ring");
        CC_TEST_REQUIRE(e.type == type && e.state == CC__FR_STARTED && e.t_end_ns == 0,
                        "rank 0's newest entry: type %d state %u, want %d started", e.type,
                        e.state, type);
        CC_TEST_REQUIRE(e.coll_seq > 2 && e.coll_seq <= 2 + (uint64_t)nops, "coll_seq %llu",
                        (unsigned long long)e.coll_seq);
        CC_TEST_REQUIRE(count == 1 || !strcmp(e.algorithm, "shm_stream"), "algorithm %.32s",
                        e.algorithm);
    }
    for (int i = 0; i < nops; i++) {
        cc_status_t st = bcast ? cc_broadcast(comm, x, x, 1, CC_FLOAT64, 0, NULL, NULL)
                               : cc_allreduce(comm, x, x, count, CC_FLOAT64, CC_SUM, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_OK, "op %d: %s", i, cc_status_name(st));
    }
    free(x);
    cc_comm_destroy(comm);
    return 0;
}

static void test_waiting_rank_recorded(void **s)
{
    (void)s;
    static const char *const what[] = {"allreduce", "stream", "broadcast"};
    for (int i = 0; i < 3; i++) {
        fresh_dirs();
        const char *env[] = {env_rings, "CCOMM_TRANSPORT=auto", "CCOMM_TIMEOUT=30",
                             "CCOMM_LOG_LEVEL=ERROR", "CCOMM_ALGO_ALLREDUCE=auto", NULL};
        if (i == 1) env[4] = "CCOMM_ALGO_ALLREDUCE=shm_stream";
        assert_int_equal(cc_test_fork_ranks(2, waiting_rank, (void *)what[i], 60, env, NULL), 0);
    }
}

static int remove_dirs(void **s)
{
    (void)s;
    td_remove();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_rank_dumps_everywhere),
        cmocka_unit_test(test_dump_signal),
        cmocka_unit_test(test_fatal_signal_marks_ring),
        cmocka_unit_test(test_sigstop_heartbeat),
        cmocka_unit_test(test_abort_on_timeout),
        cmocka_unit_test(test_desync),
        cmocka_unit_test(test_desync_tcp),
        cmocka_unit_test(test_waiting_rank_recorded),
    };
    return cmocka_run_group_tests(tests, NULL, remove_dirs);
}
