/*
 * stats.c - `ccdump stats`: per op, communicator and size, over the
 * completed ops of every rank: count, latency p50 / p99 / max (start to
 * end; enqueue to end when no start was recorded), bytes, and bus
 * bandwidth at the median latency with nccl-tests' factors (allreduce
 * 2(n-1)/n; allgather, reduce-scatter, all-to-all (n-1)/n; others 1).
 */
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
#include "load.h"
#include "straggler.h"

static const char help[] =
    "usage: ccdump stats FILE|DIR... [--comm NAME] [--stragglers] [--json]\n"
    "Per op, communicator and message size, over the completed ops of all ranks:\n"
    "count, failed count, latency p50 / p99 / max, bytes moved, and bus bandwidth at\n"
    "the median latency (nccl-tests convention: allreduce busbw = algbw x 2(n-1)/n;\n"
    "allgather, reduce-scatter, all-to-all x (n-1)/n; broadcast, reduce, p2p x 1).\n"
    "Latency is from start to end (enqueue to end when no start was recorded).\n"
    "\n"
    "options:\n"
    "  --comm NAME   only this communicator (name or id)\n"
    "  --stragglers  instead: per communicator and rank, how late it arrives at the\n"
    "                collectives every member arrived at (its call minus the earliest\n"
    "                call: mean, p50, max), how often it is last, the wait it cost\n"
    "                the others (sum of its arrival minus theirs when it was last)\n"
    "                and what it waited; the verdict names the straggler when one\n"
    "                rank was last at 60 % or more of at least 5 collectives, by a\n"
    "                median 5 ms or more over the next-to-last (likely from 80 %)\n"
    "  --json        a JSON array instead of the table\n"
    "  -p, --prefix PREFIX  PyTorch dumps in directories: files named PREFIX<rank>\n"
    "                       (default: inferred from the names, as PyTorch's analyzer does)\n";

typedef struct sample {
    uint32_t g;
    uint16_t op;
    uint8_t ok;
    uint64_t bytes;
    uint64_t lat;
} sample_t;

static int by_key(const void *a, const void *b)
{
    const sample_t *x = a, *y = b;
    if (x->g != y->g) return x->g < y->g ? -1 : 1;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    if (x->ok != y->ok) return x->ok > y->ok ? -1 : 1; /* completed first */
    return x->lat < y->lat ? -1 : x->lat > y->lat;
}

double ccd_bus_factor(unsigned op, int32_t n)
{
    if (n <= 1) return 1.0;
    switch (op) {
    case CC_OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case CC_OP_ALLGATHER:
    case CC_OP_ALLGATHERV:
    case CC_OP_ALLGATHER_BYTES:
    case CC_OP_REDUCE_SCATTER:
    case CC_OP_REDUCE_SCATTERV:
    case CC_OP_ALLTOALL:
    case CC_OP_ALLTOALLV: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

static sample_t *collect(const ccd_job_t *job, const char *comm, size_t *n)
{
    size_t total = 0, k = 0;
    for (int32_t w = 0; w < job->world_size; w++)
        total += job->rank[w] ? job->rank[w]->n : 0;
    sample_t *v = malloc((total + 1) * sizeof(*v));
    for (int32_t w = 0; v && w < job->world_size; w++) {
        const ccd_rank_t *r = job->rank[w];
        for (uint32_t i = 0; r && i < r->n; i++) {
            const ccd_entry_t *e = &r->e[i];
            const ccd_comm_t *c = ccd_entry_comm(job, r, e);
            if ((e->flags & CCD_EF_LIFE) || !ccd_entry_done(e) || !c) continue;
            if (!ccd_comm_is(c, comm)) continue;
            uint64_t from = e->t_start ? e->t_start : e->t_enq;
            v[k++] = (sample_t){r->comms[e->comm].g, e->op, ccd_entry_ok(e), e->bytes,
                                e->t_end > from && from ? e->t_end - from : 0};
        }
    }
    qsort(v, k, sizeof(*v), by_key);
    *n = k;
    return v;
}

typedef struct row {
    const ccd_comm_t *c;
    const char *op;
    uint64_t bytes, count, failed, p50, p99, max, total;
    double busbw; /* GB/s, 0 unknown */
} row_t;

static void make_row(const ccd_job_t *job, const sample_t *s, size_t n, row_t *r)
{
    size_t ok = 0;
    while (ok < n && s[ok].ok)
        ok++;
    memset(r, 0, sizeof(*r));
    r->c = &job->comms[s[0].g];
    r->op = ccd_op_name(job, s[0].op);
    r->bytes = s[0].bytes;
    r->count = ok;
    r->failed = n - ok;
    r->total = r->bytes * ok;
    if (!ok) return;
    r->p50 = s[ok / 2].lat;
    r->p99 = s[(ok * 99) / 100 < ok ? (ok * 99) / 100 : ok - 1].lat;
    r->max = s[ok - 1].lat;
    if (r->p50 && r->bytes && s[0].op != CC_OP_BARRIER)
        r->busbw = (double)r->bytes / (double)r->p50 * ccd_bus_factor(s[0].op, r->c->size);
}

static void print_row(const row_t *r, FILE *out, int as_json, int *first)
{
    char p50[32], p99[32], mx[32];
    if (as_json) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:f}", "op", r->op,
                              "comm", r->c->name, "comm_key", r->c->key, "bytes", (json_int_t)r->bytes,
                              "count", (json_int_t)r->count, "failed", (json_int_t)r->failed,
                              "latency_p50_us", (double)r->p50 / 1e3, "latency_p99_us",
                              (double)r->p99 / 1e3, "latency_max_us", (double)r->max / 1e3,
                              "total_bytes", (json_int_t)r->total, "busbw_gbps", r->busbw);
        fprintf(out, "%s\n  ", *first ? "[" : ",");
        json_dumpf(j, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(j);
        *first = 0;
        return;
    }
    ccd_fmt_dur(p50, sizeof(p50), r->p50);
    ccd_fmt_dur(p99, sizeof(p99), r->p99);
    ccd_fmt_dur(mx, sizeof(mx), r->max);
    fprintf(out, "%-16.16s %-18.18s %12llu %8llu %6llu %10s %10s %10s %14llu ", r->c->name, r->op,
            (unsigned long long)r->bytes, (unsigned long long)r->count,
            (unsigned long long)r->failed, r->count ? p50 : "-", r->count ? p99 : "-",
            r->count ? mx : "-", (unsigned long long)r->total);
    if (r->busbw > 0) fprintf(out, "%9.3f\n", r->busbw);
    else fprintf(out, "%9s\n", "-");
}

/* --stragglers: the analysis of straggler.h for every communicator (or --comm). */
static int stragglers(const ccd_job_t *job, const char *comm, int as_json, FILE *out, FILE *err)
{
    ccd_index_t *ix = ccd_index_build(job);
    json_t *arr = json_array();
    int rc = ix && arr ? 0 : -1;
    for (uint32_t i = 0; !rc && i < ix->nc; i++) {
        const ccd_cindex_t *ci = &ix->c[i];
        ccd_strag_t st;
        if (!ccd_comm_is(ci->c, comm) || ci->nrecords < 2) continue;
        if ((rc = ccd_strag_compute(ci, UINT64_MAX, 0, &st))) break;
        if (as_json) {
            json_t *j = json_pack("{s:s, s:s, s:i}", "comm", ci->c->name, "comm_key", ci->c->key,
                                  "size", ci->size),
                   *sj = ccd_strag_json(&st, ci->c->name);
            json_object_update(j, sj);
            json_decref(sj);
            json_array_append_new(arr, j);
        } else {
            fputs("communicator ", out);
            ccd_put_safe(out, ci->c->name);
            fprintf(out, " (%d ranks): %u collectives every member arrived at", ci->size, st.nseq);
            if (st.nseq) fprintf(out, ", seq %llu-%llu", (unsigned long long)st.seq_lo,
                                 (unsigned long long)st.seq_hi);
            fputs("\n", out);
            ccd_strag_print(&st, ci->c->name, "  ", out);
        }
        ccd_strag_free(&st);
    }
    if (!rc && as_json) {
        json_dumpf(arr, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', out);
    }
    if (rc) fprintf(err, "ccdump: out of memory\n");
    json_decref(arr);
    ccd_index_free(ix);
    return rc ? 2 : 0;
}

int ccdump_stats(int argc, char **argv, FILE *out, FILE *err)
{
    const char *comm = NULL;
    int as_json = 0, first = 1, strag = 0;
    char **files;
    int nfiles;
    const char *prefix = NULL;
    const ccd_opt_t opts[] = {{"--comm", NULL, CCD_OPT_STR, &comm},
                              {"--json", NULL, CCD_OPT_FLAG, &as_json},
                              {"--prefix", "-p", CCD_OPT_STR, &prefix},
                              {"--stragglers", NULL, CCD_OPT_FLAG, &strag},
                              {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    ccd_job_t *job = ccd_load_inputs_p(files, nfiles, prefix, err);
    if (!job) return 2;
    if (strag) {
        rc = stragglers(job, comm, as_json, out, err);
        ccd_job_free(job);
        return rc;
    }
    size_t n;
    sample_t *s = collect(job, comm, &n);
    if (!s) {
        fprintf(err, "ccdump: out of memory\n");
        ccd_job_free(job);
        return 2;
    }
    if (!as_json)
        fprintf(out, "%-16s %-18s %12s %8s %6s %10s %10s %10s %14s %9s\n", "comm", "op", "bytes",
                "count", "failed", "p50", "p99", "max", "total bytes", "busbw GB/s");
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && s[j].g == s[i].g && s[j].op == s[i].op && s[j].bytes == s[i].bytes; j++)
            ;
        row_t r;
        make_row(job, s + i, j - i, &r);
        print_row(&r, out, as_json, &first);
    }
    if (as_json) fprintf(out, "%s\n", first ? "[]" : "\n]");
    free(s);
    ccd_job_free(job);
    return 0;
}
