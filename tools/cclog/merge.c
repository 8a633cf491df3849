/*
 * merge.c - `cclog merge` and `cclog filter`: the lines of many ranks in
 * one timeline.
 *
 * Each file keeps its own order (a rank's lines are not reordered even when
 * two threads' events were written slightly out of time order); files are
 * interleaved by a k-way merge on absolute time through a binary heap, so
 * thousands of ranks cost log(k) per line.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cclog.h"

struct cur {
    cl_log_t *log;
    int64_t *t; /* sort time of each entry */
    size_t i;   /* next entry */
    int idx;    /* file order breaks ties */
};

/* Sort times: timed lines (and V, at the base) their own; sig lines the next one's. */
static int64_t *sort_times(const cl_log_t *log)
{
    int64_t *t = malloc((log->nentries + 1) * sizeof(*t));
    if (!t) return NULL;
    int64_t next = log->last_us != CL_NO_TIME ? log->last_us : log->base_us;
    for (size_t k = log->nentries; k-- > 0;) {
        const cl_entry_t *e = &log->entries[k];
        if (e->t_us != CL_NO_TIME) next = e->t_us;
        t[k] = next;
    }
    return t;
}

static int before(const struct cur *a, const struct cur *b)
{
    int64_t ta = a->t[a->i], tb = b->t[b->i];
    return ta < tb || (ta == tb && a->idx < b->idx);
}

static void sift_down(struct cur **h, int n, int k)
{
    for (;;) {
        int m = k, l = 2 * k + 1, r = l + 1;
        if (l < n && before(h[l], h[m])) m = l;
        if (r < n && before(h[r], h[m])) m = r;
        if (m == k) return;
        struct cur *tmp = h[k];
        h[k] = h[m];
        h[m] = tmp;
        k = m;
    }
}

int cclog_merge_visit(cl_log_t **logs, int n, cclog_visit_fn fn, void *arg)
{
    struct cur *c = calloc((size_t)n + 1, sizeof(*c));
    struct cur **h = calloc((size_t)n + 1, sizeof(*h));
    int nh = 0, rc = 0;
    if (!c || !h) rc = -1;
    for (int i = 0; i < n && !rc; i++) {
        if (!logs[i] || logs[i]->unusable || !logs[i]->nentries) continue;
        c[i] = (struct cur){logs[i], sort_times(logs[i]), 0, i};
        if (!c[i].t)
            rc = -1;
        else
            h[nh++] = &c[i];
    }
    for (int k = nh / 2; k-- > 0;)
        sift_down(h, nh, k);
    while (nh && !rc) {
        struct cur *top = h[0];
        rc = fn(top->log, &top->log->entries[top->i], top->t[top->i], arg);
        if (++top->i == top->log->nentries) h[0] = h[--nh];
        sift_down(h, nh, 0);
    }
    for (int i = 0; c && i < n; i++)
        free(c[i].t);
    free(c);
    free(h);
    return rc;
}

const char *cclog_rank_str(const cl_log_t *log, char *buf, size_t len)
{
    if (log->rank < 0)
        snprintf(buf, len, "r?");
    else
        snprintf(buf, len, "r%lld", (long long)log->rank);
    return buf;
}

void cclog_print_merged(FILE *out, const cl_log_t *log, int64_t t_us, const char *text)
{
    char r[32], t[32];
    cl_fmt_time(t_us, t, sizeof(t));
    fprintf(out, "%s %s %s\n", cclog_rank_str(log, r, sizeof(r)), t, text);
}

static int print_all(cl_log_t *log, const cl_entry_t *e, int64_t t, void *arg)
{
    cclog_print_merged(arg, log, t, e->text);
    return 0;
}

/* Two files that claim one rank are most likely a mistake; say so. */
static void warn_same_rank(cl_log_t **logs, int n, FILE *err)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (logs[i] && logs[j] && logs[i]->have_header && logs[j]->have_header &&
                logs[i]->rank >= 0 && logs[i]->rank == logs[j]->rank) {
                fprintf(err, "cclog: warning: %s and %s both say rank %lld\n", logs[j]->path,
                        logs[i]->path, (long long)logs[i]->rank);
                break;
            }
}

static const char merge_help[] =
    "usage: cclog merge FILE...\n"
    "Print the lines of all files in one timeline, ordered by absolute time, each as\n"
    "  r<rank> <unix time> <line>\n";

int cclog_merge(int argc, char **argv, FILE *out, FILE *err)
{
    int rc = cclog_files_only(argc, argv, merge_help, out, err);
    if (rc >= 0) return rc;
    int bad, n = argc - optind;
    cl_log_t **logs = cclog_load_all(argv + optind, n, err, &bad);
    if (!logs) return 2;
    warn_same_rank(logs, n, err);
    cclog_merge_visit(logs, n, print_all, out);
    cclog_free_all(logs, n);
    return bad ? 2 : 0;
}

/* ---- filter -------------------------------------------------------------- */

struct filter {
    const char *comm, *op, *events;
    long long *ranks;
    int nranks;
    long long sig; /* -1 = any */
    int since_rel, until_rel;
    int64_t since, until; /* CL_NO_TIME = unbounded */
    FILE *out;
    unsigned char **shown; /* per log (also in log->user): sig lines already printed */
};

static int in_time(const struct filter *f, const cl_log_t *log, int64_t t)
{
    if (f->since != CL_NO_TIME && t < (f->since_rel ? log->base_us + f->since : f->since)) return 0;
    if (f->until != CL_NO_TIME && t > (f->until_rel ? log->base_us + f->until : f->until)) return 0;
    return 1;
}

static int matches(const struct filter *f, const cl_log_t *log, const cl_entry_t *e)
{
    if (e->kind != CL_EVENT) return 0;
    if (f->events && !strchr(f->events, e->ev)) return 0;
    if (f->sig >= 0 && (long long)e->sig != f->sig) return 0;
    int rank_ok = !f->nranks;
    for (int i = 0; i < f->nranks && !rank_ok; i++)
        rank_ok = f->ranks[i] == log->rank;
    if (!rank_ok || !in_time(f, log, e->t_us)) return 0;
    const cl_sig_t *s = cl_log_sig(log, e->sig);
    const char *comm = e->ev == 'A' ? e->comm : s ? s->comm : NULL;
    if (f->comm && (!comm || strcmp(comm, f->comm))) return 0;
    if (f->op && (!s || strcmp(s->op, f->op))) return 0;
    return 1;
}

static int filter_one(cl_log_t *log, const cl_entry_t *e, int64_t t, void *arg)
{
    struct filter *f = arg;
    if (!matches(f, log, e)) return 0;
    unsigned char *shown = log->user;
    /* The sig line goes before the first event of it that is shown. */
    if (e->sig && !shown[e->sig]) {
        shown[e->sig] = 1;
        for (size_t k = 0; k < log->nentries; k++)
            if (log->entries[k].kind == CL_SIG && log->entries[k].sig == e->sig) {
                cclog_print_merged(f->out, log, t, log->entries[k].text);
                break;
            }
    }
    cclog_print_merged(f->out, log, t, e->text);
    return 0;
}

static void filter_help(FILE *out)
{
    fprintf(out, "usage: cclog filter FILE... [--comm NAME] [--op NAME] [--event Q,S,E,W,A]\n"
                 "                            [--rank R[,R..]] [--sig N] [--since T] [--until T]\n"
                 "Print the event lines (Q, S, E, W, A) that pass every given test, in merge\n"
                 "order and format, each signature's sig line before its first event shown.\n"
                 "  --comm NAME   the op's communicator\n"
                 "  --op NAME     the op, e.g. all_reduce, send\n"
                 "  --event LIST  event letters\n"
                 "  --rank LIST   ranks (from the files' headers)\n"
                 "  --sig N       signature number C<N> (numbers are per file: use with --rank)\n"
                 "  --since T, --until T\n"
                 "                bounds, inclusive: unix time in seconds (1714234567.5) or,\n"
                 "                with a leading +, seconds after each file's base time (+12.5)\n");
}

/* Parse filter options into f; returns -1 (exit 2), 0, or 1 (help shown). */
static int filter_opts(int argc, char **argv, struct filter *f, FILE *out, FILE *err)
{
    static const struct option opts[] = {{"comm", required_argument, NULL, 'c'},
                                         {"op", required_argument, NULL, 'o'},
                                         {"event", required_argument, NULL, 'e'},
                                         {"rank", required_argument, NULL, 'r'},
                                         {"sig", required_argument, NULL, 's'},
                                         {"since", required_argument, NULL, 'S'},
                                         {"until", required_argument, NULL, 'U'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    optind = 0;
    opterr = 0;
    int o, li = 0;
    while ((o = getopt_long(argc, argv, "h", opts, &li)) != -1) {
        char *end = NULL;
        switch (o) {
        case 'c':
            f->comm = optarg;
            break;
        case 'o':
            f->op = optarg;
            break;
        case 'e':
            f->events = optarg;
            if (strspn(optarg, "QSEWA,") != strlen(optarg) || !*optarg) goto bad;
            break;
        case 'r':
            free(f->ranks);
            if (cclog_parse_int_list(optarg, &f->ranks, &f->nranks)) goto bad;
            break;
        case 's':
            f->sig = strtoll(optarg, &end, 10);
            if (!*optarg || *end || f->sig < 0) goto bad;
            break;
        case 'S':
            if (cclog_parse_when(optarg, &f->since_rel, &f->since)) goto bad;
            break;
        case 'U':
            if (cclog_parse_when(optarg, &f->until_rel, &f->until)) goto bad;
            break;
        case 'h':
            filter_help(out);
            return 1;
        default:
            fprintf(err, "cclog filter: unknown option or missing value: \"%s\"\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    return cclog_need_files(argc, argv, err);
bad:
    fprintf(err, "cclog filter: bad value \"%s\" for --%s\n", optarg, opts[li].name);
    return -1;
}

int cclog_filter(int argc, char **argv, FILE *out, FILE *err)
{
    struct filter f;
    memset(&f, 0, sizeof(f));
    f.sig = -1;
    f.since = f.until = CL_NO_TIME;
    f.out = out;
    int r = filter_opts(argc, argv, &f, out, err);
    if (r) {
        free(f.ranks);
        return r > 0 ? 0 : 2;
    }
    int bad, n = argc - optind, rc = 2;
    cl_log_t **logs = cclog_load_all(argv + optind, n, err, &bad);
    f.shown = calloc((size_t)n, sizeof(*f.shown));
    if (logs && f.shown) {
        int oom = 0;
        for (int i = 0; i < n; i++) {
            f.shown[i] = calloc(logs[i] ? logs[i]->nsig + 1 : 1, 1);
            oom |= !f.shown[i];
            if (logs[i]) logs[i]->user = f.shown[i];
        }
        if (!oom) cclog_merge_visit(logs, n, filter_one, &f);
        rc = bad || oom ? 2 : 0;
    }
    for (int i = 0; f.shown && i < n; i++)
        free(f.shown[i]);
    free(f.shown);
    free(f.ranks);
    cclog_free_all(logs, n);
    return rc;
}
