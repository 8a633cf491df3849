/*
 * test_nccl_double.c - NCCL paths proven without a GPU, on the NCCL test
 * double (host memory, tests/nccl_double):
 *  - the interposer: an NCCL program under LD_PRELOAD=libccomm-nccl.so has
 *    every call recorded in order with the right ids and states, its hooks
 *    fire, and a rank that never joins an all-reduce is diagnosed from the
 *    job-wide dumps (the other rank's op timed out, its comm was aborted);
 *  - the NCCL engine in the CUDA plugin: device communicators map every
 *    dtype x op, split through ncclCommSplit, time out and abort; without
 *    the plugin, device communicators are refused cleanly.
 * Each case starts real processes (fork + exec) and reads their rings and
 * dumps with the recorder's reader.
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "bootstrap/store.h"
#include "ccomm/ccomm.h"
#include "recorder/reader.h"

#define KEY       "ccomm-nccl-double-key"
#define MAX_RANKS 4

static char g_dir[128]; /* private temp dir */
static char g_addr[64]; /* the launcher's store (what ccrun would host) */
static char g_job[64];  /* this case's job id */
static int g_case;
static cc__store_server_t *g_srv;

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/ccnccl-%d-XXXXXX", (int)getpid());
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cc__store_server_stop(g_srv);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    if (!getenv("CCTEST_KEEP")) (void)!system(cmd);
    return 0;
}

/* A job: its id, and a fresh store (the core numbers worlds by arrivals on a store). */
static void new_job(const char *name)
{
    snprintf(g_job, sizeof(g_job), "%s-%d-%d", name, (int)getpid(), ++g_case);
    cc__store_server_stop(g_srv);
    assert_int_equal(cc__store_server_start("127.0.0.1", 0, KEY, &g_srv), CC_OK);
    snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%d", cc__store_server_port(g_srv));
}

/* Run `n` ranks of argv (rank and size filled in), each with the job's environment. */
static int run_ranks(int n, const char *prog, const char *scenario, int preload, int timeout_s,
                     const char *extra)
{
    pid_t pids[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] != 0) continue;
        char v[512], rk[16], sz[16], uid[256], dump[256];
        snprintf(rk, sizeof(rk), "%d", r);
        snprintf(sz, sizeof(sz), "%d", n);
        snprintf(v, sizeof(v), "%s/rings", g_dir), setenv("CCOMM_RECORDER_DIR", v, 1);
        setenv("CCOMM_RECORDER_KEEP", "1", 1); /* the rings of ranks that end well are read */
        snprintf(v, sizeof(v), "%s/dumps", g_dir), setenv("CCOMM_DUMP_DIR", v, 1);
        setenv("CCOMM_RANK", rk, 1), setenv("CCOMM_SIZE", sz, 1);
        setenv("CCOMM_STORE_ADDR", g_addr, 1), setenv("CCOMM_JOB_KEY", KEY, 1);
        setenv("CCOMM_JOB_ID", g_job, 1), setenv("CCOMM_NCCL_LIB", CC_DOUBLE_LIB, 1);
        setenv("CCOMM_TIMEOUT", "3", 1), setenv("NCCL_DOUBLE_TIMEOUT_MS", "60000", 1);
        setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
        if (preload) setenv("LD_PRELOAD", CC_INTERPOSER, 1);
        if (extra) putenv((char *)extra);
        snprintf(uid, sizeof(uid), "%s/%s.uid", g_dir, g_job);
        snprintf(dump, sizeof(dump), "%s/dumps/%s/rank%d.json", g_dir, g_job, r);
        const char *arg4 = preload ? uid : g_addr;
        execl(prog, prog, scenario, rk, sz, arg4, dump, (char *)NULL);
        _exit(127);
    }
    int failed = 0;
    for (int t = 0; t < timeout_s * 20; t++) {
        int left = 0;
        for (int r = 0; r < n; r++) {
            int st;
            if (pids[r] <= 0) continue;
            if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                    fprintf(stderr, "rank %d of %s %s ended with status 0x%x\n", r, prog, scenario,
                            st);
                    failed++;
                }
                pids[r] = 0;
            } else {
                left++;
            }
        }
        if (!left) return failed;
        usleep(50000);
    }
    for (int r = 0; r < n; r++)
        if (pids[r] > 0) {
            fprintf(stderr, "rank %d of %s %s still runs after %d s: killed\n", r, prog, scenario,
                    timeout_s);
            kill(pids[r], SIGKILL);
            waitpid(pids[r], NULL, 0);
            failed++;
        }
    return failed;
}

/* Snapshot of rank r's ring in this job. */
static cc__fr_snapshot_t *ring_of(int r)
{
    char dir[256], path[512] = "", prefix[32];
    snprintf(dir, sizeof(dir), "%s/rings/%s", g_dir, g_job);
    snprintf(prefix, sizeof(prefix), "rank%d.", r);
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix)))
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    closedir(d);
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    char err[256];
    assert_int_equal(cc__fr_reader_open(path, &rd, err, sizeof(err)), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(rd, &s, err, sizeof(err)), CC_OK);
    cc__fr_reader_close(rd);
    return s;
}

static const cc__fr_comm_t *comm_named(const cc__fr_snapshot_t *s, const char *prefix, int k)
{
    for (uint32_t i = 0; i < s->ncomms; i++)
        if (!strncmp(s->comms[i].name, prefix, strlen(prefix)) && k-- == 0) return &s->comms[i];
    return NULL;
}

/* The entries of one comm, in record order. */
static int entries_of(const cc__fr_snapshot_t *s, uint64_t comm_id, const cc__fr_entry_t **out,
                      int max)
{
    int n = 0;
    for (uint32_t i = 0; i < s->nentries && n < max; i++) {
        const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
        if (e->comm_id == comm_id) out[n++] = e;
    }
    return n;
}

/* ---- interposer ------------------------------------------------------------------- */

static void check_basic_ring(int r, int n, uint64_t *id_out)
{
    static const cc_op_type_t want[] = {CC_OP_COMM_INIT,      CC_OP_ALLREDUCE,   CC_OP_ALLREDUCE,
                                        CC_OP_ALLREDUCE,      CC_OP_BROADCAST,   CC_OP_ALLGATHER,
                                        CC_OP_REDUCE_SCATTER, CC_OP_SEND,        CC_OP_RECV,
                                        CC_OP_ALLREDUCE,      CC_OP_COMM_DESTROY};
    cc__fr_snapshot_t *s = ring_of(r);
    const cc__fr_comm_t *c = comm_named(s, "nccl.", 0), *child = comm_named(s, "nccl.", 1);
    assert_non_null(c);
    assert_non_null(child);
    assert_int_equal(c->size, n);
    assert_int_equal(c->rank, r);
    assert_true(child->parent_id == c->comm_id);
    const cc__fr_entry_t *e[64];
    int k = entries_of(s, c->comm_id, e, 64);
    uint64_t last_op = 0, seq = 0;
    assert_int_equal(k, (int)(sizeof(want) / sizeof(want[0])));
    for (int i = 0; i < k; i++) {
        assert_int_equal(e[i]->type, want[i]);
        assert_int_equal(e[i]->state, CC__FR_COMPLETED);
        assert_true(e[i]->op_id > last_op);
        last_op = e[i]->op_id;
        if (e[i]->type >= CC_OP_COMM_INIT) continue;
        assert_string_equal(e[i]->engine, "nccl");
        assert_string_equal(e[i]->algorithm, "interposed");
        assert_true(e[i]->t_start_ns >= e[i]->t_enqueue_ns && e[i]->t_end_ns >= e[i]->t_start_ns);
        if (e[i]->type == CC_OP_SEND || e[i]->type == CC_OP_RECV) {
            assert_int_equal(e[i]->p2p_seq, 1);
            assert_int_equal(e[i]->coll_seq, 0);
        } else {
            assert_int_equal(e[i]->coll_seq, ++seq);
        }
    }
    assert_int_equal(seq, 7);
    /* Members were exchanged through the launcher's store. */
    const int32_t *m = cc__fr_snap_comm_ranks(s, c);
    assert_non_null(m);
    for (int i = 0; i < n; i++)
        assert_int_equal(m[i], i);
    *id_out = c->comm_id;
    cc__fr_snapshot_free(s);
}

static void test_interpose_basic(void **state)
{
    (void)state;
    new_job("ix-basic");
    assert_int_equal(run_ranks(2, CC_NCCL_APP, "basic", 1, 60, NULL), 0);
    uint64_t id0 = 0, id1 = 1;
    check_basic_ring(0, 2, &id0);
    check_basic_ring(1, 2, &id1);
    assert_true(id0 == id1); /* the shadow id is the same on every member */
}

/* A dump's entry of comm `desc` with collective_seq_id `seq`, or NULL. */
static json_t *dump_entry(json_t *dump, const char *desc, int seq, int *max_seq)
{
    json_t *entries = json_object_get(dump, "entries"), *found = NULL, *e;
    size_t i;
    json_array_foreach(entries, i, e)
    {
        json_t *pg = json_object_get(e, "process_group");
        if (strcmp(json_string_value(json_array_get(pg, 1)), desc)) continue;
        int s = (int)json_integer_value(json_object_get(e, "collective_seq_id"));
        if (s > *max_seq) *max_seq = s;
        if (s == seq) found = e;
    }
    return found;
}

static json_t *load_dump(int r)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/dumps/%s/rank%d.json", g_dir, g_job, r);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("cannot read dump %s: %s", path, err.text);
    return j;
}

/*
 * The diagnosis from the two dumps: rank 0's all-reduce #3 timed out; rank
 * 1 never issued #3 (its last collective on the comm is #2, completed).
 */
static void check_hang_dumps(const char *engine_comm_prefix)
{
    json_t *d0 = load_dump(0), *d1 = load_dump(1);
    cc__fr_snapshot_t *s = ring_of(0);
    const cc__fr_comm_t *c = comm_named(s, engine_comm_prefix, 0);
    assert_non_null(c);
    int max0 = 0, max1 = 0;
    json_t *e0 = dump_entry(d0, c->name, 3, &max0);
    assert_non_null(e0);
    assert_string_equal(json_string_value(json_object_get(e0, "profiling_name")),
                        "ccomm:all_reduce");
    json_t *cc0 = json_object_get(e0, "ccomm");
    assert_string_equal(json_string_value(json_object_get(cc0, "state")), "timed_out");
    json_t *e1 = dump_entry(d1, c->name, 2, &max1);
    assert_non_null(e1);
    assert_string_equal(json_string_value(json_object_get(e1, "state")), "completed");
    assert_int_equal(max1, 2); /* rank 1 is the one missing from collective 3 */
    assert_int_equal(max0, 3);
    cc__fr_snapshot_free(s);
    json_decref(d0);
    json_decref(d1);
}

/* ccdump, when this build has it, must name rank 1 as the one that never entered #3. */
static void check_ccdump(void)
{
#ifdef CC_CCDUMP
    char cmd[512], out[8192] = "";
    snprintf(cmd, sizeof(cmd), "%s diagnose %s/rings/%s 2>&1", CC_CCDUMP, g_dir, g_job);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 1 || !strstr(out, "rank 1 exited normally but never "
                                                                "entered all_reduce #3 on nccl."))
        fail_msg("ccdump diagnose (status 0x%x) did not blame rank 1:\n%s", rc, out);
#endif
}

static void test_interpose_hang(void **state)
{
    (void)state;
    new_job("ix-hang");
    assert_int_equal(run_ranks(2, CC_NCCL_APP, "hang", 1, 60, NULL), 0);
    check_hang_dumps("nccl.");
    check_ccdump();
}

/* ---- the NCCL engine (CUDA plugin) ---------------------------------------------------- */

#ifdef CC_PLUGIN
static void test_engine_basic(void **state)
{
    (void)state;
    new_job("eng-basic");
    assert_int_equal(run_ranks(2, CC_ENGINE_APP, "basic", 0, 120, "CCOMM_CUDA_PLUGIN=" CC_PLUGIN),
                     0);
    cc__fr_snapshot_t *s = ring_of(0);
    const cc__fr_comm_t *c = comm_named(s, "world", 0);
    assert_non_null(c);
    assert_int_equal(c->device, 0);
    const cc__fr_entry_t *e[256];
    int k = entries_of(s, c->comm_id, e, 256), colls = 0;
    for (int i = 0; i < k; i++) {
        if (e[i]->type >= CC_OP_COMM_INIT) continue;
        assert_string_equal(e[i]->engine, "nccl");
        assert_string_equal(e[i]->transport, "nccl");
        colls += e[i]->coll_seq > 0;
    }
    assert_true(colls > 40);
    cc__fr_snapshot_free(s);
}

static void test_engine_hang(void **state)
{
    (void)state;
    new_job("eng-hang");
    assert_int_equal(run_ranks(2, CC_ENGINE_APP, "hang", 0, 60, "CCOMM_CUDA_PLUGIN=" CC_PLUGIN), 0);
    check_hang_dumps("world");
}
#endif

static void test_engine_no_plugin(void **state)
{
    (void)state;
    new_job("eng-noplugin");
    assert_int_equal(run_ranks(1, CC_ENGINE_APP, "no_plugin", 0, 30,
                               "CCOMM_CUDA_PLUGIN=/nonexistent/libccomm-cuda.so"),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpose_basic),  cmocka_unit_test(test_interpose_hang),
        cmocka_unit_test(test_engine_no_plugin),
#ifdef CC_PLUGIN
        cmocka_unit_test(test_engine_basic),     cmocka_unit_test(test_engine_hang),
#endif
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
