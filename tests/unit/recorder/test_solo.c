/*
 * test_solo.c - the recorder's one-writer path (base/solo.h): a thread that
 * writes alone takes entries with plain stores; when more threads start
 * writing, the process switches to the locked path without losing, tearing
 * or numbering twice any entry; a signal handler that interrupts the owner
 * inside an entry's write neither waits for it nor touches that entry.
 *
 * The switch is one-way for a process, so each case runs in a child of its
 * own (forked before the child opens anything), which reports its first
 * failed check and exits 1; an alarm ends a child that hangs. Run it under
 * TSan (build-tsan) as well.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "base/solo.h"
#include "stress.h"

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c);                 \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

#ifdef __SANITIZE_THREAD__
#define SOLO_OPS 4000 /* the owner's ops before anyone else writes */
#define MORE_OPS 2000 /* each writer's ops after */
#define SIGNALS  300
#else
#define SOLO_OPS 20000
#define MORE_OPS 10000
#define SIGNALS  2000
#endif
#define WRITERS 4 /* after the owner's solo part, the owner and three more */

/* Every op a writer ran, with the record id it got (0: not recorded). */
static cc__op_t *g_done[WRITERS];
static uint64_t g_count[WRITERS];

/* Run op i of writer t and keep it. */
static void one_op(int t, uint64_t i)
{
    cc__op_t *op = &g_done[t][i];
    stress_op(op, t, i);
    stress_run(op);
    g_count[t] = i + 1;
}

static void *more_writer(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t first = t == 0 ? SOLO_OPS : 0; /* the owner goes on from its solo part */
    for (uint64_t i = first; i < first + MORE_OPS; i++)
        one_op(t, i);
    return NULL;
}

/* One op of a writer that starts after the switch (writer 3's numbers, past its own). */
static void *late_writer(void *arg)
{
    (void)arg;
    cc__op_t op;
    stress_op(&op, 3, MORE_OPS);
    stress_run(&op);
    return NULL;
}

/* Every recorded op is in the ring at its record id, whole and ended; no id was given twice.
 * The ring holds them all (its capacity is above the total). */
static void check_all_recorded(const cc__fr_snapshot_t *s, uint64_t *recorded)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->nentries; i++) {
        const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
        const char *why = stress_check(e);
        CHECK(!why, "record %llu is torn: %s", (unsigned long long)e->record_id, why);
        CHECK(i == 0 || e->record_id > cc__fr_snap_entry(s, i - 1)->record_id, "order");
    }
    for (int t = 0; t < WRITERS; t++)
        for (uint64_t i = 0; i < g_count[t]; i++) {
            const cc__op_t *op = &g_done[t][i];
            if (!op->rec_id) continue;
            n++;
            /* Entries are in record-id order: find op's by bisection. */
            uint32_t lo = 0, hi = s->nentries;
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (cc__fr_snap_entry(s, mid)->record_id < op->rec_id) lo = mid + 1;
                else hi = mid;
            }
            CHECK(lo < s->nentries, "record %llu of op %llx missing",
                  (unsigned long long)op->rec_id, (unsigned long long)op->info.op_id);
            const cc__fr_entry_t *e = cc__fr_snap_entry(s, lo);
            CHECK(e->record_id == op->rec_id && e->op_id == op->info.op_id,
                  "record %llu holds op %llx, not op %llx (an id given twice?)",
                  (unsigned long long)op->rec_id, (unsigned long long)e->op_id,
                  (unsigned long long)op->info.op_id);
            CHECK(e->state >= CC__FR_COMPLETED, "op %llx not ended", (unsigned long long)e->op_id);
        }
    CHECK(n == s->nentries, "%llu recorded ops, %u entries", (unsigned long long)n, s->nentries);
    *recorded = n;
}

/* The owner writes alone, then three more threads join it. */
static void case_switch(void)
{
    for (int t = 0; t < WRITERS; t++)
        CHECK((g_done[t] = calloc(SOLO_OPS + MORE_OPS, sizeof(cc__op_t))) != NULL, "memory");
    CHECK(rec_open(1 << 17, 0) == CC_OK, "open");
    for (uint64_t i = 0; i < SOLO_OPS; i++)
        one_op(0, i);
    CHECK(cc__solo_active(), "one thread wrote, but the process is not on the one-writer path");
    /* Alone, the owner numbered its entries 1, 2, 3, ... and skipped or dropped none. */
    for (uint64_t i = 0; i < SOLO_OPS; i++)
        CHECK(g_done[0][i].rec_id == i + 1, "op %llu got record %llu", (unsigned long long)i,
              (unsigned long long)g_done[0][i].rec_id);
    cc__fr_snapshot_t *s = rec_snapshot();
    CHECK(s->hdr.skipped == 0 && s->hdr.dropped == 0, "skipped %llu dropped %llu",
          (unsigned long long)s->hdr.skipped, (unsigned long long)s->hdr.dropped);
    cc__fr_snapshot_free(s);

    pthread_t th[WRITERS];
    for (int t = 1; t < WRITERS; t++)
        CHECK(pthread_create(&th[t], NULL, more_writer, (void *)(intptr_t)t) == 0, "thread");
    more_writer((void *)(intptr_t)0);
    for (int t = 1; t < WRITERS; t++)
        pthread_join(th[t], NULL);
    s = rec_snapshot();
    uint64_t recorded;
    check_all_recorded(s, &recorded);
    CHECK(!cc__solo_active(), "four threads wrote, and the process is still on the one-writer path");
    /* A thread that writes after the switch takes the locked path without a barrier. */
    unsigned barriers = cc__solo_barriers();
    CHECK(barriers >= 1 && barriers <= WRITERS - 1, "%u barriers for %d joiners", barriers,
          WRITERS - 1);
    pthread_t late;
    CHECK(pthread_create(&late, NULL, late_writer, NULL) == 0, "thread");
    pthread_join(late, NULL);
    CHECK(cc__solo_barriers() == barriers, "a writer after the switch ran the barrier again");
    uint64_t total = 0;
    for (int t = 0; t < WRITERS; t++)
        total += g_count[t];
    CHECK(total == SOLO_OPS + (uint64_t)WRITERS * MORE_OPS, "ops %llu", (unsigned long long)total);
    /* Every id handed out was recorded or counted skipped. */
    CHECK(s->hdr.next_record_id == recorded + s->hdr.skipped, "ids %llu, recorded %llu, skipped %llu",
          (unsigned long long)s->hdr.next_record_id, (unsigned long long)recorded,
          (unsigned long long)s->hdr.skipped);
    fprintf(stderr, "switch: %llu ops, %llu recorded, %llu ids skipped, %llu updates dropped\n",
            (unsigned long long)total, (unsigned long long)recorded,
            (unsigned long long)s->hdr.skipped, (unsigned long long)s->hdr.dropped);
    cc__fr_snapshot_free(s);
    cc__recorder_close();
}

/* ABORT marking from a signal handler on the owner's thread, over its writes. */
static _Atomic unsigned g_signals;
static _Atomic int g_stop;

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    cc_abort_info_t info = {.comm_id = 100, .reason = CC_ERR_ABORTED, .message = "test"};
    cc__recorder_on_abort(&info, NULL);
    atomic_fetch_add(&g_signals, 1);
    errno = saved;
}

static void *signaller(void *arg)
{
    pthread_t owner = *(pthread_t *)arg;
    for (unsigned n = 0; n < SIGNALS && !atomic_load(&g_stop); n++) {
        unsigned before = atomic_load(&g_signals);
        pthread_kill(owner, SIGUSR1);
        while (atomic_load(&g_signals) == before && !atomic_load(&g_stop))
            sched_yield();
    }
    return NULL;
}

static void case_signal(void)
{
    cc__op_t op;
    /* A small ring: each signal marks every slot of comm 100 that is still open. */
    CHECK(rec_open(256, 0) == CC_OK, "open");
    stress_op(&op, 0, 0);
    stress_run(&op);
    CHECK(cc__solo_active(), "not on the one-writer path");
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
    pthread_t self = pthread_self(), th;
    CHECK(pthread_create(&th, NULL, signaller, &self) == 0, "thread");
    uint64_t i = 1;
    for (; atomic_load(&g_signals) < SIGNALS; i++) {
        stress_op(&op, 0, i);
        stress_run(&op);
        /* Ids are the op's ordinal: none skipped, none given twice. */
        CHECK(op.rec_id == i + 1, "op %llu got record %llu", (unsigned long long)i,
              (unsigned long long)op.rec_id);
    }
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    /* The handler wrote on the owner's thread: that is not a second writer. */
    CHECK(cc__solo_active(), "a signal handler on the owner's thread switched the process");
    cc__fr_snapshot_t *s = rec_snapshot();
    for (uint32_t k = 0; k < s->nentries; k++) {
        const cc__fr_entry_t *e = cc__fr_snap_entry(s, k);
        const char *why = stress_check(e);
        CHECK(!why, "record %llu is torn: %s", (unsigned long long)e->record_id, why);
    }
    CHECK(s->hdr.skipped == 0, "skipped %llu", (unsigned long long)s->hdr.skipped);
    fprintf(stderr, "signal: %u handlers over %llu ops; dropped updates %llu\n",
            atomic_load(&g_signals), (unsigned long long)i, (unsigned long long)s->hdr.dropped);
    cc__fr_snapshot_free(s);
    cc__recorder_close();
}

/* CCOMM_SOLO_WRITER=0: the locked path from the first entry. */
static void case_off(void)
{
    setenv("CCOMM_SOLO_WRITER", "0", 1);
    CHECK((g_done[0] = calloc(100, sizeof(cc__op_t))) != NULL, "memory");
    CHECK(rec_open(256, 0) == CC_OK, "open");
    for (uint64_t i = 0; i < 100; i++)
        one_op(0, i);
    CHECK(!cc__solo_active(), "CCOMM_SOLO_WRITER=0, and the one-writer path is on");
    for (uint64_t i = 0; i < 100; i++)
        CHECK(g_done[0][i].rec_id == i + 1, "op %llu got record %llu", (unsigned long long)i,
              (unsigned long long)g_done[0][i].rec_id);
    cc__recorder_close();
}

/* Through the door: ops of five comms, the world's on the main thread alone, then four split
 * comms each on a thread of its own. Every op gets an op id of its own, and the ring holds
 * every op whole. */
#define DOOR_THREADS 4
#ifdef __SANITIZE_THREAD__
#define DOOR_OPS 300
#else
#define DOOR_OPS 3000
#endif

static void *door_ops(void *arg)
{
    cc_comm_t *c = arg;
    for (int i = 0; i < DOOR_OPS; i++) {
        int32_t x = i, y = -1;
        CHECK(cc_allreduce(c, &x, &y, 1, CC_INT32, CC_SUM, NULL, NULL) == CC_OK && y == i,
              "allreduce %d", i);
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void case_door(void)
{
    setenv("CCOMM_RECORDER_ENTRIES", "65536", 1);
    setenv("CCOMM_STORE_LINGER", "0", 1); /* a solo job: no one to wait for */
    cc__config_reload();
    cc_comm_t *world = NULL, *sub[DOOR_THREADS] = {0};
    CHECK(cc_comm_init(&world, 0, 1, "127.0.0.1:0", NULL) == CC_OK, "init");
    for (int t = 0; t < DOOR_THREADS; t++)
        CHECK(cc_comm_split(world, 0, 0, NULL, &sub[t]) == CC_OK && sub[t], "split %d", t);
    door_ops(world);
    CHECK(cc__solo_active(), "one thread issued every op, but the process is not on the "
                             "one-writer path");
    pthread_t th[DOOR_THREADS];
    for (int t = 0; t < DOOR_THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, door_ops, sub[t]) == 0, "thread");
    for (int t = 0; t < DOOR_THREADS; t++)
        pthread_join(th[t], NULL);
    CHECK(!cc__solo_active(), "five threads issued ops, and the process is still on the "
                              "one-writer path");

    cc__fr_snapshot_t *s = rec_snapshot();
    uint64_t *ids = calloc(s->nentries, sizeof(uint64_t));
    CHECK(ids != NULL, "memory");
    uint32_t n = 0;
    for (uint32_t k = 0; k < s->nentries; k++) {
        const cc__fr_entry_t *e = cc__fr_snap_entry(s, k);
        if (e->type != CC_OP_ALLREDUCE) continue;
        CHECK(e->state == CC__FR_COMPLETED, "op %llu in state %u", (unsigned long long)e->op_id,
              e->state);
        ids[n++] = e->op_id;
    }
    CHECK(n == (DOOR_THREADS + 1) * DOOR_OPS, "%u allreduce entries, want %d", n,
          (DOOR_THREADS + 1) * DOOR_OPS);
    qsort(ids, n, sizeof(uint64_t), cmp_u64);
    for (uint32_t k = 1; k < n; k++)
        CHECK(ids[k] != ids[k - 1], "op id %llu given twice", (unsigned long long)ids[k]);
    free(ids);
    cc__fr_snapshot_free(s);
    for (int t = 0; t < DOOR_THREADS; t++)
        cc_comm_destroy(sub[t]);
    cc_comm_destroy(world);
}

/* A fork while another thread is the owner, inside a section: the child's one thread becomes
 * the owner at its first section, without waiting for a section that no thread of the child
 * will ever leave. */
static pthread_barrier_t g_fork_bar;

static void *owner_in_section(void *arg)
{
    (void)arg;
    uint64_t inside;
    CHECK(cc__solo_enter(CC__SOLO_TAG_COUNTER, &inside) == 1, "the first writer is not the owner");
    pthread_barrier_wait(&g_fork_bar); /* in the section: the main thread forks now */
    pthread_barrier_wait(&g_fork_bar); /* forked */
    cc__solo_leave();
    return NULL;
}

static void case_fork(void)
{
    cc__solo_init();
    pthread_t th;
    CHECK(pthread_barrier_init(&g_fork_bar, NULL, 2) == 0, "barrier");
    CHECK(pthread_create(&th, NULL, owner_in_section, NULL) == 0, "thread");
    pthread_barrier_wait(&g_fork_bar);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        alarm(20);
        uint64_t inside;
        CHECK(cc__solo_enter(CC__SOLO_TAG_COUNTER, &inside) == 1,
              "the child's only thread did not become the owner (inside %llu)",
              (unsigned long long)inside);
        cc__solo_leave();
        CHECK(cc__solo_active(), "the child is not on the one-writer path");
        _exit(0);
    }
    pthread_barrier_wait(&g_fork_bar);
    pthread_join(th, NULL);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child failed (status %d)",
          status);
    /* The parent: its owner is still the other thread (gone now); this thread switches. */
    uint64_t inside;
    CHECK(cc__solo_enter(CC__SOLO_TAG_COUNTER, &inside) == 0, "a second thread got the plain path");
    CHECK(!cc__solo_active(), "the parent is still on the one-writer path");
}

static void run_child(void (*fn)(void))
{
    rec_make_dir();
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(120); /* a hang ends the child with SIGALRM */
        fn();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    rec_remove_dir();
    if (WIFSIGNALED(status)) fail_msg("the child ended with signal %d", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Each case is one cmocka test, run in a child of its own. */
struct solo_case {
    void (*fn)(void);
};
static struct solo_case k_switch = {case_switch}, k_signal = {case_signal},
                              k_door = {case_door}, k_fork = {case_fork}, k_off = {case_off};

static void test_in_child(void **state)
{
    run_child(((struct solo_case *)*state)->fn);
}

int main(void)
{
    /* The names say which case failed: cmocka prints the test's name. */
    const struct CMUnitTest tests[] = {
        {"switch_to_locked", test_in_child, NULL, NULL, &k_switch},
        {"signal_over_section", test_in_child, NULL, NULL, &k_signal},
        {"door_threads", test_in_child, NULL, NULL, &k_door},
        {"fork_in_section", test_in_child, NULL, NULL, &k_fork},
        {"setting_off", test_in_child, NULL, NULL, &k_off},
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
