/*
 * test_ccdump_pickle.c - ccdump and PyTorch's pickle dumps, both ways:
 *  - dumps shaped like PyTorch 2.x (protocol 2, as torch's pickler writes)
 *    and torchcomms (protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE), and
 *    their JSON form, made here with Python's own pickle module: a 4-rank
 *    hang that every command reads and diagnose blames on the right rank;
 *    ranks from file names, prefixes inferred or given with -p;
 *  - `ccdump export --torch`: the pickles load with Python's pickle.load
 *    and have PyTorch's keys and types (checked by a Python snippet that
 *    applies the analyzer's own expectations), and tell ccdump the same
 *    story as the dumps they came from;
 *  - hostile pickles: every refused opcode, truncation at every byte, deep
 *    nesting, lengths beyond the file, memo indices out of range, bad
 *    protocols, integers beyond int64, a memo bomb: a clear error naming
 *    the opcode and its offset, never a crash.
 * Without python3 the test is skipped (exit 77).
 */
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccdump.h"
#include "fault.h"
#include "job_env.h"
#include "load.h"
#include "pickle.h"
#include "recorder/ring.h"

static char dir[128];
static const char *data_dir, *rules_py;

/* Runs a Python script (its stdin) with arguments; its exit status. */
static int python(const char *script, const char *args)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "python3 - %s", args);
    FILE *p = popen(cmd, "w");
    if (!p) return -1;
    fputs(script, p);
    return pclose(p);
}

/* 4 ranks of one process group; rank 2 never enters all_reduce #5. */
static const char make_dumps[] =
    "import json, pickle, sys\n"
    "out, proto, prefix, version, form = sys.argv[1], int(sys.argv[2]), sys.argv[3], "
    "sys.argv[4], sys.argv[5]\n"
    "T = 1764500000000000000\n"
    "def entry(rank, rid, seq, p2p, name, state, t, sizes):\n"
    "    e = {'record_id': rid, 'pg_id': 0, 'process_group': ('0', 'default_pg'),\n"
    "         'thread_id': '1400%d' % rank, 'thread_name': 'pt_main', 'collective_seq_id': seq,\n"
    "         'p2p_seq_id': p2p, 'op_id': rid + 1, 'profiling_name': name,\n"
    "         'time_created_ns': t, 'input_sizes': [sizes], 'input_dtypes': ['Float'],\n"
    "         'output_sizes': [sizes], 'output_dtypes': ['Float'], 'state': state,\n"
    "         'time_discovered_started_ns': t + 1000 if state != 'scheduled' else None,\n"
    "         'time_discovered_completed_ns': t + 250000 if state == 'completed' else None,\n"
    "         'retired': state == 'completed', 'timeout_ms': 600000,\n"
    "         'is_p2p': ' ' in name,\n"
    "         'frames': [{'name': 'train_step', 'filename': 'train.py', 'line': 42},\n"
    "                    {'name': '<module>', 'filename': 'train.py', 'line': 7}]}\n"
    "    if state == 'completed': e['duration_ms'] = 0.25\n"
    "    return e\n"
    "for r in range(4):\n"
    "    ents, rid = [], 0\n"
    "    for s in range(1, 5):\n"
    "        ents.append(entry(r, rid, s, 0, 'nccl:all_reduce', 'completed', T + rid * 10**6, "
    "[1024])); rid += 1\n"
    "    ents.append(entry(r, rid, 0, 1, 'nccl:send %d->%d' % (r, (r + 1) % 4), 'completed', T + "
    "rid * 10**6, [8])); rid += 1\n"
    "    ents.append(entry(r, rid, 0, 2, 'nccl:recv %d<-%d' % (r, (r + 3) % 4), 'completed', T + "
    "rid * 10**6, [8])); rid += 1\n"
    "    if r != 2:\n"
    "        ents.append(entry(r, rid, 5, 2, 'nccl:all_reduce', 'started', T + rid * 10**6, "
    "[1024]))\n"
    "    last = 4 if r == 2 else 5\n"
    "    d = {'version': version, 'pg_config': {'0': {'name': '0', 'desc': 'default_pg', "
    "'ranks': '[0, 1, 2, 3]'}},\n"
    "         'pg_status': {'0': {'last_enqueued_collective': last, 'last_started_collective': "
    "last, 'last_completed_collective': 4}},\n"
    "         'entries': ents}\n"
    "    d['nccl_version' if version < '2.5' else 'comm_lib_version'] = '2.21.5'\n"
    "    if form == 'json':\n"
    "        for e in ents:\n"
    "            e['process_group'] = list(e['process_group']); del e['frames']\n"
    "            for k in ('time_discovered_started_ns', 'time_discovered_completed_ns'):\n"
    "                e[k] = e[k] or 0\n"
    "        for v in d['pg_status'].values():\n"
    "            for k in v: v[k] = str(v[k])\n"
    "        json.dump(d, open('%s/%s%d.json' % (out, prefix, r), 'w'))\n"
    "    else:\n"
    "        pickle.dump(d, open('%s/%s%d' % (out, prefix, r), 'wb'), protocol=proto)\n";

/* The analyzer's expectations of a dump (torch/distributed/flight_recorder). */
static const char check_export[] =
    "import ast, pickle, sys\n"
    "out, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "COLL = {'broadcast', 'reduce', 'all_gather', 'all_reduce', 'reduce_scatter', 'gather',\n"
    "        'scatter', 'all_to_all', 'all_reduce_barrier', 'coalesced'}\n"
    "def fail(m):\n"
    "    print('export check:', m); sys.exit(1)\n"
    "for r in range(n):\n"
    "    d = pickle.load(open('%s/%s%d' % (out, prefix, r), 'rb'))\n"
    "    if not isinstance(d['version'], str) or not d['version'].startswith('2.'): "
    "fail('version')\n"
    "    for name, pg in d['pg_config'].items():\n"
    "        ranks = ast.literal_eval(pg['ranks'])\n"
    "        if not isinstance(pg['ranks'], str) or not isinstance(ranks, list): fail('ranks')\n"
    "        if not isinstance(pg['desc'], str): fail('desc')\n"
    "    for st in d['pg_status'].values():\n"
    "        for v in st.values():\n"
    "            if type(v) is not int: fail('pg_status %r' % (v,))\n"
    "    if not isinstance(d['entries'], list): fail('entries')\n"
    "    for e in d['entries']:\n"
    "        for k in ('record_id', 'pg_id', 'collective_seq_id', 'p2p_seq_id', 'op_id',\n"
    "                  'time_created_ns', 'timeout_ms'):\n"
    "            if type(e[k]) is not int: fail('%s %r' % (k, e[k]))\n"
    "        pg_name, pg_desc = e['process_group']\n"
    "        if type(e['process_group']) is not tuple or pg_name not in d['pg_config']: "
    "fail('pg')\n"
    "        backend, name = e['profiling_name'].split(':')\n"
    "        op = name.split(' ')[0]\n"
    "        if backend not in ('nccl', 'xccl') or op not in COLL | {'send', 'recv'}:\n"
    "            fail('profiling_name %s' % e['profiling_name'])\n"
    "        if op == 'send': [int(x) for x in name.split(' ')[1].split('->')]\n"
    "        if op == 'recv': [int(x) for x in name.split(' ')[1].split('<-')]\n"
    "        for k in ('input_sizes', 'output_sizes'):\n"
    "            if not all(type(x) is int for t in e[k] for x in t): fail(k)\n"
    "        for k in ('input_dtypes', 'output_dtypes'):\n"
    "            if not all(type(x) is str for x in e[k]): fail(k)\n"
    "        if e['state'] not in ('scheduled', 'started', 'completed'): fail('state')\n"
    "        if type(e['retired']) is not bool or type(e['is_p2p']) is not bool: fail('bools')\n"
    "        for k in ('time_discovered_started_ns', 'time_discovered_completed_ns'):\n"
    "            if e[k] is not None and (type(e[k]) is not int or e[k] <= 0): fail(k)\n"
    "        if 'duration_ms' in e and type(e['duration_ms']) is not float: fail('duration')\n"
    "        for f in e['frames']:\n"
    "            if sorted(f) != ['filename', 'line', 'name'] or type(f['line']) is not int:\n"
    "                fail('frames %r' % (f,))\n"
    "        if type(e['thread_id']) is not str: fail('thread_id')\n";

/* prefix NULL: inferred; "": --min-wait 0 (ring tests: the open op is as old as the record). */
static json_t *diagnose(const char *path, const char *prefix, int want)
{
    char *out = NULL;
    int rc = !prefix   ? ccd_test_run(&out, NULL, 4, "diagnose", "--json", path)
             : *prefix ? ccd_test_run(&out, NULL, 6, "diagnose", "--json", "-p", prefix, path)
                       : ccd_test_run(&out, NULL, 6, "diagnose", "--json", "--min-wait", "0", path);
    json_t *j = json_loads(out, 0, NULL);
    if (!j || rc != want) fail_msg("diagnose %s: exit %d (want %d)\n%s", path, rc, want, out);
    free(out);
    return j;
}

static const char *verdict(json_t *r, const char *key)
{
    return json_string_value(json_object_get(json_object_get(r, "verdict"), key));
}

static int culprit(json_t *r)
{
    json_t *c = json_object_get(json_object_get(r, "verdict"), "culprits");
    return json_array_size(c) == 1 ? (int)json_integer_value(json_array_get(c, 0)) : -1;
}

static void make(const char *sub, int proto, const char *prefix, const char *version,
                 const char *form)
{
    char path[300], args[500];
    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    mkdir(path, 0700);
    snprintf(args, sizeof(args), "%s %d %s %s %s", path, proto, prefix, version, form);
    assert_int_equal(python(make_dumps, args), 0);
}

/* The hang, as a 4-rank job's dumps: blamed on rank 2, who never entered #5. */
static void expect_hang(const char *path, const char *prefix)
{
    json_t *r = diagnose(path, prefix, 1);
    assert_string_equal(verdict(r, "kind"), "not_entered");
    assert_int_equal(culprit(r), 2);
    assert_string_equal(verdict(r, "op"), "all_reduce");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "job"), "ranks_with_records")), 4);
    json_decref(r);
}

static void test_torch_dumps(void **state)
{
    (void)state;
    char path[300], o[300], *out = NULL, *err = NULL;
    make("torch", 2, "nccl_trace_rank_", "2.4", "pickle");
    make("tcomms", 4, "comm_lib_trace_rank_", "2.10", "pickle");
    make("tcomms5", 5, "comm_lib_trace_rank_", "2.10", "pickle");
    make("tjson", 2, "nccl_trace_rank_", "2.10", "json");
    const char *subs[] = {"torch", "tcomms", "tcomms5", "tjson"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, subs[i]);
        expect_hang(path, NULL);
    }
    snprintf(path, sizeof(path), "%s/torch", dir);
    assert_int_equal(ccd_test_run(&out, NULL, 3, "show", path), 0);
    assert_non_null(strstr(out, "PyTorch dump"));
    assert_non_null(strstr(out, "rank 3 of 4"));
    assert_non_null(strstr(out, "send"));
    free(out);
    assert_int_equal(ccd_test_run(&out, NULL, 4, "stats", "--json", path), 0);
    json_t *st = json_loads(out, 0, NULL);
    assert_true(json_array_size(st) >= 2);
    json_decref(st);
    free(out);
    snprintf(o, sizeof(o), "%s/json", dir);
    assert_int_equal(ccd_test_run(&out, NULL, 5, "json", path, "-o", o), 0);
    free(out);
    expect_hang(o, NULL); /* the JSON of the pickles: the same story */
    snprintf(o, sizeof(o), "%s/trace.json", dir);
    assert_int_equal(ccd_test_run(&out, &err, 5, "perfetto", path, "-o", o), 0);
    free(out);
    free(err);
    json_t *t = json_load_file(o, 0, NULL);
    assert_true(json_array_size(json_object_get(t, "traceEvents")) > 20);
    json_decref(t);
}

/* Ranks from names: the prefix inferred (one prefix), or chosen with -p (several). */
static void test_prefixes(void **state)
{
    (void)state;
    char path[300], *out = NULL, *err = NULL;
    make("mixed", 4, "job7_r", "2.10", "pickle");
    snprintf(path, sizeof(path), "%s/mixed", dir);
    expect_hang(path, NULL); /* job7_r0..3: inferred */
    make("mixed", 4, "other", "2.10", "pickle");
    assert_int_equal(ccd_test_run(&out, &err, 3, "diagnose", path), 2);
    assert_non_null(strstr(err, "several prefixes"));
    free(out);
    free(err);
    expect_hang(path, "job7_r");
    expect_hang(path, "other");
    snprintf(path, sizeof(path), "%s/mixed/job7_r3", dir); /* a named file: digits that end it */
    json_t *r = diagnose(path, NULL, 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "job"), "ranks_with_records")), 1);
    json_decref(r);
}

/* One op into a ring: completed, or only started. */
static void ring_op(cc__fr_ring_t *r, cc__fr_entry_t e, int done)
{
    uint64_t rid = cc__fr_ring_pre(r, &e, NULL);
    cc__fr_update_t u = {done ? CC__FR_COMPLETED : CC__FR_STARTED,
                         CC_OK,
                         e.t_enqueue_ns + 10,
                         done ? e.t_enqueue_ns + 100 : 0,
                         1,
                         0,
                         "ring",
                         "shm"};
    cc__fr_ring_update(r, rid, &u);
}

/* The hang in ccomm's own rings: 3 allreduces, a barrier, a send and a receive around
 * the ring of ranks, then allreduce #5 that rank 2 never enters. Its times are those of
 * the last ops, so diagnose needs --min-wait 0 to call the open allreduce waiting. */
static void make_rings(const char *sub)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    mkdir(path, 0700);
    struct timespec ts; /* ring times are monotonic; the open op is 10 s old at the end */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - 10000000000ull;
    for (int rank = 0; rank < 4; rank++) {
        snprintf(path, sizeof(path), "%s/%s/rank%d.ccfr", dir, sub, rank);
        cc__fr_ring_params_t p = {
            .capacity = 16, .rank = rank, .world_size = 4, .host = "h", .job_id = "j"};
        cc__fr_ring_t *r = NULL;
        assert_int_equal(cc__fr_ring_create(path, &p, &r), CC_OK);
        cc__fr_comm_t *c = &r->comms[0];
        c->comm_id = 77;
        snprintf(c->name, sizeof(c->name), "world");
        c->size = 4, c->rank = rank, c->ranks_count = 4;
        for (int i = 0; i < 4; i++)
            r->ranks[i] = i;
        r->hdr->rank_used = 4, r->hdr->comm_count = 1;
        cc__fr_entry_t e = {.comm_id = 77,
                            .dtype = CC_FLOAT32,
                            .redop = CC_SUM,
                            .rank = rank,
                            .size = 4,
                            .root = -1,
                            .peer = -1,
                            .state = CC__FR_SCHEDULED};
        for (int i = 1; i <= 5; i++) {
            if (i == 5 && rank == 2) break;
            e.coll_seq = (uint64_t)i, e.op_id = (uint64_t)i;
            e.type = i == 4 ? CC_OP_BARRIER : CC_OP_ALLREDUCE;
            e.in_count = e.out_count = i == 4 ? 0 : 256, e.bytes = i == 4 ? 0 : 1024;
            e.t_enqueue_ns = t0 + (uint64_t)i * 1000000;
            ring_op(r, e, i < 5);
            if (i != 3) continue;
            cc__fr_entry_t pe = e;
            pe.coll_seq = 0, pe.p2p_seq = 1, pe.in_count = pe.out_count = 2;
            pe.bytes = 8, pe.type = CC_OP_SEND, pe.peer = (rank + 1) % 4, pe.op_id = 10;
            ring_op(r, pe, 1);
            pe.type = CC_OP_RECV, pe.peer = (rank + 3) % 4, pe.op_id = 11;
            ring_op(r, pe, 1);
        }
        cc__fr_ring_destroy(r);
    }
}

static void export_and_check(const char *src, const char *sub, const char *prefix, int n)
{
    char o[300], args[400], *out = NULL, *err = NULL;
    snprintf(o, sizeof(o), "%s/%s", dir, sub);
    int rc = prefix ? ccd_test_run(&out, &err, 7, "export", src, "--torch", o, "-p", prefix)
                    : ccd_test_run(&out, &err, 5, "export", src, "--torch", o);
    if (rc) fail_msg("export %s: exit %d\n%s", src, rc, err);
    free(out);
    free(err);
    snprintf(args, sizeof(args), "%s %s %d", o, prefix ? prefix : "nccl_trace_rank_", n);
    assert_int_equal(python(check_export, args), 0);
}

static void test_export(void **state)
{
    (void)state;
    char src[300], o[300];
    make("tcomms", 4, "comm_lib_trace_rank_", "2.10", "pickle");
    snprintf(src, sizeof(src), "%s/tcomms", dir);
    export_and_check(src, "exp1", NULL, 4);
    snprintf(o, sizeof(o), "%s/exp1", dir);
    expect_hang(o, NULL);
    make("tjson", 2, "nccl_trace_rank_", "2.10", "json");
    snprintf(src, sizeof(src), "%s/tjson", dir);
    export_and_check(src, "exp2", "comm_lib_trace_rank_", 4);
    snprintf(o, sizeof(o), "%s/exp2", dir);
    expect_hang(o, "comm_lib_trace_rank_");
    /* ccomm's rings: PyTorch's names and types, the same verdict from the pickles. */
    make_rings("rings");
    snprintf(src, sizeof(src), "%s/rings", dir);
    json_t *ra = diagnose(src, "", 1);
    assert_int_equal(culprit(ra), 2);
    export_and_check(src, "exp3", NULL, 4);
    snprintf(o, sizeof(o), "%s/exp3", dir);
    json_t *rb = diagnose(o, "", 1);
    assert_int_equal(culprit(rb), 2);
    assert_string_equal(verdict(ra, "kind"), verdict(rb, "kind"));
    assert_string_equal(verdict(ra, "op"), verdict(rb, "op"));
    json_decref(ra);
    json_decref(rb);
    /* The prepared PyTorch JSON dumps: the same verdict from their export. */
    const char *cases[] = {"torch_not_joining", "torch_size_mismatch", "torch_send_no_recv"};
    for (int i = 0; i < 3; i++) {
        char sub[40];
        snprintf(src, sizeof(src), "%s/valid/%s", data_dir, cases[i]);
        snprintf(sub, sizeof(sub), "case%d", i);
        json_t *a = diagnose(src, NULL, 1);
        export_and_check(src, sub, NULL,
                         (int)json_integer_value(
                             json_object_get(json_object_get(a, "job"), "ranks_with_records")));
        snprintf(o, sizeof(o), "%s/%s", dir, sub);
        json_t *b = diagnose(o, NULL, 1);
        assert_string_equal(verdict(a, "kind"), verdict(b, "kind"));
        assert_string_equal(verdict(a, "text"), verdict(b, "text"));
        json_decref(a);
        json_decref(b);
    }
}

/* ---- a real job against PyTorch's rules ------------------------------------------------- */

#define OK(call) CC_TEST_REQUIRE((call) == CC_OK, "%s", #call)

/* Every collective once (the v-variants with even counts but all_to_all_v), a coalesced one. */
static int every_collective(cc_comm_t *c, int rank, int size)
{
    float x[64], y[256];
    size_t even[4] = {4, 4, 4, 4}, sc[4], rc[4];
    for (int i = 0; i < 64; i++)
        x[i] = (float)(rank + i);
    OK(cc_allreduce(c, x, y, 16, CC_FLOAT32, CC_SUM, NULL, NULL));
    OK(cc_broadcast(c, x, y, 16, CC_FLOAT32, 1, NULL, NULL));
    OK(cc_reduce(c, x, y, 16, CC_FLOAT32, CC_SUM, 2, NULL, NULL));
    OK(cc_allgather(c, x, y, 8, CC_FLOAT32, NULL, NULL));
    OK(cc_allgatherv(c, x, y, 4, even, NULL, CC_FLOAT32, NULL, NULL));
    OK(cc_reduce_scatter(c, x, y, 4, CC_FLOAT32, CC_SUM, NULL, NULL));
    OK(cc_reduce_scatterv(c, x, y, even, CC_FLOAT32, CC_SUM, NULL, NULL));
    OK(cc_alltoall(c, x, y, 4, CC_FLOAT32, NULL, NULL));
    for (int p = 0; p < size; p++) /* uneven: rank a sends a + b + 1 elements to b */
        sc[p] = rc[p] = (size_t)(rank + p + 1);
    OK(cc_alltoallv(c, x, y, sc, NULL, rc, NULL, CC_FLOAT32, NULL, NULL));
    OK(cc_gather(c, x, y, 4, CC_FLOAT32, 0, NULL, NULL));
    OK(cc_gatherv(c, x, y, 4, even, NULL, CC_FLOAT32, 3, NULL, NULL));
    OK(cc_scatter(c, x, y, 4, CC_FLOAT32, 1, NULL, NULL));
    OK(cc_scatterv(c, x, y, even, NULL, 4, CC_FLOAT32, 2, NULL, NULL));
    OK(cc_barrier(c, NULL, NULL));
    const void *sb[2] = {x, x + 8};
    void *rb[2] = {y, y + 8};
    size_t cnt[2] = {8, 4};
    OK(cc_allreduce_coalesced(c, sb, rb, cnt, 2, CC_FLOAT32, CC_SUM, NULL, NULL));
    return 0;
}

/* A ring of sends and receives, plain then grouped. */
static int rings_of_p2p(cc_comm_t *c, int rank, int size)
{
    float x[8] = {0}, y[8];
    cc_work_t *w = NULL;
    OK(cc_send(c, x, 8, CC_FLOAT32, (rank + 1) % size, NULL, &w));
    OK(cc_recv(c, y, 8, CC_FLOAT32, (rank + size - 1) % size, NULL, NULL));
    OK(cc_work_wait(w, 10000));
    cc_work_free(w);
    OK(cc_group_start());
    OK(cc_send(c, x, 4, CC_FLOAT32, (rank + 1) % size, NULL, NULL));
    OK(cc_recv(c, y, 4, CC_FLOAT32, (rank + size - 1) % size, NULL, NULL));
    OK(cc_group_end(NULL, NULL));
    return 0;
}

/* The job: every op, then an allreduce rank 2 never enters (it leaves once dumped). */
static int every_op_rank(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *c = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(every_collective(c, rank, size) == 0, "collectives");
    CC_TEST_REQUIRE(rings_of_p2p(c, rank, size) == 0, "p2p");
    if (rank == 2) {
        char path[400];
        struct stat st;
        snprintf(path, sizeof(path), "%s/dumps/every-op/rank2.json", (const char *)arg);
        for (int i = 0; i < 200 && stat(path, &st) != 0; i++)
            usleep(50000);
        usleep(200000);
    } else {
        float x[16] = {0}, y[16];
        cc_op_opts_t o = CC_OP_OPTS_INIT;
        o.timeout_ms = 1500;
        cc_status_t st = cc_allreduce(c, x, y, 16, CC_FLOAT32, CC_SUM, &o, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT || st == CC_ERR_PEER_LOST, "%s", cc_status_name(st));
    }
    cc_comm_destroy(c);
    return 0;
}

static void run_job(cc_test_rank_fn fn, const char *name, int failures)
{
    assert_int_equal(ccd_test_job(fn, dir, name), failures);
}

/* fr_rules.py's findings on the pickles in `sub` (a new document). */
static json_t *rules(const char *sub, const char *prefix, int n, const char *extra)
{
    char cmd[900], *text = NULL;
    size_t len = 0;
    snprintf(cmd, sizeof(cmd), "python3 %s %s/%s %s %d %s", rules_py, dir, sub, prefix, n, extra);
    FILE *p = popen(cmd, "r"), *m = open_memstream(&text, &len);
    char buf[4096];
    size_t k;
    while (p && (k = fread(buf, 1, sizeof(buf), p)) > 0)
        fwrite(buf, 1, k, m);
    int rc = p ? pclose(p) : -1;
    fclose(m);
    json_t *j = json_loads(text, 0, NULL);
    if (rc || !j) fail_msg("%s: exit %d\n%s", cmd, rc, text);
    free(text);
    return j;
}

static void expect_none(json_t *found, const char *key)
{
    json_t *a = json_object_get(found, key);
    if (json_array_size(a)) {
        char *t = json_dumps(a, JSON_INDENT(1));
        fail_msg("PyTorch's rules, %s:\n%s", key, t);
    }
}

static void expect_same_verdict(json_t *a, json_t *b)
{
    const char *keys[] = {"kind", "confidence", "text"};
    for (int i = 0; i < 3; i++)
        if (!verdict(a, keys[i]) || !verdict(b, keys[i]) ||
            strcmp(verdict(a, keys[i]), verdict(b, keys[i])))
            fail_msg("verdict %s: \"%s\" from the rings, \"%s\" from the export", keys[i],
                     verdict(a, keys[i]), verdict(b, keys[i]));
    json_t *ca = json_object_get(json_object_get(a, "verdict"), "culprits");
    assert_true(json_equal(ca, json_object_get(json_object_get(b, "verdict"), "culprits")));
}

static void export_quiet(const char *src, const char *sub)
{
    char o[300], *out = NULL, *err = NULL;
    snprintf(o, sizeof(o), "%s/%s", dir, sub);
    int rc = ccd_test_run(&out, &err, 5, "export", src, "--torch", o);
    if (rc || strstr(err, "left out")) fail_msg("export %s: exit %d\n%s", src, rc, err);
    free(out);
    free(err);
}

/* Every op of a real job, exported: nothing the analyzer would refuse or flag but the hang,
 * numbered as ProcessGroupNCCL numbers, and the rings' own verdict from the pickles. */
static void test_export_job(void **state)
{
    (void)state;
    char src[300], o[300];
    run_job(every_op_rank, "every-op", 0);
    snprintf(src, sizeof(src), "%s/rings", dir);
    export_quiet(src, "exp");
    json_t *found = rules("exp", "nccl_trace_rank_", 4, "--fresh");
    expect_none(found, "refused");
    expect_none(found, "numbering");
    /* 15 collectives before the hang: the one flag is #16 (rank 2 never joined); the
     * others' states may differ (one timed out started, one before it started). */
    size_t i;
    json_t *f;
    int missing = 0;
    json_array_foreach(json_object_get(found, "flags"), i, f)
    {
        const char *t = json_string_value(f);
        if (!strstr(t, " seq 16 all_reduce: ")) fail_msg("a healthy op flagged: %s", t);
        missing |= strstr(t, "not all ranks joining: missing [2]") != NULL;
    }
    assert_true(missing);
    for (int r = 0; r < 4; r++)
        assert_int_equal(json_integer_value(json_object_get(json_object_get(found, "batches"),
                                                            (char[2]){(char)('0' + r), 0})),
                         1);
    json_decref(found);
    json_t *a = diagnose(src, NULL, 1);
    snprintf(o, sizeof(o), "%s/exp", dir);
    json_t *b = diagnose(o, NULL, 1);
    assert_int_equal(culprit(a), 2);
    expect_same_verdict(a, b);
    json_decref(a);
    json_decref(b);
}

/* A rank killed: "(certain) rank 2 was killed" from the rings and from their export. */
static void test_export_killed(void **state)
{
    (void)state;
    char src[300], o[300];
    run_job(fault_sigkill, "fault-sigkill", 1);
    snprintf(src, sizeof(src), "%s/rings", dir);
    export_quiet(src, "exp");
    json_t *a = diagnose(src, NULL, 1);
    assert_string_equal(verdict(a, "kind"), "killed");
    assert_string_equal(verdict(a, "confidence"), "certain");
    snprintf(o, sizeof(o), "%s/exp", dir);
    json_t *b = diagnose(o, NULL, 1);
    expect_same_verdict(a, b);
    json_decref(a);
    json_decref(b);
}

/* PyTorch dumps with entries the analyzer could not take: a number, a broken object, an
 * unknown op, a send without ranks; and another writer's name for _all_gather_base. */
static const char make_hostile[] =
    "import json, sys\n"
    "out = sys.argv[1]\n"
    "def e(rid, seq, name, ins, outs, p2p=False):\n"
    "    return {'record_id': rid, 'pg_id': 0, 'process_group': ['0', 'default_pg'],\n"
    "            'thread_id': '1', 'thread_name': 'pt_main', 'collective_seq_id': seq,\n"
    "            'p2p_seq_id': 0, 'op_id': seq, 'profiling_name': name,\n"
    "            'time_created_ns': 1764500000000000000 + rid, 'input_sizes': [ins],\n"
    "            'input_dtypes': ['Float'], 'output_sizes': [outs], 'output_dtypes': ['Float'],\n"
    "            'state': 'completed', 'time_discovered_started_ns': 0,\n"
    "            'time_discovered_completed_ns': 0, 'retired': True, 'timeout_ms': 600000,\n"
    "            'is_p2p': p2p}\n"
    "for r in range(2):\n"
    "    ents = [e(0, 1, 'nccl:all_reduce', [8], [8])]\n"
    "    if r == 0:\n"
    "        ents += [7, {'record_id': 2}, e(3, 2, 'nccl:frobnicate', [8], [8]),\n"
    "                 e(4, 2, 'nccl:send x->y', [8], [8], True)]\n"
    "    ents.append(e(5, 2, 'nccl:_allgather_base', [8], [16]))\n"
    "    d = {'version': '2.10', 'pg_config': {'0': {'name': '0', 'desc': 'default_pg',\n"
    "         'ranks': '[0, 1]'}}, 'pg_status': {}, 'entries': ents}\n"
    "    if r == 0:\n"
    "        d['pg_config']['9'] = {'name': '9', 'desc': 'broken', 'ranks': '[0, x'}\n"
    "    json.dump(d, open('%s/nccl_trace_rank_%d.json' % (out, r), 'w'))\n";

static const char check_hostile[] =
    "import pickle, sys\n"
    "d = pickle.load(open(sys.argv[1] + '/nccl_trace_rank_0', 'rb'))\n"
    "names = [e['profiling_name'] for e in d['entries']]\n"
    "assert names == ['nccl:all_reduce', 'nccl:_all_gather_base'], names\n"
    "left = d['ccomm']['left_out']\n"
    "assert [x['index'] for x in left if 'index' in x] == [1, 2, 3, 4], left\n"
    "assert [x['process_group'] for x in left if 'process_group' in x] == ['9'], left\n"
    "assert sorted(d['pg_config']) == ['0'], d['pg_config']\n"
    "assert [x['entry']['profiling_name'] for x in left if 'entry' in x] == ['nccl:frobnicate']\n"
    "assert 'format_version' not in d['ccomm']\n";

/* Only what the analyzer can take is exported; the rest is named, and kept under ccomm. */
static void test_export_hostile(void **state)
{
    (void)state;
    char src[300], o[300], *out = NULL, *err = NULL;
    snprintf(src, sizeof(src), "%s/hostile", dir);
    mkdir(src, 0700);
    assert_int_equal(python(make_hostile, src), 0);
    snprintf(o, sizeof(o), "%s/exp", dir);
    int rc = ccd_test_run(&out, &err, 5, "export", src, "--torch", o);
    if (rc) fail_msg("export: exit %d\n%s", rc, err);
    const char *said[] = {"rank 0: entry 1 left out: not an object",
                          "rank 0: entry 2 (record 2) left out: a number",
                          "rank 0: entry 3 (record 3) left out: op \"frobnicate\" is not one "
                          "PyTorch's analyzer knows (kept under ccomm.left_out)",
                          "rank 0: entry 4 (record 4) left out: a send/recv whose ranks",
                          "rank 0: process group \"9\" left out: its ranks are not a list",
                          "rank 0: 5 of its entries and process groups left out"};
    for (int i = 0; i < 6; i++)
        if (!strstr(err, said[i])) fail_msg("export does not say \"%s\":\n%s", said[i], err);
    free(out);
    free(err);
    json_t *found = rules("exp", "nccl_trace_rank_", 2, "");
    expect_none(found, "refused");
    expect_none(found, "numbering");
    expect_none(found, "flags");
    json_decref(found);
    assert_int_equal(python(check_hostile, o), 0);
}

/* ---- hostile pickles -------------------------------------------------------------------- */

static void expect_error(const void *buf, size_t len, const char *want1, const char *want2)
{
    char err[512] = "";
    json_t *doc = ccd_pickle_parse(buf, len, err, sizeof(err));
    if (doc) fail_msg("accepted a hostile pickle (wanted \"%s\")", want1);
    if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
        fail_msg("error \"%s\" does not say \"%s\" / \"%s\"", err, want1, want2 ? want2 : "");
}

static void test_refused_opcodes(void **state)
{
    (void)state;
    static const struct {
        unsigned char op;
        const char *name;
    } refused[] = {{'c', "GLOBAL"},   {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"},  {'b', "BUILD"},
                   {'i', "INST"},     {'o', "OBJ"},           {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"},
                   {0x82, "EXT1"},    {0x83, "EXT2"},         {0x84, "EXT4"},   {'P', "PERSID"},
                   {'Q', "BINPERSID"}};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        unsigned char b[] = {0x80, 2, ']', ']', refused[i].op, 'o', 's', '\n', 'x', '\n', '.'};
        char want[64];
        snprintf(want, sizeof(want), "opcode %s (0x%02x) at byte 4", refused[i].name,
                 refused[i].op);
        expect_error(b, sizeof(b), want, "could run code");
    }
    /* The classic exploit, as Python writes it. */
    static const char evil[] = "\x80\x04\x95\x1d\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c"
                               "\x06system\x94\x93\x94\x8c\x02id\x94\x85\x94R\x94.";
    expect_error(evil, sizeof(evil) - 1, "opcode STACK_GLOBAL (0x93) at byte 28", NULL);
    unsigned char set[] = {0x80, 4, 0x8f, '.'}, dup[] = {0x80, 2, ']', '2', '.'};
    expect_error(set, sizeof(set), "opcode EMPTY_SET (0x8f) at byte 2", "not in the subset");
    expect_error(dup, sizeof(dup), "opcode DUP (0x32) at byte 3", "not in the subset");
    unsigned char bad[] = {0x80, 2, 0xff, '.'};
    expect_error(bad, sizeof(bad), "at byte 2: 0xff is not a pickle opcode", NULL);
}

static void test_bad_protocols_and_lengths(void **state)
{
    (void)state;
    unsigned char p7[] = {0x80, 7, '}', '.'}, p1[] = {0x80, 1, '}', '.'}, none[] = {'}', '.'};
    expect_error(p7, sizeof(p7), "opcode PROTO (0x80) at byte 0", "protocol 7");
    expect_error(p1, sizeof(p1), "protocol 1", NULL);
    expect_error(none, sizeof(none), "not a pickle of protocol 2 to 5", NULL);
    unsigned char u8[] = {0x80, 4, 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x40, 'a', '.'};
    expect_error(u8, sizeof(u8), "opcode BINUNICODE8 (0x8d) at byte 2", "larger than");
    unsigned char u4[] = {0x80, 2, 'X', 0xff, 0xff, 0xff, 0xff, 'a', '.'};
    expect_error(u4, sizeof(u4), "opcode BINUNICODE (0x58) at byte 2", "larger than");
    unsigned char fr[] = {0x80, 4, 0x95, 0xff, 0, 0, 0, 0, 0, 0, 0, '}', '.'};
    expect_error(fr, sizeof(fr), "opcode FRAME (0x95) at byte 2", "larger than");
    unsigned char l4[] = {0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0x7f, '.'};
    expect_error(l4, sizeof(l4), "opcode LONG4 (0x8b) at byte 2", "larger than");
    unsigned char big[] = {0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'};
    expect_error(big, sizeof(big), "opcode LONG1 (0x8a) at byte 2", "int64");
    unsigned char big2[] = {0x80, 2, 0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, '.'};
    json_t *v = ccd_pickle_parse(big2, sizeof(big2) - 2, (char[64]){0}, 64); /* no STOP */
    assert_null(v);
    unsigned char ibig[] = {0x80, 2,   'I', '9', '9', '9', '9', '9', '9', '9', '9',  '9', '9',
                            '9',  '9', '9', '9', '9', '9', '9', '9', '9', '9', '\n', '.'};
    expect_error(ibig, sizeof(ibig), "opcode INT (0x49) at byte 2", "int64");
    unsigned char utf[] = {0x80, 2, 'X', 2, 0, 0, 0, 0xc0, 0x80, '.'};
    expect_error(utf, sizeof(utf), "opcode BINUNICODE (0x58) at byte 2", "UTF-8");
}

static void test_memo_and_structure(void **state)
{
    (void)state;
    unsigned char get[] = {0x80, 2, 'h', 5, '.'};
    expect_error(get, sizeof(get), "opcode BINGET (0x68) at byte 2", "memo index 5 was never set");
    unsigned char put[] = {0x80, 2, ']', 'r', 0xff, 0xff, 0xff, 0x7f, '.'};
    expect_error(put, sizeof(put), "opcode LONG_BINPUT (0x72) at byte 3", "out of range");
    unsigned char put0[] = {0x80, 2, 'q', 0, '.'};
    expect_error(put0, sizeof(put0), "opcode BINPUT (0x71) at byte 2", "needs 1 value");
    unsigned char key[] = {0x80, 2, '}', ']', 'N', 's', '.'};
    expect_error(key, sizeof(key), "opcode SETITEM (0x73) at byte 5", "neither a str nor an int");
    unsigned char nul[] = {0x80, 2, '}', 0x8c, 1, 0, 'N', 's', '.'};
    expect_error(nul, sizeof(nul), "opcode SETITEM (0x73) at byte 7", "NUL");
    unsigned char odd[] = {0x80, 2, '}', '(', 'N', 'u', '.'};
    expect_error(odd, sizeof(odd), "opcode SETITEMS (0x75) at byte 5", "odd number");
    unsigned char tup[] = {0x80, 2, ')', 'N', 'a', '.'};
    expect_error(tup, sizeof(tup), "opcode APPEND (0x61) at byte 4", "tuple");
    unsigned char pm[] = {0x80, 2, '1', '.'}, stop[] = {0x80, 2, '.'};
    expect_error(pm, sizeof(pm), "opcode POP_MARK (0x31) at byte 2", "no MARK");
    expect_error(stop, sizeof(stop), "opcode STOP (0x2e) at byte 2", "needs 1 value");
    /* Deep nesting: 100 lists, each appended into the one below. */
    unsigned char deep[2 + 100 + 99 + 1];
    size_t n = 0;
    deep[n++] = 0x80, deep[n++] = 2;
    for (int i = 0; i < 100; i++)
        deep[n++] = ']';
    for (int i = 0; i < 99; i++)
        deep[n++] = 'a';
    deep[n++] = '.';
    expect_error(deep, n, "opcode APPEND (0x61)", "nested deeper than 64");
    /* A memo bomb: each list holds its predecessor twice (2^40 values if expanded). */
    unsigned char bomb[8 + 40 * 9];
    n = 0;
    bomb[n++] = 0x80, bomb[n++] = 2, bomb[n++] = ']', bomb[n++] = 'q', bomb[n++] = 0;
    for (int i = 1; i <= 40; i++) {
        unsigned char s[] = {']',
                             '(',
                             'h',
                             (unsigned char)(i - 1),
                             'h',
                             (unsigned char)(i - 1),
                             'e',
                             'q',
                             (unsigned char)i};
        memcpy(bomb + n, s, sizeof(s));
        n += sizeof(s);
    }
    bomb[n++] = '.';
    expect_error(bomb, n, "opcode BINGET (0x68)", "grows beyond");
}

/* Every prefix of a real dump is refused cleanly (truncation at every byte). */
static void test_truncation(void **state)
{
    (void)state;
    char path[300];
    make("trunc", 4, "comm_lib_trace_rank_", "2.10", "pickle");
    snprintf(path, sizeof(path), "%s/trunc/comm_lib_trace_rank_0", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_true(len > 100 && len < sizeof(buf));
    char err[512];
    json_t *doc = ccd_pickle_parse(buf, len, err, sizeof(err));
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "entries")), 7);
    json_decref(doc);
    for (size_t k = 0; k < len; k++) {
        unsigned char *copy = malloc(k + 1); /* exactly k bytes for ASan to guard */
        memcpy(copy, buf, k);
        err[0] = '\0';
        doc = ccd_pickle_parse(copy, k, err, sizeof(err));
        free(copy);
        if (doc) fail_msg("a dump cut to %zu of %zu bytes was accepted", k, len);
        if (strncmp(err, "pickle: ", 8)) fail_msg("cut to %zu bytes: \"%s\"", k, err);
    }
    /* ccdump's own message names the file. */
    char *out = NULL, *e = NULL;
    truncate(path, (off_t)len / 2);
    assert_int_equal(ccd_test_run(&out, &e, 3, "show", path), 2);
    assert_non_null(strstr(e, "comm_lib_trace_rank_0: pickle: "));
    free(out);
    free(e);
}

/* The writer's output reads back as what was written. */
static void test_writer_round_trip(void **state)
{
    (void)state;
    json_t *v = json_loads("{\"a\": [0, 255, 256, 65535, 65536, -1, -129, 2147483647, -2147483648,"
                           " 2147483648, 9223372036854775807, -9223372036854775808],"
                           " \"f\": 0.25, \"s\": \"h\\u00e9 \\ud83d\\ude00\", \"n\": null,"
                           " \"b\": [true, false], \"o\": {\"x\": {}}}",
                           0, NULL);
    assert_non_null(v);
    ccd_pkw_t w;
    ccd_pkw_start(&w);
    assert_int_equal(ccd_pkw_json(&w, v), 0);
    ccd_pkw_stop(&w);
    assert_false(w.oom);
    char err[256];
    json_t *back = ccd_pickle_parse(w.buf, w.len, err, sizeof(err));
    if (!back) fail_msg("%s", err);
    assert_true(json_equal(v, back));
    json_decref(back);
    json_decref(v);
    ccd_pkw_free(&w);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ccdump-pickle-%d-XXXXXX", (int)getpid());
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv)
{
    if (system("python3 -c 'import pickle' >/dev/null 2>&1") != 0) {
        printf("skipped: python3 not found\n");
        return 77;
    }
    data_dir = argc > 1 ? argv[1] : "tests/data/ccdump";
    rules_py = argc > 2 ? argv[2] : "tests/unit/ccdump/fr_rules.py";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_torch_dumps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefixes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_hostile, setup, teardown),
        cmocka_unit_test(test_refused_opcodes),
        cmocka_unit_test(test_bad_protocols_and_lengths),
        cmocka_unit_test(test_memo_and_structure),
        cmocka_unit_test_setup_teardown(test_truncation, setup, teardown),
        cmocka_unit_test(test_writer_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
