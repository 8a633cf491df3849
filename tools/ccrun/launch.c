/*
 * launch.c - hosting the store and starting the ranks.
 *
 * Every rank is forked and exec'd with its environment built beforehand, so
 * the child between fork and exec only makes async-signal-safe calls (the
 * store server's thread already runs in ccrun). All ranks share ONE process
 * group of their own, led by rank 0:
 *   - ccrun signals them all at once with kill(-pgid), which also reaches
 *     whatever they started themselves (a shell's children, workers);
 *   - the terminal's Ctrl-C goes to ccrun alone, which forwards it exactly
 *     once (with the ranks in ccrun's own group they would get it twice);
 *   - ranks never share a group with the shell that runs ccrun, so ccrun
 *     can signal their group without hitting the shell or a test script.
 * Each rank also gets PR_SET_PDEATHSIG(SIGKILL): if ccrun itself is killed,
 * its ranks do not live on as orphans.
 * A child that fails before exec (namespace, exec itself) reports errno
 * through a close-on-exec pipe, so ccrun can say what went wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "ccrun.h"

extern char **environ;

const struct ccrun_var ccrun_rank_vars[] = {
    {"CCOMM_RANK", "the rank, 0 to N-1"},
    {"CCOMM_SIZE", "N, the number of ranks"},
    {"CCOMM_LOCAL_RANK", "the rank among those on this host (all ranks run on one host: the rank)"},
    {"CCOMM_LOCAL_SIZE", "ranks on this host (N)"},
    {"CCOMM_STORE_ADDR", "host:port of the store that ccrun hosts for the job"},
    {"CCOMM_JOB_KEY", "a random 64-hex-digit key, new for every job, that store clients prove"},
    {"CCOMM_JOB_ID", "ccrun-<host>-<pid of ccrun>-<unix time>"},
    {"RANK", "as CCOMM_RANK (torchrun)"},
    {"WORLD_SIZE", "as CCOMM_SIZE (torchrun)"},
    {"LOCAL_RANK", "as CCOMM_LOCAL_RANK (torchrun)"},
    {"LOCAL_WORLD_SIZE", "as CCOMM_LOCAL_SIZE (torchrun)"},
    {"MASTER_ADDR", "the store's host (torchrun)"},
    {"MASTER_PORT", "the store's port minus one: ccomm finds its store at MASTER_PORT + 1 under "
                    "every launcher, and MASTER_PORT is left to a PyTorch TCPStore (torchrun)"},
    {NULL, NULL}};
#define NRANKVARS 13

enum child_stage { STAGE_NETNS = 1, STAGE_STDIO, STAGE_BIND, STAGE_EXEC };

struct child_err {
    int stage;
    int err;
};

/* --- the store --- */

/* Enter the network namespace /var/run/netns/<name>; *self keeps ccrun's own. */
static int enter_netns(const char *name, int *self)
{
    char path[4096];
    snprintf(path, sizeof(path), "/var/run/netns/%s", name);
    *self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*self < 0 || fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        ccrun_say("cannot enter network namespace %s (%s) to host the store: %s", name, path,
                  strerror(errno));
        if (fd >= 0) close(fd);
        if (*self >= 0) close(*self);
        return -1;
    }
    close(fd);
    return 0;
}

int ccrun_host_store(struct ccrun_job *job, void **server)
{
    const struct ccrun_opts *o = job->opts;
    const char *host = o->store_host ? o->store_host : "127.0.0.1";
    /* With --netns the store lives where rank 0 lives, as torchrun's rank 0 would host it. */
    const char *ns = o->store_netns ? o->store_netns : o->nnetns ? o->netns[0] : ".";
    int self = -1;
    if (strcmp(ns, ".") != 0 && enter_netns(ns, &self) != 0) return CCRUN_EXIT_SETUP;
    cc__store_server_t *srv = NULL;
    cc_status_t st = cc__store_server_start(host, o->store_port, job->key, &srv);
    if (self >= 0 && setns(self, CLONE_NEWNET) != 0) {
        ccrun_say("cannot return to ccrun's network namespace: %s", strerror(errno));
        exit(CCRUN_EXIT_SETUP); /* the ranks would start in the wrong namespace */
    }
    if (self >= 0) close(self);
    if (st != CC_OK) {
        ccrun_say("cannot host the store on %s:%d (netns %s): %s", host, o->store_port, ns,
                  cc_status_str(st));
        return CCRUN_EXIT_SETUP;
    }
    job->port = cc__store_server_port(srv);
    /* A wildcard address is fine to bind but not to connect to. */
    if (!strcmp(host, "0.0.0.0"))
        host = "127.0.0.1";
    else if (!strcmp(host, "::"))
        host = "::1";
    snprintf(job->master_addr, sizeof(job->master_addr), "%s", host);
    snprintf(job->store_addr, sizeof(job->store_addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d",
             host, job->port);
    *server = srv;
    return 0;
}

/* --- the program and the environment --- */

/* PATH as ccrun was given it (ccrun passes its environment on, so it reads it directly). */
static const char *path_var(void)
{
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "PATH=", 5)) return *e + 5;
    return "/usr/local/bin:/usr/bin:/bin";
}

/* Resolve the program as execvp would, before any rank starts. NULL with errno set. */
static char *find_program(const char *name)
{
    if (strchr(name, '/')) return strdup(name);
    const char *p = path_var();
    int err = ENOENT;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t dl = end ? (size_t)(end - p) : strlen(p);
        char *full = malloc(dl + strlen(name) + 3);
        if (!full) return NULL;
        sprintf(full, "%.*s/%s", (int)dl, dl ? p : ".", name);
        struct stat sb;
        if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (access(full, X_OK) == 0) return full;
            err = EACCES;
        }
        free(full);
        p += dl + (end ? 1 : 0);
    }
    errno = err;
    return NULL;
}

static int is_rank_var(const char *entry)
{
    for (int i = 0; ccrun_rank_vars[i].name; i++) {
        size_t n = strlen(ccrun_rank_vars[i].name);
        if (!strncmp(entry, ccrun_rank_vars[i].name, n) && entry[n] == '=') return 1;
    }
    return 0;
}

/*
 * ccrun's environment without the variables it sets, then the rank's own;
 * NULL-terminated. *nbase counts the borrowed entries (the rest are new).
 */
static char **rank_env(const struct ccrun_job *job, int r, size_t *nbase)
{
    size_t n = 0, k = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = calloc(n + NRANKVARS + 1, sizeof(*env));
    if (!env) return NULL;
    for (char **e = environ; e && *e; e++)
        if (!is_rank_var(*e)) env[k++] = *e;
    *nbase = k;
    const struct ccrun_opts *o = job->opts;
    char num[4][24];
    snprintf(num[0], sizeof(num[0]), "%d", r);
    snprintf(num[1], sizeof(num[1]), "%d", o->nranks);
    snprintf(num[2], sizeof(num[2]), "%d", job->port - 1); /* see ccrun_rank_vars */
    /* One host: the local rank and size are the global ones. Same order as ccrun_rank_vars. */
    const char *vals[NRANKVARS] = {num[0],   num[1],           num[0], num[1], job->store_addr,
                                   job->key, job->job_id,      num[0], num[1], num[0],
                                   num[1],   job->master_addr, num[2]};
    for (int i = 0; i < NRANKVARS; i++) {
        size_t len = strlen(ccrun_rank_vars[i].name) + strlen(vals[i]) + 2;
        if (!(env[k] = malloc(len))) break;
        snprintf(env[k++], len, "%s=%s", ccrun_rank_vars[i].name, vals[i]);
    }
    if (k != *nbase + NRANKVARS) {
        for (size_t i = *nbase; i < k; i++)
            free(env[i]);
        free(env);
        return NULL;
    }
    return env;
}

static void env_free(char **env, size_t nbase)
{
    for (size_t i = nbase; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* --- starting one rank --- */

struct spawn {
    const char *path;   /* resolved program */
    char **env;         /* the rank's environment */
    int netns_fd;       /* namespace to enter, or -1 */
    int out[2], err[2]; /* the rank's stdout and stderr pipes */
    int report[2];      /* close-on-exec pipe for errors before exec */
    sigset_t mask;      /* ccrun's signal mask before it blocked signals */
    pid_t parent;
    cpu_set_t *cpus;  /* the rank's CPUs (--bind-to), or NULL: ccrun's own */
    size_t cpus_size; /* bytes of *cpus */
};

static __attribute__((noreturn)) void child_fail(int fd, int stage, int err)
{
    struct child_err ce = {stage, err};
    ssize_t w = write(fd, &ce, sizeof(ce));
    (void)w;
    _exit(stage == STAGE_EXEC && err == ENOENT ? CCRUN_EXIT_NOT_FOUND : CCRUN_EXIT_NO_EXEC);
}

/* In the child: only async-signal-safe calls from here to exec. */
static __attribute__((noreturn)) void child_main(const struct ccrun_job *job, int r,
                                                 const struct spawn *sp)
{
    setpgid(0, r == 0 ? 0 : job->pgid);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != sp->parent) _exit(CCRUN_EXIT_SETUP); /* ccrun died before prctl */
    if (sp->netns_fd >= 0 && setns(sp->netns_fd, CLONE_NEWNET) != 0)
        child_fail(sp->report[1], STAGE_NETNS, errno);
    if (sp->cpus && sched_setaffinity(0, sp->cpus_size, sp->cpus) != 0)
        child_fail(sp->report[1], STAGE_BIND, errno);
    /* stdin: only rank 0 reads ccrun's, and only when it is not a terminal (the ranks are
     * not the terminal's foreground group: reading it would stop them). */
    int in = (r == 0 && !isatty(0)) ? 0 : open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(sp->out[1], 1) < 0 || dup2(sp->err[1], 2) < 0 || (in && dup2(in, 0) < 0))
        child_fail(sp->report[1], STAGE_STDIO, errno);
    signal(SIGPIPE, SIG_DFL); /* ccrun ignores it; an ignored signal would survive exec */
    sigprocmask(SIG_SETMASK, &sp->mask, NULL);
    execve(sp->path, job->opts->argv, sp->env);
    child_fail(sp->report[1], STAGE_EXEC, errno);
}

static int make_pipes(struct spawn *sp)
{
    sp->out[0] = sp->out[1] = sp->err[0] = sp->err[1] = sp->report[0] = sp->report[1] = -1;
    return pipe2(sp->out, O_CLOEXEC) || pipe2(sp->err, O_CLOEXEC) || pipe2(sp->report, O_CLOEXEC)
               ? -1
               : 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Fork rank r. Returns its report pipe's read end, or -1 after saying why. */
static int spawn_rank(struct ccrun_job *job, int r, struct spawn *sp)
{
    if (make_pipes(sp) != 0) {
        ccrun_say("cannot start rank %d: pipe: %s (raise `ulimit -n`?)", r, strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) child_main(job, r, sp);
    int saved = errno;
    close_fd(&sp->out[1]);
    close_fd(&sp->err[1]);
    close_fd(&sp->report[1]);
    if (pid < 0) {
        ccrun_say("cannot start rank %d: fork: %s", r, strerror(saved));
        close_fd(&sp->out[0]), close_fd(&sp->err[0]), close_fd(&sp->report[0]);
        return -1;
    }
    /* Also from this side, so the group is set before anyone signals it. */
    if (r == 0) job->pgid = pid;
    setpgid(pid, job->pgid);
    struct ccrun_rank *rk = &job->ranks[r];
    rk->pid = pid;
    rk->alive = 1;
    job->nalive++;
    for (int i = 0; i < 2; i++) {
        rk->out[i].fd = i ? sp->err[0] : sp->out[0];
        rk->out[i].dest = i ? 2 : 1;
        fcntl(rk->out[i].fd, F_SETFL, O_NONBLOCK);
    }
    return sp->report[0];
}

/* Read a child's report: 0 if it reached exec, else ccrun's exit status after saying why. */
static int check_report(const struct ccrun_job *job, int r, int fd, const char *path)
{
    struct child_err ce;
    ssize_t n;
    do
        n = read(fd, &ce, sizeof(ce));
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n != (ssize_t)sizeof(ce)) return 0; /* EOF: exec succeeded */
    const struct ccrun_opts *o = job->opts;
    if (ce.stage == STAGE_NETNS)
        ccrun_say("rank %d: cannot enter network namespace %s: %s", r, o->netns[r % o->nnetns],
                  strerror(ce.err));
    else if (ce.stage == STAGE_BIND)
        ccrun_say("rank %d: cannot bind to its CPUs (--bind-to): %s", r, strerror(ce.err));
    else if (ce.stage == STAGE_STDIO)
        ccrun_say("rank %d: cannot set up stdin/stdout/stderr: %s", r, strerror(ce.err));
    else
        ccrun_say("rank %d: cannot execute %s: %s", r, path, strerror(ce.err));
    if (ce.stage != STAGE_EXEC) return CCRUN_EXIT_SETUP;
    return ce.err == ENOENT ? CCRUN_EXIT_NOT_FOUND : CCRUN_EXIT_NO_EXEC;
}

/* Open every namespace of --netns once. Returns 0 or -1 after saying why. */
static int open_netns(const struct ccrun_opts *o, int *fds)
{
    for (int i = 0; i < o->nnetns; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "/var/run/netns/%s", o->netns[i]);
        if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            ccrun_say("cannot open network namespace %s (%s): %s%s", o->netns[i], path,
                      strerror(errno), errno == ENOENT ? " (create it with `ip netns add`)" : "");
            return -1;
        }
    }
    return 0;
}

/* Kill and reap what was started when the launch cannot complete. */
static void abort_launch(struct ccrun_job *job)
{
    ccrun_signal_all(job, SIGKILL);
    for (int r = 0; r < job->opts->nranks; r++) {
        struct ccrun_rank *rk = &job->ranks[r];
        if (!rk->alive) continue;
        while (waitpid(rk->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        rk->alive = 0;
        for (int i = 0; i < 2; i++)
            close_fd(&rk->out[i].fd);
    }
    job->nalive = 0;
}

/* --- binding (--bind-to) --- */

/* The CPUs ccrun may run on, in increasing order, into a malloc'd *list. Their count, or -1. */
static int allowed_cpus(int **list)
{
    for (int max = 1024; max <= (1 << 20); max *= 2) {
        cpu_set_t *set = CPU_ALLOC(max);
        size_t size = CPU_ALLOC_SIZE(max);
        if (!set) return -1;
        if (sched_getaffinity(0, size, set) != 0) {
            CPU_FREE(set);
            if (errno == EINVAL) continue; /* the kernel's mask is larger */
            return -1;
        }
        int n = CPU_COUNT_S(size, set), k = 0;
        *list = malloc((size_t)(n ? n : 1) * sizeof(int));
        for (int c = 0; *list && c < max && k < n; c++)
            if (CPU_ISSET_S(c, size, set)) (*list)[k++] = c;
        CPU_FREE(set);
        return *list ? n : -1;
    }
    errno = EINVAL;
    return -1;
}

/* "0-3,8" for the CPUs in cpus[lo, hi), which are in increasing order. */
static void cpus_text(const int *cpus, int lo, int hi, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = lo; i < hi && len < cap; i++) {
        int j = i;
        while (j + 1 < hi && cpus[j + 1] == cpus[j] + 1)
            j++;
        int w = j > i ? snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "", cpus[i], cpus[j])
                      : snprintf(out + len, cap - len, "%s%d", len ? "," : "", cpus[i]);
        if (w < 0) break;
        len += (size_t)w;
        i = j;
    }
}

/*
 * Rank r's CPUs under the job's --bind-to: [*lo, *hi) of the allowed list. 0 when the rank is
 * not bound. auto gives each rank an equal contiguous share (the remainder spread), and binds
 * nobody when the ranks outnumber the CPUs: there a rank that waits must be free to run
 * wherever a CPU is idle.
 */
static int rank_cpus(const struct ccrun_opts *o, int ncpu, int r, int *lo, int *hi)
{
    if (o->bind == CCRUN_BIND_NONE || ncpu < 1) return 0;
    if (o->bind == CCRUN_BIND_CORE) {
        *lo = r % ncpu;
        *hi = *lo + 1;
        return 1;
    }
    if (o->nranks > ncpu) return 0;
    *lo = (int)((long long)r * ncpu / o->nranks);
    *hi = (int)((long long)(r + 1) * ncpu / o->nranks);
    return 1;
}

int ccrun_launch(struct ccrun_job *job, const sigset_t *mask)
{
    const struct ccrun_opts *o = job->opts;
    char *path = find_program(o->argv[0]);
    if (!path) {
        int e = errno;
        ccrun_say("%s: %s", o->argv[0], e == ENOENT ? "command not found" : strerror(e));
        return e == ENOENT ? CCRUN_EXIT_NOT_FOUND : CCRUN_EXIT_NO_EXEC;
    }
    int nsfd[o->nnetns ? o->nnetns : 1], *reports = malloc((size_t)o->nranks * sizeof(int));
    int rc = reports && open_netns(o, nsfd) == 0 ? 0 : CCRUN_EXIT_SETUP;
    int started = 0, *cpus = NULL, ncpu = 0, maxcpu = 0;
    if (rc == 0 && o->bind != CCRUN_BIND_NONE) {
        if ((ncpu = allowed_cpus(&cpus)) < 0) {
            ccrun_say("cannot read the CPUs ccrun may run on (for --bind-to): %s", strerror(errno));
            rc = CCRUN_EXIT_SETUP;
        } else if (ncpu > 0) {
            maxcpu = cpus[ncpu - 1] + 1;
        }
    }
    cpu_set_t *set = maxcpu ? CPU_ALLOC(maxcpu) : NULL;
    size_t set_size = maxcpu ? CPU_ALLOC_SIZE(maxcpu) : 0;
    if (maxcpu && !set) {
        ccrun_say("cannot bind the ranks: out of memory");
        rc = CCRUN_EXIT_SETUP;
    }
    for (int r = 0; rc == 0 && r < o->nranks; r++, started++) {
        struct spawn sp = {
            path, NULL, o->nnetns ? nsfd[r % o->nnetns] : -1, {0}, {0}, {0}, *mask, getpid(),
            NULL, 0};
        int lo, hi;
        if (set && rank_cpus(o, ncpu, r, &lo, &hi)) {
            CPU_ZERO_S(set_size, set);
            for (int i = lo; i < hi; i++)
                CPU_SET_S(cpus[i], set_size, set);
            sp.cpus = set;
            sp.cpus_size = set_size;
            if (o->report_bindings) {
                char text[256];
                cpus_text(cpus, lo, hi, text, sizeof(text));
                ccrun_say("rank %d bound to CPU%s %s", r, hi - lo > 1 ? "s" : "", text);
            }
        } else if (o->report_bindings) {
            if (o->bind == CCRUN_BIND_NONE)
                ccrun_say("rank %d not bound (--bind-to none)", r);
            else
                ccrun_say("rank %d not bound (--bind-to auto: %d CPUs for %d ranks)", r, ncpu,
                          o->nranks);
        }
        size_t nbase = 0;
        if (!(sp.env = rank_env(job, r, &nbase))) {
            ccrun_say("cannot start rank %d: out of memory", r);
            rc = CCRUN_EXIT_SETUP;
            break;
        }
        reports[r] = spawn_rank(job, r, &sp);
        env_free(sp.env, nbase);
        if (reports[r] < 0) rc = CCRUN_EXIT_SETUP;
    }
    /* Every child has reached exec or reported why not; the first failure decides. */
    for (int r = 0; r < started; r++) {
        int crc = reports[r] >= 0 ? check_report(job, r, reports[r], path) : 0;
        if (crc && !rc) rc = crc;
    }
    for (int i = 0; i < o->nnetns; i++)
        if (nsfd[i] >= 0) close(nsfd[i]);
    if (set) CPU_FREE(set);
    free(cpus);
    free(reports);
    free(path);
    if (rc) abort_launch(job);
    return rc;
}
