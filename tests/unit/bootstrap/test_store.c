/*
 * test_store.c - the bootstrap store's operations: set/get/multi_get/wait/
 * check/add/cas/delete/will, waits that are answered and waits that time out,
 * views, many concurrent clients, barrier, and allgather with 64 ranks.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store_test_util.h"

static void test_set_get_check_delete(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    uint64_t errors = cc__log_error_count();
    void *v = NULL;
    size_t len = 0;
    int flag = -1;

    assert_int_equal(cc__store_set(c, "alpha", "one", 3), CC_OK);
    assert_int_equal(cc__store_get(c, "alpha", &v, &len, 0), CC_OK);
    assert_int_equal(len, 3);
    assert_string_equal(v, "one"); /* NUL-terminated beyond len */
    free(v);
    /* Overwrite, binary data with a zero byte, and an empty value. */
    const uint8_t bin[5] = {1, 0, 2, 0xff, 3};
    assert_int_equal(cc__store_set(c, "alpha", bin, sizeof(bin)), CC_OK);
    assert_int_equal(cc__store_get(c, "alpha", &v, &len, 1000), CC_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(v, bin, 5);
    free(v);
    assert_int_equal(cc__store_set(c, "empty", "", 0), CC_OK);
    assert_int_equal(cc__store_get(c, "empty", &v, &len, 0), CC_OK);
    assert_int_equal(len, 0);
    free(v);

    assert_int_equal(cc__store_check(c, "alpha", &flag), CC_OK);
    assert_int_equal(flag, 1);
    assert_int_equal(cc__store_check(c, "nope", &flag), CC_OK);
    assert_int_equal(flag, 0);
    assert_int_equal(cc__store_delete(c, "alpha", &flag), CC_OK);
    assert_int_equal(flag, 1);
    assert_int_equal(cc__store_delete(c, "alpha", &flag), CC_OK);
    assert_int_equal(flag, 0);
    assert_int_equal(cc__store_delete(c, "alpha", NULL), CC_OK);
    assert_int_equal(cc__store_get(c, "alpha", &v, &len, 0), CC_ERR_NOT_FOUND);
    assert_int_equal(cc__log_error_count(), errors); /* nothing above is an error */

    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

static void test_add_and_cas(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    int64_t r = 0;
    assert_int_equal(cc__store_add(c, "ctr", 5, &r), CC_OK);
    assert_int_equal(r, 5);
    assert_int_equal(cc__store_add(c, "ctr", -7, &r), CC_OK);
    assert_int_equal(r, -2);
    void *v = NULL;
    size_t len;
    assert_int_equal(cc__store_get(c, "ctr", &v, &len, 0), CC_OK);
    assert_string_equal(v, "-2"); /* counters are decimal text */
    free(v);
    assert_int_equal(cc__store_set(c, "text", "abc", 3), CC_OK);
    assert_int_equal(cc__store_add(c, "text", 1, &r), CC_ERR_INVALID_USAGE);
    assert_int_equal(cc__store_set(c, "big", "9223372036854775807", 19), CC_OK);
    assert_int_equal(cc__store_add(c, "big", 1, &r), CC_ERR_INVALID_ARG);

    int swapped = -1;
    size_t clen = 0;
    /* Missing key + NULL expected: set. */
    assert_int_equal(cc__store_cas(c, "lock", NULL, 0, "a", 1, &v, &clen, &swapped), CC_OK);
    assert_int_equal(swapped, 1);
    assert_int_equal(clen, 1);
    assert_memory_equal(v, "a", 1);
    free(v);
    /* Present key + NULL expected: not set, current returned. */
    assert_int_equal(cc__store_cas(c, "lock", NULL, 0, "b", 1, &v, &clen, &swapped), CC_OK);
    assert_int_equal(swapped, 0);
    assert_memory_equal(v, "a", 1);
    free(v);
    /* Wrong expected: not set. Right expected: set. */
    assert_int_equal(cc__store_cas(c, "lock", "x", 1, "b", 1, NULL, NULL, &swapped), CC_OK);
    assert_int_equal(swapped, 0);
    assert_int_equal(cc__store_cas(c, "lock", "a", 1, "bb", 2, &v, &clen, &swapped), CC_OK);
    assert_int_equal(swapped, 1);
    assert_int_equal(clen, 2);
    assert_memory_equal(v, "bb", 2);
    free(v);
    /* Missing key with an expected value: not set, no current value. */
    assert_int_equal(cc__store_cas(c, "none", "a", 1, "b", 1, &v, &clen, &swapped), CC_OK);
    assert_int_equal(swapped, 0);
    assert_null(v);
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

static void test_multi_get_and_wait(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    const char *keys[3] = {"k0", "k1", "k2"};
    void *vals[3];
    size_t lens[3];
    assert_int_equal(cc__store_set(c, "k0", "zero", 4), CC_OK);
    assert_int_equal(cc__store_set(c, "k2", "two", 3), CC_OK);
    assert_int_equal(cc__store_multi_get(c, keys, 3, vals, lens, 0), CC_ERR_NOT_FOUND);
    for (int i = 0; i < 3; i++)
        assert_null(vals[i]); /* on error none is returned */
    assert_int_equal(cc__store_set(c, "k1", "one", 3), CC_OK);
    assert_int_equal(cc__store_multi_get(c, keys, 3, vals, lens, 100), CC_OK);
    assert_string_equal(vals[0], "zero");
    assert_string_equal(vals[1], "one");
    assert_string_equal(vals[2], "two");
    for (int i = 0; i < 3; i++)
        free(vals[i]);
    assert_int_equal(cc__store_wait(c, keys, 3, 0), CC_OK);
    assert_int_equal(cc__store_multi_get(c, keys, 0, vals, lens, 0), CC_ERR_INVALID_ARG);
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

static void test_waits_time_out(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    void *v = NULL;
    size_t len;
    const char *keys[2] = {"present", "absent"};
    assert_int_equal(cc__store_set(c, "present", "x", 1), CC_OK);
    uint64_t t0 = cc__now_ns();
    assert_int_equal(cc__store_get(c, "absent", &v, &len, 150), CC_ERR_TIMEOUT);
    assert_true(test_ms_since(t0) >= 140); /* it did wait */
    assert_null(v);
    assert_int_equal(cc__store_wait(c, keys, 2, 100), CC_ERR_TIMEOUT);
    assert_int_equal(cc__store_wait(c, keys, 2, -1), CC_ERR_INVALID_ARG);
    /* The connection is still in step after the timeouts. */
    assert_int_equal(cc__store_get(c, "present", &v, &len, 0), CC_OK);
    free(v);
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

struct delayed_set {
    const char *addr;
    const char *key;
    int delay_ms;
};

static void *delayed_set_main(void *arg)
{
    struct delayed_set *d = arg;
    cc__store_t *c = NULL;
    if (cc__store_connect(d->addr, TEST_KEY, 5000, &c) != CC_OK) return (void *)1;
    usleep((useconds_t)d->delay_ms * 1000);
    cc_status_t st = cc__store_set(c, d->key, "late", 4);
    cc__store_close(c);
    return st == CC_OK ? NULL : (void *)1;
}

static void test_get_waits_for_a_later_set(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    struct delayed_set d = {t.addr, "later", 100};
    pthread_t th;
    pthread_create(&th, NULL, delayed_set_main, &d);
    void *v = NULL, *ret = (void *)1;
    size_t len;
    assert_int_equal(cc__store_get(c, "later", &v, &len, 10000), CC_OK);
    assert_string_equal(v, "late");
    free(v);
    pthread_join(th, &ret);
    assert_null(ret);
    /* A multi_get parked until its last key appears. */
    const char *keys[2] = {"a", "b"};
    void *vals[2];
    size_t lens[2];
    assert_int_equal(cc__store_set(c, "a", "A", 1), CC_OK);
    d.key = "b";
    pthread_create(&th, NULL, delayed_set_main, &d);
    assert_int_equal(cc__store_multi_get(c, keys, 2, vals, lens, 10000), CC_OK);
    pthread_join(th, &ret);
    assert_string_equal(vals[0], "A");
    assert_string_equal(vals[1], "late");
    free(vals[0]), free(vals[1]);
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

static void test_views(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY), *v1 = NULL, *v2 = NULL;
    assert_int_equal(cc__store_view(c, "comm/2a9f/", &v1), CC_OK);
    assert_int_equal(cc__store_view(v1, "sub/", &v2), CC_OK);
    assert_int_equal(cc__store_set(v2, "k", "nested", 6), CC_OK);
    assert_int_equal(cc__store_set(v1, "k", "outer", 5), CC_OK);
    void *v = NULL;
    size_t len;
    assert_int_equal(cc__store_get(c, "comm/2a9f/sub/k", &v, &len, 0), CC_OK);
    assert_string_equal(v, "nested");
    free(v);
    assert_int_equal(cc__store_get(c, "comm/2a9f/k", &v, &len, 0), CC_OK);
    assert_string_equal(v, "outer");
    free(v);
    assert_int_equal(cc__store_get(v1, "sub/k", &v, &len, 0), CC_OK);
    free(v);
    int64_t r;
    assert_int_equal(cc__store_add(v2, "n", 3, &r), CC_OK);
    assert_int_equal(cc__store_add(c, "comm/2a9f/sub/n", 1, &r), CC_OK);
    assert_int_equal(r, 4);
    /* A prefix that leaves no room for a key is refused. */
    char longp[CC__STORE_MAX_KEY + 2];
    memset(longp, 'p', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    cc__store_t *bad = NULL;
    assert_int_equal(cc__store_view(c, longp, &bad), CC_ERR_INVALID_ARG);
    /* Views keep the connection alive: the base may be closed first. */
    cc__store_close(c);
    assert_int_equal(cc__store_get(v2, "k", &v, &len, 0), CC_OK);
    free(v);
    cc__store_close(v2);
    cc__store_close(v1);
    cc__store_server_stop(t.srv);
}

static void test_limits(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    char key[CC__STORE_MAX_KEY + 2];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    assert_int_equal(cc__store_set(c, key, "x", 1), CC_ERR_INVALID_ARG); /* 513 bytes */
    key[CC__STORE_MAX_KEY] = '\0';
    assert_int_equal(cc__store_set(c, key, "x", 1), CC_OK); /* exactly 512 */
    assert_int_equal(cc__store_set(c, "", "x", 1), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_set(c, NULL, "x", 1), CC_ERR_INVALID_ARG);
    size_t big = CC__STORE_MAX_VALUE;
    uint8_t *buf = malloc(big + 1);
    for (size_t i = 0; i < big + 1; i++)
        buf[i] = (uint8_t)(i * 7);
    assert_int_equal(cc__store_set(c, "big", buf, big + 1), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_set(c, "big", buf, big), CC_OK); /* 16 MiB round trip */
    void *v = NULL;
    size_t len;
    assert_int_equal(cc__store_get(c, "big", &v, &len, 0), CC_OK);
    assert_int_equal(len, big);
    assert_memory_equal(v, buf, big);
    free(v);
    free(buf);
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

/* --- many clients --- */

#define NTHREADS 32
#define NADDS    50

struct worker {
    const char *addr;
    cc__store_t *shared; /* NULL: connect its own client */
    int id;
    int failures;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    cc__store_t *c = w->shared;
    if (!c && cc__store_connect(w->addr, TEST_KEY, 5000, &c) != CC_OK) {
        w->failures++;
        return NULL;
    }
    char key[32], val[32];
    for (int i = 0; i < NADDS; i++) {
        int64_t r;
        w->failures += cc__store_add(c, "counter", 1, &r) != CC_OK;
        snprintf(key, sizeof(key), "w%d/%d", w->id, i);
        snprintf(val, sizeof(val), "%d:%d", w->id, i);
        w->failures += cc__store_set(c, key, val, strlen(val)) != CC_OK;
        void *v = NULL;
        size_t len;
        w->failures += cc__store_get(c, key, &v, &len, 1000) != CC_OK;
        w->failures += !v || strcmp(v, val) != 0;
        free(v);
    }
    if (!w->shared) cc__store_close(c);
    return NULL;
}

static void run_workers(const char *addr, cc__store_t *shared, cc__store_t *check)
{
    pthread_t th[NTHREADS];
    struct worker w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){addr, shared, i, 0};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    int64_t total = 0;
    assert_int_equal(cc__store_add(check, "counter", 0, &total), CC_OK);
    assert_int_equal(total, NTHREADS * NADDS);
}

static void test_concurrent_clients(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    run_workers(t.addr, NULL, c); /* one client per thread */
    assert_int_equal(cc__store_delete(c, "counter", NULL), CC_OK);
    run_workers(t.addr, c, c); /* threads sharing one client */
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

/* --- barrier and allgather, ranks as threads --- */

#define NRANKS 64

struct rank_arg {
    const char *addr;
    int rank, nranks;
    size_t len; /* bytes this rank contributes */
    cc_status_t gather_st, barrier_st;
    uint64_t all[NRANKS];
};

static void *rank_main(void *arg)
{
    struct rank_arg *r = arg;
    cc__store_t *c = NULL;
    if (cc__store_connect(r->addr, TEST_KEY, 10000, &c) != CC_OK) {
        r->gather_st = r->barrier_st = CC_ERR_CONNECT;
        return NULL;
    }
    uint64_t mine = 1000u + (uint64_t)r->rank;
    r->gather_st = cc__store_allgather(c, "ag", r->rank, r->nranks, &mine, r->all, r->len, 20000);
    r->barrier_st = cc__store_barrier(c, "bar", r->nranks, 20000);
    cc__store_close(c);
    return NULL;
}

static void run_ranks(const char *addr, struct rank_arg *args, int n, size_t odd_len)
{
    pthread_t th[NRANKS];
    for (int i = 0; i < n; i++) {
        args[i] = (struct rank_arg){.addr = addr, .rank = i, .nranks = n, .len = 8};
        if (i == n - 1 && odd_len) args[i].len = odd_len;
        pthread_create(&th[i], NULL, rank_main, &args[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

static void test_allgather_64_ranks(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    static struct rank_arg args[NRANKS];
    run_ranks(t.addr, args, NRANKS, 0);
    for (int i = 0; i < NRANKS; i++) {
        assert_int_equal(args[i].gather_st, CC_OK);
        assert_int_equal(args[i].barrier_st, CC_OK);
        for (int j = 0; j < NRANKS; j++)
            assert_int_equal(args[i].all[j], 1000u + (unsigned)j);
    }
    cc__store_server_stop(t.srv);
}

static void test_allgather_size_mismatch(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    static struct rank_arg args[4];
    run_ranks(t.addr, args, 4, 4); /* the last rank sends 4 bytes, the others 8 */
    for (int i = 0; i < 4; i++)
        assert_int_equal(args[i].gather_st, CC_ERR_MISMATCH);
    cc__store_server_stop(t.srv);
}

static void test_barrier_timeout_and_reuse(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    /* Only one of two ranks arrives. */
    assert_int_equal(cc__store_barrier(c, "lonely", 2, 100), CC_ERR_TIMEOUT);
    /* A one-rank barrier passes, and reusing its name is refused. */
    assert_int_equal(cc__store_barrier(c, "solo", 1, 100), CC_OK);
    assert_int_equal(cc__store_barrier(c, "solo", 1, 100), CC_ERR_INVALID_USAGE);
    assert_int_equal(cc__store_barrier(c, "x", 0, 100), CC_ERR_INVALID_ARG);
    uint64_t v = 1, all[2];
    assert_int_equal(cc__store_allgather(c, "ag1", 0, 2, &v, all, 8, 100), CC_ERR_TIMEOUT);
    assert_int_equal(cc__store_allgather(c, "ag2", 2, 2, &v, all, 8, 100), CC_ERR_INVALID_ARG);
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

static void test_server_stop_breaks_clients(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    char ip[64];
    assert_int_equal(cc__store_local_addr(c, ip, sizeof(ip)), CC_OK);
    assert_string_equal(ip, "127.0.0.1");
    cc__store_server_stop(t.srv);
    assert_int_equal(cc__store_set(c, "k", "v", 1), CC_ERR_PEER_LOST);
    assert_int_equal(cc__store_set(c, "k", "v", 1), CC_ERR_PEER_LOST); /* fails fast after */
    cc__store_close(c);
}

/* Wait (5 s at most) until the server counts `want` peers. */
static size_t peers_become(cc__store_server_t *srv, size_t want)
{
    for (int i = 0; i < 500 && cc__store_server_peers(srv) != want; i++)
        usleep(10000);
    return cc__store_server_peers(srv);
}

/* The store's host waits at exit for its peers, not for its own watchdog's connection
 * (issue 13.1: a 10 s stall at the end of every job not started by ccrun). */
static void test_peers_leave_out_own_aux(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *aux = NULL, *plain = test_connect(&t, TEST_KEY);
    assert_int_equal(cc__store_connect_aux(t.addr, TEST_KEY, 5000, &aux), CC_OK);
    assert_int_equal(cc__store_server_clients(t.srv), 2);
    assert_int_equal(peers_become(t.srv, 1), 1); /* the plain one: a rank that is a thread */
    cc__store_close(plain);
    assert_int_equal(peers_become(t.srv, 0), 0);
    /* A forked child's auxiliary connection is a peer's: same secret, another pid. */
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        cc__store_t *c = NULL;
        char b;
        close(pipefd[1]);
        int rc = cc__store_connect_aux(t.addr, TEST_KEY, 5000, &c) == CC_OK ? 0 : 1;
        if (read(pipefd[0], &b, 1) < 0) rc = 2; /* hold it until the parent has looked */
        _exit(rc);
    }
    close(pipefd[0]);
    assert_int_equal(peers_become(t.srv, 1), 1);
    close(pipefd[1]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(status, 0);
    assert_int_equal(peers_become(t.srv, 0), 0);
    cc__store_close(aux);
    cc__store_server_stop(t.srv);
}

/* A will is written when its connection closes, for a process killed with SIGKILL too, and
 * wakes a get parked on its key; a later will replaces the earlier one; a view prefixes it. */
static void test_will_on_close(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *obs = test_connect(&t, TEST_KEY), *c = test_connect(&t, TEST_KEY), *v = NULL;
    assert_int_equal(cc__store_view(c, "p/", &v), CC_OK);
    assert_int_equal(cc__store_will(v, "gone", "first", 5), CC_OK);
    assert_int_equal(cc__store_will(v, "gone", "rank 3", 6), CC_OK);
    int exists = 1;
    assert_int_equal(cc__store_check(obs, "p/gone", &exists), CC_OK);
    assert_int_equal(exists, 0); /* not while the connection lives */
    cc__store_close(v);
    cc__store_close(c);
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(cc__store_get(obs, "p/gone", &val, &len, 5000), CC_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(val, "rank 3", 6);
    free(val);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        cc__store_t *k = NULL;
        char b = 0;
        close(pipefd[0]);
        if (cc__store_connect(t.addr, TEST_KEY, 5000, &k) != CC_OK) _exit(1);
        if (cc__store_will(k, "killed", "x", 1) != CC_OK) _exit(2);
        if (write(pipefd[1], &b, 1) != 1) _exit(3);
        for (;;) pause(); /* until SIGKILL */
    }
    close(pipefd[1]);
    char b;
    assert_int_equal(read(pipefd[0], &b, 1), 1);
    close(pipefd[0]);
    uint64_t t0 = cc__now_ns();
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(cc__store_get(obs, "killed", &val, &len, 5000), CC_OK);
    assert_true(test_ms_since(t0) < 2000);
    free(val);
    cc__store_close(obs);
    cc__store_server_stop(t.srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_get_check_delete),
        cmocka_unit_test(test_add_and_cas),
        cmocka_unit_test(test_multi_get_and_wait),
        cmocka_unit_test(test_waits_time_out),
        cmocka_unit_test(test_get_waits_for_a_later_set),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_concurrent_clients),
        cmocka_unit_test(test_allgather_64_ranks),
        cmocka_unit_test(test_allgather_size_mismatch),
        cmocka_unit_test(test_barrier_timeout_and_reuse),
        cmocka_unit_test(test_server_stop_breaks_clients),
        cmocka_unit_test(test_peers_leave_out_own_aux),
        cmocka_unit_test(test_will_on_close),
    };
    cc__log_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
