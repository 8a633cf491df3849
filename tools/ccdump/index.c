/*
 * index.c - per-communicator views of the job (see index.h). Two passes over
 * every record: count each member's ops per comm, then place their indices
 * in one pool and sort each member's lists.
 */
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* qsort_r context: the entries that the indices point into. */
static int by_seq(const void *a, const void *b, void *ctx)
{
    const ccd_entry_t *e = ctx;
    const ccd_entry_t *x = &e[*(const uint32_t *)a], *y = &e[*(const uint32_t *)b];
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return x->record_id < y->record_id ? -1 : x->record_id > y->record_id;
}

static int by_p2p(const void *a, const void *b, void *ctx)
{
    const ccd_entry_t *e = ctx;
    const ccd_entry_t *x = &e[*(const uint32_t *)a], *y = &e[*(const uint32_t *)b];
    int sx = (x->flags & CCD_EF_SEND) != 0, sy = (y->flags & CCD_EF_SEND) != 0;
    if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
    if (sx != sy) return sx < sy ? -1 : 1;
    return by_seq(a, b, ctx);
}

/* One claim "this record is comm rank crank of comm g". */
typedef struct claim {
    uint32_t g;
    int32_t crank;
} claim_t;

static int by_claim(const void *a, const void *b)
{
    const claim_t *x = a, *y = b;
    if (x->g != y->g) return x->g < y->g ? -1 : 1;
    return x->crank < y->crank ? -1 : x->crank > y->crank;
}

/* Every record's comm ranks, sorted by comm: one pass over the records, not one per comm. */
static claim_t *claims_of(const ccd_job_t *job, size_t *n)
{
    size_t total = 0, k = 0;
    for (int32_t w = 0; w < job->world_size; w++)
        total += job->rank[w] ? job->rank[w]->ncomms : 0;
    claim_t *v = malloc((total + 1) * sizeof(*v));
    if (!v) return NULL;
    for (int32_t w = 0; w < job->world_size; w++)
        for (uint32_t i = 0; job->rank[w] && i < job->rank[w]->ncomms; i++) {
            const ccd_rcomm_t *rc = &job->rank[w]->comms[i];
            if (rc->rank >= 0 && rc->rank < CCD_MAX_WORLD) v[k++] = (claim_t){rc->g, rc->rank};
        }
    qsort(v, k, sizeof(*v), by_claim);
    *n = k;
    return v;
}

/* Comm g's known members: its list's comm ranks merged with the claims cl[0..ncl). */
static int known_members(ccd_cindex_t *ci, const claim_t *cl, size_t ncl)
{
    const ccd_comm_t *c = ci->c;
    size_t cap = (size_t)c->nlisted + ncl, n = 0, j = 0;
    ci->m = calloc(cap + 1, sizeof(ccd_member_t));
    if (!ci->m) return -1;
    for (int32_t k = 0; k < c->nlisted || j < ncl;) {
        int32_t next = k < c->nlisted ? k : INT32_MAX;
        if (j < ncl && cl[j].crank < next) next = cl[j].crank;
        if (n && ci->m[n - 1].crank == next) { /* a claim seen already */
            j++;
            continue;
        }
        ci->m[n].crank = next;
        ci->m[n++].world = next < c->nlisted ? c->members[next] : -1;
        if (next == k) k++;
        while (j < ncl && cl[j].crank == next)
            j++;
    }
    ci->n = (int32_t)n;
    int32_t top = n ? ci->m[n - 1].crank + 1 : 0;
    ci->size = c->size > top ? c->size : top;
    return 0;
}

/* Members of every comm that has a member record; by_g maps job comms. */
static int make_comms(ccd_index_t *ix)
{
    const ccd_job_t *job = ix->job;
    size_t ncl = 0, j = 0;
    claim_t *cl = claims_of(job, &ncl);
    ix->by_g = malloc(((size_t)job->ncomms + 1) * sizeof(int32_t));
    ix->c = calloc((size_t)job->ncomms + 1, sizeof(ccd_cindex_t));
    if (!cl || !ix->by_g || !ix->c) {
        free(cl);
        return -1;
    }
    for (uint32_t g = 0; g < job->ncomms; g++) {
        size_t from = j;
        while (j < ncl && cl[j].g == g)
            j++;
        ix->by_g[g] = -1;
        ccd_cindex_t *ci = &ix->c[ix->nc];
        ci->g = g;
        ci->c = &job->comms[g];
        if (known_members(ci, cl + from, j - from)) {
            free(cl);
            return -1;
        }
        if (ci->size <= 0) {
            free(ci->m);
            ci->m = NULL;
            continue;
        }
        ix->by_g[g] = (int32_t)ix->nc++;
    }
    free(cl);
    return 0;
}

const ccd_member_t *ccd_cindex_member(const ccd_cindex_t *ci, int32_t k)
{
    int32_t lo = 0, hi = ci->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (ci->m[mid].crank < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ci->n && ci->m[lo].crank == k ? &ci->m[lo] : NULL;
}

/* Attach each record to its comms (its own comm rank says where). */
static void attach(ccd_index_t *ix, const ccd_rank_t *r)
{
    for (uint32_t k = 0; k < r->ncomms; k++) {
        const ccd_rcomm_t *rc = &r->comms[k];
        int32_t i = ix->by_g[rc->g];
        ccd_member_t *m = i < 0 ? NULL : (ccd_member_t *)ccd_cindex_member(&ix->c[i], rc->rank);
        if (!m || m->r) continue; /* two records claim one comm rank: the first stays */
        m->r = r;
        m->world = r->rank;
        m->last_enq = rc->last_enq;
        m->last_done = rc->last_done;
        m->wrapped = r->n && r->e[0].record_id > 1;
        m->t_window = r->n ? r->e[0].t_enq : 0;
        ix->c[i].nrecords++;
    }
}

/* The member an entry belongs to, or NULL. */
static ccd_member_t *member_of(ccd_index_t *ix, const ccd_rank_t *r, const ccd_entry_t *e)
{
    if (e->comm >= r->ncomms || (e->flags & CCD_EF_LIFE)) return NULL;
    const ccd_rcomm_t *rc = &r->comms[e->comm];
    int32_t i = ix->by_g[rc->g];
    ccd_member_t *m = i < 0 ? NULL : (ccd_member_t *)ccd_cindex_member(&ix->c[i], rc->rank);
    return m && m->r == r ? m : NULL;
}

/* Count, then carve the pool, then fill: each list is contiguous. */
static int fill(ccd_index_t *ix)
{
    const ccd_job_t *job = ix->job;
    size_t total = 0;
    for (int32_t w = 0; w < job->world_size; w++)
        for (uint32_t i = 0; job->rank[w] && i < job->rank[w]->n; i++) {
            const ccd_entry_t *e = &job->rank[w]->e[i];
            ccd_member_t *m = member_of(ix, job->rank[w], e);
            if (!m) continue;
            if (e->flags & CCD_EF_COLL) m->ncoll++;
            if (e->flags & CCD_EF_P2P) m->np2p++;
            total++;
        }
    ix->pool = malloc((total + 1) * sizeof(uint32_t));
    if (!ix->pool) return -1;
    uint32_t *p = ix->pool;
    for (uint32_t c = 0; c < ix->nc; c++)
        for (int32_t k = 0; k < ix->c[c].n; k++) {
            ccd_member_t *m = &ix->c[c].m[k];
            m->coll = p;
            p += m->ncoll;
            m->p2p = p;
            p += m->np2p;
            m->ncoll = m->np2p = 0;
        }
    for (int32_t w = 0; w < job->world_size; w++)
        for (uint32_t i = 0; job->rank[w] && i < job->rank[w]->n; i++) {
            const ccd_entry_t *e = &job->rank[w]->e[i];
            ccd_member_t *m = member_of(ix, job->rank[w], e);
            if (m && (e->flags & CCD_EF_COLL)) ((uint32_t *)m->coll)[m->ncoll++] = i;
            if (m && (e->flags & CCD_EF_P2P)) ((uint32_t *)m->p2p)[m->np2p++] = i;
        }
    return 0;
}

/* Record order is seq order for collectives almost always: check before sorting. */
static void sort_unless_sorted(uint32_t *v, uint32_t n, int (*cmp)(const void *, const void *, void *),
                               void *ctx)
{
    for (uint32_t i = 1; i < n; i++)
        if (cmp(&v[i - 1], &v[i], ctx) > 0) {
            qsort_r(v, n, sizeof(uint32_t), cmp, ctx);
            return;
        }
}

/* Sort the lists and derive the counters the entries prove. */
static void finish_member(ccd_member_t *m)
{
    if (!m->r) return;
    void *e = m->r->e;
    sort_unless_sorted((uint32_t *)m->coll, m->ncoll, by_seq, e);
    sort_unless_sorted((uint32_t *)m->p2p, m->np2p, by_p2p, e);
    for (uint32_t i = 0; i < m->ncoll; i++) {
        const ccd_entry_t *x = &m->r->e[m->coll[i]];
        if (x->seq > m->last_enq) m->last_enq = x->seq;
        if (ccd_entry_ok(x) && x->seq > m->last_done) m->last_done = x->seq;
    }
}

ccd_index_t *ccd_index_build(const ccd_job_t *job)
{
    ccd_index_t *ix = calloc(1, sizeof(*ix));
    if (!ix) return NULL;
    ix->job = job;
    if (make_comms(ix)) goto oom;
    for (int32_t w = 0; w < job->world_size; w++)
        if (job->rank[w]) attach(ix, job->rank[w]);
    if (fill(ix)) goto oom;
    for (uint32_t c = 0; c < ix->nc; c++)
        for (int32_t k = 0; k < ix->c[c].n; k++)
            finish_member(&ix->c[c].m[k]);
    return ix;
oom:
    ccd_index_free(ix);
    return NULL;
}

void ccd_index_free(ccd_index_t *ix)
{
    if (!ix) return;
    for (uint32_t c = 0; c < ix->nc; c++)
        free(ix->c[c].m);
    free(ix->c);
    free(ix->by_g);
    free(ix->pool);
    free(ix);
}

const ccd_entry_t *ccd_member_coll(const ccd_member_t *m, uint64_t seq)
{
    uint32_t lo = 0, hi = m->ncoll;
    while (lo < hi) { /* first index with seq >= the one asked */
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->r->e[m->coll[mid]].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->ncoll && m->r->e[m->coll[lo]].seq == seq ? &m->r->e[m->coll[lo]] : NULL;
}

/* Order of (peer, direction) keys in the sorted p2p list. */
static int p2p_key_less(const ccd_entry_t *e, int32_t peer, int send)
{
    int s = (e->flags & CCD_EF_SEND) != 0;
    return e->peer < peer || (e->peer == peer && s < send);
}

/* First index whose key is not below (peer, send) (inclusive=0) or above it (1). */
static uint32_t p2p_bound(const ccd_member_t *m, int32_t peer, int send, int upper)
{
    uint32_t lo = 0, hi = m->np2p;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const ccd_entry_t *e = &m->r->e[m->p2p[mid]];
        int s = (e->flags & CCD_EF_SEND) != 0;
        int go_right = upper ? !(peer < e->peer || (peer == e->peer && send < s))
                             : p2p_key_less(e, peer, send);
        if (go_right)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The [lo, hi) range of m's p2p ops with `peer` in one direction. */
static void p2p_range(const ccd_member_t *m, int32_t peer, int send, uint32_t *lo, uint32_t *hi)
{
    send = send != 0;
    *lo = *hi = 0;
    if (!m->r) return;
    *lo = p2p_bound(m, peer, send, 0);
    *hi = p2p_bound(m, peer, send, 1);
}

const ccd_entry_t *ccd_member_p2p(const ccd_member_t *m, int32_t peer, int send, uint64_t seq)
{
    uint32_t lo, end;
    p2p_range(m, peer, send, &lo, &end);
    for (uint32_t hi = end; lo < hi;) { /* by seq within the range */
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->r->e[m->p2p[mid]].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && m->r->e[m->p2p[lo]].seq == seq ? &m->r->e[m->p2p[lo]] : NULL;
}

uint64_t ccd_member_p2p_max(const ccd_member_t *m, int32_t peer, int send)
{
    uint32_t lo, hi;
    p2p_range(m, peer, send, &lo, &hi);
    return hi > lo ? m->r->e[m->p2p[hi - 1]].seq : 0;
}

int32_t ccd_cindex_crank(const ccd_cindex_t *ci, int32_t w)
{
    for (int32_t k = 0; k < ci->n; k++)
        if (ci->m[k].world == w) return ci->m[k].crank;
    return -1;
}

uint64_t ccd_cindex_next_seq(const ccd_cindex_t *ci, uint32_t *cur, uint64_t upto)
{
    uint64_t s = 0;
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_member_t *m = &ci->m[k];
        while (m->r && cur[k] < m->ncoll && !m->r->e[m->coll[cur[k]]].seq)
            cur[k]++;
        if (!m->r || cur[k] >= m->ncoll) continue;
        uint64_t x = m->r->e[m->coll[cur[k]]].seq;
        if (x <= upto && (!s || x < s)) s = x;
    }
    return s;
}

const ccd_entry_t *ccd_member_take(const ccd_member_t *m, uint32_t *cur, uint64_t s)
{
    const ccd_entry_t *e = NULL;
    while (m->r && *cur < m->ncoll && m->r->e[m->coll[*cur]].seq <= s) {
        const ccd_entry_t *x = &m->r->e[m->coll[*cur]];
        if (x->seq == s && !e) e = x;
        (*cur)++;
    }
    return e;
}
