/*
 * test_clog_lines.c - the exact text of every clog line kind, signature
 * numbering, event selection, path expansion and bad paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "clog_test_util.h"
#include "base/log.h"
#include "../abi/stderr_capture.h"

static cc_clog_t *open_in_tmp(const char *name, unsigned events)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir_make(), name);
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    conf.events = events;
    conf.rank = 2;
    cc_clog_t *c = NULL;
    assert_int_equal(cc_clog_open(path, &conf, &c), CC_OK);
    assert_non_null(c);
    return c;
}

/* Close c and return the file's lines. */
static char **close_and_read(cc_clog_t *c, int *n)
{
    char path[256];
    snprintf(path, sizeof(path), "%s", cc_clog_path(c));
    assert_int_equal(cc_clog_close(c), CC_OK);
    return read_lines(path, n);
}

static void test_header(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("header.log", CC_CLOG_ALL);
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 2);
    unsigned long long sec, usec;
    int rank, pid, used = 0;
    char host[256];
    assert_int_equal(sscanf(l[0], "V|1|base_timestamp=%llu.%6llu|rank=%d|pid=%d|host=%255[^|]|%n",
                            &sec, &usec, &rank, &pid, host, &used),
                     5);
    assert_string_equal(l[0] + used, "events=QSEWA");
    assert_true(sec > 1600000000ull);
    assert_int_equal(rank, 2);
    assert_int_equal(pid, (int)getpid());
    assert_true(strchr(l[0], '.')[7] == '|'); /* exactly six digits of microseconds */
    assert_true(strip_offset(l[1]));
    assert_string_equal(l[1], "END|dropped=0");
    lines_free(l);
}

/* Q, S, W, E of one allreduce, at chosen times, and their exact lines. */
static void test_op_lines(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("op.log", CC_CLOG_ALL);
    announce(c, 0xabcdef0123ull, "world");
    cc__op_t op = make_op(CC_OP_ALLREDUCE, 7, 3, 1024);
    uint64_t b = c->base_mono_ns;
    op.info.t_enqueue_ns = b + 1000000;
    cc__clog_on_pre(&op.info, c);
    op.info.t_start_ns = b + 2000000;
    cc__clog_on_start(&op.info, c);
    cc__clog_on_wait(&op.info, c);
    op.info.t_end_ns = b + 5250999; /* µs precision: the last 999 ns are cut */
    op.info.status = CC_OK;
    cc__clog_on_post(&op.info, c);
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 8);
    assert_true(strip_offset(l[1]));
    assert_string_equal(l[1], "new_comm|comm=world|id=000000abcdef0123|rank=0|size=4");
    assert_string_equal(
        l[2], "C1|sig|all_reduce|in_count=1024|out_count=1024|dtype=f32|red_op=sum|root=-1|"
              "peer=-1|comm=world");
    assert_string_equal(l[3], "C1|Q|op_id=7|seq=3|+0.001000");
    assert_string_equal(l[4], "C1|S|op_id=7|seq=3|+0.002000");
    assert_true(strip_offset(l[5]));
    assert_string_equal(l[5], "C1|W|op_id=7|seq=3");
    assert_string_equal(l[6], "C1|E|op_id=7|seq=3|status=OK|dur=0.003250|+0.005250");
    assert_true(strip_offset(l[7]));
    assert_string_equal(l[7], "END|dropped=0");
    lines_free(l);
}

/* At close the writer says, at info level, how many records it took and the CPU it used:
 * the figure that bounds clog's cost where the ranks share the CPUs (docs/performance.md). */
static void test_writer_cpu_line(void **state)
{
    (void)state;
    int level = atomic_load(&cc__log_level);
    atomic_store(&cc__log_level, CC_LOG_LEVEL_INFO);
    cc_clog_t *c = open_in_tmp("cpu.log", CC_CLOG_ALL);
    announce(c, 0x77ull, "world");
    cc__op_t op = make_op(CC_OP_ALLREDUCE, 7, 3, 8);
    cc__clog_on_pre(&op.info, c);
    cc__clog_on_start(&op.info, c);
    op.info.status = CC_OK;
    cc__clog_on_post(&op.info, c);
    /* Every record claimed so far: the comms' NEW records and the op's Q, S and E. */
    uint64_t claimed = cc__clog_ring_claimed(&c->ring);
    assert_true(claimed >= 4);
    FILE *tmp;
    int saved = capture_begin(&tmp);
    int n;
    char **l = close_and_read(c, &n);
    char *err = capture_end(tmp, saved);
    atomic_store(&cc__log_level, level);
    char want[96];
    snprintf(want, sizeof(want), "cpu.log: the writer took %llu records in ",
             (unsigned long long)claimed);
    const char *hit = strstr(err, want);
    assert_non_null(hit);
    double ms = -1, per = -1;
    assert_int_equal(sscanf(strstr(hit, " in ") + 4, "%lf ms of CPU (%lf ns a record)", &ms, &per),
                     2);
    assert_true(ms >= 0 && per > 0);
    assert_true(n > 4);
    free(err);
    lines_free(l);
}

/* Failed ops, point-to-point, ops without dtype, times before the base. */
static void test_other_ops(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("other.log", CC_CLOG_ALL);
    announce(c, 0xabcdef0123ull, "world");
    uint64_t b = c->base_mono_ns;
    cc__op_t send = make_op(CC_OP_SEND, 9, 0, 16);
    send.info.peer = 3;
    send.info.p2p_seq = 5;
    send.info.redop = CC_REDOP_COUNT;
    send.info.dtype = CC_INT8;
    send.info.t_enqueue_ns = b - 500000; /* enqueued before the logger opened */
    cc__clog_on_pre(&send.info, c);
    send.info.t_end_ns = b + 2000000;
    send.info.status = CC_ERR_PEER_LOST; /* never started: dur counts from the enqueue */
    cc__clog_on_post(&send.info, c);
    cc__op_t bar = make_op(CC_OP_BARRIER, 10, 4, 0);
    bar.info.dtype = CC_DTYPE_COUNT;
    bar.info.redop = CC_REDOP_COUNT;
    bar.info.t_enqueue_ns = b + 3000000;
    cc__clog_on_pre(&bar.info, c);
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 8);
    assert_string_equal(l[2], "C1|sig|send|in_count=16|out_count=16|dtype=i8|red_op=-|root=-1|"
                              "peer=3|comm=world");
    assert_string_equal(l[3], "C1|Q|op_id=9|seq=5|-0.000500");
    assert_string_equal(l[4], "C1|E|op_id=9|seq=5|status=ERR_PEER_LOST|dur=0.002500|+0.002000");
    assert_string_equal(l[5], "C2|sig|barrier|in_count=0|out_count=0|dtype=-|red_op=-|root=-1|"
                              "peer=-1|comm=world");
    assert_string_equal(l[6], "C2|Q|op_id=10|seq=4|+0.003000");
    lines_free(l);
}

/* Same signature, same number; any field that differs makes a new one. Runs
 * of one signature (the writer's last-signature shortcut) and returns to an
 * earlier one (the table) both keep the numbers. */
static void test_signature_numbering(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("sig.log", CC_CLOG_Q);
    announce(c, 0xabcdef0123ull, "world");
    announce(c, 77, "world.1");
    cc__op_t a = make_op(CC_OP_ALLREDUCE, 1, 1, 100);
    cc__op_t b = make_op(CC_OP_ALLREDUCE, 2, 2, 200);
    cc__op_t d = make_op(CC_OP_ALLREDUCE, 4, 1, 100);
    d.info.comm_id = 77; /* same op on another comm */
    d.info.comm_name = "world.1";
    cc__op_t e = make_op(CC_OP_ALLREDUCE, 5, 4, 100);
    e.info.redop = CC_MAX;
    cc__op_t *seq[] = {&a, &a, &b, &a, &d, &b, &e, &e, &d};
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
        cc__clog_on_pre(&seq[i]->info, c);
    int n;
    char **l = close_and_read(c, &n);
    const char *want[] = {
        "C1|sig|all_reduce|in_count=100|out_count=100|dtype=f32|red_op=sum|root=-1|peer=-1|"
        "comm=world",
        "C1|Q|op_id=1|seq=1",
        "C1|Q|op_id=1|seq=1",
        "C2|sig|all_reduce|in_count=200|out_count=200|dtype=f32|red_op=sum|root=-1|peer=-1|"
        "comm=world",
        "C2|Q|op_id=2|seq=2",
        "C1|Q|op_id=1|seq=1",
        "C3|sig|all_reduce|in_count=100|out_count=100|dtype=f32|red_op=sum|root=-1|peer=-1|"
        "comm=world.1",
        "C3|Q|op_id=4|seq=1",
        "C2|Q|op_id=2|seq=2",
        "C4|sig|all_reduce|in_count=100|out_count=100|dtype=f32|red_op=max|root=-1|peer=-1|"
        "comm=world",
        "C4|Q|op_id=5|seq=4",
        "C4|Q|op_id=5|seq=4",
        "C3|Q|op_id=4|seq=1",
    };
    int nw = (int)(sizeof(want) / sizeof(want[0]));
    assert_int_equal(n, nw + 4); /* header, two new_comm lines, END */
    for (int i = 0; i < nw; i++) {
        if (strstr(want[i], "|Q|")) assert_true(strip_offset(l[i + 3]));
        assert_string_equal(l[i + 3], want[i]);
    }
    lines_free(l);
}

/* Op lines name their comm through its new_comm line: the first op of a comm
 * the logger never saw created (attached to all comms after they were made)
 * writes that line itself, once; a name longer than the kept 63 bytes is cut. */
static void test_comm_names(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("names.log", CC_CLOG_Q);
    cc__op_t a = make_op(CC_OP_ALLREDUCE, 1, 1, 8);
    a.info.comm_id = 0x99;
    cc__clog_on_pre(&a.info, c);
    cc__clog_on_pre(&a.info, c);
    char longname[100];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    announce(c, 0x98, longname);
    cc__op_t b = make_op(CC_OP_ALLREDUCE, 2, 1, 8);
    b.info.comm_id = 0x98;
    cc__clog_on_pre(&b.info, c);
    cc__clog_on_pre(&a.info, c); /* back to the first comm: no second new_comm line */
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 10);
    for (int i = 1; i < n; i++)
        strip_offset(l[i]);
    assert_string_equal(l[1], "new_comm|comm=world|id=0000000000000099|rank=0|size=4");
    assert_string_equal(l[2], "C1|sig|all_reduce|in_count=8|out_count=8|dtype=f32|red_op=sum|"
                              "root=-1|peer=-1|comm=world");
    assert_string_equal(l[4], "C1|Q|op_id=1|seq=1");
    char want[200];
    snprintf(want, sizeof(want), "new_comm|comm=%.63s|id=0000000000000098|rank=0|size=4",
             longname);
    assert_string_equal(l[5], want);
    snprintf(want, sizeof(want), "C2|sig|all_reduce|in_count=8|out_count=8|dtype=f32|red_op=sum|"
                                 "root=-1|peer=-1|comm=%.63s", longname);
    assert_string_equal(l[6], want);
    assert_string_equal(l[8], "C1|Q|op_id=1|seq=1");
    lines_free(l);
}

struct race_arg {
    cc_clog_t *c;
    int t;
};

static void *race_ops(void *p)
{
    struct race_arg *a = p;
    for (int i = 0; i < 400; i++) {
        cc__op_t op = make_op(CC_OP_ALLREDUCE, (uint64_t)(1 + i), 1, 8);
        op.info.comm_id = 0x100 + (uint64_t)((i + a->t) % 8);
        op.info.comm_name = "racer";
        cc__clog_on_pre(&op.info, a->c);
    }
    return NULL;
}

/* Threads racing to the first op of the same unseen comms: one new_comm line per
 * comm, and before any line of that comm. */
static void test_comm_names_race(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("race.log", CC_CLOG_Q);
    pthread_t th[4];
    struct race_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (struct race_arg){c, t};
        assert_int_equal(pthread_create(&th[t], NULL, race_ops, &args[t]), 0);
    }
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    int n, news = 0;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 2 + 8 + 8 + 1600); /* V, new_comm x8, sig x8, Q x1600, END */
    for (int i = 1; i < n; i++) {
        if (!strncmp(l[i], "new_comm|", 9)) news++;
        if (strstr(l[i], "|sig|")) assert_non_null(strstr(l[i], "comm=racer"));
    }
    assert_int_equal(news, 8);
    lines_free(l);
}

/* new_comm, split (with a parent the writer knows), end_comm. */
static void test_comm_lines(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("comm.log", CC_CLOG_LIFECYCLE);
    cc__op_t w = make_op(CC_OP_COMM_INIT, 1, 0, 0);
    w.info.status = CC_OK;
    cc__clog_on_pre(&w.info, c);
    cc__clog_on_post(&w.info, c);
    cc__op_t ch = make_op(CC_OP_COMM_INIT, 2, 0, 0);
    ch.info.comm_id = 0x42;
    ch.info.comm_name = "world.1|odd"; /* '|' must not break the line */
    ch.info.rank = 1;
    ch.info.size = 2;
    ch.info.parent_comm_id = 0xabcdef0123ull;
    ch.info.status = CC_OK;
    cc__clog_on_post(&ch.info, c);
    cc__op_t failed = ch;
    failed.info.status = CC_ERR_TIMEOUT; /* an init that failed makes no comm */
    cc__clog_on_post(&failed.info, c);
    cc__op_t d = make_op(CC_OP_COMM_DESTROY, 3, 0, 0);
    d.info.status = CC_OK;
    cc__clog_on_post(&d.info, c);
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 6);
    for (int i = 1; i < n; i++)
        assert_true(strip_offset(l[i]));
    assert_string_equal(l[1], "new_comm|comm=world|id=000000abcdef0123|rank=0|size=4");
    assert_string_equal(l[2], "new_comm|comm=world.1%7Codd|id=0000000000000042|rank=1|size=2");
    assert_string_equal(l[3], "split|parent=world|child=world.1%7Codd|parent_id=000000abcdef0123|"
                              "child_id=0000000000000042|ranks=?");
    assert_string_equal(l[4], "end_comm|comm=world|id=000000abcdef0123");
    assert_string_equal(l[5], "END|dropped=0");
    lines_free(l);
}

/* An abort is on disk when the abort hook returns, before any close. */
static void test_abort_lines_and_flush(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("abort.log", CC_CLOG_ALL);
    cc__op_t op = make_op(CC_OP_ALLREDUCE, 12, 6, 8);
    op.info.t_enqueue_ns = c->base_mono_ns + 10;
    cc__clog_on_pre(&op.info, c);
    cc_abort_info_t ai = {NULL,
                          op.info.comm_id,
                          "world",
                          0,
                          4,
                          CC_ERR_TIMEOUT,
                          "all_reduce 12 timed out | rank 3 silent\n",
                          &op.info,
                          0};
    cc__clog_on_abort(&ai, c);
    ai.op = NULL;
    ai.reason = CC_ERR_ABORTED;
    ai.message = "cc_comm_abort called";
    cc__clog_on_abort(&ai, c);
    int n;
    char **l = read_lines(cc_clog_path(c), &n); /* not closed: the abort flushed */
    assert_int_equal(n, 6); /* V, new_comm, sig, Q, A, A */
    for (int i = 4; i < n; i++)
        assert_true(strip_offset(l[i]));
    assert_string_equal(l[4], "C1|A|op_id=12|seq=6|comm=world|reason=ERR_TIMEOUT|"
                              "msg=all_reduce 12 timed out %7C rank 3 silent%0A");
    assert_string_equal(l[5], "C0|A|op_id=0|seq=0|comm=world|reason=ERR_ABORTED|"
                              "msg=cc_comm_abort called");
    lines_free(l);
    assert_int_equal(cc_clog_close(c), CC_OK);
}

/* Only the chosen events reach the file; comm lines always do. */
static void test_event_selection(void **state)
{
    (void)state;
    unsigned m = 0;
    assert_int_equal(cc_clog_parse_events("ALL", &m), CC_OK);
    assert_int_equal(m, CC_CLOG_ALL);
    assert_int_equal(cc_clog_parse_events("lifecycle", &m), CC_OK);
    assert_int_equal(m, CC_CLOG_LIFECYCLE);
    assert_int_equal(cc_clog_parse_events(" q, E ,w", &m), CC_OK);
    assert_int_equal(m, CC_CLOG_Q | CC_CLOG_E | CC_CLOG_W);
    m = 99;
    assert_int_equal(cc_clog_parse_events("Q,X", &m), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_parse_events("", &m), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_parse_events(",", &m), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_parse_events(NULL, &m), CC_ERR_INVALID_ARG);
    assert_int_equal(m, 99);

    cc_clog_t *c = open_in_tmp("sel.log", CC_CLOG_E);
    cc__op_t op = make_op(CC_OP_ALLREDUCE, 1, 1, 4);
    cc__clog_on_pre(&op.info, c);
    cc__clog_on_start(&op.info, c);
    cc__clog_on_wait(&op.info, c);
    op.info.status = CC_OK;
    cc__clog_on_post(&op.info, c);
    cc__op_t w = make_op(CC_OP_COMM_INIT, 2, 0, 0);
    w.info.status = CC_OK;
    cc__clog_on_post(&w.info, c);
    cc_abort_info_t ai = {NULL, 1, "world", 0, 4, CC_ERR_ABORTED, "x", NULL, 0};
    cc__clog_on_abort(&ai, c);
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 6); /* V, new_comm (first op of an unseen comm), sig, E, new_comm, END */
    assert_true(strncmp(l[1], "new_comm|", 9) == 0);
    assert_true(strncmp(l[2], "C1|sig|", 7) == 0);
    assert_true(strncmp(l[3], "C1|E|", 5) == 0);
    assert_true(strncmp(l[4], "new_comm|", 9) == 0);
    lines_free(l);
}

static void test_path_expansion(void **state)
{
    (void)state;
    char pat[256], want[512], host[256];
    gethostname(host, sizeof(host));
    snprintf(pat, sizeof(pat), "%s/x.%%r.%%p.%%h.%%%%.log", tmpdir_make());
    snprintf(want, sizeof(want), "%s/x.5.%d.%s.%%.log", tmpdir_make(), (int)getpid(), host);
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    conf.rank = 5;
    cc_clog_t *c;
    assert_int_equal(cc_clog_open(pat, &conf, &c), CC_OK);
    assert_string_equal(cc_clog_path(c), want);
    struct stat st;
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(cc_clog_close(c), CC_OK);
}

static void test_bad_paths_and_args(void **state)
{
    (void)state;
    cc_clog_t *c = (cc_clog_t *)0x1;
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    uint64_t errs = cc__log_error_count();
    assert_int_equal(cc_clog_open("/proc/version/x/clog.log", NULL, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_open(tmpdir_make(), NULL, &c), CC_ERR_INVALID_ARG); /* a dir */
    assert_int_equal(cc_clog_open("/tmp/clog.%q.log", NULL, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_open("/tmp/clog.%", NULL, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_open("/tmp/clog.%r.log", NULL, &c), CC_ERR_INVALID_ARG); /* rank? */
    assert_int_equal(cc_clog_open("", NULL, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_open(NULL, NULL, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_open("/tmp/x", NULL, NULL), CC_ERR_INVALID_ARG);
    conf.ring_records = 1000; /* not a power of two */
    assert_int_equal(cc_clog_open("/tmp/x", &conf, &c), CC_ERR_INVALID_ARG);
    conf = (cc_clog_config_t)CC_CLOG_CONFIG_INIT;
    conf.events = 0x100;
    assert_int_equal(cc_clog_open("/tmp/x", &conf, &c), CC_ERR_INVALID_ARG);
    conf = (cc_clog_config_t)CC_CLOG_CONFIG_INIT;
    conf.struct_size = 1;
    assert_int_equal(cc_clog_open("/tmp/x", &conf, &c), CC_ERR_INVALID_ARG);
    assert_ptr_equal(c, (cc_clog_t *)0x1);           /* never set on failure */
    assert_true(cc__log_error_count() >= errs + 11); /* each was logged */
    /* Handles that are not open loggers. */
    cc_clog_t fake;
    memset(&fake, 0, sizeof(fake));
    assert_int_equal(cc_clog_close(NULL), CC_OK);
    assert_int_equal(cc_clog_close(&fake), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_flush(&fake, 0), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_attach(&fake, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_detach(NULL, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc_clog_dropped(NULL), 0);
    assert_null(cc_clog_path(NULL));
}

/* Names and messages longer than a line allows are cut, never overflow. */
static void test_long_text(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("long.log", CC_CLOG_ALL);
    size_t big = 3 * CC__CLOG_LINE_MAX;
    char *msg = malloc(big + 1);
    memset(msg, '|', big); /* each becomes %7C: three times longer */
    msg[big] = '\0';
    char name[200];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    cc_abort_info_t ai = {NULL, 1, name, 0, 4, CC_ERR_ABORTED, msg, NULL, 0};
    cc__clog_on_abort(&ai, c);
    free(msg);
    int n;
    char **l = close_and_read(c, &n);
    assert_int_equal(n, 3);
    assert_true(strlen(l[1]) < CC__CLOG_LINE_MAX);
    assert_true(strip_offset(l[1]));
    assert_non_null(strstr(l[1], "%7C%7C...")); /* the cut is marked */
    /* The comm name is kept up to CC__CLOG_NAME_MAX - 1 bytes. */
    char want[100];
    snprintf(want, sizeof(want), "comm=%.*s|", CC__CLOG_NAME_MAX - 1, name);
    assert_non_null(strstr(l[1], want));
    lines_free(l);
}

/*
 * The writer keeps the digits of the last op_id, seq, signature number and
 * offset seconds, and steps them by one in place: every carry (9 -> 10, 99 ->
 * 100, 1999 -> 2000), a jump back, a repeat, the largest values, and offsets
 * across second boundaries and before the base read as printf writes them.
 */
static void test_number_digits(void **state)
{
    (void)state;
    cc_clog_t *c = open_in_tmp("digits.log", CC_CLOG_Q | CC_CLOG_E);
    announce(c, 0xabcdef0123ull, "world");
    const uint64_t ids[] = {8,
                            9,
                            10,
                            11,
                            99,
                            100,
                            101,
                            5,
                            5,
                            6,
                            1999,
                            2000,
                            999999,
                            1000000,
                            1000001,
                            18446744073709551614ull,
                            18446744073709551615ull,
                            1,
                            2};
    /* Offsets in µs: a second's last µs and the next second's first, tens, and before the base. */
    const int64_t us[] = {999999,   1000000, 1000001, 9999999,  10000000, 2500000,      -1,
                          -1000000, -999999, 0,       59999999, 60000000, 123456789012, 7,
                          8,        9,       10,      11,       12};
    enum { N = sizeof(ids) / sizeof(ids[0]) };
    _Static_assert(sizeof(us) / sizeof(us[0]) == N, "one offset per id");
    uint64_t b = c->base_mono_ns;
    for (int i = 0; i < N; i++) {
        /* Two signatures taking turns now and then: C1 and C2 step back and forth. */
        cc__op_t op = make_op(CC_OP_ALLREDUCE, ids[i], ids[N - 1 - i], i % 5 == 4 ? 2 : 1);
        op.info.t_enqueue_ns = (uint64_t)((int64_t)b + us[i] * 1000);
        op.info.t_start_ns = op.info.t_enqueue_ns;
        op.info.t_end_ns = op.info.t_enqueue_ns + 1000;
        op.info.status = i == 3 ? CC_ERR_TIMEOUT : CC_OK;
        cc__clog_on_pre(&op.info, c);
        cc__clog_on_post(&op.info, c);
    }
    int n;
    char **l = close_and_read(c, &n);
    int k = 2; /* after the header and the new_comm line */
    for (int i = 0; i < N; i++) {
        if (strstr(l[k], "|sig|")) k++;
        int sig = i % 5 == 4 ? 2 : 1;
        uint64_t seq = ids[N - 1 - i];
        int64_t u = us[i], e = us[i] + 1;
        char want[256];
        snprintf(want, sizeof(want), "C%d|Q|op_id=%llu|seq=%llu|%c%lld.%06lld", sig,
                 (unsigned long long)ids[i], (unsigned long long)seq, u < 0 ? '-' : '+',
                 (long long)(llabs(u) / 1000000), (long long)(llabs(u) % 1000000));
        assert_string_equal(l[k], want);
        k++;
        snprintf(
            want, sizeof(want), "C%d|E|op_id=%llu|seq=%llu|status=%s|dur=0.000001|%c%lld.%06lld",
            sig, (unsigned long long)ids[i], (unsigned long long)seq, i == 3 ? "ERR_TIMEOUT" : "OK",
            e < 0 ? '-' : '+', (long long)(llabs(e) / 1000000), (long long)(llabs(e) % 1000000));
        assert_string_equal(l[k], want);
        k++;
    }
    assert_int_equal(k + 1, n); /* then END */
    lines_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_op_lines),
        cmocka_unit_test(test_writer_cpu_line),
        cmocka_unit_test(test_other_ops),
        cmocka_unit_test(test_signature_numbering),
        cmocka_unit_test(test_comm_names),
        cmocka_unit_test(test_comm_names_race),
        cmocka_unit_test(test_comm_lines),
        cmocka_unit_test(test_abort_lines_and_flush),
        cmocka_unit_test(test_event_selection),
        cmocka_unit_test(test_path_expansion),
        cmocka_unit_test(test_bad_paths_and_args),
        cmocka_unit_test(test_long_text),
        cmocka_unit_test(test_number_digits),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tmpdir_remove();
    return failed;
}
