/*
 * test_ccdump_job.c - every ccdump command on the records of real 4-rank
 * jobs (forked ranks, real op door, real rings and dumps):
 *  - a healthy job with blocking and overlapping non-blocking collectives,
 *    point-to-point ops, a split and a mid-run dump (a duplicate record):
 *    diagnose finds nothing, counts each rank once; show, stats and json
 *    (per rank and merged) say what happened; the Perfetto trace has the
 *    structure Perfetto's JSON importer expects (see check_trace);
 *  - a hung job (rank 2 never enters an allreduce): the verdict is the same
 *    from the rings, from `ccdump json`'s ccomm dumps, and from the same
 *    dumps stripped to PyTorch's keys and names, and from the pickles of
 *    `ccdump export --torch`; its trace has timeout and abort markers;
 *  - a rank killed inside an allreduce: the verdict says so, and its slice
 *    stays open to the end of the record;
 *  - a rank waiting in window_wait_signal for a rank that never signals:
 *    the verdict names the sender and the waiter.
 */
#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccdump.h"
#include "fault.h"
#include "job_env.h"
#include "perfetto_check.h"

static char dir[128];

static int run(char **out, int argc, ...)
{
    char *owned[16], *argv[17], *err = NULL;
    va_list ap;
    va_start(ap, argc);
    owned[0] = strdup("ccdump");
    for (int i = 1; i < argc && i < 16; i++)
        owned[i] = strdup(va_arg(ap, const char *));
    va_end(ap);
    memcpy(argv, owned, (size_t)argc * sizeof(char *));
    argv[argc] = NULL;
    size_t lo = 0, le = 0;
    FILE *fo = open_memstream(out, &lo), *fe = open_memstream(&err, &le);
    int rc = ccdump_main(argc, argv, fo, fe);
    fclose(fo);
    fclose(fe);
    if (le) fprintf(stderr, "%s", err);
    free(err);
    for (int i = 0; i < argc; i++)
        free(owned[i]);
    return rc;
}

/* Every kind of op this job knows, overlapping non-blocking ones included. */
static int varied_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL, *half = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    float x[256] = {1}, y[3][256];
    for (int i = 0; i < 3; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, x, y[0], 256, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    cc_work_t *w[3];
    for (int i = 0; i < 3; i++)
        CC_TEST_REQUIRE(cc_allreduce(comm, x, y[i], 256, CC_FLOAT32, CC_SUM, NULL, &w[i]) == CC_OK, "iar");
    for (int i = 0; i < 3; i++) {
        CC_TEST_REQUIRE(cc_work_wait(w[i], 10000) == CC_OK, "wait");
        cc_work_free(w[i]);
    }
    int32_t v = rank, got = -1;
    cc_work_t *sw = NULL;
    CC_TEST_REQUIRE(cc_send(comm, &v, 1, CC_INT32, (rank + 1) % size, NULL, &sw) == CC_OK, "send");
    CC_TEST_REQUIRE(cc_recv(comm, &got, 1, CC_INT32, (rank + size - 1) % size, NULL, NULL) == CC_OK, "recv");
    CC_TEST_REQUIRE(cc_work_wait(sw, 10000) == CC_OK, "send done");
    cc_work_free(sw);
    if (rank == 1) CC_TEST_REQUIRE(cc_recorder_dump(NULL) == CC_OK, "dump");
    CC_TEST_REQUIRE(cc_comm_split(comm, rank / 2, rank, NULL, &half) == CC_OK, "split");
    CC_TEST_REQUIRE(cc_allreduce(half, x, y[0], 16, CC_FLOAT32, CC_MAX, NULL, NULL) == CC_OK, "half");
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    cc_comm_destroy(half);
    cc_comm_destroy(comm);
    return 0;
}

/* A 4-rank job of fn; `failures` ranks may die (by design of the scenario). */
static void job(cc_test_rank_fn fn, const char *name, int failures)
{
    assert_int_equal(ccd_test_job(fn, dir, name), failures);
}

static json_t *diagnose_json(const char *path, int want_status)
{
    char *out = NULL;
    int rc = run(&out, 4, "diagnose", "--json", path);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    if (!j) fail_msg("diagnose --json %s: %s", path, je.text);
    if (rc != want_status) fail_msg("diagnose %s: exit %d, expected %d\n%s", path, rc, want_status, out);
    free(out);
    return j;
}

static const char *verdict_kind(json_t *r)
{
    return json_string_value(json_object_get(json_object_get(r, "verdict"), "kind"));
}

static int first_culprit(json_t *r)
{
    return (int)json_integer_value(json_array_get(json_object_get(json_object_get(r, "verdict"), "culprits"), 0));
}

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) fail_msg("%s: %s", path, je.text);
    return j;
}

static void test_healthy_job(void **state)
{
    (void)state;
    char path[300], *out = NULL;
    job(varied_rank, "varied", 0);
    json_t *r = diagnose_json(dir, 0);
    assert_string_equal(verdict_kind(r), "ok");
    json_t *jb = json_object_get(r, "job");
    assert_int_equal(json_integer_value(json_object_get(jb, "ranks_with_records")), 4);
    assert_true(json_integer_value(json_object_get(jb, "duplicates")) >= 1); /* rank 1: ring + dump */
    json_decref(r);

    assert_int_equal(run(&out, 5, "show", "--rank", "0,2", dir), 0);
    assert_non_null(strstr(out, "rank 0  host"));
    assert_non_null(strstr(out, "communicator world"));
    assert_null(strstr(out, "rank 1  host"));
    assert_non_null(strstr(out, "all_reduce"));
    free(out);

    assert_int_equal(run(&out, 4, "stats", "--json", dir), 0);
    json_t *st = json_loads(out, 0, NULL);
    assert_true(json_is_array(st) && json_array_size(st) >= 4);
    size_t i;
    json_t *row;
    int ar = 0;
    json_array_foreach(st, i, row)
        if (!strcmp(json_string_value(json_object_get(row, "op")), "all_reduce") &&
            json_integer_value(json_object_get(row, "bytes")) == 1024) {
            assert_int_equal(json_integer_value(json_object_get(row, "count")), 24);
            assert_true(json_real_value(json_object_get(row, "busbw_gbps")) > 0);
            ar = 1;
        }
    assert_true(ar);
    json_decref(st);
    free(out);

    snprintf(path, sizeof(path), "%s/json", dir);
    char merged[300];
    snprintf(merged, sizeof(merged), "%s/merged.json", dir);
    assert_int_equal(run(&out, 7, "json", dir, "-o", path, "--merged", merged), 0);
    free(out);
    for (int k = 0; k < 4; k++) {
        char f[400];
        snprintf(f, sizeof(f), "%s/rank%d.json", path, k);
        json_t *d = load(f);
        assert_string_equal(json_string_value(json_object_get(d, "version")), "2.10");
        assert_true(json_array_size(json_object_get(d, "entries")) >= 9);
        assert_true(json_object_size(json_object_get(d, "pg_config")) >= 2);
        json_decref(d);
    }
    json_t *m = load(merged);
    assert_int_equal(json_object_size(json_object_get(m, "ranks")), 4);
    json_decref(m);
    r = diagnose_json(merged, 0); /* a merged document is an input too */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "job"), "ranks_with_records")), 4);
    json_decref(r);
    /* The converted dumps tell the same story as the rings. */
    r = diagnose_json(path, 0);
    assert_string_equal(verdict_kind(r), "ok");
    json_decref(r);

    snprintf(path, sizeof(path), "%s/trace.json", dir);
    assert_int_equal(run(&out, 5, "perfetto", dir, "-o", path), 0);
    free(out);
    json_t *t = load(path);
    ccd_trace_facts_t facts;
    const char *why = ccd_check_trace(t, &facts);
    if (why) fail_msg("trace: %s", why);
    assert_int_equal(facts.processes, 4);
    assert_true(facts.flows >= 4 + 6); /* the collectives across ranks, the sends to their receives */
    assert_true(facts.counters > 0);
    assert_true(facts.overlap_tracks > 0); /* the three non-blocking allreduces */
    json_decref(t);
}

/* PyTorch's dump of a rank: its keys only, named <prefix><rank>. */
static void torchify(const char *src, const char *dst_dir, int rank)
{
    json_t *d = load(src);
    json_object_del(d, "ccomm");
    json_object_del(d, "rank");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(d, "entries"), i, e)
        json_object_del(e, "ccomm");
    char dst[400];
    snprintf(dst, sizeof(dst), "%s/comm_lib_trace_rank_%d", dst_dir, rank);
    assert_int_equal(json_dump_file(d, dst, 0), 0);
    json_decref(d);
}

static void test_hung_job(void **state)
{
    (void)state;
    char jdir[200], tdir[200], path[300], *out = NULL;
    job(fault_compute, "fault-compute", 0);
    json_t *r = diagnose_json(dir, 1);
    assert_int_equal(first_culprit(r), 2);
    json_decref(r);

    snprintf(jdir, sizeof(jdir), "%s/json", dir);
    assert_int_equal(run(&out, 5, "json", dir, "-o", jdir), 0);
    free(out);
    r = diagnose_json(jdir, 1);
    assert_int_equal(first_culprit(r), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "verdict"), "op")), "all_reduce");
    json_decref(r);

    snprintf(tdir, sizeof(tdir), "%s/torch", dir);
    mkdir(tdir, 0700);
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof(path), "%s/rank%d.json", jdir, k);
        torchify(path, tdir, k);
    }
    r = diagnose_json(tdir, 1);
    assert_string_equal(verdict_kind(r), "not_entered"); /* a PyTorch dump cannot tell the process's fate */
    assert_int_equal(first_culprit(r), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "verdict"), "op")), "all_reduce");
    json_decref(r);

    /* ccomm -> PyTorch's pickles (export --torch) -> ccdump: the rings' diagnosis. */
    json_t *rings = diagnose_json(dir, 1);
    snprintf(path, sizeof(path), "%s/pickles", dir);
    assert_int_equal(run(&out, 5, "export", dir, "--torch", path), 0);
    free(out);
    r = diagnose_json(path, 1);
    assert_int_equal(first_culprit(r), 2);
    assert_string_equal(verdict_kind(r), verdict_kind(rings));
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "verdict"), "op")), "all_reduce");
    json_decref(r);
    json_decref(rings);

    snprintf(path, sizeof(path), "%s/trace.json", dir);
    assert_int_equal(run(&out, 5, "perfetto", dir, "-o", path), 0);
    free(out);
    json_t *t = load(path);
    ccd_trace_facts_t facts;
    const char *why = ccd_check_trace(t, &facts);
    if (why) fail_msg("trace: %s", why);
    /* The others time out, or lose rank 2 once one of them aborts. */
    if (facts.timeouts < 1 || facts.aborts < 3)
        fail_msg("hung job's trace: %d timeouts, %d aborts", facts.timeouts, facts.aborts);
    json_decref(t);
}

/* Rank 2 killed inside an allreduce: its slice stays open to the end of the record. */
static void test_killed_job(void **state)
{
    (void)state;
    char path[300], *out = NULL;
    job(fault_sigkill, "fault-sigkill", 1);
    json_t *r = diagnose_json(dir, 1);
    assert_string_equal(verdict_kind(r), "killed");
    assert_int_equal(first_culprit(r), 2);
    /* A launcher's SIGTERM (ccrun's, torchrun's) leaves no mark in the ring either:
     * the verdict must not name SIGKILL as the only way. */
    const char *text = json_string_value(json_object_get(json_object_get(r, "verdict"), "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "SIGTERM"));
    json_decref(r);
    snprintf(path, sizeof(path), "%s/trace.json", dir);
    assert_int_equal(run(&out, 5, "perfetto", dir, "-o", path), 0);
    free(out);
    json_t *t = load(path);
    ccd_trace_facts_t facts;
    const char *why = ccd_check_trace(t, &facts);
    if (why) fail_msg("trace: %s", why);
    if (facts.open_slices < 1 || facts.aborts < 3)
        fail_msg("killed job's trace: %d open slices, %d aborts", facts.open_slices, facts.aborts);
    json_decref(t);
}

/* Rank 0 waits for a signal in a window that rank 3 never sends; the others just leave. */
static int unsignalled_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&comm, rank, size, addr, NULL) == CC_OK, "init");
    cc_window_t *w = NULL;
    CC_TEST_REQUIRE(cc_window_create(comm, NULL, 0, NULL, &w) == CC_OK, "window");
    if (rank == 0) {
        cc_op_opts_t o = CC_OP_OPTS_INIT;
        o.timeout_ms = 500;
        cc_status_t st = cc_window_wait_signal(w, 3, 1, &o, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT, "wait: %s", cc_status_name(st));
    } else {
        sleep(1); /* past rank 0's timeout, then exit without a signal */
    }
    return 0;
}

/* diagnose names the rank that never signalled and the rank that waited for it. */
static void check_unsignalled(void)
{
    json_t *r = diagnose_json(dir, 1);
    assert_int_equal(first_culprit(r), 3);
    const char *text = json_string_value(json_object_get(json_object_get(r, "verdict"), "text"));
    assert_non_null(text);
    if (!strstr(text, "never signalled rank 0") || !strstr(text, "window_wait_signal from rank 3"))
        fail_msg("verdict: %s", text);
    json_decref(r);
}

static void test_unsignalled_job(void **state)
{
    (void)state;
    job(unsignalled_rank, "unsignalled", 0);
    check_unsignalled();
}

/* The same over TCP windows (the target's progress path): the same record, the same verdict. */
static void test_unsignalled_tcp_job(void **state)
{
    (void)state;
    assert_int_equal(ccd_test_job_env(unsignalled_rank, dir, "unsignalled-tcp",
                                      "CCOMM_TRANSPORT=tcp"), 0);
    check_unsignalled();
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ccdump-job-%d-XXXXXX", (int)getpid());
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
#if defined(__SANITIZE_THREAD__)
    printf("skipped: forked ranks of a multi-threaded parent under TSan\n");
    return 77;
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hung_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsignalled_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsignalled_tcp_job, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
