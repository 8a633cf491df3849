/*
 * main.c - ccrun, the ccomm launcher: `ccrun -n N [options] [--] prog args...`
 *
 * Parses the command line, hosts the bootstrap store, starts the ranks and
 * supervises them (launch.c, supervise.c). Like mpirun or torchrun, for one
 * machine (and its network namespaces).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "bootstrap/store.h"
#include "ccomm/version.h"
#include "ccrun.h"
#include "base/log.h"

#define MAX_RANKS 65536 /* an allgather over the store fetches at most this many keys */

static const char usage_text[] =
    "usage: ccrun -n N [options] [--] program [args...]\n"
    "       ccrun --env [--markdown] | --help | --version\n"
    "\n"
    "Start N copies (ranks) of a program on this machine, like `mpirun -n N` or\n"
    "`torchrun --nproc-per-node N`. ccrun hosts the job's bootstrap store and gives\n"
    "every rank its identity in the environment:\n"
    "  CCOMM_RANK CCOMM_SIZE CCOMM_LOCAL_RANK CCOMM_LOCAL_SIZE CCOMM_STORE_ADDR\n"
    "  CCOMM_JOB_KEY CCOMM_JOB_ID, and torchrun's RANK WORLD_SIZE LOCAL_RANK\n"
    "  LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT (the store is at MASTER_PORT + 1, as\n"
    "  under torchrun; MASTER_PORT is left free for a PyTorch TCPStore). See\n"
    "  `ccrun --env` for every CCOMM_* variable.\n"
    "\n"
    "options:\n"
    "  -n, -np, --np, --nproc-per-node N\n"
    "                     number of ranks (required)\n"
    "  --grace S          when a rank fails, wait S seconds for the others to end on\n"
    "                     their own before SIGTERM (default 10)\n"
    "  --term-grace S     seconds between SIGTERM and SIGKILL (default 5)\n"
    "  --timeout S        wall-clock limit of the whole job; on expiry SIGTERM, then\n"
    "                     SIGKILL, and ccrun exits 124 (default: none)\n"
    "  --no-prefix        do not prefix output lines with \"[rank] \"\n"
    "  --keep-rings       keep the job's flight recorder rings even when every rank\n"
    "                     exited 0 (by default a successful job's rings are removed\n"
    "                     from CCOMM_RECORDER_DIR; a failed job's are always kept)\n"
    "  --netns NS1,NS2,.. run rank r inside network namespace NS[r % k]\n"
    "                     (/var/run/netns/NAME, as made by `ip netns add`; needs root)\n"
    "  --store-host ADDR  address the store binds to and ranks connect to\n"
    "                     (default 127.0.0.1; required with --netns)\n"
    "  --store-netns NS   host the store inside namespace NS; \".\" = ccrun's own\n"
    "                     (default: the first --netns namespace, like torchrun's rank 0)\n"
    "  --store-port P     store port (default 0: any free port)\n"
    "  --bind-to WHAT     which of ccrun's CPUs each rank may run on (threads a rank\n"
    "                     starts inherit them), like mpirun's --bind-to:\n"
    "                     none  no binding, as torchrun: the scheduler places ranks\n"
    "                           (default)\n"
    "                     core  one CPU per rank: rank r on the (r mod CPUs)-th\n"
    "                     auto  an equal, contiguous share per rank (8 CPUs, 2 ranks:\n"
    "                           0-3 and 4-7); none when ranks outnumber CPUs\n"
    "                     Binding keeps a rank's caches and spares migrations; it\n"
    "                     also keeps two ranks off one CPU, where their hand-overs\n"
    "                     are cheapest (docs/performance.md has measurements).\n"
    "  --report-bindings  say each rank's CPUs on stderr when it starts\n"
    "  --env              list every CCOMM_* variable with its type, default, value in\n"
    "                     effect and help; with --markdown print docs/env.md\n"
    "  -h, --help         this text;  -V, --version  the version\n"
    "\n"
    "behaviour:\n"
    "  output   each line of a rank's stdout (stderr) goes to ccrun's stdout (stderr)\n"
    "           as \"[r] line\"; lines of different ranks never mix. stdin goes to rank 0\n"
    "           when it is not a terminal; other ranks read /dev/null.\n"
    "  signals  SIGINT, SIGTERM, SIGHUP are forwarded to all ranks, then they get the\n"
    "           --grace period, SIGTERM, SIGKILL; a second one kills at once. SIGQUIT,\n"
    "           SIGUSR1, SIGUSR2 (ccomm's dump signal) and SIGCONT are forwarded; Ctrl-Z\n"
    "           stops the ranks and ccrun. The ranks share one process group (kill it\n"
    "           with `kill -- -PGID`) and die with ccrun if ccrun is killed.\n"
    "  failure  a rank that exits non-zero or dies by a signal is named (\"rank 2 (pid\n"
    "           1234) killed by signal 9 (SIGKILL)\"), the others get --grace to end,\n"
    "           then SIGTERM and SIGKILL.\n"
    "  exit     0 if every rank exited 0; else the first cause: the first failing\n"
    "           rank's status (128+signal if killed), 124 on --timeout, 128+signal if\n"
    "           ccrun was interrupted, 127/126 if the program cannot be run, 2 on a\n"
    "           usage error.\n"
    "\n"
    "examples:\n"
    "  ccrun -n 4 ./train --epochs 3\n"
    "  ccrun -n 8 --timeout 600 --grace 30 python3 train.py\n"
    "  ccrun -n 2 --netns ns0,ns1 --store-host 10.0.0.1 ./allreduce_test\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "ccrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see ccrun --help)\n");
    return CCRUN_EXIT_USAGE;
}

/* Seconds, fractional allowed, with an optional s/m/h suffix, into milliseconds. */
static int parse_seconds(const char *text, int64_t *ms)
{
    char *end;
    double v = strtod(text, &end);
    double scale = 1000;
    if (end == text || v < 0 || v > 1e9) return -1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        scale = 60e3, end++;
    else if (*end == 'h')
        scale = 3600e3, end++;
    if (*end) return -1;
    *ms = (int64_t)(v * scale + 0.5);
    return 0;
}

/* Split "a,b,c" in place into a NULL-terminated array. */
static char **split_list(char *text, int *n)
{
    char **list = calloc(strlen(text) + 2, sizeof(*list));
    if (!list) return NULL;
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        list[(*n)++] = tok;
    return list;
}

/* Does argv[*i] name option `name` (or `alt`)? Sets *val from "=v" or the next argument. */
static int opt_is(int argc, char **argv, int *i, const char *name, const char *alt, char **val)
{
    const char *a = argv[*i];
    for (int k = 0; k < 2; k++) {
        const char *nm = k ? alt : name;
        size_t n = nm ? strlen(nm) : 0;
        if (!nm || strncmp(a, nm, n) != 0) continue;
        if (a[n] == '=' && val) return *val = (char *)a + n + 1, 1;
        if (a[n] != '\0') continue;
        if (!val) return 1;
        if (*i + 1 >= argc) return *val = NULL, 1;
        *val = argv[++*i];
        return 1;
    }
    return 0;
}

enum mode { MODE_RUN, MODE_ENV, MODE_ENV_MD, MODE_HELP, MODE_VERSION };

/* Apply one option that takes a value. 0, or ccrun's exit status for a bad value. */
static int apply_value(struct ccrun_opts *o, const char *opt, char *val)
{
    if (!val) return usage_error("option %s needs a value", opt);
    char *end;
    if (!strcmp(opt, "n")) {
        long n = strtol(val, &end, 10);
        if (*end || n < 1 || n > MAX_RANKS)
            return usage_error("-n %s: expected a number of ranks from 1 to 65536", val);
        o->nranks = (int)n;
    } else if (!strcmp(opt, "--store-port")) {
        long p = strtol(val, &end, 10);
        if (*end || p < 0 || p > 65535)
            return usage_error("--store-port %s: expected 0..65535", val);
        o->store_port = (int)p;
    } else if (!strcmp(opt, "--netns")) {
        if (!(o->netns = split_list(val, &o->nnetns)) || o->nnetns == 0)
            return usage_error("--netns \"%s\": expected NS1,NS2,...", val);
    } else if (!strcmp(opt, "--bind-to")) {
        if (!strcmp(val, "auto"))
            o->bind = CCRUN_BIND_AUTO;
        else if (!strcmp(val, "core"))
            o->bind = CCRUN_BIND_CORE;
        else if (!strcmp(val, "none"))
            o->bind = CCRUN_BIND_NONE;
        else
            return usage_error("--bind-to \"%s\": expected auto, core or none", val);
    } else if (!strcmp(opt, "--store-host")) {
        o->store_host = val;
    } else if (!strcmp(opt, "--store-netns")) {
        o->store_netns = val;
    } else {
        int64_t *dst = !strcmp(opt, "--grace")        ? &o->grace_ms
                       : !strcmp(opt, "--term-grace") ? &o->term_grace_ms
                                                      : &o->timeout_ms;
        if (parse_seconds(val, dst) != 0)
            return usage_error("bad duration \"%s\": expected seconds, e.g. 10, 0.5, 2m", val);
    }
    return 0;
}

static const char *const value_opts[][3] = {{"n", "-n", "-np"},
                                            {"n", "--np", "--nproc-per-node"},
                                            {"n", "--nproc_per_node", NULL},
                                            {"--grace", "--grace", NULL},
                                            {"--term-grace", "--term-grace", NULL},
                                            {"--timeout", "--timeout", NULL},
                                            {"--netns", "--netns", NULL},
                                            {"--store-host", "--store-host", NULL},
                                            {"--store-netns", "--store-netns", NULL},
                                            {"--store-port", "--store-port", NULL},
                                            {"--bind-to", "--bind-to", NULL}};

static int parse_args(int argc, char **argv, struct ccrun_opts *o, enum mode *mode)
{
    int i = 1, markdown = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        char *val = NULL;
        const char *a = argv[i];
        int matched = 0, rc = 0;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        for (size_t k = 0; !matched && k < sizeof(value_opts) / sizeof(value_opts[0]); k++)
            if ((matched = opt_is(argc, argv, &i, value_opts[k][1], value_opts[k][2], &val)))
                rc = apply_value(o, value_opts[k][0], val);
        if (rc) return rc;
        if (matched) continue;
        if (!strcmp(a, "--no-prefix"))
            o->prefix = 0;
        else if (!strcmp(a, "--report-bindings"))
            o->report_bindings = 1;
        else if (!strcmp(a, "--keep-rings"))
            o->keep_rings = 1;
        else if (!strcmp(a, "--env"))
            *mode = MODE_ENV;
        else if (!strcmp(a, "--markdown"))
            markdown = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            *mode = MODE_HELP;
        else if (!strcmp(a, "-V") || !strcmp(a, "--version"))
            *mode = MODE_VERSION;
        else
            return usage_error("unknown option %s", a);
    }
    if (*mode == MODE_ENV && markdown) *mode = MODE_ENV_MD;
    if (*mode != MODE_RUN) return 0;
    if (markdown) return usage_error("%s works only with --env", "--markdown");
    if (i >= argc) return usage_error("%s", "no program to run");
    if (o->nranks < 1) return usage_error("%s", "the number of ranks is required: -n N");
    if (o->nnetns && !o->store_host)
        return usage_error("%s needs --store-host ADDR: an address of the store's namespace "
                           "that every namespace can reach",
                           "--netns");
    o->argv = argv + i;
    return 0;
}

/* Descriptors ccrun holds for a job: per rank two output pipes and two store connections
 * (the rank's and its watchdog's), plus its own (stdio, the store's listener and epoll,
 * the signalfd, namespaces, a margin for the libraries). */
#define FDS_PER_RANK 4
#define FDS_OWN      32

/*
 * Large jobs need more descriptors than the usual soft limit of 1024. Raise the soft limit
 * to the hard one, then check the need against what is granted, whether or not it could be
 * raised (soft == hard included): a store that cannot accept leaves ranks without a
 * watchdog, and the job must not start that way. Returns 0 or CCRUN_EXIT_SETUP.
 */
static int check_fd_limit(int nranks)
{
    struct rlimit rl;
    unsigned long long need = (unsigned long long)nranks * FDS_PER_RANK + FDS_OWN;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        ccrun_say("cannot read the open-file limit: %s", strerror(errno));
        return CCRUN_EXIT_SETUP;
    }
    if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < need) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        ccrun_say("the open-file limit is %llu (hard limit %llu), but %d ranks need %llu "
                  "descriptors in ccrun (%d per rank and %d of its own); raise it with "
                  "`ulimit -n %llu`",
                  (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, nranks, need,
                  FDS_PER_RANK, FDS_OWN, need);
        return CCRUN_EXIT_SETUP;
    }
    return 0;
}

static int make_identity(struct ccrun_job *job)
{
    unsigned char raw[CCRUN_KEY_BYTES];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        ccrun_say("cannot make a job key: libcrypto has no randomness");
        return CCRUN_EXIT_SETUP;
    }
    for (int i = 0; i < CCRUN_KEY_BYTES; i++)
        sprintf(job->key + 2 * i, "%02x", raw[i]);
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(job->job_id, sizeof(job->job_id), "ccrun-%s-%d-%lld", host, (int)getpid(),
             (long long)time(NULL));
    return 0;
}

/* Block the signals ccrun handles (its loop reads them from a signalfd). */
static int setup_signals(sigset_t *orig)
{
    sigset_t set;
    sigemptyset(&set);
    const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1,
                        SIGUSR2, SIGCHLD, SIGTSTP, SIGCONT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&set, sigs[i]);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not kill the launcher */
    if (sigprocmask(SIG_BLOCK, &set, orig) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int run_job(const struct ccrun_opts *o)
{
    struct ccrun_job job = {.opts = o};
    sigset_t orig;
    void *server = NULL;
    if (check_fd_limit(o->nranks) != 0) return CCRUN_EXIT_SETUP;
    int sigfd = setup_signals(&orig), rc = 0;
    if (sigfd < 0) {
        ccrun_say("cannot set up signal handling: %s", strerror(errno));
        return CCRUN_EXIT_SETUP;
    }
    job.ranks = calloc((size_t)o->nranks, sizeof(*job.ranks));
    if (!job.ranks) return CCRUN_EXIT_SETUP;
    for (int r = 0; r < o->nranks; r++) {
        job.ranks[r].rank = r;
        job.ranks[r].out[0].fd = job.ranks[r].out[1].fd = -1;
    }
    ccrun_rings_prepare();
    /* The store thread starts with the signals already blocked, so they all reach the loop. */
    if ((rc = make_identity(&job)) == 0 && (rc = ccrun_host_store(&job, &server)) == 0 &&
        (rc = ccrun_launch(&job, &orig)) == 0)
        rc = ccrun_supervise(&job, sigfd);
    if (rc == 0 && !o->keep_rings) ccrun_remove_rings(&job);
    cc__store_server_stop(server);
    free(job.ranks);
    close(sigfd);
    return rc;
}

int main(int argc, char **argv)
{
    struct ccrun_opts o = {.grace_ms = 10000, .term_grace_ms = 5000, .prefix = 1};
    enum mode mode = MODE_RUN;
    int rc = parse_args(argc, argv, &o, &mode);
    if (rc == 0) {
        cc__log_init(); /* CCOMM_LOG_LEVEL applies to the store's messages */
        switch (mode) {
        case MODE_HELP:
            fputs(usage_text, stdout);
            break;
        case MODE_VERSION:
            printf("ccrun (ccomm) %s\n", CC_VERSION_STRING);
            break;
        case MODE_ENV:
            ccrun_print_env();
            break;
        case MODE_ENV_MD:
            ccrun_print_env_markdown();
            break;
        case MODE_RUN:
            rc = run_job(&o);
            break;
        }
    }
    free(o.netns);
    return rc;
}
