/*
 * top_view.c - what `ccdump top` shows of a job (top.h): built from the
 * per-communicator index once per refresh, drawn as text or JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
#include "top.h"

#define HI  "\033[1;31m" /* a rank behind the leader */
#define OFF "\033[0m"

const char *ccd_top_process(const ccd_rank_t *r)
{
    if (r->alive == 1) return r->stopped ? "stopped" : "running";
    if (r->alive == 0) return r->closed == 1 ? "exited" : r->fatal_signal ? "crashed" : "gone";
    return "unknown";
}

static const ccd_rcomm_t *rank_view(const ccd_rank_t *r, uint32_t g)
{
    for (uint32_t i = 0; i < r->ncomms; i++)
        if (r->comms[i].g == g) return &r->comms[i];
    return NULL;
}

/* The counters, and the oldest unfinished op on this comm (what the rank waits in). */
static void member_state(ccd_top_rank_t *t, const ccd_member_t *m, uint32_t g, uint64_t now)
{
    const ccd_rank_t *r = m->r;
    const ccd_rcomm_t *rc = rank_view(r, g);
    *t = (ccd_top_rank_t){.world = m->world, .crank = m->crank, .r = r};
    t->enq = m->last_enq;
    t->done = m->last_done;
    t->start = rc ? rc->last_start : 0;
    for (uint32_t i = 0; i < m->ncoll; i++) /* dumps without the counters */
        if (r->e[m->coll[i]].t_start && r->e[m->coll[i]].seq > t->start)
            t->start = r->e[m->coll[i]].seq;
    for (uint32_t i = 0; i < r->n && !t->cur; i++) {
        const ccd_entry_t *e = &r->e[i];
        if ((e->flags & CCD_EF_LIFE) || ccd_entry_done(e) || e->comm >= r->ncomms ||
            r->comms[e->comm].g != g)
            continue;
        uint64_t since = e->t_start ? e->t_start : e->t_enq;
        t->cur = e;
        t->in_for = since && now > since ? now - since : 0;
    }
}

static ccd_top_bw_t *bw_row(ccd_top_comm_t *c, unsigned op)
{
    for (uint32_t i = 0; i < c->nbw; i++)
        if (c->bw[i].op == op) return &c->bw[i];
    ccd_top_bw_t *v = realloc(c->bw, (c->nbw + 1) * sizeof(*v));
    if (!v) return NULL;
    c->bw = v;
    c->bw[c->nbw] = (ccd_top_bw_t){.op = op};
    return &c->bw[c->nbw++];
}

/*
 * Bus bandwidth per op type over the collectives with seq in bw_lo..leader
 * that every member with an entry completed. A collective's time is its
 * shortest member's, start to end: the last to arrive waits for no one, so
 * the time others spent waiting for a straggler does not count as transfer.
 */
static int bandwidth(ccd_top_comm_t *c)
{
    const ccd_cindex_t *ci = c->ci;
    uint32_t *cur = calloc((size_t)ci->n + 1, sizeof(uint32_t));
    if (!cur) return -1;
    for (uint64_t q; (q = ccd_cindex_next_seq(ci, cur, c->leader));) {
        const ccd_entry_t *first = NULL;
        uint64_t best = UINT64_MAX;
        int ok = 1;
        for (int32_t k = 0; k < ci->n; k++) {
            const ccd_entry_t *e = ccd_member_take(&ci->m[k], &cur[k], q);
            uint64_t from = e ? (e->t_start ? e->t_start : e->t_enq) : 0;
            if (!e) continue;
            if (!ccd_entry_ok(e) || !from || e->t_end <= from)
                ok = 0;
            else if (e->t_end - from < best)
                best = e->t_end - from;
            if (!first) first = e;
        }
        if (q < c->bw_lo || !ok || !first || !first->bytes) continue;
        ccd_top_bw_t *b = bw_row(c, first->op);
        if (!b) {
            free(cur);
            return -1;
        }
        b->count++;
        b->bytes += first->bytes;
        b->time += best;
    }
    free(cur);
    for (uint32_t i = 0; i < c->nbw; i++)
        c->bw[i].busbw =
            (double)c->bw[i].bytes / (double)c->bw[i].time * ccd_bus_factor(c->bw[i].op, ci->size);
    return 0;
}

static int comm_build(ccd_top_comm_t *c, const ccd_cindex_t *ci, uint32_t last_n, uint64_t now)
{
    memset(c, 0, sizeof(*c));
    c->ci = ci;
    c->rk = calloc((size_t)ci->nrecords + 1, sizeof(*c->rk));
    if (!c->rk) return -1;
    for (int32_t k = 0; k < ci->n; k++) {
        if (!ci->m[k].r) continue;
        member_state(&c->rk[c->n], &ci->m[k], ci->g, now);
        if (c->rk[c->n].enq > c->leader) c->leader = c->rk[c->n].enq;
        c->n++;
    }
    for (int32_t k = 0; k < c->n; k++)
        c->rk[k].behind = c->leader - c->rk[k].enq;
    c->bw_lo = c->leader > last_n ? c->leader - last_n + 1 : 1;
    if (ccd_strag_compute(ci, UINT64_MAX, last_n, &c->st)) return -1;
    return bandwidth(c);
}

int ccd_top_build(ccd_top_view_t *v, const ccd_job_t *job, const char *comm, uint32_t last_n,
                  uint64_t now)
{
    memset(v, 0, sizeof(*v));
    v->job = job;
    v->now = now;
    v->last_n = last_n;
    v->ix = ccd_index_build(job);
    v->c = v->ix ? calloc((size_t)v->ix->nc + 1, sizeof(*v->c)) : NULL;
    if (!v->c) goto oom;
    for (uint32_t i = 0; i < v->ix->nc; i++) {
        const ccd_cindex_t *ci = &v->ix->c[i];
        if (!ccd_comm_is(ci->c, comm) || !ci->nrecords) continue;
        if (comm_build(&v->c[v->nc++], ci, last_n, now)) goto oom;
    }
    return 0;
oom:
    ccd_top_free(v);
    return -1;
}

void ccd_top_free(ccd_top_view_t *v)
{
    for (uint32_t i = 0; v->c && i < v->nc; i++) {
        free(v->c[i].rk);
        free(v->c[i].bw);
        ccd_strag_free(&v->c[i].st);
    }
    free(v->c);
    ccd_index_free(v->ix);
    memset(v, 0, sizeof(*v));
}

/* ---- text ------------------------------------------------------------------ */

static void rank_row(const ccd_top_view_t *v, const ccd_top_rank_t *t, int color, FILE *out)
{
    char behind[24] = "", now_in[96] = "-", dur[32] = "";
    if (t->behind) snprintf(behind, sizeof(behind), "-%llu", (unsigned long long)t->behind);
    if (t->cur) {
        snprintf(now_in, sizeof(now_in), "%s #%llu %s", ccd_op_name(v->job, t->cur->op),
                 (unsigned long long)t->cur->seq, ccd_state_name(t->cur->state));
        ccd_fmt_dur(dur, sizeof(dur), t->in_for);
    }
    int hi = color && t->behind;
    fprintf(out, "  %s%6d %5d %-8s %9llu %9llu %9llu %7s%s  %-34.34s %9s\n", hi ? HI : "", t->world,
            t->crank, ccd_top_process(t->r), (unsigned long long)t->enq,
            (unsigned long long)t->start, (unsigned long long)t->done, behind, hi ? OFF : "",
            now_in, dur);
}

static void bw_text(const ccd_top_view_t *v, const ccd_top_comm_t *c, FILE *out)
{
    fprintf(out, "  bus bandwidth over collectives %llu-%llu:\n", (unsigned long long)c->bw_lo,
            (unsigned long long)c->leader);
    if (!c->nbw)
        fputs("    (no completed collective that moved bytes)\n", out);
    else
        fprintf(out, "    %-20s %8s %14s %10s %10s\n", "op", "count", "bytes", "mean",
                "busbw GB/s");
    for (uint32_t i = 0; i < c->nbw; i++) {
        const ccd_top_bw_t *b = &c->bw[i];
        char mean[32];
        ccd_fmt_dur(mean, sizeof(mean), b->time / b->count);
        fprintf(out, "    %-20s %8u %14llu %10s %10.3f\n", ccd_op_name(v->job, b->op), b->count,
                (unsigned long long)b->bytes, mean, b->busbw);
    }
}

static void comm_text(const ccd_top_view_t *v, const ccd_top_comm_t *c, int color, FILE *out)
{
    fputs("communicator ", out);
    ccd_put_safe(out, c->ci->c->name);
    fprintf(out, " (id %s, %d ranks)\n", c->ci->c->key, c->ci->size);
    fprintf(out, "  %6s %5s %-8s %9s %9s %9s %7s  %-34s %9s\n", "rank", "crank", "process",
            "enqueued", "started", "completed", "behind", "now in", "for");
    for (int32_t k = 0; k < c->n; k++)
        rank_row(v, &c->rk[k], color, out);
    fprintf(out, "  stragglers over the last %u collectives every member arrived at", c->st.nseq);
    if (c->st.nseq)
        fprintf(out, " (%llu-%llu)", (unsigned long long)c->st.seq_lo,
                (unsigned long long)c->st.seq_hi);
    fputs(":\n", out);
    ccd_strag_print(&c->st, c->ci->c->name, "    ", out);
    bw_text(v, c, out);
}

void ccd_top_text(const ccd_top_view_t *v, int i, int color, FILE *out)
{
    if (!v->nc) fputs("no communicator with a record\n", out);
    for (uint32_t k = 0; k < v->nc; k++) {
        if (i >= 0 && (uint32_t)i != k) continue;
        if (i < 0 && k) fputc('\n', out);
        comm_text(v, &v->c[k], color, out);
    }
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *rank_json(const ccd_top_view_t *v, const ccd_top_rank_t *t)
{
    json_t *cur = json_null();
    if (t->cur)
        cur = json_pack("{s:s, s:I, s:s, s:f}", "op", ccd_op_name(v->job, t->cur->op), "seq",
                        (json_int_t)t->cur->seq, "state", ccd_state_name(t->cur->state), "for_ms",
                        (double)t->in_for / 1e6);
    return json_pack("{s:i, s:i, s:s, s:I, s:I, s:I, s:I, s:o}", "rank", t->world, "comm_rank",
                     t->crank, "process", ccd_top_process(t->r), "last_enqueued",
                     (json_int_t)t->enq, "last_started", (json_int_t)t->start, "last_completed",
                     (json_int_t)t->done, "behind", (json_int_t)t->behind, "now_in", cur);
}

static json_t *comm_json(const ccd_top_view_t *v, const ccd_top_comm_t *c)
{
    json_t *ranks = json_array(), *bw = json_array();
    for (int32_t k = 0; k < c->n; k++)
        json_array_append_new(ranks, rank_json(v, &c->rk[k]));
    for (uint32_t i = 0; i < c->nbw; i++)
        json_array_append_new(
            bw, json_pack("{s:s, s:i, s:I, s:f, s:f}", "op", ccd_op_name(v->job, c->bw[i].op),
                          "count", c->bw[i].count, "bytes", (json_int_t)c->bw[i].bytes, "time_ms",
                          (double)c->bw[i].time / 1e6, "busbw_gbps", c->bw[i].busbw));
    return json_pack("{s:s, s:s, s:i, s:I, s:o, s:o, s:{s:I, s:I, s:o}}", "comm", c->ci->c->name,
                     "comm_key", c->ci->c->key, "size", c->ci->size, "leader",
                     (json_int_t)c->leader, "ranks", ranks, "stragglers",
                     ccd_strag_json(&c->st, c->ci->c->name), "busbw", "seq_first",
                     (json_int_t)c->bw_lo, "seq_last", (json_int_t)c->leader, "ops", bw);
}

json_t *ccd_top_json(const ccd_top_view_t *v)
{
    json_t *comms = json_array();
    for (uint32_t i = 0; comms && i < v->nc; i++)
        json_array_append_new(comms, comm_json(v, &v->c[i]));
    return json_pack("{s:s, s:I, s:i, s:o}", "job", v->job->job_id, "time_ns", (json_int_t)v->now,
                     "window", (int)v->last_n, "comms", comms);
}
