/*
 * check.c - `cclog check`: what went wrong, from the logs alone.
 *
 * Per file: ops enqueued (or started) that never ended, ops that ended with
 * an error, aborts, dropped records, malformed lines. Across files: ranks
 * whose last collective on a communicator is behind the others' (the rank a
 * hang waits for, or the one that went ahead). Exit 0 clean, 1 problems,
 * 2 unusable input.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ccomm/types.h"
#include "cclog.h"

#define MAX_PENDING_SHOWN 10 /* per file; the rest are counted */

/* An op seen with Q or S and not (yet) with E. */
struct pend {
    uint64_t op_id;
    uint32_t sig;
    uint64_t seq;
    int64_t t; /* first event's time */
    int started;
    int open; /* 0 once E was seen */
};

struct pendset {
    struct pend *v;
    size_t n, cap;
    size_t *slot; /* op_id hash -> index + 1; 0 = empty */
    size_t nslot;
};

static size_t pslot(const struct pendset *p, uint64_t id)
{
    size_t j = (size_t)(id * 0x9e3779b97f4a7c15ull) & (p->nslot - 1);
    while (p->slot[j] && p->v[p->slot[j] - 1].op_id != id)
        j = (j + 1) & (p->nslot - 1);
    return j;
}

static int prehash(struct pendset *p)
{
    size_t ns = p->nslot ? p->nslot * 2 : 1024;
    size_t *s = calloc(ns, sizeof(*s));
    if (!s) return -1;
    free(p->slot);
    p->slot = s;
    p->nslot = ns;
    for (size_t i = 0; i < p->n; i++)
        p->slot[pslot(p, p->v[i].op_id)] = i + 1;
    return 0;
}

/* The entry of op_id, made if new (NULL when out of memory). */
static struct pend *pget(struct pendset *p, uint64_t id, int make)
{
    if (p->nslot) {
        size_t j = pslot(p, id);
        if (p->slot[j]) return &p->v[p->slot[j] - 1];
    }
    if (!make) return NULL;
    if ((p->n + 1) * 2 > p->nslot && prehash(p)) return NULL;
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 256;
        struct pend *v = realloc(p->v, nc * sizeof(*v));
        if (!v) return NULL;
        p->v = v;
        p->cap = nc;
    }
    p->v[p->n] = (struct pend){id, 0, 0, 0, 0, 1};
    p->slot[pslot(p, id)] = ++p->n;
    return &p->v[p->n - 1];
}

struct ctx {
    FILE *out;
    int64_t end_us; /* the latest time in all logs */
    uint64_t problems;
    int files_with_problems;
};

static void op_words(FILE *out, const cl_log_t *log, uint32_t sig, uint64_t seq, uint64_t op_id)
{
    const cl_sig_t *s = cl_log_sig(log, sig);
    fprintf(out, "comm ");
    cclog_put_safe(out, s ? s->comm : "?");
    fprintf(out, ": %s seq %" PRIu64 " op_id %" PRIu64, s ? s->op : "?", seq, op_id);
}

/* A problem line "  kind: ..." with the file's header line printed first. */
static void problem(struct ctx *c, const cl_log_t *log, int *header, const char *kind)
{
    if (!*header) {
        char r[32];
        fprintf(c->out, "%s (%s, pid %" PRId64 ", host ", log->path,
                cclog_rank_str(log, r, sizeof(r)), log->pid);
        cclog_put_safe(c->out, log->host);
        fprintf(c->out, "):\n");
        *header = 1;
        c->files_with_problems++;
    }
    if (strcmp(kind, "note")) c->problems++;
    fprintf(c->out, "  %s: ", kind);
}

static void event_problem(struct ctx *c, const cl_log_t *log, const cl_entry_t *e, int *hdr)
{
    char t[32];
    if (e->ev == 'E') {
        problem(c, log, hdr, "failed");
        op_words(c->out, log, e->sig, e->seq, e->op_id);
        cl_fmt_time(e->dur_us, t, sizeof(t));
        fprintf(c->out, " ended with %s after %s s (line %d)\n", e->status, t, e->lineno);
        return;
    }
    problem(c, log, hdr, "abort");
    fprintf(c->out, "comm ");
    cclog_put_safe(c->out, e->comm);
    fprintf(c->out, " aborted: %s: ", e->status);
    cclog_put_safe(c->out, e->msg);
    if (e->sig) {
        fprintf(c->out, " [during ");
        op_words(c->out, log, e->sig, e->seq, e->op_id);
        fprintf(c->out, "]");
    }
    fprintf(c->out, " (line %d)\n", e->lineno);
}

static void report_pending(struct ctx *c, const cl_log_t *log, const struct pendset *p, int *hdr)
{
    size_t shown = 0, open = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct pend *q = &p->v[i];
        if (!q->open) continue;
        if (++open > MAX_PENDING_SHOWN) continue;
        char at[32], ago[32];
        cl_fmt_time(q->t, at, sizeof(at));
        cl_fmt_time(c->end_us - q->t, ago, sizeof(ago));
        problem(c, log, hdr, "never ended");
        op_words(c->out, log, q->sig, q->seq, q->op_id);
        fprintf(c->out, " %s at %s, %s s before the end of the logs\n",
                q->started ? "started" : "enqueued", at, ago);
        shown++;
    }
    if (open > shown) {
        problem(c, log, hdr, "never ended");
        fprintf(c->out, "%zu more ops\n", open - shown);
    }
}

/* Walk one file's entries; report in file order, then what is still open. */
static int check_log(struct ctx *c, const cl_log_t *log)
{
    struct pendset p = {0};
    int hdr = 0, rc = 0;
    for (size_t k = 0; k < log->nentries && !rc; k++) {
        const cl_entry_t *e = &log->entries[k];
        if (e->kind != CL_EVENT || !e->op_id) {
            if (e->kind == CL_EVENT) event_problem(c, log, e, &hdr); /* C0 abort */
            continue;
        }
        struct pend *q = pget(&p, e->op_id, e->ev == 'Q' || e->ev == 'S');
        if ((e->ev == 'Q' || e->ev == 'S') && !q) rc = -1;
        if (q && (e->ev == 'Q' || e->ev == 'S') && q->open) {
            if (!q->sig) *q = (struct pend){e->op_id, e->sig, e->seq, e->t_us, 0, 1};
            q->started |= e->ev == 'S';
        }
        if (e->ev == 'E' && q) q->open = 0;
        if (e->ev == 'A' || (e->ev == 'E' && strcmp(e->status, "OK")))
            event_problem(c, log, e, &hdr);
    }
    /* Without E lines in the file, every op would look unfinished. */
    if (log->events & CL_EV_E) report_pending(c, log, &p, &hdr);
    if (log->dropped) {
        problem(c, log, &hdr, "dropped");
        fprintf(c->out, "%" PRIu64 " records were dropped: the log is incomplete\n", log->dropped);
    }
    if (log->nerrors) {
        problem(c, log, &hdr, "malformed");
        fprintf(c->out, "%" PRIu64 " lines (reported above)\n", log->nerrors);
    }
    if (hdr && log->truncated) {
        problem(c, log, &hdr, "note");
        fprintf(c->out, "the last line is cut short\n");
    }
    if (hdr && !log->end_seen) {
        problem(c, log, &hdr, "note");
        fprintf(c->out, "no END line: the process is still running or did not close the log\n");
    }
    free(p.v);
    free(p.slot);
    return rc;
}

/* ---- across files: who is behind on each communicator ------------------- */

struct last {
    const char *comm;
    int64_t rank;
    uint64_t seq; /* highest collective seq enqueued */
};

/* Point-to-point ops have no collective seq; the class comes from ccomm/types.h. */
#define IS_P2P_P2P  1
#define IS_P2P_COLL 0
#define IS_P2P_LIFE 0
#define IS_P2P_RMA  1 /* window ops: numbered by neither, like a send without its peer's recv */
static int is_p2p(const char *op)
{
    static const struct {
        const char *name;
        int p2p;
    } t[] = {
#define CC__CLOG_P2P(name, s, cls) {s, IS_P2P_##cls},
        CC_OP_TYPE_MAP(CC__CLOG_P2P)
#undef CC__CLOG_P2P
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(t[i].name, op)) return t[i].p2p;
    return 0;
}

static int last_cmp(const void *x, const void *y)
{
    const struct last *a = x, *b = y;
    int c = strcmp(a->comm, b->comm);
    if (!c) c = (a->seq > b->seq) - (a->seq < b->seq);
    if (!c) c = (a->rank > b->rank) - (a->rank < b->rank);
    return c;
}

/* Append each comm's highest collective Q seq of one file to *v. */
static int collect_last(const cl_log_t *log, struct last **v, size_t *n, size_t *cap)
{
    size_t first = *n;
    for (size_t k = 0; k < log->nentries; k++) {
        const cl_entry_t *e = &log->entries[k];
        const cl_sig_t *s = e->kind == CL_EVENT && e->ev == 'Q' ? cl_log_sig(log, e->sig) : NULL;
        if (!s || is_p2p(s->op)) continue;
        size_t j = first;
        while (j < *n && strcmp((*v)[j].comm, s->comm))
            j++;
        if (j == *n) {
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                struct last *g = realloc(*v, nc * sizeof(*g));
                if (!g) return -1;
                *v = g;
                *cap = nc;
            }
            (*v)[(*n)++] = (struct last){s->comm, log->rank, 0};
        }
        if (e->seq > (*v)[j].seq) (*v)[j].seq = e->seq;
    }
    return 0;
}

/* "ranks 0,2-3" from rank-sorted entries [a, b). */
static void print_ranks(FILE *out, const struct last *v, size_t a, size_t b)
{
    fprintf(out, "%s ", b - a > 1 ? "ranks" : "rank");
    for (size_t i = a; i < b;) {
        size_t j = i + 1;
        while (j < b && v[j].rank == v[j - 1].rank + 1)
            j++;
        fprintf(out, "%s%" PRId64, i > a ? "," : "", v[i].rank);
        if (j - i > 1) fprintf(out, "-%" PRId64, v[j - 1].rank);
        i = j;
    }
}

static int check_across(struct ctx *c, cl_log_t **logs, int nlogs)
{
    struct last *v = NULL;
    size_t n = 0, cap = 0;
    int hdr = 0;
    for (int i = 0; i < nlogs; i++)
        if (logs[i] && !logs[i]->unusable && collect_last(logs[i], &v, &n, &cap)) return -1;
    if (n) qsort(v, n, sizeof(*v), last_cmp);
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && !strcmp(v[end].comm, v[i].comm))
            end++;
        if (v[i].seq != v[end - 1].seq) {
            if (!hdr) fprintf(c->out, "across files:\n");
            hdr = 1;
            c->problems++;
            fprintf(c->out, "  behind: comm ");
            cclog_put_safe(c->out, v[i].comm);
            fprintf(c->out, ": last collective enqueued:");
            for (size_t a = i; a < end;) {
                size_t b = a;
                while (b < end && v[b].seq == v[a].seq)
                    b++;
                fprintf(c->out, "%s", a > i ? "; " : " ");
                print_ranks(c->out, v, a, b);
                fprintf(c->out, " at seq %" PRIu64, v[a].seq);
                a = b;
            }
            fprintf(c->out, "\n");
        }
        i = end;
    }
    free(v);
    return 0;
}

static const char check_help[] =
    "usage: cclog check FILE...\n"
    "Report ops enqueued but never ended (with how long before the end of\n"
    "the logs), failed ops, aborts, dropped records, malformed lines, and\n"
    "ranks behind the others on a communicator. Exit status: 0 no problems,\n"
    "1 problems, 2 unusable input.\n";

int cclog_check(int argc, char **argv, FILE *out, FILE *err)
{
    int rc = cclog_files_only(argc, argv, check_help, out, err);
    if (rc >= 0) return rc;
    rc = 0;
    int bad, n = argc - optind;
    cl_log_t **logs = cclog_load_all(argv + optind, n, err, &bad);
    if (!logs) return 2;
    struct ctx c = {out, CL_NO_TIME, 0, 0};
    for (int i = 0; i < n; i++)
        if (logs[i] && !logs[i]->unusable && logs[i]->last_us > c.end_us)
            c.end_us = logs[i]->last_us;
    for (int i = 0; i < n && !rc; i++) {
        if (!logs[i] || logs[i]->unusable) {
            fprintf(out, "%s: unusable (see the error above)\n", argv[optind + i]);
            continue;
        }
        rc = check_log(&c, logs[i]);
    }
    if (!rc) rc = check_across(&c, logs, n);
    char t[32] = "-";
    if (c.end_us != CL_NO_TIME) cl_fmt_time(c.end_us, t, sizeof(t));
    if (rc)
        fprintf(err, "cclog check: out of memory\n");
    else if (c.problems)
        fprintf(out, "%" PRIu64 " problem%s in %d of %d files", c.problems,
                c.problems == 1 ? "" : "s", c.files_with_problems, n - bad);
    else
        fprintf(out, "no problems in %d file%s", n - bad, n - bad == 1 ? "" : "s");
    if (!rc && bad) fprintf(out, "; %d unusable", bad);
    if (!rc) fprintf(out, "; the logs end at %s\n", t);
    cclog_free_all(logs, n);
    return rc || bad ? 2 : c.problems ? 1 : 0;
}
