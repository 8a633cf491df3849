/* trace_job.c - the traced jobs of test_lttng_trace (see trace_job.h). */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccomm/ccomm.h"
#include "base/lttng.h"
#include "mp.h"
#include "trace_job.h"

#if __has_include("ccomm/recorder.h")
#include "ccomm/recorder.h"
#define TJ_RECORDER 1
#else
#define TJ_RECORDER 0
#endif

int tj_have_recorder(void)
{
    return TJ_RECORDER;
}

/* ---- in a rank ---------------------------------------------------------------- */

static tj_rank_t g_me; /* this rank's record */
static _Atomic int g_nops;
static cc_hook_handle_t g_hook;
static const char *g_dir; /* where ranks write: the rank's `arg` (ranks are exec'd anew) */

static void on_post(const cc_op_info_t *op, void *user)
{
    (void)user;
    int i = atomic_fetch_add(&g_nops, 1);
    if (i < TJ_MAX_OPS)
        g_me.ops[i] = (tj_op_t){op->op_id, (int)op->type, op->comm_id, (int)op->status};
}

/* Attach tracing and our own POST hook before the world exists, so that
 * both see its COMM_INIT. The core attaches the provider itself at world
 * init; calling the loader first makes this test independent of that. */
static int begin(int rank, const char *dir)
{
    g_dir = dir;
    memset(&g_me, 0, sizeof(g_me));
    g_me.pid = (long)getpid();
    CC_TEST_REQUIRE(cc__lttng_load() == 1, "rank %d: the provider did not attach", rank);
    CC_TEST_REQUIRE(cc_hook_add_post(NULL, on_post, NULL, 0, &g_hook) == CC_OK, "hook");
    return 0;
}

/* Dump the recorder, then write what this rank saw for the parent. */
static int finish(const char *tag, int rank)
{
    char path[512];
#if TJ_RECORDER
    snprintf(path, sizeof(path), "%s/%s-rank%d.json", g_dir, tag, rank);
    cc_status_t st = cc_recorder_dump(path);
    CC_TEST_REQUIRE(st == CC_OK, "rank %d: cc_recorder_dump: %s", rank, cc_status_name(st));
#endif
    cc_hook_remove(g_hook);
    g_me.nops = atomic_load(&g_nops);
    CC_TEST_REQUIRE(g_me.nops <= TJ_MAX_OPS, "rank %d: %d ops", rank, g_me.nops);
    snprintf(path, sizeof(path), "%s/%s-rank%d.bin", g_dir, tag, rank);
    FILE *f = fopen(path, "wb");
    CC_TEST_REQUIRE(f && fwrite(&g_me, sizeof(g_me), 1, f) == 1, "write %s", path);
    fclose(f);
    return 0;
}

/* Ring: send to the next rank, receive from the previous (even ranks send first). */
static int ring(cc_comm_t *c, int rank, int size)
{
    int32_t s[256], d[256];
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int i = 0; i < 256; i++)
        s[i] = rank * 1000 + i;
    cc_status_t a, b;
    if (rank % 2 == 0) {
        a = cc_send(c, s, 256, CC_INT32, to, NULL, NULL);
        b = cc_recv(c, d, 256, CC_INT32, from, NULL, NULL);
    } else {
        b = cc_recv(c, d, 256, CC_INT32, from, NULL, NULL);
        a = cc_send(c, s, 256, CC_INT32, to, NULL, NULL);
    }
    CC_TEST_REQUIRE(a == CC_OK && b == CC_OK, "ring: send %s recv %s", cc_status_name(a),
                    cc_status_name(b));
    for (int i = 0; i < 256; i++)
        CC_TEST_REQUIRE(d[i] == from * 1000 + i, "ring value %d", i);
    return 0;
}

static int job_rank(int rank, int size, const char *addr, void *arg)
{
    if (begin(rank, arg)) return 1;
    cc_comm_t *world = NULL, *half = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&world, rank, size, addr, NULL) == CC_OK, "init");
    g_me.world_id = cc_comm_id(world);
    static float in[1024], out[1024];
    for (int i = 0; i < 1024; i++)
        in[i] = (float)(rank + i);
    for (int k = 0; k < 2; k++) {
        CC_TEST_REQUIRE(cc_allreduce(world, in, out, 1024, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK,
                        "allreduce %d", k);
        for (int i = 0; i < 1024; i++)
            CC_TEST_REQUIRE(out[i] == (float)(4 * i + 6), "allreduce value %d", i);
    }
    CC_TEST_REQUIRE(cc_barrier(world, NULL, NULL) == CC_OK, "barrier");
    if (ring(world, rank, size)) return 1;
    CC_TEST_REQUIRE(cc_comm_split(world, rank % 2, rank, NULL, &half) == CC_OK, "split");
    g_me.half_id = cc_comm_id(half);
    int64_t v[3] = {rank, -rank, 7}, m[3];
    CC_TEST_REQUIRE(cc_allreduce(half, v, m, 3, CC_INT64, CC_MAX, NULL, NULL) == CC_OK, "half");
    CC_TEST_REQUIRE(m[0] == rank % 2 + 2 && m[1] == -(rank % 2) && m[2] == 7, "half max");
    CC_TEST_REQUIRE(cc_comm_destroy(half) == CC_OK, "destroy half");
    CC_TEST_REQUIRE(cc_comm_destroy(world) == CC_OK, "destroy world");
    return finish("job", rank);
}

/* Rank 0's allreduce waits for rank 1, which stays silent past the deadline. */
static int hang_rank(int rank, int size, const char *addr, void *arg)
{
    if (begin(rank, arg)) return 1;
    cc_comm_t *world = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&world, rank, size, addr, NULL) == CC_OK, "init");
    g_me.world_id = cc_comm_id(world);
    if (rank == 0) {
        cc_op_opts_t o = CC_OP_OPTS_INIT;
        o.timeout_ms = TJ_HANG_TIMEOUT_MS;
        float x[4] = {0};
        cc_status_t st = cc_allreduce(world, x, x, 4, CC_FLOAT32, CC_SUM, &o, NULL);
        CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT, "allreduce returned %s", cc_status_name(st));
        for (int i = 0; i < atomic_load(&g_nops) && i < TJ_MAX_OPS; i++)
            if (g_me.ops[i].type == CC_OP_ALLREDUCE) g_me.timed_out_op = g_me.ops[i].op_id;
        usleep(1500000); /* the watchdog writes its dump meanwhile */
    } else {
        usleep(2500000); /* silent past rank 0's deadline, alive (no peer loss) */
    }
    cc_comm_destroy(world); /* rank 0's comm is broken: the status is its error */
    return finish("hang", rank);
}

/* ---- in the parent ------------------------------------------------------------ */

/* The op type of a recorder profiling name: "ccomm:all_reduce", "ccomm:send 0->1". */
static int type_of(const char *name)
{
    if (strncmp(name, "ccomm:", 6) != 0) return -1;
    name += 6;
    size_t len = strcspn(name, " ");
    for (int t = 0; t < CC_OP_TYPE_COUNT; t++) {
        const char *n = cc_op_type_name((cc_op_type_t)t);
        if (strlen(n) == len && !strncmp(n, name, len)) return t;
    }
    return -1;
}

static int status_of(const char *name)
{
    for (int v = -80; v <= 1; v++)
        if (!strcmp(cc_status_name((cc_status_t)v), name)) return v;
    return 2; /* no such status */
}

/* Append the op_id, type, comm_id and status of one JSON array of recorder entries. */
static void rec_list(json_t *arr, tj_rank_t *r)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (r->nrec >= TJ_MAX_OPS) return;
        tj_op_t *o = &r->rec[r->nrec++];
        json_t *x = json_object_get(e, "ccomm");
        const char *name = json_string_value(json_object_get(e, "profiling_name"));
        const char *comm = json_string_value(json_object_get(x, "comm_id"));
        const char *status = json_string_value(json_object_get(x, "status"));
        o->op_id = (uint64_t)json_integer_value(json_object_get(e, "op_id"));
        o->type = type_of(name ? name : "");
        o->comm_id = comm ? strtoull(comm, NULL, 10) : 0;
        o->status = status_of(status ? status : "");
    }
}

static int read_rank(const char *dir, const char *tag, int rank, tj_rank_t *r)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s-rank%d.bin", dir, tag, rank);
    FILE *f = fopen(path, "rb");
    int ok = f && fread(r, sizeof(*r), 1, f) == 1;
    if (f) fclose(f);
    if (!ok) return -1;
    r->nrec = -1;
    if (!TJ_RECORDER) return 0;
    snprintf(path, sizeof(path), "%s/%s-rank%d.json", dir, tag, rank);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        fprintf(stderr, "%s: %s (line %d)\n", path, err.text, err.line);
        return -1;
    }
    r->nrec = 0;
    rec_list(json_object_get(root, "entries"), r);
    rec_list(json_object_get(json_object_get(root, "ccomm"), "lifecycle"), r);
    json_decref(root);
    return 0;
}

static int run(const char *dir, const char *provider, const char *tag, int n, cc_test_rank_fn fn,
               tj_rank_t *out)
{
    static char env[4][600];
    snprintf(env[0], sizeof(env[0]), "CCOMM_LTTNG=1");
    snprintf(env[1], sizeof(env[1]), "CCOMM_LTTNG_PROVIDER=%s", provider);
    snprintf(env[2], sizeof(env[2]), "CCOMM_RECORDER_DIR=%s/rec", dir);
    snprintf(env[3], sizeof(env[3]), "CCOMM_DUMP_DIR=%s/dumps", dir);
    const char *const vars[] = {env[0], env[1], env[2], env[3], NULL};
    int bad = cc_test_fork_ranks(n, fn, (void *)dir, 60, vars, NULL);
    for (int r = 0; r < n && !bad; r++)
        if (read_rank(dir, tag, r, &out[r]) != 0) bad++;
    return bad;
}

int tj_run_job(const char *dir, const char *provider, tj_rank_t out[TJ_JOB_RANKS])
{
    return run(dir, provider, "job", TJ_JOB_RANKS, job_rank, out);
}

int tj_run_hang(const char *dir, const char *provider, tj_rank_t out[TJ_HANG_RANKS])
{
    return run(dir, provider, "hang", TJ_HANG_RANKS, hang_rank, out);
}
