/* mp.c - the multi-rank test harness (see mp.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "config.h"
#include "log.h"
#include "mp.h"

#define TEST_KEY "ccomm-test-key"

static cc__store_server_t *start_store(char *addr, size_t len)
{
    cc__store_server_t *srv = NULL;
    if (cc__store_server_start("127.0.0.1", 0, TEST_KEY, &srv) != CC_OK) return NULL;
    snprintf(addr, len, "127.0.0.1:%d", cc__store_server_port(srv));
    return srv;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void describe(int rank, const cc_test_child_t *c)
{
    if (c->exited && c->code == 0) return;
    if (c->exited) fprintf(stderr, "harness: rank %d exited with status %d\n", rank, c->code);
    else fprintf(stderr, "harness: rank %d killed by signal %d (%s)\n", rank, c->signo,
                 strsignal(c->signo));
}

int cc_test_fork_ranks(int n, cc_test_rank_fn fn, void *arg, int timeout_s,
                       const char *const *env, cc_test_child_t *out)
{
    char addr[64];
    setenv("CCOMM_JOB_KEY", TEST_KEY, 1);
    cc__config_reload();
    cc__store_server_t *srv = start_store(addr, sizeof(addr));
    if (!srv) return n;
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    cc_test_child_t *res = calloc((size_t)n, sizeof(*res));
    fflush(NULL);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            for (const char *const *e = env; e && *e; e++) putenv((char *)*e);
            cc__config_reload();
            int rc = fn(r, n, addr, arg);
            fflush(NULL);
            _exit(rc);
        }
    }
    int left = n, failed = 0;
    double deadline = now_s() + timeout_s;
    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p == 0) {
            if (now_s() > deadline) break;
            usleep(2000);
            continue;
        }
        if (p < 0) break;
        for (int r = 0; r < n; r++) {
            if (pids[r] != p) continue;
            res[r].exited = WIFEXITED(status);
            res[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            res[r].signo = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            pids[r] = 0;
            left--;
        }
    }
    for (int r = 0; r < n; r++) {
        if (pids[r] > 0) {
            fprintf(stderr, "harness: rank %d (pid %d) still running after %d s: killed\n", r,
                    (int)pids[r], timeout_s);
            kill(pids[r], SIGKILL);
            waitpid(pids[r], NULL, 0);
            res[r] = (cc_test_child_t){0, -1, SIGKILL};
            failed++;
            continue;
        }
        describe(r, &res[r]);
        if (!(res[r].exited && res[r].code == 0)) failed++;
    }
    if (out) memcpy(out, res, (size_t)n * sizeof(*res));
    free(res);
    free(pids);
    cc__store_server_stop(srv);
    return failed;
}

struct targ {
    cc_test_rank_fn fn;
    void *arg;
    int rank, size, rc;
    const char *addr;
};

static void *thread_main(void *p)
{
    struct targ *t = p;
    t->rc = t->fn(t->rank, t->size, t->addr, t->arg);
    return NULL;
}

int cc_test_thread_ranks(int n, cc_test_rank_fn fn, void *arg)
{
    char addr[64];
    setenv("CCOMM_JOB_KEY", TEST_KEY, 1);
    cc__config_reload();
    cc__store_server_t *srv = start_store(addr, sizeof(addr));
    if (!srv) return n;
    pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
    struct targ *ta = calloc((size_t)n, sizeof(*ta));
    for (int r = 0; r < n; r++) {
        ta[r] = (struct targ){fn, arg, r, n, 0, addr};
        pthread_create(&th[r], NULL, thread_main, &ta[r]);
    }
    int failed = 0;
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        if (ta[r].rc) {
            fprintf(stderr, "harness: thread rank %d failed (%d)\n", r, ta[r].rc);
            failed++;
        }
    }
    free(ta);
    free(th);
    cc__store_server_stop(srv);
    return failed;
}
