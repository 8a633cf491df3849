/*
 * test_clog_ring.c - the ring and the writer: drops are counted and
 * reported, concurrent producers lose nothing silently, flushes and exit
 * put everything on disk.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "base/solo.h"
#include "ccomm/ccomm.h"
#include "clog_test_util.h"

static cc_clog_t *open_small(const char *name, uint32_t ring)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir_make(), name);
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    conf.ring_records = ring;
    cc_clog_t *c = NULL;
    assert_int_equal(cc_clog_open(path, &conf, &c), CC_OK);
    return c;
}

static int count_prefix(char **l, const char *prefix)
{
    int k = 0;
    for (; *l; l++)
        k += strncmp(*l, prefix, strlen(prefix)) == 0;
    return k;
}

/* The ring alone: FIFO, full means refused and counted, slots reused by lap. */
static void test_ring_basics(void **state)
{
    (void)state;
    struct cc__clog_ring r;
    assert_int_not_equal(cc__clog_ring_init(&r, 3), 0); /* not a power of two */
    assert_int_equal(cc__clog_ring_init(&r, 4), 0);
    struct cc__clog_rec in, out;
    memset(&in, 0, sizeof(in));
    for (int lap = 0; lap < 3; lap++) {
        for (uint64_t i = 0; i < 6; i++) {
            in.op_id = i;
            assert_int_equal(cc__clog_ring_push(&r, &in), i < 4);
        }
        for (uint64_t i = 0; i < 4; i++) {
            assert_int_equal(cc__clog_ring_pop(&r, &out), 1);
            assert_int_equal(out.op_id, i);
        }
        assert_int_equal(cc__clog_ring_pop(&r, &out), 0);
    }
    assert_int_equal(atomic_load(&r.dropped), 6);
    in.text = strdup("left in the ring"); /* freed by fini */
    assert_int_equal(cc__clog_ring_push(&r, &in), 1);
    cc__clog_ring_fini(&r);
}

/*
 * In place: a claimed slot is read by nobody until published, even when later
 * positions are (ring order is file order); the consumer reads a record where
 * it lies and the slot comes back only at release.
 */
static void test_ring_in_place(void **state)
{
    (void)state;
    struct cc__clog_ring r;
    assert_int_equal(cc__clog_ring_init(&r, 2), 0);
    uint64_t p0, p1, p2;
    struct cc__clog_rec *a = cc__clog_ring_claim(&r, &p0);
    assert_non_null(a);
    struct cc__clog_rec *b = cc__clog_ring_claim(&r, &p1);
    assert_non_null(b);
    assert_int_equal(p1, p0 + 1);
    assert_null(cc__clog_ring_claim(&r, &p2)); /* two slots, both claimed: full */
    assert_int_equal(atomic_load(&r.dropped), 1);
    memset(b, 0, sizeof(*b));
    b->op_id = 2;
    cc__clog_ring_publish(&r, p1);
    assert_null(cc__clog_ring_peek(&r)); /* the older slot is not published yet */
    memset(a, 0, sizeof(*a));
    a->op_id = 1;
    cc__clog_ring_publish(&r, p0);
    struct cc__clog_rec *got = cc__clog_ring_peek(&r);
    assert_ptr_equal(got, a);
    assert_int_equal(got->op_id, 1);
    assert_null(cc__clog_ring_claim(&r, &p2)); /* peeked is not released: still full */
    cc__clog_ring_release(&r);
    assert_non_null(cc__clog_ring_claim(&r, &p2)); /* its slot, for the next lap */
    assert_int_equal(p2, p0 + 2);
    got = cc__clog_ring_peek(&r);
    assert_non_null(got);
    assert_int_equal(got->op_id, 2);
    cc__clog_ring_release(&r);
    assert_null(cc__clog_ring_peek(&r)); /* p2 claimed, never published */
    cc__clog_ring_fini(&r);
}

/* A tiny ring with the writer held: 4 lines written, 6 dropped and said so. */
static void test_drop_counting(void **state)
{
    (void)state;
    cc_clog_t *c = open_small("drop.log", 4);
    announce(c, 0xabcdef0123ull, "world"); /* its new_comm line out first: the ring is empty */
    assert_int_equal(cc_clog_flush(c, 5000), CC_OK);
    cc__clog_pause(c, 1);
    for (uint64_t i = 1; i <= 10; i++) {
        cc__op_t op = make_op(CC_OP_ALLREDUCE, i, i, 8);
        cc__clog_on_pre(&op.info, c);
    }
    assert_int_equal(cc_clog_dropped(c), 6);
    /* Paused: a flush cannot finish and says so within its bound. */
    assert_int_equal(cc_clog_flush(c, 20), CC_ERR_TIMEOUT);
    cc__clog_pause(c, 0);
    assert_int_equal(cc_clog_flush(c, 5000), CC_OK);
    char path[256];
    snprintf(path, sizeof(path), "%s", cc_clog_path(c));
    /* Room again: later records are written after the DROP line. */
    cc__op_t op = make_op(CC_OP_ALLREDUCE, 11, 11, 8);
    cc__clog_on_pre(&op.info, c);
    assert_int_equal(cc_clog_close(c), CC_OK);
    int n;
    char **l = read_lines(path, &n);
    assert_int_equal(count_prefix(l, "C1|Q|"), 5);
    assert_int_equal(count_prefix(l, "DROP|"), 1);
    int drop = -1;
    for (int i = 0; i < n; i++)
        if (!strncmp(l[i], "DROP|", 5)) drop = i;
    assert_true(strip_offset(l[drop]));
    assert_string_equal(l[drop], "DROP|count=6|total=6");
    assert_true(strip_offset(l[drop + 1]));
    assert_string_equal(l[drop + 1], "C1|Q|op_id=11|seq=11");
    assert_true(strip_offset(l[n - 1]));
    assert_string_equal(l[n - 1], "END|dropped=6");
    lines_free(l);
}

struct producer {
    cc_clog_t *c;
    int id;
    int n;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (int i = 1; i <= p->n; i++) {
        /* op_id encodes the thread and its own order. */
        cc__op_t op = make_op(CC_OP_ALLREDUCE, (uint64_t)p->id << 32 | (uint64_t)i, (uint64_t)i,
                              (size_t)p->id);
        cc__clog_on_pre(&op.info, p->c);
        op.info.status = CC_OK;
        cc__clog_on_post(&op.info, p->c);
    }
    return NULL;
}

/* Close c and check its file: every record of producers 1..nt is in it or counted as dropped;
 * no line is torn or doubled; each producer's lines keep its order. */
static void close_and_check(cc_clog_t *c, int nt, uint64_t records)
{
    char path[256];
    snprintf(path, sizeof(path), "%s", cc_clog_path(c));
    uint64_t dropped = cc_clog_dropped(c);
    assert_int_equal(cc_clog_close(c), CC_OK);
    int n;
    char **l = read_lines(path, &n);
    uint64_t last[8][2] = {{0}}, events = 0, drop_total = 0;
    assert_true(nt < 8);
    for (int i = 1; i < n; i++) {
        unsigned sig;
        char ev;
        unsigned long long id, seq;
        if (sscanf(l[i], "C%u|%c|op_id=%llu|seq=%llu|", &sig, &ev, &id, &seq) == 4) {
            int th = (int)(id >> 32), k = ev == 'E';
            assert_true(th >= 1 && th <= nt);
            assert_true((id & 0xffffffffu) == seq);
            assert_true(seq > last[th][k]); /* per-producer order, no duplicates */
            last[th][k] = seq;
            events++;
        } else if (!strncmp(l[i], "DROP|", 5)) {
            unsigned long long cnt, tot;
            assert_int_equal(sscanf(l[i], "DROP|count=%llu|total=%llu|", &cnt, &tot), 2);
            drop_total += cnt;
            assert_int_equal(tot, drop_total);
        } else {
            assert_true(!strncmp(l[i], "C", 1) || !strncmp(l[i], "END|", 4) ||
                        !strncmp(l[i], "new_comm|", 9));
        }
    }
    assert_int_equal(events + dropped, records);
    assert_int_equal(drop_total, dropped);
    lines_free(l);
}

/* Four producers race on a small ring. */
static void test_concurrent_producers(void **state)
{
    (void)state;
    enum { NT = 4, PER = 20000 };
    cc_clog_t *c = open_small("conc.log", 256);
    pthread_t t[NT];
    struct producer p[NT];
    for (int i = 0; i < NT; i++) {
        p[i] = (struct producer){c, i + 1, PER};
        assert_int_equal(pthread_create(&t[i], NULL, produce, &p[i]), 0);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    close_and_check(c, NT, (uint64_t)NT * PER * 2);
}

/*
 * The process's one writing thread (base/solo.h) claims positions with plain stores; when
 * four more producers start, the process switches to the compare-and-swap. Nothing is lost
 * or doubled across the switch. Last in main's list: the switch is for the whole process,
 * and the tests before it ran before cc__solo_init, on the compare-and-swap.
 */
static void test_one_producer_then_four(void **state)
{
    (void)state;
    enum { NT = 4, PER = 20000 };
    cc__solo_init();
    cc_clog_t *c = open_small("solo.log", 1u << 16);
    struct producer first = {c, NT + 1, PER / 2};
    produce(&first); /* the first half of producer NT + 1's records, alone */
    assert_true(cc__solo_active());
    assert_int_equal(cc_clog_dropped(c), 0);
    pthread_t t[NT];
    struct producer p[NT];
    for (int i = 0; i < NT; i++) {
        p[i] = (struct producer){c, i + 1, PER};
        assert_int_equal(pthread_create(&t[i], NULL, produce, &p[i]), 0);
    }
    for (int i = PER / 2 + 1; i <= PER; i++) { /* and its second half, among the others */
        cc__op_t op = make_op(CC_OP_ALLREDUCE, (uint64_t)(NT + 1) << 32 | (uint64_t)i,
                              (uint64_t)i, (size_t)(NT + 1));
        cc__clog_on_pre(&op.info, c);
        op.info.status = CC_OK;
        cc__clog_on_post(&op.info, c);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    assert_false(cc__solo_active());
    close_and_check(c, NT + 1, (uint64_t)(NT + 1) * PER * 2);
}

/* A flush returns once the lines are in the file; close writes the rest. */
static void test_flush_and_close(void **state)
{
    (void)state;
    cc_clog_t *c = open_small("flush.log", 1024);
    for (uint64_t i = 1; i <= 100; i++) {
        cc__op_t op = make_op(CC_OP_BROADCAST, i, i, 8);
        op.info.root = 0;
        cc__clog_on_pre(&op.info, c);
    }
    assert_int_equal(cc_clog_flush(c, -1), CC_OK);
    int n;
    char **l = read_lines(cc_clog_path(c), &n);
    assert_int_equal(count_prefix(l, "C1|Q|"), 100);
    assert_int_equal(count_prefix(l, "END|"), 0);
    lines_free(l);
    char path[256];
    snprintf(path, sizeof(path), "%s", cc_clog_path(c));
    for (uint64_t i = 101; i <= 150; i++) {
        cc__op_t op = make_op(CC_OP_BROADCAST, i, i, 8);
        op.info.root = 0;
        cc__clog_on_pre(&op.info, c);
    }
    assert_int_equal(cc_clog_close(c), CC_OK);
    l = read_lines(path, &n);
    assert_int_equal(count_prefix(l, "C1|Q|"), 150);
    assert_int_equal(count_prefix(l, "END|dropped=0|"), 1);
    lines_free(l);
}

/* A process that exits without closing still leaves a complete file. */
static void test_flush_at_exit(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "%s/exit.log", tmpdir_make());
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cc_clog_t *c;
        if (cc_clog_open(path, NULL, &c) != CC_OK) _exit(3);
        for (uint64_t i = 1; i <= 500; i++) {
            cc__op_t op = make_op(CC_OP_ALLREDUCE, i, i, 8);
            cc__clog_on_pre(&op.info, c);
        }
        exit(0); /* no close: the exit handler drains */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int n;
    char **l = read_lines(path, &n);
    assert_int_equal(count_prefix(l, "C1|Q|"), 500);
    assert_int_equal(count_prefix(l, "END|dropped=0|"), 1);
    lines_free(l);
}

/* A child forked after open has the ring but not the writer: exit and close
 * there must neither hang nor touch the parent's file. */
static void test_fork_child(void **state)
{
    (void)state;
    cc_clog_t *c = open_small("fork.log", 64);
    char path[256];
    snprintf(path, sizeof(path), "%s", cc_clog_path(c));
    cc__op_t op = make_op(CC_OP_ALLREDUCE, 1, 1, 8);
    cc__clog_on_pre(&op.info, c);
    assert_int_equal(cc_clog_flush(c, 5000), CC_OK);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cc__op_t o2 = make_op(CC_OP_ALLREDUCE, 2, 2, 8);
        cc__clog_on_pre(&o2.info, c); /* into a ring no one drains */
        if (cc_clog_flush(c, 10) != CC_ERR_TIMEOUT) _exit(3);
        exit(0); /* the exit handler must skip the parent's logger */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    int n;
    char **l = read_lines(path, &n);
    assert_int_equal(count_prefix(l, "END|"), 0);
    assert_int_equal(count_prefix(l, "C1|Q|op_id=2|"), 0);
    lines_free(l);
    assert_int_equal(cc_clog_close(c), CC_OK);
    l = read_lines(path, &n);
    assert_int_equal(count_prefix(l, "C1|Q|op_id=1|"), 1);
    assert_int_equal(count_prefix(l, "END|dropped=0|"), 1);
    lines_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_basics),     cmocka_unit_test(test_ring_in_place),
        cmocka_unit_test(test_drop_counting),   cmocka_unit_test(test_concurrent_producers),
        cmocka_unit_test(test_flush_and_close), cmocka_unit_test(test_flush_at_exit),
        cmocka_unit_test(test_fork_child),      cmocka_unit_test(test_one_producer_then_four),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    tmpdir_remove();
    return failed;
}
