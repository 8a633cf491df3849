/*
 * stats.c - `cclog stats`: per communicator and signature, how many ops
 * ended, how many failed, their latency from enqueue (Q) to end (E) and the
 * bytes they moved, over all files.
 *
 * A signature is grouped across ranks by its text (op, counts, dtype,
 * red_op, root, peer, comm), not by its per-file number. Each ended op adds
 * one sample; the samples are sorted once and grouped in a single pass.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cclog.h"

struct sample {
    const cl_sig_t *sig;
    int64_t rank;
    int64_t lat_us; /* -1 when the Q line is missing */
    int ok;
};

struct vec {
    struct sample *v;
    size_t n, cap;
};

static int push(struct vec *s, struct sample x)
{
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 1024;
        struct sample *n = realloc(s->v, ncap * sizeof(*n));
        if (!n) return -1;
        s->v = n;
        s->cap = ncap;
    }
    s->v[s->n++] = x;
    return 0;
}

/* The order of signatures: comm, op, then the numbers. */
static int sig_cmp(const cl_sig_t *a, const cl_sig_t *b)
{
    int c = strcmp(a->comm, b->comm);
    if (!c) c = strcmp(a->op, b->op);
    if (!c) c = strcmp(a->dtype, b->dtype);
    if (!c) c = strcmp(a->red_op, b->red_op);
    if (!c) c = (a->in_count > b->in_count) - (a->in_count < b->in_count);
    if (!c) c = (a->out_count > b->out_count) - (a->out_count < b->out_count);
    if (!c) c = (a->root > b->root) - (a->root < b->root);
    if (!c) c = (a->peer > b->peer) - (a->peer < b->peer);
    return c;
}

static int sample_cmp(const void *x, const void *y)
{
    const struct sample *a = x, *b = y;
    int c = sig_cmp(a->sig, b->sig);
    if (!c) c = (a->rank > b->rank) - (a->rank < b->rank);
    return c;
}

static int lat_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Q times by op_id for one file: open addressing, grown at half load. */
struct qmap {
    uint64_t *id;
    int64_t *t;
    size_t cap, n;
};

static size_t qslot(const struct qmap *m, uint64_t id)
{
    size_t j = (size_t)(id * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->id[j] && m->id[j] != id)
        j = (j + 1) & (m->cap - 1);
    return j;
}

static int qput(struct qmap *m, uint64_t id, int64_t t)
{
    if (!id) return 0;
    if ((m->n + 1) * 2 > m->cap) {
        struct qmap g = {calloc(m->cap ? m->cap * 2 : 1024, 8), NULL, m->cap ? m->cap * 2 : 1024,
                         0};
        g.t = calloc(g.cap, 8);
        if (!g.id || !g.t) {
            free(g.id);
            free(g.t);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->id[i]) qput(&g, m->id[i], m->t[i]);
        free(m->id);
        free(m->t);
        *m = g;
    }
    size_t j = qslot(m, id);
    m->n += !m->id[j];
    m->id[j] = id;
    m->t[j] = t;
    return 0;
}

static int64_t qget(const struct qmap *m, uint64_t id)
{
    if (!m->cap || !id) return CL_NO_TIME;
    size_t j = qslot(m, id);
    return m->id[j] ? m->t[j] : CL_NO_TIME;
}

/* One sample per E line of a file. */
static int collect(const cl_log_t *log, struct vec *out)
{
    struct qmap q = {0};
    int rc = 0;
    for (size_t k = 0; k < log->nentries && !rc; k++) {
        const cl_entry_t *e = &log->entries[k];
        if (e->kind != CL_EVENT) continue;
        if (e->ev == 'Q') rc = qput(&q, e->op_id, e->t_us);
        if (e->ev != 'E') continue;
        int64_t tq = qget(&q, e->op_id);
        struct sample s = {cl_log_sig(log, e->sig), log->rank,
                           tq == CL_NO_TIME || e->t_us < tq ? -1 : e->t_us - tq,
                           !strcmp(e->status, "OK")};
        if (s.sig) rc = push(out, s);
    }
    free(q.id);
    free(q.t);
    return rc;
}

/* Nearest-rank percentile of n sorted latencies. */
static int64_t pct(const int64_t *lat, size_t n, int p)
{
    size_t k = (n * (size_t)p + 99) / 100;
    return lat[k ? k - 1 : 0];
}

static void print_us(FILE *out, int64_t us)
{
    if (us < 0)
        fprintf(out, " %9s", "-");
    else
        fprintf(out, " %9" PRId64, us);
}

/* One row: the samples v[0..n) share a signature and are sorted by rank. */
static int row(FILE *out, const struct sample *v, size_t n)
{
    const cl_sig_t *s = v[0].sig;
    int64_t *lat = malloc(n * sizeof(*lat));
    if (!lat) return -1;
    size_t errors = 0, nr = 0, nl = 0;
    for (size_t i = 0; i < n; i++) {
        errors += !v[i].ok;
        nr += i == 0 || v[i].rank != v[i - 1].rank;
        if (v[i].lat_us >= 0) lat[nl++] = v[i].lat_us;
    }
    qsort(lat, nl, sizeof(*lat), lat_cmp);
    uint64_t per = (s->in_count > s->out_count ? s->in_count : s->out_count) * s->elem_size;
    fprintf(out,
            "  %-20s %-5s %-6s %12" PRIu64 " %12" PRIu64 " %5" PRId64 " %5" PRId64
            " %6zu %8zu %7zu",
            s->op, s->dtype, s->red_op, s->in_count, s->out_count, s->root, s->peer, nr, n, errors);
    print_us(out, nl ? pct(lat, nl, 50) : -1);
    print_us(out, nl ? pct(lat, nl, 99) : -1);
    print_us(out, nl ? lat[nl - 1] : -1);
    fprintf(out, " %12" PRIu64 " %14" PRIu64 "\n", per, per * n);
    free(lat);
    return 0;
}

static int print_stats(FILE *out, struct sample *v, size_t n)
{
    for (size_t i = 0; i < n;) {
        const char *comm = v[i].sig->comm;
        size_t end = i, ops = 0;
        while (end < n && !strcmp(v[end].sig->comm, comm))
            end++;
        ops = end - i;
        fprintf(out, "comm ");
        cclog_put_safe(out, comm);
        fprintf(out, ": %zu ops ended\n", ops);
        fprintf(out, "  %-20s %-5s %-6s %12s %12s %5s %5s %6s %8s %7s %9s %9s %9s %12s %14s\n",
                "op", "dtype", "red_op", "in_count", "out_count", "root", "peer", "ranks", "count",
                "errors", "p50_us", "p99_us", "max_us", "bytes/op", "bytes");
        while (i < end) {
            size_t j = i + 1;
            while (j < end && !sig_cmp(v[j].sig, v[i].sig))
                j++;
            if (row(out, v + i, j - i)) return -1;
            i = j;
        }
    }
    if (!n) fprintf(out, "no ended ops\n");
    return 0;
}

static const char stats_help[] =
    "usage: cclog stats FILE...\n"
    "Per communicator and signature over all files: ranks, ended ops,\n"
    "errors, latency from Q to E (p50, p99, max, in µs; ops whose Q line\n"
    "is missing count but give no latency), bytes per op (the larger of\n"
    "input and output, one rank) and bytes in all.\n";

int cclog_stats(int argc, char **argv, FILE *out, FILE *err)
{
    int rc = cclog_files_only(argc, argv, stats_help, out, err);
    if (rc >= 0) return rc;
    rc = 0;
    int bad, n = argc - optind;
    cl_log_t **logs = cclog_load_all(argv + optind, n, err, &bad);
    struct vec s = {0};
    for (int i = 0; logs && i < n && !rc; i++)
        if (logs[i] && !logs[i]->unusable) rc = collect(logs[i], &s);
    if (!rc && logs) {
        if (s.n) qsort(s.v, s.n, sizeof(*s.v), sample_cmp);
        rc = print_stats(out, s.v, s.n);
    }
    if (rc || !logs) fprintf(err, "cclog stats: out of memory\n");
    free(s.v);
    cclog_free_all(logs, n);
    return rc || bad || !logs ? 2 : 0;
}
