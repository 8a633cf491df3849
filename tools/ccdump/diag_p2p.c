/*
 * diag_p2p.c - point-to-point matching. A send from a to b is the k-th of
 * its (comm, a -> b) stream (p2p_seq k) and matches b's k-th receive from
 * a. A send beyond the receives b recorded has no matching receive, and
 * the reverse; a matched pair whose sizes differ is a mismatch. A partner
 * whose ring lost records older than the op cannot prove anything and is
 * skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "diag_int.h"

#define DETAIL_MAX 64

typedef struct p2p_acc {
    json_t *sends, *recvs, *sizes;
    uint32_t npending, ndone;
    int32_t first[2];           /* the ranks of the first pending unmatched op */
    const ccd_entry_t *first_e; /* ... and the op */
    const ccd_rank_t *first_r;
    uint64_t partner_max;
} p2p_acc_t;

/* The world rank of comm rank k (or k when unknown, marked negative - 1). */
static int32_t world_of(const ccd_cindex_t *ci, int32_t k)
{
    const ccd_member_t *m = ccd_cindex_member(ci, k);
    return m && m->world >= 0 ? m->world : -1;
}

static json_t *item(const ccd_diag_t *d, const ccd_cindex_t *ci, const ccd_member_t *a,
                    const ccd_entry_t *e, uint64_t partner_max)
{
    json_t *j = ccd_entry_json(d, a->r, e);
    if (!j) return NULL;
    json_object_set_new(j, "peer", json_integer(world_of(ci, e->peer)));
    json_object_set_new(j, "bytes", json_integer((json_int_t)e->bytes));
    json_object_set_new(j, "partner_last_seq", json_integer((json_int_t)partner_max));
    return j;
}

static void size_check(ccd_diag_t *d, const ccd_cindex_t *ci, const ccd_member_t *a,
                       const ccd_entry_t *e, const ccd_entry_t *x, p2p_acc_t *acc)
{
    if (!x || !e->bytes || !x->bytes || e->bytes == x->bytes) return;
    int32_t v[2] = {a->world, world_of(ci, e->peer)};
    if (json_array_size(acc->sizes) < DETAIL_MAX)
        json_array_append_new(acc->sizes, json_pack("{s:i, s:i, s:I, s:I, s:I}", "from", v[0], "to",
                                                     v[1], "seq", (json_int_t)e->seq, "send_bytes",
                                                     (json_int_t)e->bytes, "recv_bytes",
                                                     (json_int_t)x->bytes));
    if (json_array_size(acc->sizes) > 1) return;
    ccd_finding_t *f = ccd_add_finding(
        d, CCD_F_MISMATCH, CCD_LIKELY, v, 2,
        "size mismatch on %s: rank %d sends %llu bytes as p2p #%llu to rank %d, which receives "
        "%llu bytes",
        ci->c->name, v[0], (unsigned long long)e->bytes, (unsigned long long)e->seq, v[1],
        (unsigned long long)x->bytes);
    if (f) f->g = (int32_t)ci->g, f->seq = e->seq, f->op = ccd_op_name(d->job, e->op);
}

/* One op of member a: matched, unmatched, or not provable. */
static void check_op(ccd_diag_t *d, const ccd_cindex_t *ci, const ccd_member_t *a, int32_t ka,
                     const ccd_entry_t *e, p2p_acc_t *acc)
{
    if (e->peer < 0 || !(e->flags & (CCD_EF_SEND | CCD_EF_RECV))) return;
    const ccd_member_t *b = ccd_cindex_member(ci, e->peer);
    int send = (e->flags & CCD_EF_SEND) != 0;
    if (!b || !b->r) return; /* no record: the wait pass names it */
    uint64_t max = ccd_member_p2p_max(b, ka, !send);
    if (e->seq <= max) {
        if (send) size_check(d, ci, a, e, ccd_member_p2p(b, ka, 0, e->seq), acc);
        return;
    }
    if (b->wrapped && b->t_window > e->t_enq) return; /* b's ring no longer covers it */
    json_t *list = send ? acc->sends : acc->recvs;
    if (json_array_size(list) < DETAIL_MAX) json_array_append_new(list, item(d, ci, a, e, max));
    if (ccd_entry_ok(e)) {
        acc->ndone++;
        return;
    }
    if (!acc->npending++) {
        acc->first[0] = a->world;
        acc->first[1] = world_of(ci, e->peer);
        acc->first_e = e;
        acc->first_r = a->r;
        acc->partner_max = max;
    }
}

static void findings(ccd_diag_t *d, const ccd_cindex_t *ci, const p2p_acc_t *acc)
{
    char what[160];
    if (acc->npending) {
        const ccd_entry_t *e = acc->first_e;
        int send = (e->flags & CCD_EF_SEND) != 0;
        ccd_describe_op(d, acc->first_r, e, what, sizeof(what));
        ccd_finding_t *f = ccd_add_finding(
            d, CCD_F_P2P_UNMATCHED, CCD_LIKELY, acc->first, 2,
            "rank %d's %s (%s) has no matching %s: rank %d %s rank %d only up to #%llu%s", acc->first[0],
            what, ccd_state_name(e->state), send ? "receive" : "send", acc->first[1],
            send ? "posted receives from" : "sent to", acc->first[0],
            (unsigned long long)acc->partner_max,
            acc->npending > 1 ? " (and more unmatched ops pending)" : "");
        if (f) f->g = (int32_t)ci->g, f->seq = e->seq, f->op = ccd_op_name(d->job, e->op), f->waiters = 1;
    }
    if (acc->ndone && !acc->npending) {
        int32_t none = -1;
        ccd_finding_t *f = ccd_add_finding(
            d, CCD_F_P2P_UNMATCHED_DONE, CCD_UNCERTAIN, &none, 0,
            "%u completed point-to-point op(s) on %s have no recorded partner op (eager sends "
            "whose receive was never posted, or records of different moments)",
            acc->ndone, ci->c->name);
        if (f) f->g = (int32_t)ci->g;
    }
}

static json_t *one_comm(ccd_diag_t *d, const ccd_cindex_t *ci)
{
    p2p_acc_t acc = {json_array(), json_array(), json_array(), 0, 0, {-1, -1}, NULL, NULL, 0};
    for (int32_t k = 0; k < ci->n; k++) {
        const ccd_member_t *a = &ci->m[k];
        for (uint32_t i = 0; a->r && i < a->np2p; i++)
            check_op(d, ci, a, a->crank, &a->r->e[a->p2p[i]], &acc);
    }
    findings(d, ci, &acc);
    json_t *j = json_pack("{s:o, s:o, s:o, s:i, s:i}", "unmatched_sends", acc.sends,
                          "unmatched_receives", acc.recvs, "size_mismatches", acc.sizes,
                          "unmatched_pending", (int)acc.npending, "unmatched_completed",
                          (int)acc.ndone);
    if (!j) d->oom = 1;
    return j;
}

void ccd_diag_p2p(ccd_diag_t *d)
{
    json_t *comms = json_object_get(d->report, "communicators");
    size_t i = 0;
    for (uint32_t c = 0; c < d->ix->nc; c++) {
        if (!d->ix->c[c].nrecords) continue;
        json_t *p = one_comm(d, &d->ix->c[c]);
        json_object_set_new(json_array_get(comms, i++), "p2p", p ? p : json_null());
    }
}
