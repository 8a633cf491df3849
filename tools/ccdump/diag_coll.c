/*
 * diag_coll.c - per communicator: the first collective (by coll_seq) that
 * not every member completed, and where each member stands with it:
 * completed, in it (waiting, or gave up with an error), never entered (and
 * what it did last), or no record at all. Then mismatches and stragglers
 * (diag_match.c) up to that collective.
 */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "diag_int.h"

#define DETAIL_MAX 64 /* members described one by one; the rest are counted */

/* The first seq member m has not completed (entries and counters). */
static uint64_t first_open(const ccd_member_t *m)
{
    uint64_t f = m->last_done + 1;
    for (uint32_t i = 0; i < m->ncoll; i++) {
        const ccd_entry_t *e = &m->r->e[m->coll[i]];
        if (!ccd_entry_ok(e) && e->seq && e->seq < f) f = e->seq;
    }
    return f;
}

/* Where member m stands with collective s. */
int ccd_coll_place(const ccd_member_t *m, uint64_t s, const ccd_entry_t **e)
{
    *e = NULL;
    if (!m->r) return CCD_AT_NO_RECORD;
    *e = ccd_member_coll(m, s);
    if (*e) return ccd_entry_ok(*e) ? CCD_AT_COMPLETED : CCD_AT_IN;
    if (m->last_done >= s) return CCD_AT_COMPLETED;
    return m->last_enq >= s ? CCD_AT_IN : CCD_AT_NOT_ENTERED;
}

/* When the first member entered collective s (0 unknown). */
static uint64_t first_entry(const ccd_cindex_t *ci, uint64_t s)
{
    uint64_t t = 0;
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_entry_t *e;
        if (ccd_coll_place(&ci->m[k], s, &e) == CCD_AT_IN && e && e->t_enq && (!t || e->t_enq < t))
            t = e->t_enq;
    }
    return t;
}

static json_t *member_json(const ccd_diag_t *d, const ccd_member_t *m, const ccd_entry_t *e,
                           uint64_t late_after)
{
    json_t *j = e ? ccd_entry_json(d, m->r, e) : json_pack("{s:i}", "rank", m->world);
    if (!j) return NULL;
    json_object_set_new(j, "process",
                        json_string(ccd_proc_name(m->world >= 0 ? d->proc[m->world] : 0)));
    if (e && late_after && e->t_enq > late_after) json_object_set_new(j, "late", json_true());
    return j;
}

/* The rank's last op and blocked op, for a member that never entered. */
static json_t *absent_json(const ccd_diag_t *d, const ccd_member_t *m)
{
    json_t *j = json_pack("{s:i, s:s}", "rank", m->world, "process",
                          ccd_proc_name(m->world >= 0 ? d->proc[m->world] : 0));
    const ccd_entry_t *last = ccd_last_op(m->r);
    if (!j) return NULL;
    json_object_set_new(j, "last_op", last ? ccd_entry_json(d, m->r, last) : json_null());
    int64_t b = m->world >= 0 ? d->blocked[m->world] : -1;
    json_object_set_new(j, "blocked_in", b >= 0 ? ccd_entry_json(d, m->r, &m->r->e[b]) : json_null());
    return j;
}

/* Lists of ranks per place, and details of the first DETAIL_MAX of each. */
static void classify(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t s, json_t *inc,
                     ccd_places_t *p)
{
    static const char *const keys[] = {"", "completed", "in_it", "not_entered", "no_record"};
    json_t *lists[5], *details[5];
    /* Late: entered a wait's worth after the first member (it kept the others waiting). */
    uint64_t first = first_entry(ci, s), late_after = first ? first + d->opts.min_wait_ns : 0;
    for (int i = 1; i < 5; i++) {
        lists[i] = json_array();
        details[i] = json_array();
    }
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_member_t *m = &ci->m[k];
        const ccd_entry_t *e;
        int at = ccd_coll_place(m, s, &e);
        p->count[at]++;
        if (at == CCD_AT_IN && e && !ccd_entry_done(e)) p->unfinished++;
        if (at == CCD_AT_IN && e && late_after && e->t_enq > late_after) p->late++;
        if (at == CCD_AT_IN && e && ccd_is_wait(d, e)) p->waiting++;
        if (!p->ref && e && at == CCD_AT_IN) p->ref = e, p->ref_rank = m->r;
        json_array_append_new(lists[at], json_integer(m->world));
        if (json_array_size(details[at]) >= DETAIL_MAX || at == CCD_AT_COMPLETED) continue;
        json_array_append_new(details[at], at == CCD_AT_NOT_ENTERED ? absent_json(d, m)
                                            : at == CCD_AT_IN      ? member_json(d, m, e, late_after)
                                                                   : json_pack("{s:i}", "rank",
                                                                               m->world));
    }
    /* Members the input knows nothing of (beyond its lists and records) have no record. */
    p->count[CCD_AT_NO_RECORD] += ci->size - ci->n;
    for (int i = 1; i < 5; i++) {
        char key[48];
        snprintf(key, sizeof(key), "%s_ranks", keys[i]);
        json_object_set_new(inc, key, lists[i]);
        if (i != CCD_AT_COMPLETED) json_object_set_new(inc, keys[i], details[i]);
        else json_decref(details[i]);
    }
}

/* Everybody who has a record is in it and nobody moves: nothing above explains it. */
static void no_progress(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t s, const ccd_places_t *p)
{
    int32_t *v = malloc(((size_t)ci->n + 1) * sizeof(int32_t));
    uint32_t n = 0;
    if (!v) {
        d->oom = 1;
        return;
    }
    /* Name the members that never ended the op while others gave up, if any. */
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_entry_t *e;
        if (ccd_coll_place(&ci->m[k], s, &e) == CCD_AT_IN && e && !ccd_entry_done(e) &&
            p->unfinished < p->count[CCD_AT_IN])
            v[n++] = ci->m[k].world;
    }
    char what[160];
    ccd_describe_op(d, p->ref_rank, p->ref, what, sizeof(what));
    ccd_finding_t *f = ccd_add_finding(
        d, CCD_F_NO_PROGRESS, CCD_UNCERTAIN, v, n,
        "all %d members with a record entered %s and it did not complete on any%s", p->count[CCD_AT_IN],
        what, n ? "; these never ended it while the others gave up (stopped or hung inside ccomm?)"
                : ": a transport or engine problem, or a peer that stopped inside the op");
    if (f) f->g = (int32_t)ci->g, f->seq = s, f->op = ccd_op_name(d->job, p->ref->op);
    free(v);
}

/* A member completed what another never entered: snapshots of different moments. */
static void inconsistent(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t s, const ccd_places_t *p)
{
    int32_t v[2] = {-1, -1};
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_entry_t *e;
        int at = ccd_coll_place(&ci->m[k], s, &e);
        if (at == CCD_AT_COMPLETED && v[0] < 0) v[0] = ci->m[k].world;
        if (at == CCD_AT_NOT_ENTERED && v[1] < 0) v[1] = ci->m[k].world;
    }
    ccd_finding_t *f = ccd_add_finding(
        d, CCD_F_INCONSISTENT, CCD_UNCERTAIN, v, 2,
        "on %s, rank %d completed collective #%llu that rank %d never entered: their records were "
        "taken at different moments (a live job) or one ring lost it",
        ci->c->name, v[0], (unsigned long long)s, v[1]);
    if (f) f->g = (int32_t)ci->g, f->seq = s;
    (void)p;
}

static json_t *incomplete(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t s, int mismatched)
{
    json_t *inc = json_pack("{s:I}", "seq", (json_int_t)s);
    ccd_places_t p = {0};
    if (!inc) return NULL;
    classify(d, ci, s, inc, &p);
    if (p.ref) {
        json_object_set_new(inc, "op", json_string(ccd_op_name(d->job, p.ref->op)));
        json_object_set_new(inc, "count", json_integer((json_int_t)p.ref->in_count));
        json_object_set_new(inc, "dtype", json_string(ccd_dtype_name(d->job, p.ref->dtype)));
    }
    json_object_set_new(inc, "late_arrivals", json_integer(p.late));
    /* Late arrivals explain it already (the wait pass says who was late). */
    if (p.ref && p.waiting && !mismatched && !p.late && !p.count[CCD_AT_NOT_ENTERED] && !p.count[CCD_AT_NO_RECORD] &&
        !p.count[CCD_AT_COMPLETED])
        no_progress(d, ci, s, &p);
    if (p.count[CCD_AT_COMPLETED] && p.count[CCD_AT_NOT_ENTERED]) inconsistent(d, ci, s, &p);
    return inc;
}

static json_t *comm_json(const ccd_cindex_t *ci)
{
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)ci->c->id);
    json_t *m = json_array();
    for (int32_t k = 0; m && k < ci->n; k++)
        json_array_append_new(m, json_integer(ci->m[k].world));
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:o}", "name", ci->c->name, "key", ci->c->key,
                     "id", id, "size", ci->size, "members_with_records", (int)ci->nrecords,
                     "members", m ? m : json_array());
}

static void one_comm(ccd_diag_t *d, const ccd_cindex_t *ci, json_t *out)
{
    uint64_t s = UINT64_MAX, entered = 0;
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_member_t *m = &ci->m[k];
        if (!m->r) continue;
        uint64_t f = first_open(m);
        if (f < s) s = f;
        if (m->last_enq > entered) entered = m->last_enq;
    }
    json_t *j = comm_json(ci);
    if (!j) {
        d->oom = 1;
        return;
    }
    int open = s != UINT64_MAX && entered >= s;
    json_object_set_new(j, "completed_by_all_through", json_integer(s == UINT64_MAX ? 0
                                                                                  : (json_int_t)(s - 1)));
    json_object_set_new(j, "last_entered", json_integer((json_int_t)entered));
    /* Mismatches first: one at the incomplete collective explains why it hangs. */
    json_t *mis = ccd_coll_mismatches(d, ci, open ? s : entered);
    json_t *last = json_array_get(mis, json_array_size(mis) ? json_array_size(mis) - 1 : 0);
    int at_s = open && last && (uint64_t)json_integer_value(json_object_get(last, "seq")) == s;
    json_object_set_new(j, "first_incomplete", open ? incomplete(d, ci, s, at_s) : json_null());
    json_object_set_new(j, "mismatches", mis);
    json_object_set_new(j, "stragglers", ccd_coll_stragglers(d, ci, open ? s - 1 : entered));
    json_array_append_new(out, j);
}

void ccd_diag_colls(ccd_diag_t *d)
{
    json_t *comms = json_array();
    for (uint32_t c = 0; comms && c < d->ix->nc; c++)
        if (d->ix->c[c].nrecords) one_comm(d, &d->ix->c[c], comms);
    if (!comms) d->oom = 1;
    json_object_set_new(d->report, "communicators", comms);
}
