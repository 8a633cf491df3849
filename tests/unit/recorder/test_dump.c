/*
 * test_dump.c - the JSON dump: every PyTorch key with its type, the state
 * mapping, profiling names, pg_config / pg_status, ccomm's extras, frames,
 * the default path and the atomic write, the GPU flush a dump calls first.
 */
#include <dirent.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <cmocka.h>

#include "rec_util.h"

static const int32_t world2[2] = {0, 1};

static json_t *get(json_t *obj, const char *key, json_type type)
{
    json_t *v = json_object_get(obj, key);
    if (!v) fail_msg("key \"%s\" missing", key);
    if (json_typeof(v) != type)
        fail_msg("key \"%s\" has type %d, not %d", key, json_typeof(v), type);
    return v;
}

static json_t *load(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: %s (line %d)", path, err.text, err.line);
    return j;
}

/* An op issued by a named function, so frames can be checked. */
static __attribute__((noinline)) void issue_op(cc__op_t *op, cc_status_t status, int steps)
{
    cc__recorder_pre(&op->info, &REC_ID(op));
    if (steps < 2) return;
    op->info.algorithm = "ring";
    op->info.transport = "shm";
    cc__recorder_start(&op->info, REC_ID(op));
    if (steps < 3) return;
    op->info.status = status;
    cc__recorder_post(&op->info, REC_ID(op));
}

static void record_mix(void)
{
    cc__recorder_add_comm(77, 0, "world", 0, 2, world2);
    cc__op_t ops[8];
    rec_op(&ops[0], CC_OP_ALLREDUCE, 77, 1, 1);
    issue_op(&ops[0], CC_OK, 3);
    rec_op(&ops[1], CC_OP_SEND, 77, 2, 1);
    issue_op(&ops[1], CC_OK, 3);
    rec_op(&ops[2], CC_OP_RECV, 77, 3, 1);
    issue_op(&ops[2], CC_OK, 3);
    rec_op(&ops[3], CC_OP_ALLREDUCE, 77, 4, 2);
    issue_op(&ops[3], CC_ERR_TIMEOUT, 3);
    rec_op(&ops[4], CC_OP_ALLGATHER, 77, 5, 3);
    ops[4].info.out_count = 2048;
    issue_op(&ops[4], CC_OK, 2);
    rec_op(&ops[5], CC_OP_BARRIER, 77, 6, 4);
    ops[5].info.dtype = CC_DTYPE_COUNT;
    ops[5].info.in_count = ops[5].info.out_count = 0;
    issue_op(&ops[5], CC_OK, 1);
    rec_op(&ops[6], CC_OP_COMM_DESTROY, 77, 7, 0);
    issue_op(&ops[6], CC_OK, 3);
}

/* Open a ring, record the mix, dump it to <dir>/<name> and load the dump. */
static json_t *dump_mix(int entries, int stack, const char *name)
{
    assert_int_equal(rec_open(entries, stack), CC_OK);
    record_mix();
    char path[400];
    snprintf(path, sizeof(path), "%s/%s", rec_dir, name);
    assert_int_equal(cc_recorder_dump(path), CC_OK);
    return load(path);
}

static json_t *entry_by_op(json_t *entries, json_int_t op_id)
{
    size_t i;
    json_t *e;
    json_array_foreach(entries, i,
                       e) if (json_integer_value(json_object_get(e, "op_id")) == op_id) return e;
    fail_msg("no entry for op %lld", (long long)op_id);
    return NULL;
}

static void check_entry_keys(json_t *e)
{
    static const char *ints[] = {"record_id",
                                 "pg_id",
                                 "collective_seq_id",
                                 "p2p_seq_id",
                                 "op_id",
                                 "time_created_ns",
                                 "time_discovered_started_ns",
                                 "time_discovered_completed_ns",
                                 "timeout_ms"};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        get(e, ints[i], JSON_INTEGER);
    static const char *strs[] = {"thread_id", "thread_name", "profiling_name", "state"};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        get(e, strs[i], JSON_STRING);
    static const char *arrays[] = {"input_sizes", "input_dtypes", "output_sizes", "output_dtypes",
                                   "frames"};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
        get(e, arrays[i], JSON_ARRAY);
    json_t *pg = get(e, "process_group", JSON_ARRAY);
    assert_int_equal(json_array_size(pg), 2);
    assert_true(json_is_string(json_array_get(pg, 0)) && json_is_string(json_array_get(pg, 1)));
    assert_true(json_is_boolean(json_object_get(e, "retired")));
    assert_true(json_is_boolean(json_object_get(e, "is_p2p")));
    size_t i;
    json_t *v;
    json_array_foreach(get(e, "input_sizes", JSON_ARRAY), i, v)
    {
        assert_true(json_is_array(v));
        assert_true(json_is_integer(json_array_get(v, 0)));
    }
    assert_int_equal(json_array_size(get(e, "input_sizes", JSON_ARRAY)),
                     json_array_size(get(e, "input_dtypes", JSON_ARRAY)));
    json_t *x = get(e, "ccomm", JSON_OBJECT);
    static const char *xs[] = {"state",  "status", "algorithm", "transport",
                               "engine", "host",   "comm_id",   "comm_name"};
    for (size_t k = 0; k < sizeof(xs) / sizeof(xs[0]); k++)
        get(x, xs[k], JSON_STRING);
    static const char *xi[] = {"bytes", "peer", "root", "pid", "thread_id"};
    for (size_t k = 0; k < sizeof(xi) / sizeof(xi[0]); k++)
        get(x, xi[k], JSON_INTEGER);
}

static void test_pytorch_keys(void **state)
{
    (void)state;
    json_t *j = dump_mix(64, 0, "d.json");
    assert_string_equal(json_string_value(get(j, "version", JSON_STRING)), "2.10");
    assert_string_equal(json_string_value(get(j, "comm_lib_version", JSON_STRING)),
                        "ccomm-" CC_VERSION_STRING);
    assert_int_equal(json_integer_value(get(j, "rank", JSON_INTEGER)), 0);
    json_t *pg = get(get(j, "pg_config", JSON_OBJECT), "77", JSON_OBJECT);
    assert_string_equal(json_string_value(get(pg, "name", JSON_STRING)), "77");
    assert_string_equal(json_string_value(get(pg, "desc", JSON_STRING)), "world");
    assert_string_equal(json_string_value(get(pg, "ranks", JSON_STRING)), "[0, 1]");
    json_t *st = get(get(j, "pg_status", JSON_OBJECT), "0", JSON_OBJECT);
    assert_string_equal(json_string_value(get(st, "last_enqueued_collective", JSON_STRING)), "4");
    assert_string_equal(json_string_value(get(st, "last_started_collective", JSON_STRING)), "3");
    assert_string_equal(json_string_value(get(st, "last_completed_collective", JSON_STRING)), "1");
    json_t *entries = get(j, "entries", JSON_ARRAY);
    assert_int_equal(json_array_size(entries), 6); /* the destroy is under ccomm.lifecycle */
    size_t i;
    json_t *e;
    json_int_t prev = 0;
    json_array_foreach(entries, i, e)
    {
        check_entry_keys(e);
        json_int_t rid = json_integer_value(json_object_get(e, "record_id"));
        assert_true(rid > prev);
        prev = rid;
    }
    json_t *c = get(j, "ccomm", JSON_OBJECT);
    assert_int_equal(json_array_size(get(c, "lifecycle", JSON_ARRAY)), 1);
    assert_int_equal(json_array_size(get(c, "torn", JSON_ARRAY)), 0);
    assert_int_equal(json_integer_value(get(c, "pid", JSON_INTEGER)), getpid());
    json_t *comm = json_array_get(get(c, "comms", JSON_ARRAY), 0);
    assert_true(json_is_true(json_object_get(comm, "destroyed")));
    assert_string_equal(json_string_value(get(comm, "comm_id", JSON_STRING)), "77");
    json_decref(j);
}

static void test_entry_values(void **state)
{
    (void)state;
    json_t *j = dump_mix(64, 0, "d.json"), *entries = get(j, "entries", JSON_ARRAY);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    json_int_t now = (json_int_t)ts.tv_sec * 1000000000 + ts.tv_nsec;

    json_t *ar = entry_by_op(entries, 1);
    assert_string_equal(json_string_value(json_object_get(ar, "profiling_name")),
                        "ccomm:all_reduce");
    assert_string_equal(json_string_value(json_object_get(ar, "state")), "completed");
    assert_true(json_is_real(get(ar, "duration_ms", JSON_REAL)));
    assert_true(json_is_true(json_object_get(ar, "retired")));
    assert_true(json_is_false(json_object_get(ar, "is_p2p")));
    json_int_t created = json_integer_value(json_object_get(ar, "time_created_ns"));
    assert_true(created > now - 60000000000LL && created <= now);
    assert_true(json_integer_value(json_object_get(ar, "time_discovered_completed_ns")) >= created);
    assert_int_equal(json_integer_value(
                         json_array_get(json_array_get(json_object_get(ar, "input_sizes"), 0), 0)),
                     1024);
    assert_string_equal(json_string_value(json_array_get(json_object_get(ar, "input_dtypes"), 0)),
                        "Float");
    assert_string_equal(json_string_value(json_array_get(json_object_get(ar, "process_group"), 0)),
                        "77");

    json_t *send = entry_by_op(entries, 2), *recv = entry_by_op(entries, 3);
    assert_string_equal(json_string_value(json_object_get(send, "profiling_name")),
                        "ccomm:send 0->1");
    assert_string_equal(json_string_value(json_object_get(recv, "profiling_name")),
                        "ccomm:recv 0<-1");
    assert_true(json_is_true(json_object_get(send, "is_p2p")));
    assert_int_equal(json_integer_value(json_object_get(send, "p2p_seq_id")), 1);
    assert_int_equal(json_array_size(json_object_get(recv, "input_sizes")), 1);

    json_t *to = entry_by_op(entries, 4); /* timed out after it started */
    assert_string_equal(json_string_value(json_object_get(to, "state")), "started");
    assert_null(json_object_get(to, "duration_ms"));
    assert_int_equal(json_integer_value(json_object_get(to, "time_discovered_completed_ns")), 0);
    assert_true(json_is_true(json_object_get(to, "retired")));
    json_t *x = json_object_get(to, "ccomm");
    assert_string_equal(json_string_value(json_object_get(x, "state")), "timed_out");
    assert_string_equal(json_string_value(json_object_get(x, "status")), "ERR_TIMEOUT");
    assert_string_equal(json_string_value(json_object_get(x, "algorithm")), "ring");

    json_t *ag = entry_by_op(entries, 5); /* started, still running */
    assert_string_equal(json_string_value(json_object_get(ag, "state")), "started");
    assert_true(json_is_false(json_object_get(ag, "retired")));
    assert_int_equal(json_integer_value(
                         json_array_get(json_array_get(json_object_get(ag, "output_sizes"), 0), 0)),
                     2048);

    json_t *ba = entry_by_op(entries, 6); /* scheduled, no data */
    assert_string_equal(json_string_value(json_object_get(ba, "state")), "scheduled");
    assert_int_equal(json_array_size(json_object_get(ba, "input_sizes")), 0);
    assert_int_equal(json_integer_value(json_object_get(ba, "time_discovered_started_ns")), 0);
    json_decref(j);
}

static void test_default_path_and_atomic(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    record_mix();
    assert_int_equal(cc_recorder_dump(NULL), CC_OK);
    assert_int_equal(cc_recorder_dump(NULL), CC_OK); /* does not overwrite the first */
    char path[400];
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            snprintf(path, sizeof(path), "%s/dumps/test-job/rank0.json", rec_dir);
        else
            snprintf(path, sizeof(path), "%s/dumps/test-job/rank0.1.json", rec_dir);
        json_t *j = load(path);
        assert_int_equal(
            json_integer_value(get(get(j, "ccomm", JSON_OBJECT), "dumps_written", JSON_INTEGER)),
            k);
        json_decref(j);
    }
    /* An explicit path is replaced, atomically: no temporary file is left behind. */
    snprintf(path, sizeof(path), "%s/dumps/test-job/rank0.json", rec_dir);
    assert_int_equal(cc_recorder_dump(path), CC_OK);
    json_t *j = load(path);
    assert_int_equal(
        json_integer_value(get(get(j, "ccomm", JSON_OBJECT), "dumps_written", JSON_INTEGER)), 2);
    json_decref(j);
    snprintf(path, sizeof(path), "%s/dumps/test-job", rec_dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (de->d_name[0] != '.') {
            files++;
            assert_true(!strcmp(de->d_name, "rank0.json") || !strcmp(de->d_name, "rank0.1.json"));
        }
    closedir(d);
    assert_int_equal(files, 2);
    assert_int_equal(cc_recorder_dump(""), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_recorder_dump("/nonexistent-dir/x/y.json"), CC_ERR_SYSTEM);
}

static void test_empty_ring(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    char path[400];
    snprintf(path, sizeof(path), "%s/e.json", rec_dir);
    assert_int_equal(cc_recorder_dump(path), CC_OK);
    json_t *j = load(path);
    assert_null(json_object_get(j, "entries")); /* as PyTorch: left out when empty */
    get(j, "pg_config", JSON_OBJECT);
    get(j, "pg_status", JSON_OBJECT);
    json_decref(j);
}

static void test_frames(void **state)
{
    (void)state;
    json_t *j = dump_mix(16, 1, "f.json");
    json_t *frames = get(entry_by_op(get(j, "entries", JSON_ARRAY), 1), "frames", JSON_ARRAY);
    assert_true(json_array_size(frames) >= 2);
    json_t *f0 = json_array_get(frames, 0);
    assert_non_null(
        strstr(json_string_value(get(f0, "filename", JSON_STRING)), "test_recorder_dump"));
    get(f0, "line", JSON_INTEGER);
    /* The callers by symbol, as the optimizer left them: an optimizing build may name a
     * specialized copy of a function "issue_op.constprop.0" (noinline keeps the frame,
     * not the name), so "fn+0x.." or "fn.<suffix>+0x..". */
    static const char *const callers[] = {"issue_op", "record_mix"};
    for (size_t i = 0; i < 2; i++) {
        const char *name = json_string_value(get(json_array_get(frames, i), "name", JSON_STRING));
        size_t len = strlen(callers[i]);
        if (strncmp(name, callers[i], len) != 0 || (name[len] != '+' && name[len] != '.') ||
            !strstr(name + len, "+0x"))
            fail_msg("frame %zu is %s, want %s+0x...", i, name, callers[i]);
    }
    json_decref(j);
}

/*
 * The entry's dtype byte is a stored code, not the enum's CC_DTYPE_COUNT: "none" stays 10, as
 * format 1.0/1.1 writers stored it when ccomm had ten dtypes, so their files still read; the
 * dtypes added since (int16, uint16) take the codes after it.
 */
static void test_dtype_codes(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    cc__recorder_add_comm(77, 0, "world", 0, 2, world2);
    const cc_dtype_t dts[] = {CC_DTYPE_COUNT, CC_INT16, CC_UINT16, CC_FLOAT64};
    const uint8_t codes[] = {10, 11, 12, 9};
    const char *torch[] = {NULL, "Short", "UInt16", "Double"};
    cc__op_t op;
    for (int k = 0; k < 4; k++) {
        rec_op(&op, CC_OP_ALLREDUCE, 77, (uint64_t)k + 1, (uint64_t)k + 1);
        op.info.dtype = dts[k];
        if (dts[k] == CC_DTYPE_COUNT) {
            op.info.type = CC_OP_BARRIER;
            op.info.in_count = op.info.out_count = 0;
        }
        rec_run(&op, CC_OK);
    }
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->nentries, 4);
    for (uint32_t k = 0; k < 4; k++)
        assert_int_equal(cc__fr_snap_entry(s, k)->dtype, codes[k]);
    cc__fr_snapshot_free(s);
    char path[400];
    snprintf(path, sizeof(path), "%s/codes.json", rec_dir);
    assert_int_equal(cc_recorder_dump(path), CC_OK);
    json_t *j = load(path), *entries = get(j, "entries", JSON_ARRAY);
    for (int k = 0; k < 4; k++) {
        json_t *dt = json_object_get(entry_by_op(entries, k + 1), "input_dtypes");
        if (!torch[k])
            assert_int_equal(json_array_size(dt), 0); /* the barrier has no data */
        else
            assert_string_equal(json_string_value(json_array_get(dt, 0)), torch[k]);
    }
    json_decref(j);
}

/*
 * A dump asked for with cc_recorder_dump first calls the GPU flush the CUDA
 * plugin registered (CUPTI's buffers), so kernel times that were still held
 * there are in that dump: on an H200 every CUPTI time was missing from a
 * dump taken right after the ops until the flush was called.
 */
static uint64_t g_flush_rec;
static int g_flushes;

static void gpu_flush(void)
{
    g_flushes++;
    cc__recorder_gpu(g_flush_rec, 1000, 1500, "cupti");
}

static void test_dump_flushes_gpu_times(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    cc__recorder_add_comm(77, 0, "world", 0, 2, world2);
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 77, 1, 1);
    issue_op(&op, CC_OK, 3);
    g_flush_rec = REC_ID(&op);
    g_flushes = 0;
    cc__recorder_set_gpu_flush(gpu_flush);
    char path[400];
    snprintf(path, sizeof(path), "%s/flushed.json", rec_dir);
    assert_int_equal(cc_recorder_dump(path), CC_OK);
    cc__recorder_set_gpu_flush(NULL);
    assert_int_equal(g_flushes, 1);
    json_t *j = load(path);
    json_t *cc = get(entry_by_op(get(j, "entries", JSON_ARRAY), 1), "ccomm", JSON_OBJECT);
    /* The dump gives wall-clock times: the span is what the flush reported. */
    json_int_t t0 = json_integer_value(get(cc, "gpu_start_ns", JSON_INTEGER));
    assert_true(t0 > 0);
    assert_int_equal(json_integer_value(get(cc, "gpu_end_ns", JSON_INTEGER)) - t0, 500);
    assert_string_equal(json_string_value(get(cc, "gpu_kernel", JSON_STRING)), "cupti");
    json_decref(j);
    /* Cleared: the next dump calls nothing. */
    assert_int_equal(cc_recorder_dump(path), CC_OK);
    assert_int_equal(g_flushes, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dump_flushes_gpu_times, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_pytorch_keys, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_entry_values, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_default_path_and_atomic, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_empty_ring, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_frames, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_dtype_codes, rec_setup, rec_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
