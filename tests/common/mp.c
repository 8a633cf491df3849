/* mp.c - the multi-rank test harness (see mp.h). */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "base/config.h"
#include "base/log.h"
#include "mp.h"

#define TEST_KEY "ccomm-test-key"
#define CHILD_VAR "CCTEST_RANK_CHILD"

extern char **environ;

/* The anchor for function offsets: any function of this binary. */
static void anchor(void)
{
}

/*
 * Rings and dumps of test jobs go to a private directory, removed at exit,
 * unless the test chose its own (CCOMM_RECORDER_DIR / CCOMM_DUMP_DIR set).
 */
static char g_tmp[64];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tmp(void)
{
    if (g_tmp[0]) nftw(g_tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void private_dirs(void)
{
    if (!g_tmp[0]) {
        snprintf(g_tmp, sizeof(g_tmp), "/tmp/cctest-%d-XXXXXX", (int)getpid());
        if (!mkdtemp(g_tmp)) {
            g_tmp[0] = '\0';
            return;
        }
        atexit(rm_tmp);
    }
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/rings", g_tmp);
    setenv("CCOMM_RECORDER_DIR", dir, 0);
    snprintf(dir, sizeof(dir), "%s/dumps", g_tmp);
    setenv("CCOMM_DUMP_DIR", dir, 0);
}

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

/* In an exec'd child: run the rank and leave before main. */
__attribute__((constructor)) static void child_entry(void)
{
    const char *spec = getenv(CHILD_VAR);
    if (!spec) return;
    long long off;
    int rank, size, pos = 0;
    char addr[64];
    if (sscanf(spec, "%lld;%d;%d;%63[^;];%n", &off, &rank, &size, addr, &pos) != 4 || !pos) {
        fprintf(stderr, "harness: bad %s=%s\n", CHILD_VAR, spec);
        _exit(99);
    }
    const char *arg = spec[pos] == '-' ? NULL : spec + pos + 1; /* "-" none, "=text" a string */
    char *argcopy = arg ? strdup(arg) : NULL;
    unsetenv(CHILD_VAR);
    cc_test_rank_fn fn = (cc_test_rank_fn)(void *)((char *)(void *)anchor + off);
    int rc = fn(rank, size, addr, argcopy);
    fflush(NULL);
    exit(rc);
}

/* Build the child's environment: ours, the caller's extras, the child spec. */
static char **child_env(const char *const *extra, const char *spec)
{
    size_t n = 0, k = 0;
    while (environ[n]) n++;
    for (const char *const *e = extra; e && *e; e++) k++;
    char **env = calloc(n + k + 2, sizeof(char *));
    size_t o = 0;
    for (const char *const *e = extra; e && *e; e++) env[o++] = (char *)*e;
    for (size_t i = 0; i < n; i++) {
        int shadowed = 0; /* the caller's extras win over inherited values */
        for (size_t j = 0; j < k; j++) {
            const char *eq = strchr(env[j], '=');
            size_t len = eq ? (size_t)(eq - env[j]) + 1 : strlen(env[j]);
            shadowed |= !strncmp(environ[i], env[j], len);
        }
        if (!shadowed) env[o++] = environ[i];
    }
    env[o++] = (char *)spec;
    env[o] = NULL;
    return env;
}

static pid_t spawn(int r, int n, const char *addr, cc_test_rank_fn fn, const void *arg,
                   const char *const *extra)
{
    long long off = (long long)((char *)(void *)fn - (char *)(void *)anchor);
    size_t alen = arg ? strlen(arg) : 0;
    char *spec = malloc(alen + 160);
    snprintf(spec, alen + 160, "%s=%lld;%d;%d;%s;%s%s", CHILD_VAR, off, r, n, addr,
             arg ? "=" : "-", arg ? (const char *)arg : "");
    char **env = child_env(extra, spec);
    char *argv[] = {(char *)"ccomm-test-rank", NULL};
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execve("/proc/self/exe", argv, env);
        _exit(98);
    }
    free(env);
    free(spec);
    return pid;
}

int cc_test_reap(pid_t *pids, int n, int timeout_s, cc_test_child_t *res)
{
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
            res[r].timed_out = 0;
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
            res[r] = (cc_test_child_t){0, -1, SIGKILL, 1};
            failed++;
            continue;
        }
        describe(r, &res[r]);
        if (!(res[r].exited && res[r].code == 0)) failed++;
    }
    return failed;
}

int cc_test_fork_ranks(int n, cc_test_rank_fn fn, void *arg, int timeout_s,
                       const char *const *env, cc_test_child_t *out)
{
    char addr[64];
    private_dirs();
    setenv("CCOMM_JOB_KEY", TEST_KEY, 1);
    cc__config_reload();
    cc__store_server_t *srv = start_store(addr, sizeof(addr));
    if (!srv) return n;
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    cc_test_child_t *res = calloc((size_t)n, sizeof(*res));
    for (int r = 0; r < n; r++) pids[r] = spawn(r, n, addr, fn, arg, env);
    int failed = cc_test_reap(pids, n, timeout_s, res);
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
    private_dirs();
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
