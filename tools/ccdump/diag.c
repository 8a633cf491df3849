/*
 * diag.c - the diagnosis driver and the helpers its passes share (see
 * diag.h for the passes).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

static const char *const conf_names[] = {"?", "uncertain", "likely", "certain"};
static const char *const proc_names[] = {"?",       "exited",  "alive",  "unknown",
                                         "stopped", "missing", "killed", "crashed"};
static const char *const fkind_names[CCD_F_COUNT] = {
    "none",          "crashed",         "killed",         "mismatch",    "stopped",
    "deadlock",      "missing_waited",  "exited_waited",  "not_entered", "p2p_unmatched",
    "no_progress",   "missing",         "straggler",      "p2p_unmatched_completed",
    "inconsistent"};

const char *ccd_conf_name(int conf)
{
    return conf >= 1 && conf <= 3 ? conf_names[conf] : "?";
}

const char *ccd_proc_name(int proc)
{
    return proc >= 1 && proc <= CCD_PROC_CRASHED ? proc_names[proc] : "?";
}

const char *ccd_fkind_name(int kind)
{
    return kind >= 0 && kind < CCD_F_COUNT ? fkind_names[kind] : "?";
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

ccd_finding_t *ccd_add_finding(ccd_diag_t *d, int kind, int conf, const int32_t *ranks,
                               uint32_t nranks, const char *fmt, ...)
{
    if (d->nf == d->fcap) {
        uint32_t c = d->fcap ? 2 * d->fcap : 16;
        ccd_finding_t *v = realloc(d->f, (size_t)c * sizeof(*v));
        if (!v) return d->oom = 1, NULL;
        d->f = v;
        d->fcap = c;
    }
    ccd_finding_t *f = &d->f[d->nf];
    memset(f, 0, sizeof(*f));
    f->ranks = malloc(((size_t)nranks + 1) * sizeof(int32_t));
    if (!f->ranks) return d->oom = 1, NULL;
    if (nranks) memcpy(f->ranks, ranks, nranks * sizeof(int32_t));
    qsort(f->ranks, nranks, sizeof(int32_t), cmp_i32);
    f->nranks = nranks;
    f->kind = kind;
    f->conf = conf;
    f->g = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof(f->text), fmt, ap);
    va_end(ap);
    d->nf++;
    return f;
}

void ccd_add_wait(ccd_diag_t *d, const ccd_wait_t *w)
{
    if (w->from < 0 || w->to < 0 || w->from >= d->job->world_size || w->to >= d->job->world_size)
        return; /* the graph is over the job's ranks only */
    if (d->nw == d->wcap) {
        uint32_t c = d->wcap ? 2 * d->wcap : 64;
        ccd_wait_t *v = realloc(d->w, (size_t)c * sizeof(*v));
        if (!v) {
            d->oom = 1;
            return;
        }
        d->w = v;
        d->wcap = c;
    }
    d->w[d->nw++] = *w;
}

void ccd_describe_op(const ccd_diag_t *d, const ccd_rank_t *r, const ccd_entry_t *e, char *buf,
                     size_t len)
{
    const ccd_comm_t *c = ccd_entry_comm(d->job, r, e);
    const char *op = ccd_op_name(d->job, e->op), *cname = c && c->name[0] ? c->name : "?";
    if (e->flags & CCD_EF_P2P) {
        int32_t w = -1;
        if (c && e->peer >= 0 && e->peer < c->nlisted) w = c->members[e->peer];
        int rma = e->op >= CC_OP_WIN_PUT && e->op <= CC_OP_WIN_FLUSH; /* no seq: nothing matches */
        int to = rma ? e->op != CC_OP_WIN_GET && e->op != CC_OP_WIN_WAIT_SIGNAL
                     : (e->flags & CCD_EF_SEND) != 0;
        char seq[32] = "";
        if (!rma) snprintf(seq, sizeof(seq), " #%llu", (unsigned long long)e->seq);
        snprintf(buf, len, "%s %s rank %d%s on %s", op, to ? "to" : "from", w >= 0 ? w : e->peer,
                 seq, cname);
    } else if (e->flags & CCD_EF_COLL) {
        snprintf(buf, len, "%s #%llu on %s", op, (unsigned long long)e->seq, cname);
    } else {
        snprintf(buf, len, "%s of %s", op, cname);
    }
}

void ccd_describe_age(const ccd_diag_t *d, uint64_t t, char *buf, size_t len)
{
    char dur[32];
    if (!t) {
        snprintf(buf, len, "at an unknown time");
        return;
    }
    if (t >= d->job->t_ref) {
        snprintf(buf, len, "at the time of the record");
        return;
    }
    ccd_fmt_dur(dur, sizeof(dur), d->job->t_ref - t);
    snprintf(buf, len, "%s before the record ends", dur);
}

const ccd_entry_t *ccd_last_op(const ccd_rank_t *r)
{
    for (uint32_t i = r ? r->n : 0; i-- > 0;)
        if (!(r->e[i].flags & CCD_EF_LIFE)) return &r->e[i];
    return NULL;
}

json_t *ccd_ranks_json(const int32_t *ranks, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(ranks[i]));
    return a;
}

json_t *ccd_entry_json(const ccd_diag_t *d, const ccd_rank_t *r, const ccd_entry_t *e)
{
    const ccd_comm_t *c = ccd_entry_comm(d->job, r, e);
    char age[64] = "";
    uint64_t t = ccd_entry_last_time(e);
    double ago = t && t < d->job->t_ref ? (double)(d->job->t_ref - t) / 1e9 : 0.0;
    ccd_describe_op(d, r, e, age, sizeof(age));
    return json_pack("{s:i, s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:f, s:s}",
                     "rank", r->rank, "op", ccd_op_name(d->job, e->op), "comm",
                     c ? c->name : "", "comm_key", c ? c->key : "", "seq", (json_int_t)e->seq,
                     "state", ccd_state_name(e->state), "status",
                     cc_status_name((cc_status_t)e->status), "in_count", (json_int_t)e->in_count,
                     "out_count", (json_int_t)e->out_count, "dtype",
                     ccd_dtype_name(d->job, e->dtype), "time_enqueued_ns", (json_int_t)e->t_enq,
                     "time_started_ns", (json_int_t)e->t_start, "time_ended_ns",
                     (json_int_t)e->t_end, "seconds_before_record_end", ago, "text", age);
}

ccd_diag_t *ccd_diagnose(const ccd_job_t *job, const ccd_index_t *ix, const ccd_diag_opts_t *o)
{
    ccd_diag_t *d = calloc(1, sizeof(*d));
    if (!d) return NULL;
    d->job = job;
    d->opts = *o;
    d->ix = ix;
    d->report = json_object();
    d->proc = calloc((size_t)job->world_size + 1, 1);
    d->blocked = malloc(((size_t)job->world_size + 1) * sizeof(int64_t));
    d->first_error_rank = -1;
    if (!d->report || !d->proc || !d->blocked) {
        ccd_diag_free(d);
        return NULL;
    }
    for (int32_t w = 0; w < job->world_size; w++)
        d->blocked[w] = -1;
    ccd_diag_procs(d);
    ccd_diag_colls(d);
    ccd_diag_p2p(d);
    ccd_diag_waits(d);
    ccd_diag_verdict(d);
    if (d->oom) {
        ccd_diag_free(d);
        return NULL;
    }
    return d;
}

void ccd_diag_free(ccd_diag_t *d)
{
    if (!d) return;
    for (uint32_t i = 0; i < d->nf; i++)
        free(d->f[i].ranks);
    free(d->f);
    free(d->w);
    free(d->proc);
    free(d->blocked);
    json_decref(d->report);
    free(d);
}

int ccd_diag_status(const ccd_diag_t *d)
{
    return d->verdict.kind ? 1 : 0;
}
