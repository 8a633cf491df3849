/*
 * diag_verdict.c - one verdict from the findings: the problem that best
 * explains the others. Findings are ranked by
 *   1. not a likely consequence of another failure,
 *   2. kind (enum ccd_fkind: a recorded death explains waits, a mismatch
 *      explains a hang, a deadlock explains its members' waits, ...),
 *   3. the ranks held up by it, then confidence.
 * Notes that are not problems (records of different moments, completed p2p
 * ops without a partner) never make a verdict on their own: the job then
 * has "no problem found", exit status 0.
 */
#include <stdlib.h>
#include <string.h>

#include "diag.h"

static int is_problem(const ccd_finding_t *f)
{
    return f->kind != CCD_F_INCONSISTENT && f->kind != CCD_F_P2P_UNMATCHED_DONE;
}

static int rank_cmp(const void *a, const void *b)
{
    const ccd_finding_t *x = a, *y = b;
    if (is_problem(x) != is_problem(y)) return is_problem(x) ? -1 : 1;
    if (x->secondary != y->secondary) return x->secondary ? 1 : -1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->waiters != y->waiters) return x->waiters > y->waiters ? -1 : 1;
    return y->conf - x->conf;
}

static json_t *finding_json(const ccd_diag_t *d, const ccd_finding_t *f)
{
    const ccd_comm_t *c = f->g >= 0 ? &d->job->comms[f->g] : NULL;
    return json_pack("{s:s, s:s, s:o, s:s?, s:s?, s:I, s:s?, s:i, s:b, s:s}", "kind",
                     ccd_fkind_name(f->kind), "confidence", ccd_conf_name(f->conf), "ranks",
                     ccd_ranks_json(f->ranks, f->nranks), "comm", c ? c->name : NULL, "comm_key",
                     c ? c->key : NULL, "seq", (json_int_t)f->seq, "op", f->op, "waiters",
                     (int)f->waiters, "secondary", f->secondary, "text", f->text);
}

/* Nothing wrong: say what was checked, and how complete the record is. */
static void healthy(ccd_diag_t *d, json_t *v)
{
    int32_t missing = 0, open = 0;
    for (int32_t w = 0; w < d->job->world_size; w++) {
        missing += !d->job->rank[w];
        open += d->proc[w] == CCD_PROC_ALIVE || d->proc[w] == CCD_PROC_UNKNOWN;
    }
    int damaged = d->job->notes.n || d->job->nbad;
    int conf = damaged ? CCD_UNCERTAIN : missing || open ? CCD_LIKELY : CCD_CERTAIN;
    char text[500];
    snprintf(text, sizeof(text),
             "no problem found in the records of %d rank(s): every recorded collective completed "
             "on every member, no mismatch, no unmatched point-to-point op waiting, no crash%s%s",
             d->job->world_size - missing,
             open ? " (some processes are still running or their fate is not recorded)" : "",
             damaged ? "; but some input was unusable or damaged (see the notes)" : "");
    json_object_set_new(v, "kind", json_string("ok"));
    json_object_set_new(v, "confidence", json_string(ccd_conf_name(conf)));
    json_object_set_new(v, "culprits", json_array());
    json_object_set_new(v, "text", json_string(text));
    d->verdict.conf = conf;
    snprintf(d->verdict.text, sizeof(d->verdict.text), "%s", text);
}

void ccd_diag_verdict(ccd_diag_t *d)
{
    json_t *all = json_array(), *v = json_object();
    if (!all || !v) {
        d->oom = 1;
        json_decref(all);
        json_decref(v);
        return;
    }
    if (d->nf) qsort(d->f, d->nf, sizeof(*d->f), rank_cmp);
    for (uint32_t i = 0; i < d->nf; i++)
        json_array_append_new(all, finding_json(d, &d->f[i]));
    json_object_set_new(d->report, "findings", all);
    if (d->nf && is_problem(&d->f[0])) {
        const ccd_finding_t *f = &d->f[0];
        d->verdict = *f;
        json_t *fj = finding_json(d, f);
        json_object_update(v, fj);
        json_decref(fj);
        json_object_set_new(v, "culprits", ccd_ranks_json(f->ranks, f->nranks));
        json_object_del(v, "ranks");
    } else {
        healthy(d, v);
    }
    json_object_set_new(d->report, "verdict", v);
    json_object_set_new(d->report, "exit_status", json_integer(ccd_diag_status(d)));
}
