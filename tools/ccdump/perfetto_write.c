/*
 * perfetto_write.c - the trace of `ccdump perfetto` (see perfetto.c for
 * what it shows). Three steps: choose the ops (ranks, last N), join them
 * into flows (a collective's slices across ranks in time order; each send
 * to its receive), then stream the events rank by rank.
 *
 * Perfetto's JSON importer wants: ph, ts, pid and tid on every event; dur
 * on complete events; slices on one thread nested or disjoint; bind_id with
 * flow_out on the first slice of a flow, flow_in + flow_out on the middle
 * ones, flow_in on the last; process_name / thread_name metadata.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto.h"

#define LANES 64 /* tracks per communicator for overlapping ops */

enum { R_OUT = 1, R_IN = 2 };

typedef struct pf {
    FILE *f;
    const ccd_job_t *job;
    const ccd_index_t *ix;
    uint64_t t0, tend, nev, next_flow, dropped;
    int first;
    uint8_t **emit;  /* per world rank, per entry: in the trace */
    uint64_t **flow; /* per world rank, per entry: bind id, 0 none */
    uint8_t **role;  /* R_OUT | R_IN */
} pf_t;

/* ---- writing ---------------------------------------------------------------- */

/* A JSON string; bytes outside printable ASCII become \u00XX (names come from files). */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static double us(const pf_t *p, uint64_t t)
{
    return t > p->t0 ? (double)(t - p->t0) / 1e3 : 0.0;
}

/* Opens an event with the keys every event has; the caller adds the rest and '}'. */
static void ev(pf_t *p, char ph, const char *name, const char *cat, uint64_t t, int pid, int tid)
{
    fprintf(p->f, "%s\n{\"ph\":\"%c\",\"name\":", p->first ? "" : ",", ph);
    put_str(p->f, name);
    fprintf(p->f, ",\"cat\":\"%s\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d", cat, us(p, t), pid, tid);
    p->first = 0;
    p->nev++;
}

static void meta(pf_t *p, const char *what, int pid, int tid, const char *name, long sort)
{
    ev(p, 'M', what, "__metadata", p->t0, pid, tid);
    fprintf(p->f, ",\"args\":{\"name\":");
    put_str(p->f, name);
    fprintf(p->f, "}}");
    ev(p, 'M', tid ? "thread_sort_index" : "process_sort_index", "__metadata", p->t0, pid, tid);
    fprintf(p->f, ",\"args\":{\"sort_index\":%ld}}", sort);
}

/* ---- which ops, and their flows --------------------------------------------------- */

static int selected(const ccd_pf_sel_t *sel, int32_t w)
{
    for (uint32_t i = 0; sel->ranks && i < sel->nranks; i++)
        if (sel->ranks[i] == w) return 1;
    return !sel->ranks;
}

static int choose(pf_t *p, const ccd_pf_sel_t *sel)
{
    const ccd_job_t *job = p->job;
    size_t n = (size_t)job->world_size + 1;
    p->emit = calloc(n, sizeof(*p->emit));
    p->flow = calloc(n, sizeof(*p->flow));
    p->role = calloc(n, sizeof(*p->role));
    if (!p->emit || !p->flow || !p->role) return -1;
    for (int32_t w = 0; w < job->world_size; w++) {
        const ccd_rank_t *r = job->rank[w];
        if (!r || !selected(sel, w)) continue;
        p->emit[w] = calloc((size_t)r->n + 1, 1);
        p->flow[w] = calloc((size_t)r->n + 1, sizeof(uint64_t));
        p->role[w] = calloc((size_t)r->n + 1, 1);
        if (!p->emit[w] || !p->flow[w] || !p->role[w]) return -1;
        uint32_t from = sel->last && r->n > sel->last ? r->n - sel->last : 0;
        for (uint32_t i = from; i < r->n; i++)
            p->emit[w][i] = r->e[i].t_enq != 0;
    }
    return 0;
}

typedef struct part {
    uint64_t t;
    int32_t w;
    uint32_t i;
} part_t;

static int by_time(const void *a, const void *b)
{
    const part_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : x->w - y->w;
}

/* One flow through parts[0..n) in time order. */
static void link(pf_t *p, part_t *v, uint32_t n)
{
    if (n < 2) return;
    qsort(v, n, sizeof(*v), by_time);
    uint64_t id = ++p->next_flow;
    for (uint32_t k = 0; k < n; k++) {
        p->flow[v[k].w][v[k].i] = id;
        p->role[v[k].w][v[k].i] = (uint8_t)((k + 1 < n ? R_OUT : 0) | (k ? R_IN : 0));
    }
}

static int coll_flows(pf_t *p, const ccd_cindex_t *ci, part_t *v, uint32_t *cur)
{
    memset(cur, 0, (size_t)ci->n * sizeof(uint32_t));
    for (uint64_t s; (s = ccd_cindex_next_seq(ci, cur, UINT64_MAX));) {
        uint32_t n = 0;
        for (int32_t k = 0; k < ci->n; k++) {
            const ccd_member_t *m = &ci->m[k];
            const ccd_entry_t *e = ccd_member_take(m, &cur[k], s);
            if (!e || !p->emit[m->world]) continue;
            uint32_t i = (uint32_t)(e - m->r->e);
            if (p->emit[m->world][i]) v[n++] = (part_t){e->t_enq, m->world, i};
        }
        link(p, v, n);
    }
    return 0;
}

static void p2p_flows(pf_t *p, const ccd_cindex_t *ci)
{
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_member_t *a = &ci->m[k];
        for (uint32_t j = 0; a->r && p->emit[a->world] && j < a->np2p; j++) {
            const ccd_entry_t *e = &a->r->e[a->p2p[j]];
            const ccd_member_t *b = e->peer >= 0 ? ccd_cindex_member(ci, e->peer) : NULL;
            if (!(e->flags & CCD_EF_SEND) || !b) continue;
            const ccd_entry_t *x =
                b->r && p->emit[b->world] ? ccd_member_p2p(b, a->crank, 0, e->seq) : NULL;
            uint32_t xi = x ? (uint32_t)(x - b->r->e) : 0;
            if (!x || !p->emit[a->world][a->p2p[j]] || !p->emit[b->world][xi]) continue;
            part_t v[2] = {{e->t_enq, a->world, a->p2p[j]}, {x->t_enq, b->world, xi}};
            uint64_t id = ++p->next_flow;
            p->flow[v[0].w][v[0].i] = p->flow[v[1].w][v[1].i] = id;
            p->role[v[0].w][v[0].i] = R_OUT; /* the arrow goes from the send to the receive */
            p->role[v[1].w][v[1].i] = R_IN;
        }
    }
}

static int flows(pf_t *p)
{
    for (uint32_t c = 0; c < p->ix->nc; c++) {
        const ccd_cindex_t *ci = &p->ix->c[c];
        part_t *v = malloc(((size_t)ci->n + 1) * sizeof(*v));
        uint32_t *cur = malloc(((size_t)ci->n + 1) * sizeof(*cur));
        if (!v || !cur) {
            free(v);
            free(cur);
            return -1;
        }
        coll_flows(p, ci, v, cur);
        p2p_flows(p, ci);
        free(v);
        free(cur);
    }
    return 0;
}

/* ---- slices ---------------------------------------------------------------- */

/* "all_reduce #4", "send 0->1 #2" (world ranks), "init". */
static void slice_name(const pf_t *p, const ccd_rank_t *r, const ccd_entry_t *e, char *buf,
                       size_t len)
{
    const char *op = ccd_op_name(p->job, e->op);
    const ccd_comm_t *c = ccd_entry_comm(p->job, r, e);
    int32_t peer = c && e->peer >= 0 && e->peer < c->nlisted ? c->members[e->peer] : -1;
    if (e->flags & CCD_EF_P2P)
        snprintf(buf, len, "%s %d%s%d #%llu", op, r->rank, (e->flags & CCD_EF_SEND) ? "->" : "<-",
                 peer, (unsigned long long)e->seq);
    else if (e->flags & CCD_EF_COLL)
        snprintf(buf, len, "%s #%llu", op, (unsigned long long)e->seq);
    else
        snprintf(buf, len, "%s", op);
}

static void slice(pf_t *p, const ccd_rank_t *r, uint32_t i, int tid, uint64_t t1)
{
    const ccd_entry_t *e = &r->e[i];
    char name[160];
    slice_name(p, r, e, name, sizeof(name));
    const char *cat = (e->flags & CCD_EF_P2P) ? "p2p" : (e->flags & CCD_EF_COLL) ? "coll" : "lifecycle";
    ev(p, 'X', name, cat, e->t_enq, r->rank + 1, tid);
    fprintf(p->f, ",\"dur\":%.3f,\"args\":{\"seq\":%llu,\"state\":\"%s\",\"status\":\"%s\","
            "\"in_count\":%llu,\"out_count\":%llu,\"dtype\":",
            t1 > e->t_enq ? (double)(t1 - e->t_enq) / 1e3 : 0.0, (unsigned long long)e->seq,
            ccd_state_name(e->state), cc_status_name((cc_status_t)e->status),
            (unsigned long long)e->in_count, (unsigned long long)e->out_count);
    put_str(p->f, ccd_dtype_name(p->job, e->dtype));
    fprintf(p->f, ",\"bytes\":%llu,\"record_id\":%llu,\"op_id\":%llu%s}",
            (unsigned long long)e->bytes, (unsigned long long)e->record_id,
            (unsigned long long)e->op_id, e->t_end ? "" : ",\"open\":\"at the end of the record\"");
    uint64_t id = p->flow[r->rank][i];
    uint8_t role = p->role[r->rank][i];
    if (id)
        fprintf(p->f, ",\"bind_id\":%llu%s%s", (unsigned long long)id,
                role & R_OUT ? ",\"flow_out\":true" : "", role & R_IN ? ",\"flow_in\":true" : "");
    fputc('}', p->f);
}

/* The first lane of comm k free at time t0 (its last slice ended), or -1. */
static int lane_for(uint64_t *ends, uint64_t t0)
{
    for (int l = 0; l < LANES; l++)
        if (ends[l] <= t0) return l;
    return -1;
}

/* Every chosen op of rank r on its comm k, each on the first free lane. */
static void comm_slices(pf_t *p, const ccd_rank_t *r, uint32_t k)
{
    uint64_t ends[LANES] = {0}, named = 0;
    const ccd_comm_t *c = &p->job->comms[r->comms[k].g];
    for (uint32_t i = 0; i < r->n; i++) {
        const ccd_entry_t *e = &r->e[i];
        if (e->comm != k || !p->emit[r->rank][i]) continue;
        uint64_t t1 = e->t_end >= e->t_enq ? e->t_end : p->tend > e->t_enq ? p->tend : e->t_enq;
        int l = lane_for(ends, e->t_enq);
        if (l < 0) {
            p->dropped++;
            continue;
        }
        ends[l] = t1 > e->t_enq ? t1 : e->t_enq + 1;
        int tid = 1 + (int)k * LANES + l;
        if (!(named & (1ull << l))) {
            char tname[96];
            snprintf(tname, sizeof(tname), l ? "%s (overlap %d)" : "%s", c->name[0] ? c->name : c->key, l);
            meta(p, "thread_name", r->rank + 1, tid, tname, tid);
            named |= 1ull << l;
        }
        slice(p, r, i, tid, t1);
    }
}

/* ---- markers and counters ---------------------------------------------------- */

static void instant(pf_t *p, const ccd_rank_t *r, uint64_t t, const char *name)
{
    ev(p, 'i', name, "marker", t, r->rank + 1, 0);
    fprintf(p->f, ",\"s\":\"p\"}");
}

static void markers(pf_t *p, const ccd_rank_t *r)
{
    char name[200];
    for (uint32_t i = 0; i < r->n; i++) {
        const ccd_entry_t *e = &r->e[i];
        if (!p->emit[r->rank][i]) continue;
        if (e->state == CCD_TIMED_OUT && e->t_end) {
            slice_name(p, r, e, name + 9, sizeof(name) - 9);
            memcpy(name, "timeout: ", 9);
            instant(p, r, e->t_end, name);
        }
        if (e->op == CC_OP_COMM_ABORT && e->t_enq && !r->comms[e->comm].t_aborted) {
            snprintf(name, sizeof(name), "abort: %s", ccd_entry_comm(p->job, r, e)->name);
            instant(p, r, e->t_enq, name);
        }
    }
    for (uint32_t k = 0; k < r->ncomms; k++)
        if (r->comms[k].t_aborted) {
            snprintf(name, sizeof(name), "abort: %s (%s)", p->job->comms[r->comms[k].g].name,
                     cc_status_name(r->comms[k].abort_reason));
            instant(p, r, r->comms[k].t_aborted, name);
        }
    if (r->fatal_signal) {
        snprintf(name, sizeof(name), "fatal signal SIG%s",
                 sigabbrev_np(r->fatal_signal) ? sigabbrev_np(r->fatal_signal) : "?");
        instant(p, r, r->t_fatal ? r->t_fatal : p->tend, name);
    }
}

typedef struct step {
    uint64_t t;
    int64_t d;
} step_t;

static int by_t(const void *a, const void *b)
{
    const step_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* "bytes in flight": + at enqueue, - at the end, one counter value per distinct time. */
static int counter(pf_t *p, const ccd_rank_t *r)
{
    step_t *v = malloc(((size_t)r->n * 2 + 1) * sizeof(*v));
    size_t n = 0;
    if (!v) return -1;
    for (uint32_t i = 0; i < r->n; i++) {
        const ccd_entry_t *e = &r->e[i];
        if (!p->emit[r->rank][i] || !e->bytes || (e->flags & CCD_EF_LIFE)) continue;
        v[n++] = (step_t){e->t_enq, (int64_t)e->bytes};
        if (e->t_end >= e->t_enq && e->t_end) v[n++] = (step_t){e->t_end, -(int64_t)e->bytes};
    }
    qsort(v, n, sizeof(*v), by_t);
    int64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        cur += v[i].d;
        if (i + 1 < n && v[i + 1].t == v[i].t) continue;
        ev(p, 'C', "bytes in flight", "counter", v[i].t, r->rank + 1, 0);
        fprintf(p->f, ",\"args\":{\"bytes\":%lld}}", (long long)cur);
    }
    free(v);
    return 0;
}

static int one_rank(pf_t *p, int32_t w)
{
    const ccd_rank_t *r = p->job->rank[w];
    char pname[160];
    if (!r) snprintf(pname, sizeof(pname), "rank %d (no record)", w);
    else snprintf(pname, sizeof(pname), "rank %d (%s:%d)", w, r->host, r->pid);
    meta(p, "process_name", w + 1, 0, pname, w);
    if (!r) return 0;
    for (uint32_t k = 0; k < r->ncomms; k++)
        comm_slices(p, r, k);
    markers(p, r);
    return counter(p, r);
}

static void pf_free(pf_t *p)
{
    for (int32_t w = 0; w < p->job->world_size; w++) {
        if (p->emit) free(p->emit[w]);
        if (p->flow) free(p->flow[w]);
        if (p->role) free(p->role[w]);
    }
    free(p->emit);
    free(p->flow);
    free(p->role);
}

uint64_t ccd_perfetto_write(const ccd_job_t *job, const ccd_index_t *ix, const ccd_pf_sel_t *sel,
                            FILE *f, FILE *err)
{
    pf_t p = {f, job, ix, job->t_min, job->t_ref, 0, 0, 0, 1, NULL, NULL, NULL};
    int rc = choose(&p, sel) || flows(&p) ? -1 : 0;
    if (!rc) fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
    /* Ranks without a record are empty processes: shown while there are few of them. */
    int32_t missing = 0;
    for (int32_t w = 0; w < job->world_size; w++)
        missing += !job->rank[w];
    for (int32_t w = 0; !rc && w < job->world_size; w++)
        if (selected(sel, w) && (job->rank[w] || missing <= 1024)) rc = one_rank(&p, w);
    if (!rc) {
        fprintf(f, "\n],\"metadata\":{\"ccdump\":{\"job_id\":");
        put_str(f, job->job_id);
        fprintf(f, ",\"world_size\":%d,\"time_zero_unix_ns\":%llu,\"record_end_unix_ns\":%llu}}}\n",
                job->world_size, (unsigned long long)p.t0, (unsigned long long)p.tend);
    }
    if (p.dropped)
        fprintf(err, "ccdump: note: %llu ops left out: more than %d overlapped on one communicator\n",
                (unsigned long long)p.dropped, LANES);
    pf_free(&p);
    if (rc) fprintf(err, "ccdump: out of memory writing the trace\n");
    return rc ? UINT64_MAX : p.nev;
}
