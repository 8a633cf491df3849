/*
 * diag_blame.c - from the wait graph to findings:
 *  - each cycle is a deadlock; its culprits are the ranks at its
 *    point-to-point waits, else the ranks that wait in a different
 *    collective than most of the cycle (they issued collectives in
 *    another order);
 * The ends of the waits and the fates of ranks nobody waits for are in
 * diag_sink.c.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "diag_int.h"

#define DETAIL_MAX 256
#define GROUPS_MAX 64

static const char *const why_names[] = {"", "not_entered", "entered_late", "not_sent",
                                        "not_received", "no_record", "not_signalled"};

/* ---- deadlocks ------------------------------------------------------------- */

/* The culprits of a cycle; returns the confidence. */
static int cycle_culprits(const ccd_diag_t *d, const ccd_graph_t *g, int32_t comp, int32_t *out,
                          uint32_t *nout, const ccd_wait_t **shown)
{
    uint8_t *mark = calloc((size_t)g->n + 1, 1);
    *nout = 0;
    *shown = NULL;
    if (!mark) return CCD_UNCERTAIN;
    for (uint32_t i = 0; i < d->nw; i++) { /* point-to-point waits inside the cycle */
        const ccd_wait_t *w = &d->w[i];
        if (g->comp[w->from] != comp || g->comp[w->to] != comp) continue;
        if (w->why != CCD_W_NOT_SENT && w->why != CCD_W_NOT_RECEIVED) continue;
        if (!*shown) *shown = w;
        if (!mark[w->from]++) out[(*nout)++] = w->from;
        if (!mark[w->to]++) out[(*nout)++] = w->to;
    }
    free(mark);
    return *nout ? CCD_LIKELY : 0;
}

/* Ranks of a cycle that wait in one collective. */
typedef struct wgroup {
    int32_t c;
    uint64_t seq;
    uint32_t n;
    const ccd_wait_t *w;
} wgroup_t;

/* No p2p wait: the ranks waiting in a minority collective are the odd ones out. */
static int order_culprits(const ccd_diag_t *d, const ccd_graph_t *g, int32_t comp, int32_t *out,
                          uint32_t *nout, const ccd_wait_t **shown)
{
    wgroup_t grp[GROUPS_MAX];
    int ng = 0, big = 0, tie = 0;
    int32_t *first = malloc(((size_t)g->n + 1) * sizeof(int32_t)); /* each node's wait */
    if (!first) return CCD_UNCERTAIN;
    for (int32_t v = 0; v < g->n; v++)
        first[v] = -1;
    for (uint32_t i = 0; i < d->nw; i++)
        if (g->comp[d->w[i].from] == comp && g->comp[d->w[i].to] == comp && first[d->w[i].from] < 0)
            first[d->w[i].from] = (int32_t)i;
    for (int32_t v = 0; v < g->n; v++) {
        if (first[v] < 0) continue;
        const ccd_wait_t *w = &d->w[first[v]];
        uint64_t seq = ccd_wait_entry(d, w)->seq;
        int i = 0;
        while (i < ng && (grp[i].c != w->c || grp[i].seq != seq))
            i++;
        if (i == ng && ng < GROUPS_MAX) grp[ng++] = (wgroup_t){w->c, seq, 0, w};
        if (i < ng) grp[i].n++;
    }
    for (int i = 1; i < ng; i++)
        if (grp[i].n > grp[big].n) big = i;
    for (int i = 0; i < ng; i++)
        tie |= i != big && grp[i].n == grp[big].n;
    *nout = 0;
    for (int32_t v = 0; v < g->n; v++) {
        if (first[v] < 0) continue;
        const ccd_wait_t *w = &d->w[first[v]];
        int in_big = w->c == grp[big].c && ccd_wait_entry(d, w)->seq == grp[big].seq;
        if (tie || !in_big) out[(*nout)++] = v;
        if ((tie || !in_big) && !*shown) *shown = w;
    }
    free(first);
    return tie || ng < 2 ? CCD_UNCERTAIN : CCD_LIKELY;
}

#define OPS_MAX 8

/* The collectives the cycle's ranks wait in (at most OPS_MAX). */
static int cycle_ops(const ccd_diag_t *d, const ccd_graph_t *g, int32_t comp, wgroup_t *ops)
{
    int n = 0;
    for (uint32_t i = 0; i < d->nw && n < OPS_MAX; i++) {
        const ccd_wait_t *w = &d->w[i];
        const ccd_entry_t *e = ccd_wait_entry(d, w);
        if (g->comp[w->from] != comp || g->comp[w->to] != comp || !(e->flags & CCD_EF_COLL)) continue;
        int k = 0;
        while (k < n && (ops[k].c != w->c || ops[k].seq != e->seq))
            k++;
        if (k == n) ops[n++] = (wgroup_t){w->c, e->seq, 0, w};
    }
    return n;
}

/* pos[w * nops + i]: where op i is in rank w's record (-1 not there). */
static int64_t *op_positions(const ccd_diag_t *d, const wgroup_t *ops, int nops)
{
    size_t n = (size_t)d->job->world_size * (size_t)nops;
    int64_t *pos = malloc((n + 1) * sizeof(int64_t));
    for (size_t i = 0; pos && i < n; i++)
        pos[i] = -1;
    for (int i = 0; pos && i < nops; i++) {
        const ccd_cindex_t *ci = &d->ix->c[ops[i].c];
        for (int32_t k = 0; k < ci->n; k++) {
            const ccd_member_t *m = &ci->m[k];
            const ccd_entry_t *e = m->r && m->world >= 0 ? ccd_member_coll(m, ops[i].seq) : NULL;
            if (e) pos[(size_t)m->world * (size_t)nops + (size_t)i] = e - m->r->e;
        }
    }
    return pos;
}

/*
 * The order in which each rank issued the cycle's collectives (its record
 * order, whatever the timing): ranks whose order of some pair disagrees with
 * most ranks' are the culprits. 0 when the records say nothing about order.
 */
static int issue_order_culprits(const ccd_diag_t *d, const ccd_graph_t *g, int32_t comp,
                                int32_t *out, uint32_t *nout, const ccd_wait_t **shown)
{
    wgroup_t ops[OPS_MAX];
    int nops = cycle_ops(d, g, comp, ops), lt[OPS_MAX][OPS_MAX] = {{0}};
    int64_t *pos = nops >= 2 ? op_positions(d, ops, nops) : NULL;
    int32_t n = d->job->world_size, compared = 0;
    if (!pos) return 0;
    for (int32_t w = 0; w < n; w++) /* lt[i][j]: ranks that issued i before j */
        for (int i = 0; i < nops; i++)
            for (int j = 0; j < nops; j++)
                lt[i][j] += pos[w * nops + i] >= 0 && pos[w * nops + j] > pos[w * nops + i];
    *nout = 0;
    for (int32_t w = 0; w < n; w++) {
        int odd = 0, has_pair = 0;
        for (int i = 0; i < nops; i++)
            for (int j = 0; j < nops; j++) {
                if (pos[w * nops + i] < 0 || pos[w * nops + j] <= pos[w * nops + i]) continue;
                has_pair = 1;
                odd |= lt[j][i] > lt[i][j]; /* most ranks issued j before i */
            }
        compared += has_pair;
        if (odd) out[(*nout)++] = w;
    }
    for (uint32_t i = 0; i < d->nw && *nout && !*shown; i++)
        if (d->w[i].from == out[0]) *shown = &d->w[i];
    free(pos);
    if (!*nout) return 0;
    return 2 * *nout < (uint32_t)compared ? CCD_LIKELY : CCD_UNCERTAIN;
}

/* "rank 0 waits in all_reduce #2 on world for rank 1; ..." for the first few ranks. */
static void cycle_text(const ccd_diag_t *d, const ccd_graph_t *g, int32_t comp, char *buf, size_t len)
{
    size_t o = 0;
    int shown = 0;
    for (int32_t v = 0; v < g->n && shown < 6; v++) {
        if (g->comp[v] != comp) continue;
        int32_t to[8];
        uint32_t nt = 0;
        const ccd_wait_t *w0 = NULL;
        for (uint32_t j = g->off[v]; j < g->off[v + 1] && nt < 8; j++) {
            const ccd_wait_t *w = &d->w[g->edge[j]];
            if (g->comp[w->to] != comp || (w0 && w->op != w0->op)) continue;
            w0 = w0 ? w0 : w;
            to[nt++] = w->to;
        }
        if (!w0 || o >= len) continue;
        char op[160], rk[96];
        ccd_describe_op(d, d->job->rank[v], ccd_wait_entry(d, w0), op, sizeof(op));
        ccd_fmt_ranks(rk, sizeof(rk), to, nt);
        o += (size_t)snprintf(buf + o, len - o, "%srank %d waits in %s for rank%s %s", shown ? "; " : "",
                              v, op, nt > 1 ? "s" : "", rk);
        shown++;
    }
    if ((uint32_t)shown < (uint32_t)g->csize[comp] && o < len)
        snprintf(buf + o, len - o, "; and %d more", g->csize[comp] - shown);
}

static void deadlock(ccd_diag_t *d, const ccd_graph_t *g, int32_t comp, json_t *out)
{
    int32_t *cul = malloc(((size_t)g->n + 1) * sizeof(int32_t)), *nodes = cul ? malloc(((size_t)g->n + 1) * 4) : NULL;
    uint32_t nc = 0, nn = 0;
    const ccd_wait_t *shown = NULL;
    char text[700];
    if (!cul || !nodes) {
        free(cul);
        d->oom = 1;
        return;
    }
    for (int32_t v = 0; v < g->n; v++)
        if (g->comp[v] == comp) nodes[nn++] = v;
    int conf = cycle_culprits(d, g, comp, cul, &nc, &shown);
    if (!nc) conf = issue_order_culprits(d, g, comp, cul, &nc, &shown);
    if (!nc) conf = order_culprits(d, g, comp, cul, &nc, &shown);
    int p2p = shown && (shown->why == CCD_W_NOT_SENT || shown->why == CCD_W_NOT_RECEIVED);
    cycle_text(d, g, comp, text, sizeof(text));
    ccd_finding_t *f = ccd_add_finding(
        d, CCD_F_DEADLOCK, conf, cul, nc, "deadlock among %u ranks: %s%s", nn, text,
        p2p ? " (a send or receive whose peer is waiting elsewhere: point-to-point ops in an order "
              "that cannot complete)"
            : " (communicators used in different orders)");
    if (f && shown) {
        const ccd_entry_t *e = ccd_wait_entry(d, shown);
        f->g = (int32_t)d->ix->c[shown->c].g, f->seq = e->seq, f->op = ccd_op_name(d->job, e->op);
        f->waiters = nn;
    }
    json_array_append_new(out, json_pack("{s:o, s:o, s:s, s:s}", "ranks", ccd_ranks_json(nodes, nn),
                                         "culprits", ccd_ranks_json(cul, nc), "confidence",
                                         ccd_conf_name(conf), "text", text));
    free(cul);
    free(nodes);
}

void ccd_wait_findings(ccd_diag_t *d, const ccd_graph_t *g)
{
    json_t *dead = json_array(), *ends = json_array(), *waits = json_array();
    ccd_rev_t rv = {0};
    if (!dead || !ends || !waits || ccd_rev_build(d, g->n, &rv)) d->oom = 1;
    for (uint32_t i = 0; !d->oom && i < d->nw && i < DETAIL_MAX; i++) {
        const ccd_wait_t *w = &d->w[i];
        json_t *op = ccd_entry_json(d, d->job->rank[w->from], ccd_wait_entry(d, w));
        json_array_append_new(waits, json_pack("{s:i, s:i, s:s, s:o*}", "from", w->from, "to", w->to,
                                               "why", why_names[w->why], "op", op));
    }
    for (int32_t c = 0; !d->oom && g->comp && c < g->n && g->csize[c]; c++)
        if (g->csize[c] >= 2) deadlock(d, g, c, dead);
    if (!d->oom) ccd_sink_findings(d, g, &rv, ends);
    if (!d->oom) ccd_fate_findings(d, g, &rv);
    json_object_set_new(d->report, "waits",
                        json_pack("{s:i, s:o}", "count", (int)d->nw, "detail", waits));
    json_object_set_new(d->report, "deadlocks", dead);
    json_object_set_new(d->report, "wait_ends", ends);
    free(rv.off);
    free(rv.from);
}
