/*
 * test_comm_shrink.c - cc_comm_shrink: going on without the failed ranks.
 *  - 8 forked ranks run a loop of checked collectives; one rank is killed
 *    with SIGKILL at a random point (seeded; the seed is printed, and
 *    CCTEST_SEED replays it); the survivors shrink with the agreed list,
 *    agree on where to resume, finish on the child; a second rank is killed
 *    on the first child and they shrink again. Every survivor writes the
 *    children it got (id, size, members) and the test compares them, and
 *    `ccdump show` on the rings shows each child made from its parent;
 *  - an explicit list on a healthy comm (threads as ranks), survivors that
 *    pass different lists (CC_ERR_MISMATCH), and bad arguments;
 *  - a rank that comes after the others agreed finds itself counted lost;
 *  - a shrink of an aborted comm whose ranks all live loses nobody.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccdump.h"
#include "ccomm/ccomm.h"
#include "mp.h"
#include "tmpdir.h"

#define NRANKS 8
#define ITERS  16

/* The failure plan, the same in every rank: drawn from the seed. */
struct plan {
    int victim[2];   /* world ranks killed in phase 0 and in phase 1 */
    int at[2];       /* the phase's iteration (counted from the phase's start) */
    int delay_us[2]; /* how long into that iteration's collectives */
};

static struct plan make_plan(unsigned seed)
{
    struct plan p;
    srand(seed);
    p.victim[0] = rand() % NRANKS;
    do
        p.victim[1] = rand() % NRANKS;
    while (p.victim[1] == p.victim[0]);
    for (int i = 0; i < 2; i++) {
        p.at[i] = 1 + rand() % 4;
        p.delay_us[i] = rand() % 3000;
    }
    return p;
}

static void *kill_later(void *arg)
{
    usleep((useconds_t)(intptr_t)arg);
    raise(SIGKILL);
    return NULL;
}

/* Iteration `it` on comm c: an allreduce of a size that changes with it (other algorithms)
 * and an allgather of the world ranks; 0 if both came back right, else the error. */
static cc_status_t step(cc_comm_t *c, int it, int64_t *buf, int64_t *out)
{
    static const size_t counts[] = {7, 1000, 40000};
    size_t n = counts[it % 3];
    int me = cc_comm_world_rank(c, cc_comm_rank(c)), size = cc_comm_size(c);
    int64_t wsum = 0;
    for (int k = 0; k < size; k++)
        wsum += cc_comm_world_rank(c, k) + 1;
    for (size_t j = 0; j < n; j++)
        buf[j] = (int64_t)(me + 1) * 1000003 + it * 31 + (int64_t)j;
    cc_status_t st = cc_allreduce(c, buf, out, n, CC_INT64, CC_SUM, NULL, NULL);
    if (st != CC_OK) return st;
    for (size_t j = 0; j < n; j++) {
        int64_t want = wsum * 1000003 + (int64_t)size * (it * 31 + (int64_t)j);
        if (out[j] != want) {
            fprintf(stderr,
                    "rank %d: iteration %d: element %zu is %" PRId64 ", expected %" PRId64 "\n", me,
                    it, j, out[j], want);
            return CC_ERR_MISMATCH;
        }
    }
    int32_t mine = me, all[NRANKS];
    st = cc_allgather(c, &mine, all, 1, CC_INT32, NULL, NULL);
    for (int k = 0; st == CC_OK && k < size; k++)
        if (all[k] != cc_comm_world_rank(c, k)) return CC_ERR_MISMATCH;
    return st;
}

/* After a failure: shrink, note the child in the rank's file, agree where to resume. */
static int recover(cc_comm_t **c, int *it, FILE *log, int phase, int slow)
{
    cc_comm_t *child = NULL;
    /* A survivor that comes late (it learned of the failure late, or was busy): the others
     * wait for it, they must not count it lost. */
    if (slow) usleep(1500000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cc_status_t st = cc_comm_shrink(*c, NULL, 0, NULL, &child);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CC_TEST_REQUIRE(st == CC_OK, "phase %d: shrink: %s", phase, cc_status_name(st));
    /* The dead rank's closed connection says it is gone: nobody waits for the 20 s deadline
     * (CCOMM_TIMEOUT) that a rank alive but absent would cost. */
    CC_TEST_REQUIRE(dt < 8.0, "phase %d: shrink took %.1f s: it waited for a dead rank", phase, dt);
    fprintf(log, "shrink %d id %016" PRIx64 " name %s size %d ranks", phase, cc_comm_id(child),
            cc_comm_name(child), cc_comm_size(child));
    for (int k = 0; k < cc_comm_size(child); k++)
        fprintf(log, " %d", cc_comm_world_rank(child, k));
    fprintf(log, "\n");
    fflush(log);
    cc_comm_destroy(*c);
    *c = child;
    /* Some survivors may have finished the iteration the others failed in: redo the earliest. */
    int64_t mine = *it, first = 0;
    st = cc_allreduce(child, &mine, &first, 1, CC_INT64, CC_MIN, NULL, NULL);
    CC_TEST_REQUIRE(st == CC_OK, "phase %d: allreduce on the child: %s", phase, cc_status_name(st));
    *it = (int)first;
    return 0;
}

/* arg: "<seed> <dir>". */
static int kill_rank(int rank, int size, const char *addr, void *arg)
{
    unsigned seed = 0;
    char dir[200], path[260];
    CC_TEST_REQUIRE(sscanf(arg, "%u %199s", &seed, dir) == 2, "arg \"%s\"", (char *)arg);
    struct plan p = make_plan(seed);
    snprintf(path, sizeof(path), "%s/r%d.txt", dir, rank);
    FILE *log = fopen(path, "w");
    CC_TEST_REQUIRE(log, "open %s", path);
    int64_t *buf = malloc(40000 * sizeof(int64_t)), *out = malloc(40000 * sizeof(int64_t));
    cc_comm_t *c = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    int phase = 0, start = 0;
    for (int it = 0; it < ITERS;) {
        if (phase < 2 && rank == p.victim[phase] && it - start == p.at[phase]) {
            pthread_t t;
            pthread_create(&t, NULL, kill_later, (void *)(intptr_t)p.delay_us[phase]);
        }
        /* On a loaded machine the timer thread may oversleep: the victim dies two
         * iterations on at the latest, so that the failure always happens. */
        if (phase < 2 && rank == p.victim[phase] && it - start == p.at[phase] + 2) raise(SIGKILL);
        usleep(1000); /* the iteration's compute: the kill may land here or in a collective */
        cc_status_t st = step(c, it, buf, out);
        if (st == CC_OK) {
            it++;
            continue;
        }
        CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST || st == CC_ERR_TIMEOUT, "phase %d iteration %d: %s",
                        phase, it, cc_status_name(st));
        CC_TEST_REQUIRE(phase < 2, "a third failure at iteration %d", it);
        /* The first survivor is the slow one at the first shrink. */
        int slow = phase == 0 && rank == (p.victim[0] == 0 ? 1 : 0);
        if (recover(&c, &it, log, phase, slow)) return 1;
        start = it;
        phase++;
    }
    CC_TEST_REQUIRE(phase == 2, "the loop ended after %d shrinks", phase);
    CC_TEST_REQUIRE(cc_comm_size(c) == size - 2, "final size %d", cc_comm_size(c));
    fprintf(log, "done\n");
    fclose(log);
    free(buf);
    free(out);
    return cc_comm_destroy(c) == CC_OK ? 0 : 1;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char text[4096];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    return strdup(text);
}

/* ccdump show DIR, in-process. */
static char *show_rings(const char *dir)
{
    char *owned[] = {strdup("ccdump"), strdup("show"), strdup("--last"), strdup("0"), strdup(dir)};
    char *argv[] = {owned[0], owned[1], owned[2], owned[3], owned[4], NULL};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int rc = ccdump_main(5, argv, out, stderr);
    fclose(out);
    for (int i = 0; i < 5; i++)
        free(owned[i]);
    assert_int_equal(rc, 0);
    return buf;
}

static void run_kill_twice(const char *transport)
{
    const char *s = getenv("CCTEST_SEED");
    unsigned seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    struct plan p = make_plan(seed);
    printf("seed %u (CCTEST_SEED=%u replays it): rank %d dies at iteration %d + %d us, then "
           "rank %d at the first child's iteration %d + %d us\n",
           seed, seed, p.victim[0], p.at[0], p.delay_us[0], p.victim[1], p.at[1], p.delay_us[1]);
    fflush(stdout);
    assert_int_equal(td_make("cc-shrink", 0700), 0);
    char arg[300], env_rec[200];
    snprintf(arg, sizeof(arg), "%u %s", seed, td_dir);
    snprintf(env_rec, sizeof(env_rec), "CCOMM_RECORDER_DIR=%s/rings", td_dir);
    const char *env[] = {env_rec,
                         transport,
                         "CCOMM_RECORDER_KEEP=1",
                         "CCOMM_TIMEOUT=20",
                         "CCOMM_LOG_LEVEL=NONE",
                         "ASAN_OPTIONS=detect_leaks=0",
                         NULL};
    cc_test_child_t res[NRANKS];
    uint64_t t0 = (uint64_t)time(NULL);
    cc_test_fork_ranks(NRANKS, kill_rank, arg, 90, env, res);
    printf("job took %llu s\n", (unsigned long long)((uint64_t)time(NULL) - t0));
    char *first = NULL;
    for (int r = 0; r < NRANKS; r++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/r%d.txt", td_dir, r);
        if (r == p.victim[0] || r == p.victim[1]) {
            if (res[r].exited || res[r].signo != SIGKILL)
                fail_msg("rank %d (a victim) was not killed: exited %d code %d signal %d", r,
                         res[r].exited, res[r].code, res[r].signo);
            continue;
        }
        if (!res[r].exited || res[r].code != 0)
            fail_msg("survivor %d: %s %d", r, res[r].exited ? "exit status" : "signal",
                     res[r].exited ? res[r].code : res[r].signo);
        char *text = read_all(path);
        assert_non_null(text);
        printf("rank %d:\n%s", r, text ? text : "");
        if (!first)
            first = text;
        else {
            /* Every survivor got the same children: ids, names, sizes and members. */
            if (strcmp(first, text)) fail_msg("rank %d's children differ from the first's", r);
            free(text);
        }
    }
    /* The members are the survivors, in world order. */
    char want[2][200];
    for (int ph = 0; ph < 2; ph++) {
        int n = snprintf(want[ph], sizeof(want[ph]), "size %d ranks", NRANKS - 1 - ph);
        for (int r = 0; r < NRANKS; r++)
            if (r != p.victim[0] && (ph == 0 || r != p.victim[1]))
                n += snprintf(want[ph] + n, sizeof(want[ph]) - (size_t)n, " %d", r);
        if (!strstr(first, want[ph])) fail_msg("no child with \"%s\"", want[ph]);
    }
    assert_non_null(strstr(first, "name world.shrink1 "));
    assert_non_null(strstr(first, "name world.shrink1.shrink1 "));
    free(first);
    char *shown = show_rings(td_at("rings"));
    printf("---- ccdump show --last 0 rings\n%s", shown);
    assert_non_null(strstr(shown, "communicator world.shrink1 "));
    assert_non_null(strstr(shown, "made from world (id"));
    assert_non_null(strstr(shown, "made from world.shrink1 (id"));
    free(shown);
    if (getenv("CCTEST_KEEP"))
        printf("kept %s (CCTEST_KEEP)\n", td_dir);
    else
        td_remove();
}

static void test_kill_twice(void **state)
{
    (void)state;
    run_kill_twice("CCOMM_TRANSPORT=auto"); /* shared memory: one host */
}

static void test_kill_twice_tcp(void **state)
{
    (void)state;
    run_kill_twice("CCOMM_TRANSPORT=tcp");
}

/* Explicit lists on a healthy comm of 4 thread ranks; rank 2 is left out. */
static int explicit_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    int two[] = {2};
    if (rank != 2) {
        CC_TEST_REQUIRE(cc_comm_shrink(c, two, 1, NULL, &child) == CC_OK, "shrink");
        CC_TEST_REQUIRE(cc_comm_size(child) == 3, "size %d", cc_comm_size(child));
        CC_TEST_REQUIRE(!strcmp(cc_comm_name(child), "world.shrink1"), "name %s",
                        cc_comm_name(child));
        int me = rank < 2 ? rank : rank - 1;
        CC_TEST_REQUIRE(cc_comm_rank(child) == me, "rank %d", cc_comm_rank(child));
        CC_TEST_REQUIRE(cc_comm_world_rank(child, 2) == 3, "order");
        int64_t x = rank, y = 0;
        CC_TEST_REQUIRE(cc_allreduce(child, &x, &y, 1, CC_INT64, CC_SUM, NULL, NULL) == CC_OK,
                        "allreduce");
        CC_TEST_REQUIRE(y == 0 + 1 + 3, "sum %lld", (long long)y);
        CC_TEST_REQUIRE(cc_comm_destroy(child) == CC_OK, "destroy child");
        /* Lists that differ: ranks 0 and 1 leave out 2, rank 3 leaves out 1 and 2. */
        int one_two[] = {1, 2};
        cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
        cfg.timeout_ms = 3000;
        child = NULL;
        cc_status_t st = rank == 3 ? cc_comm_shrink(c, one_two, 2, &cfg, &child)
                                   : cc_comm_shrink(c, two, 1, &cfg, &child);
        CC_TEST_REQUIRE(st == CC_ERR_MISMATCH, "rank %d: different lists: %s", rank,
                        cc_status_name(st));
        CC_TEST_REQUIRE(child == NULL, "a child after a mismatch");
    }
    CC_TEST_REQUIRE(cc_barrier(c, NULL, NULL) == CC_OK, "parent still works");
    return cc_comm_destroy(c) == CC_OK ? 0 : 1;
}

static void test_explicit(void **state)
{
    (void)state;
    assert_int_equal(cc_test_thread_ranks(4, explicit_rank, NULL), 0);
}

/* Bad arguments: each refused with CC_ERR_INVALID_ARG, the output untouched. */
static int bad_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    if (rank == 0) {
        cc_comm_t *sentinel = (cc_comm_t *)(void *)&sentinel, *child = sentinel;
        int out_of_range[] = {3}, negative[] = {-1}, twice[] = {1, 1}, self[] = {0},
            everyone[] = {1, 2, 0};
        struct {
            const int *ex;
            int n;
            const char *what;
        } cases[] = {{out_of_range, 1, "rank 3 of 3"}, {negative, 1, "rank -1"},
                     {twice, 2, "a duplicate"},        {self, 1, "the caller"},
                     {everyone, 3, "everyone"},        {NULL, 1, "NULL with nexclude 1"},
                     {twice, -1, "nexclude -1"}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            cc_status_t st = cc_comm_shrink(c, cases[i].ex, cases[i].n, NULL, &child);
            CC_TEST_REQUIRE(st == CC_ERR_INVALID_ARG, "%s: %s", cases[i].what, cc_status_name(st));
            CC_TEST_REQUIRE(child == sentinel, "%s: the output was touched", cases[i].what);
        }
        CC_TEST_REQUIRE(cc_comm_shrink(c, NULL, 0, NULL, NULL) == CC_ERR_INVALID_ARG, "NULL out");
        CC_TEST_REQUIRE(cc_comm_shrink(NULL, NULL, 0, NULL, &child) == CC_ERR_INVALID_ARG, "NULL");
        cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
        cfg.timeout_ms = -5;
        CC_TEST_REQUIRE(cc_comm_shrink(c, NULL, 0, &cfg, &child) == CC_ERR_INVALID_ARG, "config");
    }
    CC_TEST_REQUIRE(cc_barrier(c, NULL, NULL) == CC_OK, "nothing was left half made");
    return cc_comm_destroy(c) == CC_OK ? 0 : 1;
}

static void test_bad_args(void **state)
{
    (void)state;
    assert_int_equal(cc_test_thread_ranks(3, bad_rank, NULL), 0);
}

/* Rank 2 comes to the shrink 2 s late, after the others' 500 ms deadline: they go on
 * without it, and it is told that it was counted lost. */
static int late_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.timeout_ms = 500;
    if (rank == 2) usleep(2000000);
    cc_status_t st = cc_comm_shrink(c, NULL, 0, &cfg, &child);
    if (rank == 2) {
        CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST, "late rank: %s", cc_status_name(st));
        CC_TEST_REQUIRE(child == NULL, "late rank got a child");
    } else {
        CC_TEST_REQUIRE(st == CC_OK, "shrink: %s", cc_status_name(st));
        CC_TEST_REQUIRE(cc_comm_size(child) == 2, "size %d", cc_comm_size(child));
        CC_TEST_REQUIRE(cc_barrier(child, NULL, NULL) == CC_OK, "barrier");
        cc_comm_destroy(child);
    }
    cc_comm_destroy(c);
    return 0;
}

static void test_late_rank(void **state)
{
    (void)state;
    assert_int_equal(cc_test_thread_ranks(3, late_rank, NULL), 0);
}

/* After cc_comm_abort on every rank (nobody died): the agreed shrink loses nobody, and the
 * child of the broken parent works. */
static int aborted_rank(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *c = NULL, *child = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&c, rank, size, addr, NULL) == CC_OK, "init");
    CC_TEST_REQUIRE(cc_comm_abort(c) == CC_OK, "abort");
    CC_TEST_REQUIRE(cc_barrier(c, NULL, NULL) == CC_ERR_ABORTED, "the parent is broken");
    cc_status_t st = cc_comm_shrink(c, NULL, 0, NULL, &child);
    CC_TEST_REQUIRE(st == CC_OK, "shrink of an aborted comm: %s", cc_status_name(st));
    CC_TEST_REQUIRE(cc_comm_size(child) == size && cc_comm_rank(child) == rank, "size %d rank %d",
                    cc_comm_size(child), cc_comm_rank(child));
    int64_t x = 1, y = 0;
    CC_TEST_REQUIRE(cc_allreduce(child, &x, &y, 1, CC_INT64, CC_SUM, NULL, NULL) == CC_OK &&
                        y == size,
                    "allreduce on the child: %lld", (long long)y);
    cc_comm_destroy(child);
    cc_comm_destroy(c);
    return 0;
}

static void test_after_abort(void **state)
{
    (void)state;
    assert_int_equal(cc_test_thread_ranks(3, aborted_rank, NULL), 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_kill_twice), cmocka_unit_test(test_kill_twice_tcp),
        cmocka_unit_test(test_explicit),   cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_late_rank),  cmocka_unit_test(test_after_abort),
    };
    /* One test by name (ctest runs each alone, within its own timeout), or all. */
    size_t n = sizeof(all) / sizeof(all[0]);
    for (size_t i = 0; argc > 1 && i < n; i++)
        if (!strcmp(all[i].name, argv[1]))
            return _cmocka_run_group_tests(argv[1], &all[i], 1, NULL, NULL);
    if (argc > 1) return fprintf(stderr, "no test named %s\n", argv[1]), 2;
    return cmocka_run_group_tests(all, NULL, NULL);
}
