/*
 * diag_sink.c - the ranks where waits end, and the fates of ranks nobody
 * waits for.
 *
 * A rank that others wait for and that waits for no one explains their
 * wait; what its record says about its process decides the finding
 * (crashed, killed, stopped, no record, exited, or busy outside ccomm).
 * Sinks waited for in the same op with the same fate make one finding.
 * Crashed, killed, stopped and missing ranks that end no wait are still
 * reported, ranked after the rest when they look like consequences: the
 * rank had failed before it died, or most of the job went the same way (a
 * launcher or scheduler killing the job).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "diag_int.h"

#define GROUPS_MAX 64

int ccd_rev_build(const ccd_diag_t *d, int32_t n, ccd_rev_t *rv)
{
    rv->off = calloc((size_t)n + 2, sizeof(uint32_t));
    rv->from = malloc(((size_t)d->nw + 1) * sizeof(int32_t));
    if (!rv->off || !rv->from) return -1;
    for (uint32_t i = 0; i < d->nw; i++)
        rv->off[d->w[i].to + 2]++;
    for (int32_t v = 0; v < n; v++)
        rv->off[v + 2] += rv->off[v + 1];
    for (uint32_t i = 0; i < d->nw; i++)
        rv->from[rv->off[d->w[i].to + 1]++] = d->w[i].from;
    return 0;
}

uint32_t ccd_count_waiters(const ccd_rev_t *rv, int32_t n, const int32_t *targets, uint32_t nt)
{
    uint8_t *seen = calloc((size_t)n + 1, 1);
    int32_t *q = malloc(((size_t)n + 1) * sizeof(int32_t));
    uint32_t head = 0, tail = 0, count = 0;
    for (uint32_t i = 0; seen && q && i < nt; i++)
        if (!seen[targets[i]]) seen[targets[i]] = 1, q[tail++] = targets[i];
    while (seen && q && head < tail) {
        int32_t v = q[head++];
        for (uint32_t j = rv->off[v]; j < rv->off[v + 1]; j++)
            if (!seen[rv->from[j]]) seen[rv->from[j]] = 1, q[tail++] = rv->from[j], count++;
    }
    free(seen);
    free(q);
    return count;
}

typedef struct sgroup {
    int kind;
    const ccd_wait_t *w; /* a wait into the group: the op they are waited for in */
    int32_t *sinks;
    uint32_t ns;
    int all_late; /* every wait into it is "entered only after the waiter gave up" */
} sgroup_t;

static int sink_kind(int proc)
{
    switch (proc) {
    case CCD_PROC_CRASHED: return CCD_F_CRASHED;
    case CCD_PROC_KILLED: return CCD_F_KILLED;
    case CCD_PROC_STOPPED: return CCD_F_STOPPED;
    case CCD_PROC_MISSING: return CCD_F_MISSING_WAITED;
    case CCD_PROC_EXITED: return CCD_F_EXITED_WAITED;
    default: return CCD_F_NOT_ENTERED;
    }
}

static int kind_conf(int kind)
{
    return kind == CCD_F_CRASHED || kind == CCD_F_KILLED || kind == CCD_F_STOPPED ? CCD_CERTAIN
                                                                                  : CCD_LIKELY;
}

/* "its last op was X (state, 1.2 s before the record ends)", or the op it was in. */
static void story(const ccd_diag_t *d, int32_t v, char *buf, size_t len)
{
    const ccd_rank_t *r = d->job->rank[v];
    int64_t b = d->blocked[v];
    const ccd_entry_t *e = b >= 0 ? &r->e[b] : ccd_last_op(r);
    char op[160], age[80];
    if (!e) {
        snprintf(buf, len, "%s", r ? "it recorded no op" : "");
        return;
    }
    ccd_describe_op(d, r, e, op, sizeof(op));
    ccd_describe_age(d, !ccd_entry_done(e) ? e->t_enq : ccd_entry_last_time(e), age, sizeof(age));
    if (!ccd_entry_done(e))
        snprintf(buf, len, "it was in %s (%s since %s)", op, ccd_state_name(e->state), age);
    else
        snprintf(buf, len, "its last op was %s (%s, %s)", op, ccd_state_name(e->state), age);
}

static const char *signame(int sig)
{
    const char *s = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;
    return s ? s : "?";
}

/* The finding's sentence for a group of sinks. */
static void sink_text(const ccd_diag_t *d, const sgroup_t *sg, const int32_t *wt, uint32_t nwt,
                      char *buf, size_t len)
{
    char who[128], waiters[128], op[160], st[300];
    int pl = sg->ns > 1;
    ccd_fmt_ranks(who, sizeof(who), sg->sinks, sg->ns);
    ccd_fmt_ranks(waiters, sizeof(waiters), wt, nwt);
    ccd_describe_op(d, d->job->rank[sg->w->from], ccd_wait_entry(d, sg->w), op, sizeof(op));
    story(d, sg->sinks[0], st, sizeof(st));
    const char *wpl = nwt > 1 ? "s" : "";
    int late = sg->all_late, p2p = sg->w->why == CCD_W_NOT_SENT || sg->w->why == CCD_W_NOT_RECEIVED;
    char part[400];
    if (late)
        snprintf(part, sizeof(part), "entered %s only after rank%s %s had given up waiting", op, wpl,
                 waiters);
    else if (sg->w->why == CCD_W_NOT_SIGNALLED)
        snprintf(part, sizeof(part), "never signalled rank%s %s, which wait%s for a signal from it "
                 "in %s", wpl, waiters, nwt > 1 ? "" : "s", op);
    else if (p2p)
        snprintf(part, sizeof(part), "never %s what rank%s %s wait%s for in %s",
                 sg->w->why == CCD_W_NOT_SENT ? "sent" : "posted the receive for", wpl, waiters,
                 nwt > 1 ? "" : "s", op);
    else
        snprintf(part, sizeof(part), "never entered %s, where rank%s %s waited", op, wpl, waiters);
    switch (sg->kind) {
    case CCD_F_CRASHED:
        snprintf(buf, len, "rank%s %s died of SIG%s (recorded in the ring) and %s; %s", pl ? "s" : "",
                 who, signame(d->job->rank[sg->sinks[0]]->fatal_signal), part, st);
        break;
    case CCD_F_KILLED:
        snprintf(buf, len, "rank%s %s %s killed (no normal exit and no fatal signal in the ring, and "
                 "the process is gone: SIGKILL, SIGTERM or the OOM killer) and %s; %s",
                 pl ? "s" : "", who, pl ? "were" : "was", part, st);
        break;
    case CCD_F_STOPPED:
        snprintf(buf, len, "rank%s %s %s stopped (SIGSTOP, or held by a debugger) and %s; %s",
                 pl ? "s" : "", who, pl ? "are" : "is", part, st);
        break;
    case CCD_F_MISSING_WAITED:
        snprintf(buf, len, "no ring or dump of rank%s %s (dead before recording, or its files were "
                 "not collected), which %s", pl ? "s" : "", who, part);
        break;
    case CCD_F_EXITED_WAITED:
        snprintf(buf, len, "rank%s %s exited normally but %s; %s", pl ? "s" : "", who, part, st);
        break;
    default:
        snprintf(buf, len, "rank%s %s %s; %s: %s", pl ? "s" : "", who, part, st,
                 late ? "it arrived too late" : "busy outside communication (compute, I/O, or a hang "
                                                "in the application)");
    }
}

static void group_finding(ccd_diag_t *d, const ccd_graph_t *g, const ccd_rev_t *rv,
                          const sgroup_t *sg, uint8_t *mark)
{
    int32_t *wt = malloc(((size_t)g->n + 1) * sizeof(int32_t));
    uint32_t nwt = 0;
    char text[1000];
    if (!wt) {
        d->oom = 1;
        return;
    }
    memset(mark, 0, (size_t)g->n + 1);
    for (uint32_t i = 0; i < sg->ns; i++)
        mark[sg->sinks[i]] = 1;
    for (uint32_t i = 0; i < d->nw; i++) /* direct waiters, each once */
        if (mark[d->w[i].to] == 1 && mark[d->w[i].from] != 2 && mark[d->w[i].from] != 1)
            mark[d->w[i].from] = 2, wt[nwt++] = d->w[i].from;
    sink_text(d, sg, wt, nwt, text, sizeof(text));
    ccd_finding_t *f = ccd_add_finding(d, sg->kind, kind_conf(sg->kind), sg->sinks, sg->ns, "%s", text);
    if (f) {
        const ccd_entry_t *e = ccd_wait_entry(d, sg->w);
        f->g = (int32_t)d->ix->c[sg->w->c].g, f->seq = e->seq, f->op = ccd_op_name(d->job, e->op);
        f->waiters = ccd_count_waiters(rv, g->n, sg->sinks, sg->ns);
    }
    free(wt);
}

/* The group of sink v (made if new), or NULL when there are too many. */
static sgroup_t *group_of(sgroup_t *grp, int *ng, int kind, const ccd_diag_t *d, const ccd_wait_t *w,
                          int32_t *pool, int32_t n)
{
    uint64_t seq = ccd_wait_entry(d, w)->seq;
    for (int i = 0; i < *ng; i++)
        if (grp[i].kind == kind && grp[i].w->c == w->c && ccd_wait_entry(d, grp[i].w)->seq == seq &&
            (grp[i].w->why == CCD_W_NOT_SENT) == (w->why == CCD_W_NOT_SENT))
            return &grp[i];
    if (*ng == GROUPS_MAX) return NULL;
    grp[*ng] = (sgroup_t){kind, w, pool + (size_t)*ng * n, 0, 1};
    return &grp[(*ng)++];
}

void ccd_sink_findings(ccd_diag_t *d, const ccd_graph_t *g, const ccd_rev_t *rv, json_t *ends)
{
    int32_t n = g->n, *first = malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *pool = malloc((size_t)GROUPS_MAX * ((size_t)n + 1) * sizeof(int32_t));
    uint8_t *mark = malloc((size_t)n + 1), *late = malloc((size_t)n + 1);
    sgroup_t grp[GROUPS_MAX];
    int ng = 0;
    if (!first || !pool || !mark || !late) goto oom;
    for (int32_t v = 0; v < n; v++)
        first[v] = -1, late[v] = 1;
    for (uint32_t i = 0; i < d->nw; i++) {
        if (first[d->w[i].to] < 0) first[d->w[i].to] = (int32_t)i;
        if (d->w[i].why != CCD_W_LATE) late[d->w[i].to] = 0;
    }
    for (int32_t v = 0; v < n; v++) {
        if (first[v] < 0 || g->off[v + 1] > g->off[v]) continue; /* not waited for, or waits */
        sgroup_t *sg = group_of(grp, &ng, sink_kind(d->proc[v]), d, &d->w[first[v]], pool, n);
        if (sg) sg->sinks[sg->ns++] = v, sg->all_late &= late[v];
        json_array_append_new(ends, json_pack("{s:i, s:s, s:i}", "rank", v, "process",
                                              ccd_proc_name(d->proc[v]), "waited_by",
                                              (int)g->indeg[v]));
    }
    for (int i = 0; i < ng; i++)
        group_finding(d, g, rv, &grp[i], mark);
    goto out;
oom:
    d->oom = 1;
out:
    free(first), free(pool), free(mark), free(late);
}

/* ---- fates of ranks that end no wait -------------------------------------- */

/* Did the rank fail in an op before it died (its death a consequence)? */
static int failed_first(const ccd_diag_t *d, int32_t v)
{
    const ccd_rank_t *r = d->job->rank[v];
    for (uint32_t i = 0; r && i < r->n; i++) {
        const ccd_entry_t *e = &r->e[i];
        if (!ccd_entry_done(e) || ccd_entry_ok(e) || e->status >= 0 || CC_STATUS_IS_CALL_ERROR(e->status))
            continue;
        if (d->proc[v] != CCD_PROC_CRASHED || !r->t_fatal || e->t_end <= r->t_fatal) return 1;
    }
    return 0;
}

/* Ranks whose blocked op is on a comm that has one of the marked ranks. */
static uint32_t affected(const ccd_diag_t *d, const uint8_t *mark)
{
    uint32_t n = 0;
    for (int32_t w = 0; w < d->job->world_size; w++) {
        const ccd_rank_t *r = d->job->rank[w];
        if (!r || d->blocked[w] < 0 || mark[w]) continue;
        const ccd_entry_t *e = &r->e[d->blocked[w]];
        int32_t c = e->comm < r->ncomms ? d->ix->by_g[r->comms[e->comm].g] : -1;
        for (int32_t k = 0; c >= 0 && k < d->ix->c[c].n; k++)
            if (d->ix->c[c].m[k].world >= 0 && mark[d->ix->c[c].m[k].world]) {
                n++;
                break;
            }
    }
    return n;
}

static void fate_text(const ccd_diag_t *d, int proc, const int32_t *v, uint32_t n, int secondary,
                      uint32_t aff, char *buf, size_t len)
{
    char who[128], st[300];
    ccd_fmt_ranks(who, sizeof(who), v, n);
    story(d, v[0], st, sizeof(st));
    const char *pl = n > 1 ? "s" : "";
    const char *tail = secondary ? " - after its own op had failed, or with most of the job: "
                                   "probably a consequence, not the cause"
                                 : "";
    if (proc == CCD_PROC_CRASHED)
        snprintf(buf, len, "rank%s %s died of SIG%s; %s; %u rank(s) failed in ops with it%s", pl, who,
                 signame(d->job->rank[v[0]]->fatal_signal), st, aff, tail);
    else if (proc == CCD_PROC_KILLED)
        snprintf(buf, len, "rank%s %s %s killed (no normal exit and no fatal signal in the ring, and "
                 "the process is gone: SIGKILL, SIGTERM or the OOM killer); %s; %u rank(s) failed "
                 "in ops with it%s", pl, who, n > 1 ? "were" : "was", st, aff, tail);
    else if (proc == CCD_PROC_STOPPED)
        snprintf(buf, len, "rank%s %s %s stopped (SIGSTOP, or held by a debugger); %s", pl, who,
                 n > 1 ? "are" : "is", st);
    else
        snprintf(buf, len, "no ring or dump of rank%s %s: dead before recording, or the files were "
                 "not collected", pl, who);
}

static void fate_group(ccd_diag_t *d, int proc, int secondary, const int32_t *v, uint32_t n,
                       uint8_t *mark)
{
    static const int kind[] = {[CCD_PROC_CRASHED] = CCD_F_CRASHED, [CCD_PROC_KILLED] = CCD_F_KILLED,
                               [CCD_PROC_STOPPED] = CCD_F_STOPPED, [CCD_PROC_MISSING] = CCD_F_MISSING};
    char text[1000];
    memset(mark, 0, (size_t)d->job->world_size + 1);
    for (uint32_t i = 0; i < n; i++)
        mark[v[i]] = 1;
    uint32_t aff = affected(d, mark);
    fate_text(d, proc, v, n, secondary, aff, text, sizeof(text));
    int conf = proc == CCD_PROC_MISSING || secondary ? CCD_UNCERTAIN : CCD_CERTAIN;
    ccd_finding_t *f = ccd_add_finding(d, kind[proc], conf, v, n, "%s", text);
    const ccd_rank_t *r = d->job->rank[v[0]];
    const ccd_entry_t *e = !r ? NULL : d->blocked[v[0]] >= 0 ? &r->e[d->blocked[v[0]]] : ccd_last_op(r);
    if (f) f->secondary = secondary, f->waiters = aff;
    if (f && e && e->comm < r->ncomms) /* what it was doing: the op it was in, else its last */
        f->g = (int32_t)r->comms[e->comm].g, f->seq = e->seq, f->op = ccd_op_name(d->job, e->op);
}

void ccd_fate_findings(ccd_diag_t *d, const ccd_graph_t *g, const ccd_rev_t *rv)
{
    static const int procs[] = {CCD_PROC_CRASHED, CCD_PROC_KILLED, CCD_PROC_STOPPED, CCD_PROC_MISSING};
    int32_t n = d->job->world_size, *v = malloc(((size_t)n + 1) * sizeof(int32_t)), records = 0;
    uint8_t *mark = malloc((size_t)n + 1);
    (void)rv;
    if (!v || !mark) d->oom = 1;
    for (int32_t w = 0; w < n; w++)
        records += d->job->rank[w] != NULL;
    for (size_t p = 0; v && mark && p < sizeof(procs) / sizeof(procs[0]); p++)
        for (int sec = 0; sec < 2; sec++) {
            uint32_t k = 0, all = 0;
            for (int32_t w = 0; w < n; w++) {
                if (d->proc[w] != procs[p]) continue;
                all++;
                int waited = g->indeg[w] && g->off[w + 1] == g->off[w];
                if (!waited && failed_first(d, w) == sec) v[k++] = w;
            }
            /* Most of the job died the same way: a job-wide kill, not a culprit. */
            int mass = procs[p] != CCD_PROC_MISSING && (int32_t)(2 * all) > records;
            if (k) fate_group(d, procs[p], sec || mass, v, k, mark);
        }
    free(v);
    free(mark);
}
