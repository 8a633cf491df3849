/* net_mp.c - forked / threaded ranks with a shared-memory allgather (see net_mp.h). */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "mp.h" /* tests/common: cc_test_reap */
#include "net_mp.h"

#define SLOT_MAX   1024u /* largest blob of one rank */
#define BARRIER_MS 30000 /* a barrier gives up after this */

struct world {
    int n;
    _Atomic uint32_t arrived;
    _Atomic uint32_t gen;
    char job[64];
    char data[]; /* n slots of SLOT_MAX bytes */
};

static struct world *g_world;
static size_t g_world_len;
static int g_runs;

static void futex_wait(_Atomic uint32_t *w, uint32_t v, long ns)
{
    struct timespec ts = {0, ns};
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, v, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

static cc_status_t barrier(void)
{
    struct world *w = g_world;
    uint32_t g = atomic_load(&w->gen);
    if (atomic_fetch_add(&w->arrived, 1) == (uint32_t)w->n - 1) {
        atomic_store(&w->arrived, 0);
        atomic_fetch_add(&w->gen, 1);
        futex_wake(&w->gen);
        return CC_OK;
    }
    uint64_t deadline = cc__now_ns() + BARRIER_MS * 1000000ull;
    while (atomic_load(&w->gen) == g) {
        if (cc__now_ns() > deadline) return CC_ERR_TIMEOUT;
        futex_wait(&w->gen, g, 10000000);
    }
    return CC_OK;
}

static cc_status_t allgather(void *ctx, const void *mine, void *all, size_t len)
{
    int rank = (int)(intptr_t)ctx;
    if (len > SLOT_MAX) return CC_ERR_INVALID_ARG;
    memcpy(g_world->data + (size_t)rank * SLOT_MAX, mine, len);
    cc_status_t st = barrier();
    if (st != CC_OK) return st;
    for (int i = 0; i < g_world->n; i++)
        memcpy((char *)all + (size_t)i * len, g_world->data + (size_t)i * SLOT_MAX, len);
    return barrier(); /* nobody overwrites a slot before all have read it */
}

cc_status_t mp_barrier(int rank)
{
    (void)rank;
    return barrier();
}

const char *mp_job(void)
{
    return g_world ? g_world->job : "";
}

void mp_config(cc__net_config_t *cfg, int rank, int size, const char *transport)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->rank = rank;
    cfg->size = size;
    cfg->comm_id = 0x5eedull + (uint64_t)g_runs;
    cfg->job_id = g_world->job;
    cfg->transport = transport;
    cfg->socket_addr = "127.0.0.1";
    cfg->connect_timeout_ms = 20000;
    cfg->allgather = allgather;
    cfg->allgather_ctx = (void *)(intptr_t)rank;
}

static void world_open(int n)
{
    g_world_len = sizeof(struct world) + (size_t)n * SLOT_MAX;
    g_world = mmap(NULL, g_world_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_world == MAP_FAILED) abort();
    g_world->n = n;
    snprintf(g_world->job, sizeof(g_world->job), "mp%d-%d", (int)getpid(), ++g_runs);
}

static void world_close(void)
{
    munmap(g_world, g_world_len);
    g_world = NULL;
}

/* Reap the ranks (cc_test_reap kills those still running at the deadline) into exit codes. */
static int collect(int n, pid_t *pids, int timeout_s, int *codes)
{
    cc_test_child_t res[64] = {{0}};
    cc_test_reap(pids, n, timeout_s, res);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        codes[i] = res[i].timed_out ? MP_TIMED_OUT
                   : res[i].exited  ? res[i].code
                                    : 128 + res[i].signo;
        bad += codes[i] != 0;
    }
    return bad;
}

int mp_fork(int n, mp_rank_fn fn, void *arg, int timeout_s, int *codes)
{
    pid_t pids[64];
    if (n < 1 || n > 64) abort();
    world_open(n);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) exit(fn(r, n, arg)); /* exit: LeakSanitizer checks each rank */
        if (pids[r] < 0) abort();
    }
    int bad = collect(n, pids, timeout_s, codes);
    world_close();
    return bad;
}

struct thread_arg {
    mp_rank_fn fn;
    void *arg;
    int rank, size, code;
};

static void *thread_main(void *p)
{
    struct thread_arg *t = p;
    t->code = t->fn(t->rank, t->size, t->arg);
    return NULL;
}

int mp_threads(int n, mp_rank_fn fn, void *arg, int timeout_s, int *codes)
{
    pthread_t th[64];
    struct thread_arg ta[64];
    int bad = 0;
    if (n < 1 || n > 64) abort();
    world_open(n);
    for (int r = 0; r < n; r++) {
        ta[r] = (struct thread_arg){fn, arg, r, n, -1};
        pthread_create(&th[r], NULL, thread_main, &ta[r]);
    }
    for (int r = 0; r < n; r++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += timeout_s;
        if (pthread_timedjoin_np(th[r], NULL, &ts) != 0) {
            fprintf(stderr, "mp: thread rank %d still runs after %d s\n", r, timeout_s);
            _exit(MP_TIMED_OUT); /* a hung thread cannot be killed: end the test binary */
        }
        codes[r] = ta[r].code;
        bad += codes[r] != 0;
    }
    world_close();
    return bad;
}
