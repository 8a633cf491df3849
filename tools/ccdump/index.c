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

/* The comm's size: recorded, or the largest comm rank any member reported + 1. */
static int32_t comm_size(const ccd_job_t *job, uint32_t g)
{
    int32_t n = job->comms[g].size;
    for (int32_t w = 0; w < job->world_size; w++) {
        const ccd_rank_t *r = job->rank[w];
        for (uint32_t k = 0; r && k < r->ncomms; k++)
            if (r->comms[k].g == g && r->comms[k].rank >= n) n = r->comms[k].rank + 1;
    }
    return n > CCD_MAX_WORLD ? CCD_MAX_WORLD : n;
}

/* Members of every comm that has a member record; by_g maps job comms. */
static int make_comms(ccd_index_t *ix)
{
    const ccd_job_t *job = ix->job;
    ix->by_g = malloc(((size_t)job->ncomms + 1) * sizeof(int32_t));
    ix->c = calloc((size_t)job->ncomms + 1, sizeof(ccd_cindex_t));
    if (!ix->by_g || !ix->c) return -1;
    for (uint32_t g = 0; g < job->ncomms; g++) {
        ix->by_g[g] = -1;
        int32_t n = comm_size(job, g);
        if (n <= 0) continue;
        ccd_cindex_t *ci = &ix->c[ix->nc];
        ci->g = g;
        ci->c = &job->comms[g];
        ci->n = n;
        ci->m = calloc((size_t)n, sizeof(ccd_member_t));
        if (!ci->m) return -1;
        for (int32_t k = 0; k < n; k++)
            ci->m[k].world = k < ci->c->size && ci->c->members ? ci->c->members[k] : -1;
        ix->by_g[g] = (int32_t)ix->nc++;
    }
    return 0;
}

/* Attach each record to its comms (its own comm rank says where). */
static void attach(ccd_index_t *ix, const ccd_rank_t *r)
{
    for (uint32_t k = 0; k < r->ncomms; k++) {
        const ccd_rcomm_t *rc = &r->comms[k];
        int32_t i = ix->by_g[rc->g];
        if (i < 0 || rc->rank < 0 || rc->rank >= ix->c[i].n) continue;
        ccd_member_t *m = &ix->c[i].m[rc->rank];
        if (m->r) continue; /* two records claim one comm rank: the first stays */
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
    if (i < 0 || rc->rank < 0 || rc->rank >= ix->c[i].n) return NULL;
    ccd_member_t *m = &ix->c[i].m[rc->rank];
    return m->r == r ? m : NULL;
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
        if (ci->m[k].world == w) return k;
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
