/*
 * diag_wait.c - who waits for whom. Each op a rank waits in (unfinished, or
 * given up with an error) makes edges to the ranks it waits for: members of
 * its collective that never entered it (or entered only after it gave up),
 * the peer that never sent what it receives, the peer that never posted
 * the receive for what it sends, and ranks with no record at all. Edges
 * cross communicators, so "rank A waits in comm X for B while B waits in
 * comm Y for A" is a cycle like any other. Then:
 *  - cycles (strongly connected components of 2+ ranks) are deadlocks;
 *  - ranks that are waited for and wait for no one are where the waits
 *    end: crashed, killed, stopped, gone, or busy outside ccomm.
 */
#include <stdlib.h>
#include <string.h>

#include "diag_int.h"

#define PENDING_MAX 16 /* waits looked at per rank (the oldest ones) */

static const ccd_cindex_t *cindex_of(const ccd_diag_t *d, const ccd_rank_t *r,
                                     const ccd_entry_t *e, int32_t *c)
{
    *c = e->comm < r->ncomms ? d->ix->by_g[r->comms[e->comm].g] : -1;
    return *c >= 0 ? &d->ix->c[*c] : NULL;
}

/*
 * Where every member stands with one collective, computed once for all the
 * ranks that wait in it (waiters come rank by rank, so the last collective
 * asked for is the one to keep): the members that never entered it or have
 * no record, and the members in it by enqueue time, latest first.
 */
typedef struct arrival {
    uint64_t t;
    int32_t w;
} arrival_t;

typedef struct memo {
    int32_t c;
    uint64_t seq;
    int32_t *absent; /* world ranks */
    uint8_t *why;    /* CCD_W_NOT_ENTERED or CCD_W_NO_RECORD */
    uint32_t nabsent;
    arrival_t *in; /* latest first */
    uint32_t nin;
} memo_t;

static int later_first(const void *a, const void *b)
{
    const arrival_t *x = a, *y = b;
    return x->t > y->t ? -1 : x->t < y->t;
}

static int memo_fill(memo_t *mm, const ccd_cindex_t *ci, int32_t c, uint64_t seq)
{
    if (mm->absent && mm->c == c && mm->seq == seq) return 0;
    size_t n = (size_t)ci->n + 1;
    free(mm->absent), free(mm->why), free(mm->in);
    *mm = (memo_t){c, seq, malloc(n * sizeof(int32_t)), malloc(n), 0, malloc(n * sizeof(arrival_t)), 0};
    if (!mm->absent || !mm->why || !mm->in) return -1;
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_member_t *m = &ci->m[k];
        const ccd_entry_t *x;
        if (m->world < 0) continue;
        int at = ccd_coll_place(m, seq, &x);
        if (at == CCD_AT_NO_RECORD || at == CCD_AT_NOT_ENTERED) {
            mm->absent[mm->nabsent] = m->world;
            mm->why[mm->nabsent++] = at == CCD_AT_NO_RECORD ? CCD_W_NO_RECORD : CCD_W_NOT_ENTERED;
        } else if (at == CCD_AT_IN && x && x->t_enq) {
            mm->in[mm->nin++] = (arrival_t){x->t_enq, m->world};
        }
    }
    qsort(mm->in, mm->nin, sizeof(arrival_t), later_first);
    return 0;
}

#define LATE_MAX 64 /* late arrivals linked per waiter (the latest ones) */

/*
 * How long after e a member may join e's collective before it counts as
 * having kept e waiting: the minimum wait, or, for an op that gave up, half
 * of its wait (a member that came when the waiter had waited most of its
 * deadline) but not less than a quarter of the minimum wait (ops that fail
 * at once wait for no one). 0: e is not a wait that can be late for.
 */
static uint64_t late_after(const ccd_diag_t *d, const ccd_entry_t *e)
{
    uint64_t w = d->opts.min_wait_ns;
    if (!e->t_enq) return 0;
    if (ccd_entry_done(e) && e->t_end > e->t_enq && (e->t_end - e->t_enq) / 2 < w)
        w = (e->t_end - e->t_enq) / 2;
    return w < d->opts.min_wait_ns / 4 ? d->opts.min_wait_ns / 4 : w ? w : 1;
}

/* e waits for the members that never came, and for those that came so long
 * after it that they kept it waiting (late_after). */
static void coll_edges(ccd_diag_t *d, memo_t *mm, const ccd_rank_t *r, uint32_t i,
                       const ccd_cindex_t *ci, int32_t c)
{
    const ccd_entry_t *e = &r->e[i];
    if (memo_fill(mm, ci, c, e->seq)) {
        d->oom = 1;
        return;
    }
    for (uint32_t k = 0; k < mm->nabsent; k++)
        if (mm->absent[k] != r->rank)
            ccd_add_wait(d, &(ccd_wait_t){r->rank, mm->absent[k], c, i, mm->why[k]});
    uint64_t late = late_after(d, e);
    for (uint32_t k = 0; late && k < mm->nin && k < LATE_MAX; k++) {
        if (mm->in[k].t < e->t_enq || mm->in[k].t - e->t_enq < late) break;
        if (mm->in[k].w != r->rank) ccd_add_wait(d, &(ccd_wait_t){r->rank, mm->in[k].w, c, i, CCD_W_LATE});
    }
}

static void p2p_edge(ccd_diag_t *d, const ccd_rank_t *r, uint32_t i, const ccd_cindex_t *ci,
                     int32_t c)
{
    const ccd_entry_t *e = &r->e[i];
    int32_t self = r->comms[e->comm].rank;
    const ccd_member_t *b = e->peer >= 0 ? ccd_cindex_member(ci, e->peer) : NULL;
    if (!b || self < 0) return;
    int send = (e->flags & CCD_EF_SEND) != 0;
    if (b->world < 0 || b->world == r->rank || !(e->flags & (CCD_EF_SEND | CCD_EF_RECV))) return;
    int why = 0;
    if (!b->r)
        why = CCD_W_NO_RECORD;
    else if (ccd_member_p2p_max(b, self, !send) < e->seq)
        why = send ? CCD_W_NOT_RECEIVED : CCD_W_NOT_SENT;
    if (why) ccd_add_wait(d, &(ccd_wait_t){r->rank, b->world, c, i, why});
}

/* A window wait names its sender: the wait did not end, so that rank has not signalled (yet). */
static void signal_edge(ccd_diag_t *d, const ccd_rank_t *r, uint32_t i, const ccd_cindex_t *ci,
                        int32_t c)
{
    const ccd_entry_t *e = &r->e[i];
    const ccd_member_t *b = e->peer >= 0 ? ccd_cindex_member(ci, e->peer) : NULL;
    if (!b || b->world < 0 || b->world == r->rank) return;
    ccd_add_wait(d, &(ccd_wait_t){r->rank, b->world, c, i, b->r ? CCD_W_NOT_SIGNALLED
                                                                : CCD_W_NO_RECORD});
}

static void make_edges(ccd_diag_t *d)
{
    uint32_t ops[PENDING_MAX];
    memo_t mm = {0};
    for (int32_t w = 0; w < d->job->world_size; w++) {
        const ccd_rank_t *r = d->job->rank[w];
        uint32_t n = r ? ccd_pending_ops(d, r, ops, PENDING_MAX) : 0;
        for (uint32_t j = 0; j < n; j++) {
            int32_t c;
            const ccd_cindex_t *ci = cindex_of(d, r, &r->e[ops[j]], &c);
            if (!ci) continue;
            if (r->e[ops[j]].flags & CCD_EF_COLL) coll_edges(d, &mm, r, ops[j], ci, c);
            else if (r->e[ops[j]].op == CC_OP_WIN_WAIT_SIGNAL) signal_edge(d, r, ops[j], ci, c);
            else p2p_edge(d, r, ops[j], ci, c);
        }
    }
    free(mm.absent), free(mm.why), free(mm.in);
}

/* ---- the graph: adjacency, strongly connected components ----------------- */

static int build_csr(const ccd_diag_t *d, ccd_graph_t *g)
{
    g->n = d->job->world_size;
    g->off = calloc((size_t)g->n + 2, sizeof(uint32_t));
    g->edge = malloc(((size_t)d->nw + 1) * sizeof(uint32_t));
    g->indeg = calloc((size_t)g->n + 1, sizeof(uint32_t));
    if (!g->off || !g->edge || !g->indeg) return -1;
    for (uint32_t i = 0; i < d->nw; i++)
        g->off[d->w[i].from + 2]++, g->indeg[d->w[i].to]++;
    for (int32_t v = 0; v < g->n; v++)
        g->off[v + 2] += g->off[v + 1];
    for (uint32_t i = 0; i < d->nw; i++)
        g->edge[g->off[d->w[i].from + 1]++] = i;
    return 0;
}

/* Tarjan's algorithm without recursion (worlds of a million ranks). */
typedef struct tarjan {
    int32_t *idx, *low, *stack, *cstack;
    uint32_t *it;
    uint8_t *on;
    int32_t sp, csp, next, ncomp;
} tarjan_t;

static void tarjan_visit(const ccd_diag_t *d, ccd_graph_t *g, tarjan_t *t, int32_t root)
{
    t->cstack[t->csp++] = root;
    t->idx[root] = t->low[root] = t->next++;
    t->stack[t->sp++] = root, t->on[root] = 1, t->it[root] = g->off[root];
    while (t->csp) {
        int32_t v = t->cstack[t->csp - 1];
        if (t->it[v] < g->off[v + 1]) {
            int32_t u = d->w[g->edge[t->it[v]++]].to;
            if (t->idx[u] < 0) {
                t->idx[u] = t->low[u] = t->next++;
                t->stack[t->sp++] = u, t->on[u] = 1, t->it[u] = g->off[u];
                t->cstack[t->csp++] = u;
            } else if (t->on[u] && t->idx[u] < t->low[v]) {
                t->low[v] = t->idx[u];
            }
            continue;
        }
        t->csp--;
        if (t->csp && t->low[v] < t->low[t->cstack[t->csp - 1]])
            t->low[t->cstack[t->csp - 1]] = t->low[v];
        if (t->low[v] != t->idx[v]) continue;
        int32_t u, size = 0;
        do {
            u = t->stack[--t->sp];
            t->on[u] = 0;
            g->comp[u] = t->ncomp;
            size++;
        } while (u != v);
        g->csize[t->ncomp++] = size;
    }
}

static int scc(const ccd_diag_t *d, ccd_graph_t *g)
{
    size_t n = (size_t)g->n + 1;
    tarjan_t t = {malloc(n * 4), malloc(n * 4), malloc(n * 4), malloc(n * 4), malloc(n * 4),
                  calloc(n, 1), 0, 0, 0, 0};
    g->comp = malloc(n * sizeof(int32_t));
    g->csize = calloc(n, sizeof(int32_t));
    int ok = t.idx && t.low && t.stack && t.cstack && t.it && t.on && g->comp && g->csize;
    for (int32_t v = 0; ok && v < g->n; v++)
        t.idx[v] = -1, g->comp[v] = -1;
    for (int32_t v = 0; ok && v < g->n; v++)
        if (t.idx[v] < 0 && g->off[v + 1] > g->off[v]) tarjan_visit(d, g, &t, v);
    free(t.idx), free(t.low), free(t.stack), free(t.cstack), free(t.it), free(t.on);
    return ok ? 0 : -1;
}

static void graph_free(ccd_graph_t *g)
{
    free(g->off), free(g->edge), free(g->comp), free(g->csize), free(g->indeg);
}

void ccd_diag_waits(ccd_diag_t *d)
{
    ccd_graph_t g = {0};
    make_edges(d);
    if (d->oom || build_csr(d, &g) || scc(d, &g)) {
        d->oom = 1;
        graph_free(&g);
        return;
    }
    ccd_wait_findings(d, &g);
    graph_free(&g);
}
