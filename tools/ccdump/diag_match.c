/*
 * diag_match.c - the members' collectives side by side, seq by seq:
 *  - mismatches: members that called a different op, count, dtype,
 *    reduction or root at the same coll_seq (the first few in detail; like
 *    PyTorch's analyzer, nothing after the first is trusted much);
 *  - stragglers: members that are the last to enter, by a clear margin, in
 *    most of the collectives every member entered (straggler.h: the same
 *    computation and rule as `ccdump top` and `stats --stragglers`).
 * Both walk every member's seq-sorted list with one cursor each: O(members
 * x collectives).
 */
#include <stdlib.h>
#include <string.h>

#include "diag_int.h"
#include "straggler.h"

#define MAX_GROUPS       8
#define MISMATCH_DETAIL  8

enum { F_OP = 1, F_COUNT = 2, F_DTYPE = 4, F_REDOP = 8, F_ROOT = 16 };

typedef struct sig {
    uint16_t op;
    uint8_t dtype, redop;
    int32_t root;
    uint64_t a, b;       /* the counts that must agree (see make_sig) */
    uint8_t counts, roots, redops;
} sig_t;

/* What must agree across ranks for each kind of collective. */
static void make_sig(const ccd_entry_t *e, sig_t *s)
{
    memset(s, 0, sizeof(*s));
    s->op = e->op;
    s->dtype = e->dtype;
    s->redop = e->redop;
    s->root = e->root;
    s->counts = 1;
    s->a = e->in_count;
    s->b = e->out_count;
    switch (e->op) {
    case CC_OP_BROADCAST:
    case CC_OP_BROADCAST_BYTES:
        s->a = e->in_count > e->out_count ? e->in_count : e->out_count;
        s->b = 0, s->roots = 1;
        break;
    case CC_OP_REDUCE:
        s->b = 0, s->roots = s->redops = 1;
        break;
    case CC_OP_GATHER:
    case CC_OP_GATHER_BYTES:
        s->b = 0, s->roots = 1;
        break;
    case CC_OP_SCATTER:
    case CC_OP_SCATTER_BYTES:
        s->a = e->out_count, s->b = 0, s->roots = 1;
        break;
    case CC_OP_ALLGATHERV:
    case CC_OP_REDUCE_SCATTERV:
    case CC_OP_ALLTOALLV:
    case CC_OP_GATHERV:
    case CC_OP_SCATTERV:
        s->counts = 0, s->roots = e->op == CC_OP_GATHERV || e->op == CC_OP_SCATTERV;
        s->redops = e->op == CC_OP_REDUCE_SCATTERV;
        break;
    case CC_OP_ALLREDUCE:
    case CC_OP_REDUCE_SCATTER:
        s->redops = 1;
        break;
    default:
        break;
    }
}

static unsigned sig_diff(const sig_t *x, const sig_t *y)
{
    if (x->op != y->op) return F_OP;
    unsigned m = 0;
    if (x->counts && (x->a != y->a || x->b != y->b)) m |= F_COUNT;
    if (x->dtype != y->dtype) m |= F_DTYPE;
    if (x->redops && x->redop != y->redop) m |= F_REDOP;
    if (x->roots && x->root != y->root) m |= F_ROOT;
    return m;
}

typedef struct group {
    sig_t sig;
    const ccd_entry_t *e;
    int32_t *ranks;
    uint32_t n;
} group_t;

static void describe_group(const ccd_diag_t *d, const group_t *g, unsigned fields, char *buf,
                           size_t len)
{
    char ranks[160];
    ccd_fmt_ranks(ranks, sizeof(ranks), g->ranks, g->n);
    int o = snprintf(buf, len, "rank%s %s called %s", g->n > 1 ? "s" : "", ranks,
                     ccd_op_name(d->job, g->e->op));
    if ((fields & (F_COUNT | F_DTYPE)) && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " %llu x %s", (unsigned long long)g->sig.a,
                      ccd_dtype_name(d->job, g->e->dtype));
    if ((fields & F_REDOP) && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " %s", ccd_redop_name(g->e->redop));
    if ((fields & F_ROOT) && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, " root %d", g->e->root);
}

static json_t *group_json(const ccd_diag_t *d, const group_t *g)
{
    return json_pack("{s:o, s:s, s:I, s:I, s:s, s:s, s:i}", "ranks", ccd_ranks_json(g->ranks, g->n),
                     "op", ccd_op_name(d->job, g->e->op), "in_count", (json_int_t)g->e->in_count,
                     "out_count", (json_int_t)g->e->out_count, "dtype",
                     ccd_dtype_name(d->job, g->e->dtype), "redop", ccd_redop_name(g->e->redop),
                     "root", g->e->root);
}

/* The finding for the first mismatch: the largest group is the expected call. */
static void mismatch_finding(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t s, group_t *g,
                             int ng, unsigned fields)
{
    int big = 0, tie = 0;
    uint32_t total = 0, nblame = 0;
    for (int i = 0; i < ng; i++) {
        total += g[i].n;
        if (g[i].n > g[big].n) big = i;
    }
    for (int i = 0; i < ng; i++)
        tie |= i != big && g[i].n == g[big].n;
    int32_t *blame = malloc(((size_t)total + 1) * sizeof(int32_t));
    char text[900] = "", part[300];
    if (!blame) {
        d->oom = 1;
        return;
    }
    for (int i = 0; i < ng; i++) {
        if (i != big || tie) memcpy(blame + nblame, g[i].ranks, g[i].n * sizeof(int32_t));
        nblame += i != big || tie ? g[i].n : 0;
        describe_group(d, &g[i], fields, part, sizeof(part));
        size_t o = strlen(text);
        snprintf(text + o, sizeof(text) - o, "%s%s", i ? "; " : "", part);
    }
    int conf = !tie && 2 * g[big].n > total ? CCD_LIKELY : CCD_UNCERTAIN;
    ccd_finding_t *f = ccd_add_finding(d, CCD_F_MISMATCH, conf, blame, nblame,
                                       "mismatch at collective #%llu on %s: %s", (unsigned long long)s,
                                       ci->c->name, text);
    if (f) {
        /* The op named is the one the blamed ranks called. */
        int shown = tie || big ? 0 : 1;
        f->g = (int32_t)ci->g, f->seq = s, f->waiters = g[big].n;
        f->op = ccd_op_name(d->job, g[shown].e->op);
    }
    free(blame);
}

/* Group the entries at seq s; returns the number of groups. */
static int group_seq(const ccd_cindex_t *ci, uint32_t *cur, uint64_t s, group_t *g, int32_t *pool)
{
    int ng = 0;
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_entry_t *e = ccd_member_take(&ci->m[k], &cur[k], s);
        if (!e) continue;
        sig_t sg;
        make_sig(e, &sg);
        int i = 0;
        while (i < ng && sig_diff(&g[i].sig, &sg))
            i++;
        if (i == ng && ng < MAX_GROUPS) {
            g[ng] = (group_t){sg, e, pool + (size_t)ng * ci->n, 0};
            ng++;
        }
        if (i < ng) g[i].ranks[g[i].n++] = ci->m[k].world;
    }
    return ng;
}

json_t *ccd_coll_mismatches(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t upto)
{
    json_t *out = json_array();
    uint32_t *cur = calloc((size_t)ci->n, sizeof(uint32_t));
    int32_t *pool = malloc((size_t)ci->n * MAX_GROUPS * sizeof(int32_t));
    group_t g[MAX_GROUPS];
    uint32_t nmis = 0;
    if (!out || !cur || !pool) d->oom = 1;
    for (uint64_t s; out && cur && pool && (s = ccd_cindex_next_seq(ci, cur, upto));) {
        int ng = group_seq(ci, cur, s, g, pool);
        if (ng < 2) continue;
        unsigned fields = 0;
        for (int i = 1; i < ng; i++)
            fields |= sig_diff(&g[0].sig, &g[i].sig);
        if (!nmis++) mismatch_finding(d, ci, s, g, ng, fields);
        if (nmis > MISMATCH_DETAIL) continue;
        json_t *groups = json_array(), *fl = json_array();
        static const char *const names[] = {"op", "count", "dtype", "redop", "root"};
        for (int i = 0; i < ng; i++)
            json_array_append_new(groups, group_json(d, &g[i]));
        for (int b = 0; b < 5; b++)
            if (fields & (1u << b)) json_array_append_new(fl, json_string(names[b]));
        json_array_append_new(out, json_pack("{s:I, s:o, s:o}", "seq", (json_int_t)s, "fields", fl,
                                             "groups", groups));
    }
    free(cur);
    free(pool);
    return out;
}

/* ---- stragglers (the computation and the rule: straggler.c) ------------- */

static void straggler_finding(ccd_diag_t *d, const ccd_cindex_t *ci, const ccd_strag_t *s)
{
    const ccd_strag_member_t *m = &s->m[s->straggler];
    char dur[32];
    int32_t w = m->world;
    ccd_fmt_dur(dur, sizeof(dur), m->margin_p50);
    ccd_finding_t *f = ccd_add_finding(
        d, CCD_F_STRAGGLER, s->likely ? CCD_LIKELY : CCD_UNCERTAIN, &w, 1,
        "rank %d is a straggler on %s: it entered last in %u of %u collectives, a median %s after "
        "the next-to-last rank (no hang: the collectives completed)",
        w, ci->c->name, m->last, s->nseq, dur);
    if (f) f->g = (int32_t)ci->g, f->waiters = (uint32_t)ci->nrecords - 1;
}

json_t *ccd_coll_stragglers(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t upto)
{
    json_t *out = json_array();
    ccd_strag_t s;
    if (!out || ccd_strag_compute(ci, upto, 0, &s)) {
        d->oom = 1;
        return out;
    }
    if (s.straggler >= 0) {
        const ccd_strag_member_t *m = &s.m[s.straggler];
        straggler_finding(d, ci, &s);
        json_array_append_new(out, json_pack("{s:i, s:i, s:i, s:f, s:f}", "rank", m->world, "last_in",
                                             m->last, "of", s.nseq, "median_late_ms",
                                             (double)m->margin_p50 / 1e6, "max_late_ms",
                                             (double)m->margin_max / 1e6));
    }
    ccd_strag_free(&s);
    return out;
}
