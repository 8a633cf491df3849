/*
 * test_lttng_trace.c - tracing end to end, as an operator would do it.
 *
 * Start lttng-sessiond (unless one runs), create a session writing into a
 * temp folder, enable ccomm:*, run a 4-rank job (allreduce twice, barrier,
 * a send/recv ring, split + allreduce on the halves, destroy) and a 2-rank
 * job in which rank 0's allreduce times out; stop, read the trace with
 * babeltrace2 and check each rank's events, their fields, and that the
 * op_ids are exactly those the hooks of the same run saw (and those of the
 * flight recorder's dump, when the recorder is built in). Destroy the
 * session; stop the daemon we started, by its PID.
 *
 * Skipped (77) only without lttng-tools or babeltrace2, or when the
 * provider was not built (no lttng-ust development files).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/lttng.h"
#include "mp.h"
#include "trace_job.h"
#include "trace_read.h"

static struct {
    char dir[64];  /* temp folder: LTTNG_HOME, trace, hook lists, dumps */
    char log[128]; /* output of the lttng commands */
    char session[64];
    pid_t sessiond; /* the daemon this test started; 0 when one was running */
    int session_made;
    tr_trace_t tr;
    tj_rank_t job[TJ_JOB_RANKS];   /* what each rank of the 4-rank job saw */
    tj_rank_t hang[TJ_HANG_RANKS]; /* ... of the 2-rank job with a timeout */
} g;

/* Run a program with its output appended to g.log (or stdout to `out`). */
static int run(const char *const argv[], const char *out)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int lf = open(g.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int of = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : lf;
        if (lf < 0 || of < 0) _exit(126);
        dup2(of, 1);
        dup2(lf, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void show_log(void)
{
    FILE *f = fopen(g.log, "r");
    char line[512];
    fprintf(stderr, "---- output of the lttng commands (%s)\n", g.log);
    while (f && fgets(line, sizeof(line), f))
        fputs(line, stderr);
    if (f) fclose(f);
}

/* The session daemon's run directory: root has one per machine. */
static void rundir(char *buf, size_t len)
{
    if (geteuid() == 0)
        snprintf(buf, len, "/var/run/lttng");
    else
        snprintf(buf, len, "%s/.lttng", g.dir);
}

/* 1 while `pid` is a live (not zombie) lttng-sessiond. */
static int is_sessiond(pid_t pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close = strrchr(stat, ')');
    return strstr(stat, "(lttng-sessiond)") && close && close[1] == ' ' && close[2] != 'Z';
}

/* The PID in the daemon's pid file, if that daemon lives; else 0. */
static pid_t live_sessiond(void)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    rundir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/lttng-sessiond.pid", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int pid = 0;
    int ok = fscanf(f, "%d", &pid) == 1;
    fclose(f);
    return ok && pid > 0 && is_sessiond(pid) ? pid : 0;
}

static int start_sessiond(void)
{
    if (live_sessiond()) return 0; /* use it, leave it running */
    const char *argv[] = {CC_TEST_LTTNG_SESSIOND, "--no-kernel", "--daemonize", NULL};
    if (run(argv, NULL) != 0) return -1;
    g.sessiond = live_sessiond();
    return g.sessiond ? 0 : -1;
}

static void stop_sessiond(void)
{
    if (!g.sessiond) return;
    kill(g.sessiond, SIGTERM);
    for (int i = 0; i < 100 && is_sessiond(g.sessiond); i++)
        usleep(100000);
    if (is_sessiond(g.sessiond)) {
        fprintf(stderr, "lttng-sessiond %d ignored SIGTERM for 10 s: SIGKILL\n", (int)g.sessiond);
        kill(g.sessiond, SIGKILL);
    }
    g.sessiond = 0;
}

static int lttng(const char *a, const char *b, const char *c, const char *d)
{
    const char *argv[] = {CC_TEST_LTTNG, a, b, c, d, NULL};
    return run(argv, NULL);
}

static int make_session(void)
{
    char out[PATH_MAX], sess[96];
    snprintf(out, sizeof(out), "--output=%s/trace", g.dir);
    snprintf(sess, sizeof(sess), "--session=%s", g.session);
    if (lttng("create", g.session, out, NULL) != 0) return -1;
    g.session_made = 1;
    if (lttng("enable-event", "--userspace", "ccomm:*", sess) != 0) return -1;
    if (lttng("add-context", "--userspace", "--type=vpid", sess) != 0) return -1;
    return lttng("start", g.session, NULL, NULL);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int group_setup(void **state)
{
    (void)state;
    if (start_sessiond() != 0) {
        fprintf(stderr, "cannot start lttng-sessiond --no-kernel --daemonize\n");
        show_log();
        return -1;
    }
    if (make_session() != 0) {
        fprintf(stderr, "cannot set up session %s\n", g.session);
        show_log();
        return -1;
    }
    int bad = tj_run_job(g.dir, CC_TEST_PROVIDER, g.job);
    int bad_hang = tj_run_hang(g.dir, CC_TEST_PROVIDER, g.hang);
    int stop = lttng("stop", g.session, NULL, NULL);
    char txt[PATH_MAX], trace[PATH_MAX];
    snprintf(txt, sizeof(txt), "%s/trace.txt", g.dir);
    snprintf(trace, sizeof(trace), "%s/trace", g.dir);
    const char *argv[] = {CC_TEST_BABELTRACE2, trace, NULL};
    int bt = stop == 0 ? run(argv, txt) : -1;
    if (bad || bad_hang || stop || bt || tr_read(txt, &g.tr) != 0) {
        fprintf(stderr, "job: %d ranks failed; hang job: %d; lttng stop: %d; babeltrace2: %d\n",
                bad, bad_hang, stop, bt);
        show_log();
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (g.session_made && lttng("destroy", g.session, NULL, NULL) != 0)
        fprintf(stderr, "lttng destroy %s failed\n", g.session);
    stop_sessiond();
    tr_free(&g.tr);
    nftw(g.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* ---- lookups in the trace ---------------------------------------------------- */

/* The n-th event called `name` of process `vpid` for which match() holds. */
typedef int (*tr_match_fn)(const tr_event_t *e, const void *arg);

static const tr_event_t *find(long vpid, const char *name, tr_match_fn match, const void *arg,
                              int n)
{
    for (size_t i = 0; i < g.tr.n; i++) {
        const tr_event_t *e = &g.tr.ev[i];
        if (e->vpid != vpid || strcmp(e->name, name) || (match && !match(e, arg))) continue;
        if (n-- == 0) return e;
    }
    return NULL;
}

static int count(long vpid, const char *name, tr_match_fn match, const void *arg)
{
    int n = 0;
    while (find(vpid, name, match, arg, n))
        n++;
    return n;
}

static int same_op_id(const tr_event_t *e, const void *arg)
{
    return tr_u64(e, "op_id", 0) == *(const uint64_t *)arg;
}

static int on_comm(const tr_event_t *e, const void *arg)
{
    return tr_u64(e, "comm_id", 0) == *(const uint64_t *)arg;
}

/* ---- checks ------------------------------------------------------------------ */

/* Field `key` of event e must read `want` (a number's text, a string, an enum label). */
#define EXPECT_FIELD(e, key, want)                                                                 \
    do {                                                                                           \
        char got_[256] = "(absent)";                                                               \
        tr_field((e), (key), got_, sizeof(got_));                                                  \
        if (strcmp(got_, (want)))                                                                  \
            fail_msg("%s.%s is \"%s\", expected \"%s\" in:%s", (e)->name, (key), got_, (want),     \
                     (e)->text);                                                                   \
    } while (0)

static void expect_u64(const tr_event_t *e, const char *key, uint64_t want)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)want);
    if (tr_u64(e, key, want + 1) != want) fail_msg("%s.%s != %s in:%s", e->name, key, buf, e->text);
}

static const tr_event_t *need(long vpid, const char *name, tr_match_fn match, const void *arg,
                              int n)
{
    const tr_event_t *e = find(vpid, name, match, arg, n);
    if (!e) fail_msg("process %ld: no %s #%d in the trace", vpid, name, n);
    return e;
}

/* Lifecycle of each rank: world and half created, split once, both destroyed. */
static void test_lifecycle(void **state)
{
    (void)state;
    for (int r = 0; r < TJ_JOB_RANKS; r++) {
        const tj_rank_t *me = &g.job[r];
        long p = me->pid;
        assert_int_equal(count(p, "comm_init", NULL, NULL), 2);
        const tr_event_t *w = need(p, "comm_init", on_comm, &me->world_id, 0);
        expect_u64(w, "parent_comm_id", 0);
        expect_u64(w, "rank", (uint64_t)r);
        expect_u64(w, "size", TJ_JOB_RANKS);
        expect_u64(w, "device", (uint64_t)CC_DEVICE_CPU);
        EXPECT_FIELD(w, "comm_name", "world");
        EXPECT_FIELD(w, "engine", "native");
        EXPECT_FIELD(w, "status", "OK");
        assert_true(tr_u64(w, "duration_ns", 0) > 0);
        assert_true(tr_u64(w, "op_id", 0) > 0);
        const tr_event_t *h = need(p, "comm_init", on_comm, &me->half_id, 0);
        char name[32];
        snprintf(name, sizeof(name), "world.%d", r % 2);
        expect_u64(h, "parent_comm_id", me->world_id);
        expect_u64(h, "rank", (uint64_t)(r / 2));
        expect_u64(h, "size", 2);
        EXPECT_FIELD(h, "comm_name", name);
        EXPECT_FIELD(h, "status", "OK");
        assert_int_equal(count(p, "comm_split", NULL, NULL), 1);
        EXPECT_FIELD(need(p, "comm_split", on_comm, &me->world_id, 0), "status", "OK");
        assert_int_equal(count(p, "comm_destroy", NULL, NULL), 2);
        EXPECT_FIELD(need(p, "comm_destroy", on_comm, &me->half_id, 0), "status", "OK");
        EXPECT_FIELD(need(p, "comm_destroy", on_comm, &me->world_id, 0), "status", "OK");
        assert_int_equal(count(p, "comm_abort", NULL, NULL) + count(p, "abort", NULL, NULL), 0);
    }
}

/* An op's three events: one each, in order, agreeing on its identity. */
static void expect_op_events(long p, const tr_event_t *q)
{
    uint64_t id = tr_u64(q, "op_id", 0);
    assert_int_equal(count(p, "op_enqueue", same_op_id, &id), 1);
    assert_int_equal(count(p, "op_start", same_op_id, &id), 1);
    assert_int_equal(count(p, "op_end", same_op_id, &id), 1);
    const tr_event_t *s = need(p, "op_start", same_op_id, &id, 0);
    const tr_event_t *e = need(p, "op_end", same_op_id, &id, 0);
    assert_true(q < s && s < e); /* babeltrace2 prints in time order */
    char type[64], comm[32];
    assert_true(tr_field(q, "type", type, sizeof(type)) &&
                tr_field(q, "comm_id", comm, sizeof(comm)));
    EXPECT_FIELD(s, "type", type);
    EXPECT_FIELD(e, "type", type);
    EXPECT_FIELD(s, "comm_id", comm);
    EXPECT_FIELD(e, "comm_id", comm);
    expect_u64(e, "coll_seq", tr_u64(q, "coll_seq", 0));
    expect_u64(e, "p2p_seq", tr_u64(q, "p2p_seq", 0));
    EXPECT_FIELD(e, "status", "OK");
    assert_true(tr_u64(e, "duration_ns", 0) <= tr_u64(e, "total_ns", 0));
    assert_true(tr_u64(e, "total_ns", 0) > 0);
}

static void expect_coll(const tr_event_t *q, const char *type, uint64_t comm, uint64_t seq,
                        const char *count_, const char *dtype, const char *redop, uint64_t bytes)
{
    EXPECT_FIELD(q, "type", type);
    expect_u64(q, "comm_id", comm);
    expect_u64(q, "coll_seq", seq);
    expect_u64(q, "p2p_seq", 0);
    EXPECT_FIELD(q, "count", count_);
    EXPECT_FIELD(q, "dtype", dtype);
    EXPECT_FIELD(q, "redop", redop);
    expect_u64(q, "bytes", bytes);
    EXPECT_FIELD(q, "root", "-1");
    EXPECT_FIELD(q, "peer", "-1");
}

/* A send contributes its elements (count), a receive receives them (out_count). */
static void expect_p2p(const tr_event_t *q, const char *type, uint64_t comm, int peer)
{
    int send = !strcmp(type, "send");
    EXPECT_FIELD(q, "type", type);
    expect_u64(q, "comm_id", comm);
    expect_u64(q, "coll_seq", 0);
    expect_u64(q, "p2p_seq", 1);
    expect_u64(q, "peer", (uint64_t)peer);
    EXPECT_FIELD(q, "count", send ? "256" : "0");
    EXPECT_FIELD(q, "out_count", send ? "0" : "256");
    EXPECT_FIELD(q, "dtype", "i32");
    EXPECT_FIELD(q, "redop", "none");
    expect_u64(q, "bytes", 1024);
}

/* Events of process p named `name` strictly between two events. */
static int count_between(long p, const char *name, const tr_event_t *from, const tr_event_t *to)
{
    int n = 0;
    for (const tr_event_t *e = from + 1; e < to; e++)
        n += e->vpid == p && !strcmp(e->name, name);
    return n;
}

static const tr_event_t *first_between(long p, const char *name, const tr_event_t *from,
                                       const tr_event_t *to)
{
    for (const tr_event_t *e = from + 1; e < to; e++)
        if (e->vpid == p && !strcmp(e->name, name)) return e;
    return NULL;
}

/* The transport's messages inside a point-to-point op: exactly its one message. */
static void expect_xfer(long p, const tr_event_t *q, const char *dir, int peer, uint64_t comm)
{
    uint64_t id = tr_u64(q, "op_id", 0);
    const tr_event_t *s = need(p, "op_start", same_op_id, &id, 0);
    const tr_event_t *e = need(p, "op_end", same_op_id, &id, 0);
    assert_int_equal(count_between(p, "xfer_begin", s, e), 1);
    assert_int_equal(count_between(p, "xfer_end", s, e), 1);
    const tr_event_t *b = first_between(p, "xfer_begin", s, e);
    const tr_event_t *f = first_between(p, "xfer_end", s, e);
    assert_true(b < f);
    for (int k = 0; k < 2; k++) {
        const tr_event_t *x = k ? f : b;
        EXPECT_FIELD(x, "dir", dir);
        expect_u64(x, "peer", (uint64_t)peer);
        expect_u64(x, "comm_id", comm);
        expect_u64(x, "tag", 0);
        expect_u64(x, "bytes", 1024);
        EXPECT_FIELD(x, "transport", "shm");
    }
    EXPECT_FIELD(f, "status", "OK");
}

/* Every message a process posted ended once, well; collectives move some. */
static void expect_messages(long p, const tr_event_t *allreduce)
{
    int begins = count(p, "xfer_begin", NULL, NULL);
    assert_true(begins > 0);
    assert_int_equal(count(p, "xfer_end", NULL, NULL), begins);
    for (int i = 0; i < begins; i++)
        EXPECT_FIELD(need(p, "xfer_end", NULL, NULL, i), "status", "OK");
    uint64_t id = tr_u64(allreduce, "op_id", 0);
    const tr_event_t *s = need(p, "op_start", same_op_id, &id, 0);
    const tr_event_t *e = need(p, "op_end", same_op_id, &id, 0);
    assert_true(count_between(p, "xfer_begin", s, e) > 0);
}

/* Each rank's ops, in issue order, with their arguments and numbering. */
static void test_op_events(void **state)
{
    (void)state;
    for (int r = 0; r < TJ_JOB_RANKS; r++) {
        const tj_rank_t *me = &g.job[r];
        long p = me->pid;
        assert_int_equal(count(p, "op_enqueue", NULL, NULL), 6);
        for (int i = 0; i < 6; i++)
            expect_op_events(p, need(p, "op_enqueue", NULL, NULL, i));
        const tr_event_t *q[6];
        for (int i = 0; i < 6; i++)
            q[i] = need(p, "op_enqueue", NULL, NULL, i);
        expect_coll(q[0], "all_reduce", me->world_id, 1, "1024", "f32", "sum", 4096);
        expect_coll(q[1], "all_reduce", me->world_id, 2, "1024", "f32", "sum", 4096);
        EXPECT_FIELD(q[2], "type", "barrier");
        expect_u64(q[2], "coll_seq", 3);
        int to = (r + 1) % TJ_JOB_RANKS, from = (r + TJ_JOB_RANKS - 1) % TJ_JOB_RANKS;
        const tr_event_t *snd = q[r % 2 ? 4 : 3], *rcv = q[r % 2 ? 3 : 4];
        expect_p2p(snd, "send", me->world_id, to);
        expect_p2p(rcv, "recv", me->world_id, from);
        expect_xfer(p, snd, "send", to, me->world_id);
        expect_xfer(p, rcv, "recv", from, me->world_id);
        expect_messages(p, q[0]);
        expect_coll(q[5], "all_reduce", me->half_id, 1, "3", "i64", "max", 24);
        for (int i = 0; i < 6; i++)
            expect_u64(q[i], "rank", (uint64_t)(i == 5 ? r / 2 : r));
    }
}

/* Every op a rank's POST hook saw is in the trace under the same op_id and
 * type, and the trace has no op the hook did not see. */
static void test_op_ids_match_hooks(void **state)
{
    (void)state;
    static const char *const ends[] = {"op_end", "comm_init", "comm_split", "comm_destroy",
                                       "comm_abort"};
    const tj_rank_t *all[TJ_JOB_RANKS + TJ_HANG_RANKS];
    for (int r = 0; r < TJ_JOB_RANKS; r++)
        all[r] = &g.job[r];
    for (int r = 0; r < TJ_HANG_RANKS; r++)
        all[TJ_JOB_RANKS + r] = &g.hang[r];
    for (int k = 0; k < TJ_JOB_RANKS + TJ_HANG_RANKS; k++) {
        const tj_rank_t *me = all[k];
        int in_trace = 0;
        for (size_t j = 0; j < sizeof(ends) / sizeof(ends[0]); j++)
            in_trace += count(me->pid, ends[j], NULL, NULL);
        assert_int_equal(in_trace, me->nops);
        for (int i = 0; i < me->nops; i++) {
            const tj_op_t *o = &me->ops[i];
            const tr_event_t *e = NULL;
            for (size_t j = 0; !e && j < sizeof(ends) / sizeof(ends[0]); j++)
                e = find(me->pid, ends[j], same_op_id, &o->op_id, 0);
            if (!e)
                fail_msg("process %ld: op %llu (%s) is not in the trace", me->pid,
                         (unsigned long long)o->op_id, cc_op_type_name(o->type));
            expect_u64(e, "comm_id", o->comm_id);
            EXPECT_FIELD(e, "status", cc_status_name(o->status));
            if (!strcmp(e->name, "op_end")) EXPECT_FIELD(e, "type", cc_op_type_name(o->type));
        }
    }
}

/* The flight recorder of the same run holds the same op_ids: its entries are
 * the op_enqueue events, its lifecycle list the comm_* events. */
static void test_op_ids_match_recorder(void **state)
{
    (void)state;
    if (!tj_have_recorder()) skip();
    for (int r = 0; r < TJ_JOB_RANKS; r++) {
        const tj_rank_t *me = &g.job[r];
        assert_true(me->nrec > 0);
        int life = 0;
        for (int i = 0; i < me->nrec; i++) {
            const tj_op_t *o = &me->rec[i];
            assert_true(o->type >= 0);
            int is_life = o->type >= CC_OP_COMM_INIT;
            const char *ev = is_life ? NULL : "op_enqueue";
            const tr_event_t *e = ev ? find(me->pid, ev, same_op_id, &o->op_id, 0) : NULL;
            static const char *const lc[] = {"comm_init", "comm_split", "comm_destroy",
                                             "comm_abort"};
            for (int j = 0; is_life && !e && j < 4; j++)
                e = find(me->pid, lc[j], same_op_id, &o->op_id, 0);
            if (!e)
                fail_msg("rank %d: recorder op %llu (%s) is not in the trace", r,
                         (unsigned long long)o->op_id, cc_op_type_name(o->type));
            expect_u64(e, "comm_id", o->comm_id);
            if (is_life)
                EXPECT_FIELD(e, "status", cc_status_name(o->status));
            else
                EXPECT_FIELD(e, "type", cc_op_type_name(o->type));
            life += is_life;
        }
        assert_int_equal(me->nrec - life, count(me->pid, "op_enqueue", NULL, NULL));
    }
}

static void expect_substr(const tr_event_t *e, const char *key, const char *part)
{
    char buf[512] = "";
    if (!tr_field(e, key, buf, sizeof(buf)) || !strstr(buf, part))
        fail_msg("%s.%s is \"%s\", expected to contain \"%s\"", e->name, key, buf, part);
}

/* The n-th recorder_dump of process p is the rank's cc_recorder_dump to <dir>/<tag>-rank<r>.json.
 */
static void expect_dump_call(long p, const char *tag, int r, int n)
{
    char want[PATH_MAX];
    snprintf(want, sizeof(want), "%s/%s-rank%d.json", g.dir, tag, r);
    const tr_event_t *d = need(p, "recorder_dump", NULL, NULL, n);
    EXPECT_FIELD(d, "reason", "cc_recorder_dump");
    EXPECT_FIELD(d, "path", want);
    EXPECT_FIELD(d, "status", "OK");
}

/* The hang path: the op that timed out, the abort it caused, the dumps. */
static void test_hang_path(void **state)
{
    (void)state;
    const tj_rank_t *r0 = &g.hang[0], *r1 = &g.hang[1];
    uint64_t x = r0->timed_out_op;
    assert_true(x > 0);
    const tr_event_t *e = need(r0->pid, "op_end", same_op_id, &x, 0);
    EXPECT_FIELD(e, "status", "ERR_TIMEOUT");
    EXPECT_FIELD(e, "type", "all_reduce");
    const tr_event_t *w = need(r0->pid, "watchdog_timeout", NULL, NULL, 0);
    expect_u64(w, "op_id", x);
    expect_u64(w, "comm_id", r0->world_id);
    expect_u64(w, "timeout_ms", TJ_HANG_TIMEOUT_MS);
    EXPECT_FIELD(w, "type", "all_reduce");
    assert_true(tr_u64(w, "waited_ns", 0) >= (uint64_t)TJ_HANG_TIMEOUT_MS * 1000000ull);
    const tr_event_t *a = need(r0->pid, "abort", NULL, NULL, 0);
    expect_u64(a, "op_id", x);
    expect_u64(a, "comm_id", r0->world_id);
    EXPECT_FIELD(a, "reason", "ERR_TIMEOUT");
    assert_true(w < a);
    char msg[256] = "";
    assert_true(tr_field(a, "message", msg, sizeof(msg)) && msg[0]);
    assert_int_equal(count(r1->pid, "watchdog_timeout", NULL, NULL), 0);
    if (!tj_have_recorder()) return;
    /* Rank 0 dumps on its abort, rank 1 on the job-wide request (the watchdog,
     * first), then each through cc_recorder_dump at the end of its job. */
    for (int r = 0; r < TJ_HANG_RANKS; r++) {
        long p = g.hang[r].pid;
        char want[64];
        assert_int_equal(count(p, "recorder_dump", NULL, NULL), 2);
        const tr_event_t *w0 = need(p, "recorder_dump", NULL, NULL, 0);
        EXPECT_FIELD(w0, "status", "OK");
        snprintf(want, sizeof(want), "/rank%d.json", r);
        expect_substr(w0, "path", want);
        expect_substr(w0, "reason", r == 0 ? "aborted on rank 0" : "requested by the job");
        expect_dump_call(p, "hang", r, 1);
    }
}

/* Each job rank's own dump call at the end, and no other dump. */
static void test_dump_calls(void **state)
{
    (void)state;
    if (!tj_have_recorder()) skip();
    for (int r = 0; r < TJ_JOB_RANKS; r++) {
        assert_int_equal(count(g.job[r].pid, "recorder_dump", NULL, NULL), 1);
        expect_dump_call(g.job[r].pid, "job", r, 0);
    }
}

static const struct CMUnitTest trace_tests[] = {
    cmocka_unit_test(test_lifecycle),          cmocka_unit_test(test_op_events),
    cmocka_unit_test(test_op_ids_match_hooks), cmocka_unit_test(test_op_ids_match_recorder),
    cmocka_unit_test(test_hang_path),          cmocka_unit_test(test_dump_calls),
};

int main(void)
{
    if (!CC_TEST_LTTNG[0] || !CC_TEST_LTTNG_SESSIOND[0]) {
        printf("skipped: lttng-tools (lttng, lttng-sessiond) is not installed\n");
        return 77;
    }
    if (!CC_TEST_BABELTRACE2[0]) {
        printf("skipped: babeltrace2 is not installed\n");
        return 77;
    }
    if (!CC_TEST_PROVIDER[0]) {
        printf("skipped: libccomm-lttng.so was not built (no lttng-ust development files)\n");
        return 77;
    }
    snprintf(g.dir, sizeof(g.dir), "/tmp/ccomm-lttng-trace-XXXXXX");
    if (!mkdtemp(g.dir)) return 1;
    snprintf(g.log, sizeof(g.log), "%s/lttng.log", g.dir);
    snprintf(g.session, sizeof(g.session), "ccomm-test-%d", (int)getpid());
    /* A private LTTNG_HOME (and HOME, which lttng wants set); the ranks inherit it. */
    setenv("LTTNG_HOME", g.dir, 1);
    if (!getenv("HOME")) setenv("HOME", g.dir, 1);
    /* The checks follow an allreduce's messages (xfer events): the shared-memory
     * algorithms move data through the arena instead, so the ranks use the ring. */
    setenv("CCOMM_ALGO_ALLREDUCE", "ring", 1);
    /* One such test at a time on this machine: root has one session daemon. */
    int lock = open("/tmp/ccomm-lttng-test.lock", O_RDWR | O_CREAT, 0666);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) return 1;
    int rc = cmocka_run_group_tests(trace_tests, group_setup, group_teardown);
    close(lock);
    return rc;
}
