/*
 * follow.c - `cclog follow`: print a clog file readably as it grows, like
 * `tail -f`, until Ctrl-C (or --duration, or its end with --no-wait).
 *
 * A line is printed once its newline has arrived; a partial line at the end
 * is read again on the next poll. A file that shrinks was truncated by a new
 * logger on the same path: following starts over from its first line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cclog.h"

static volatile sig_atomic_t g_stop;

static void on_sigint(int signo)
{
    (void)signo;
    g_stop = 1;
}

static void sig_words(FILE *out, const cl_log_t *log, const cl_line_t *l)
{
    const cl_sig_t *s = cl_log_sig(log, l->sig);
    cclog_put_safe(out, s ? s->comm : "?");
    fprintf(out, " %s seq %" PRIu64 " op_id %" PRIu64, s ? s->op : "?", l->seq, l->op_id);
}

static void print_event(FILE *out, const cl_log_t *log, const cl_line_t *l)
{
    const cl_sig_t *s = cl_log_sig(log, l->sig);
    if (l->ev == 'A') {
        cclog_put_safe(out, l->comm);
        fprintf(out, " ABORT %s: ", l->status);
        cclog_put_safe(out, l->msg);
        if (s) {
            fprintf(out, " (during %s seq %" PRIu64 " op_id %" PRIu64 ")", s->op, l->seq, l->op_id);
        }
        fputc('\n', out);
        return;
    }
    sig_words(out, log, l);
    switch (l->ev) {
    case 'Q':
        if (!s) break;
        fprintf(out, ": enqueued, %" PRIu64 " -> %" PRIu64, s->in_count, s->out_count);
        if (strcmp(s->dtype, "-")) fprintf(out, " %s", s->dtype);
        if (strcmp(s->red_op, "-")) fprintf(out, " %s", s->red_op);
        if (s->root >= 0) fprintf(out, " root %" PRId64, s->root);
        if (s->peer >= 0) fprintf(out, " peer %" PRId64, s->peer);
        break;
    case 'S':
        fprintf(out, ": started");
        break;
    case 'W':
        fprintf(out, ": waited on");
        break;
    default:
        fprintf(out, ": ended %s after %" PRId64 ".%03" PRId64 " ms", l->status, l->dur_us / 1000,
                l->dur_us % 1000);
        break;
    }
    fputc('\n', out);
}

/* One line, readably; comm names and messages are made terminal-safe. */
static void print_pretty(FILE *out, const cl_log_t *log, cl_line_t *l)
{
    char t[32];
    if (l->kind == CL_HEADER) {
        cl_fmt_time(l->base_us, t, sizeof(t));
        fprintf(out, "== rank %" PRId64 ", pid %" PRId64 ", host ", l->rank, l->pid);
        cclog_put_safe(out, l->host);
        fprintf(out, ", base time %s, events %s\n", t, l->events);
        return;
    }
    if (l->kind == CL_SIG) return; /* folded into the events that use it */
    cl_fmt_offset(l->off_us, t, sizeof(t));
    fprintf(out, "%-14s ", t);
    switch (l->kind) {
    case CL_NEW_COMM:
        cclog_put_safe(out, l->comm);
        fprintf(out, ": new communicator, id %016" PRIx64 ", rank %" PRId64 " of %" PRId64 "\n",
                l->comm_id, l->comm_rank, l->comm_size);
        break;
    case CL_SPLIT:
        cclog_put_safe(out, l->comm);
        fprintf(out, ": split from ");
        cclog_put_safe(out, l->parent);
        fprintf(out, ", world ranks %s\n", l->ranks);
        break;
    case CL_END_COMM:
        cclog_put_safe(out, l->comm);
        fprintf(out, ": destroyed\n");
        break;
    case CL_EVENT:
        print_event(out, log, l);
        break;
    case CL_DROP:
        fprintf(out, "** %" PRIu64 " records dropped (%" PRIu64 " in all) **\n", l->count,
                l->total);
        break;
    default:
        fprintf(out, "== log closed, %" PRIu64 " records dropped in all\n", l->total);
        break;
    }
}

struct fopts {
    int no_wait;
    int64_t duration_us; /* 0 = until Ctrl-C */
    long interval_ms;
};

/* Feed one line to the log and print it if it was good. */
static void take(cl_log_t *log, char *buf, long n, int last, FILE *out)
{
    char *copy = malloc((size_t)n + 1);
    if (!copy) return;
    memcpy(copy, buf, (size_t)n + 1);
    int had_header = log->have_header;
    const cl_entry_t *e;
    cl_log_feed(log, buf, (size_t)n, last, &e);
    cl_line_t l;
    char err[8];
    if ((e || (!had_header && log->have_header)) && !cl_parse_line(copy, &l, err, sizeof(err)))
        print_pretty(out, log, &l);
    free(copy);
}

/* Read what is there. Returns 1 at a partial last line (left for the next poll). */
static int read_more(FILE *f, cl_log_t *log, const struct fopts *o, FILE *out, char **buf,
                     size_t *cap)
{
    for (;;) {
        long start = ftell(f), n;
        int nl, toolong;
        if ((n = cl_read_line(f, buf, cap, &nl, &toolong)) < 0) return 0;
        if (!nl && !o->no_wait) {
            fseek(f, start, SEEK_SET);
            return 1;
        }
        if (toolong) {
            log->lineno++;
            fprintf(log->errs, "%s:%d: line longer than 1 MiB, skipped\n", log->path, log->lineno);
            continue;
        }
        take(log, *buf, n, !nl, out);
    }
}

static int follow_file(const char *path, const struct fopts *o, FILE *out, FILE *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(err, "cclog follow: cannot open %s: %s\n", path, strerror(errno));
        return 2;
    }
    cl_log_t *log = cl_log_new(path, err, 0);
    char *buf = NULL;
    size_t cap = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (log) {
        read_more(f, log, o, out, &buf, &cap);
        fflush(out);
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t el = (now.tv_sec - t0.tv_sec) * 1000000 + (now.tv_nsec - t0.tv_nsec) / 1000;
        if (o->no_wait || g_stop || log->unusable || (o->duration_us && el >= o->duration_us))
            break;
        struct timespec nap = {o->interval_ms / 1000, (o->interval_ms % 1000) * 1000000};
        nanosleep(&nap, NULL); /* Ctrl-C cuts it short */
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size < ftell(f)) {
            fprintf(out, "-- %s was truncated: reading from its start --\n", path);
            cl_log_free(log);
            log = cl_log_new(path, err, 0);
            fseek(f, 0, SEEK_SET);
        }
        clearerr(f);
    }
    int unusable = !log || log->unusable;
    cl_log_free(log);
    free(buf);
    fclose(f);
    return unusable ? 2 : 0;
}

int cclog_follow(int argc, char **argv, FILE *out, FILE *err)
{
    static const struct option opts[] = {{"duration", required_argument, NULL, 'd'},
                                         {"no-wait", no_argument, NULL, 'n'},
                                         {"interval", required_argument, NULL, 'i'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct fopts o = {0, 0, 200};
    optind = 0;
    opterr = 0;
    int c, rel;
    char *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'd' && !cclog_parse_when(optarg, &rel, &o.duration_us) && !rel) continue;
        if (c == 'n') {
            o.no_wait = 1;
            continue;
        }
        if (c == 'i' && (o.interval_ms = strtol(optarg, &end, 10)) > 0 && !*end &&
            o.interval_ms <= 60000)
            continue;
        if (c == 'h') {
            fprintf(out, "usage: cclog follow FILE [--duration S] [--no-wait] [--interval MS]\n"
                         "Print the file's lines readably, then the lines appended to it, until\n"
                         "Ctrl-C. --duration S stops after S seconds; --no-wait stops at the\n"
                         "end of what is there; --interval sets the poll period (200 ms).\n");
            return 0;
        }
        fprintf(err, "cclog follow: bad option or value \"%s\"\n", argv[optind - 1]);
        return 2;
    }
    if (argc - optind != 1) {
        fprintf(err, "cclog follow: give exactly one file (see cclog follow --help)\n");
        return 2;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint; /* no SA_RESTART: the poll's sleep ends at once */
    sigemptyset(&sa.sa_mask);
    g_stop = 0;
    sigaction(SIGINT, &sa, &old);
    int rc = follow_file(argv[optind], &o, out, err);
    sigaction(SIGINT, &old, NULL);
    return rc;
}
