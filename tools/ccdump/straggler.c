/*
 * straggler.c - arrival lateness per rank over a communicator's collectives
 * (straggler.h). Two walks over the members' seq-sorted lists (one cursor
 * each): the first counts the collectives every member arrived at, the
 * second keeps the arrivals of the last `last_n` of them in a matrix
 * (collectives x members), from which each member's figures come. O(members
 * x collectives) time, 8 bytes per arrival kept.
 */
#include <stdlib.h>
#include <string.h>

#include "straggler.h"

/*
 * The arrivals at seq s of every member with a record (into row, may be
 * NULL), moving the cursors past s. 1 when every one arrived and none failed.
 */
static int arrivals(const ccd_cindex_t *ci, uint32_t *cur, uint64_t s, uint64_t *row)
{
    int32_t j = 0;
    int ok = 1;
    for (int32_t k = 0; k < ci->n; k++) {
        if (!ci->m[k].r) continue;
        const ccd_entry_t *e = ccd_member_take(&ci->m[k], &cur[k], s);
        if (!e || !e->t_enq || e->state > CCD_COMPLETED)
            ok = 0;
        else if (row)
            row[j] = e->t_enq;
        j++;
    }
    return ok && j >= 2;
}

/* The last `want` eligible collectives' arrivals into s (matrix *out, s->nseq rows). */
static int window(const ccd_cindex_t *ci, uint64_t upto, uint32_t want, ccd_strag_t *s,
                  uint64_t **out)
{
    uint32_t *cur = calloc((size_t)ci->n + 1, sizeof(uint32_t)), count = 0, idx = 0;
    if (!cur) return -1;
    for (uint64_t q; (q = ccd_cindex_next_seq(ci, cur, upto));)
        count += (uint32_t)arrivals(ci, cur, q, NULL);
    uint32_t skip = want && count > want ? count - want : 0;
    uint64_t *arr = malloc(((size_t)(count - skip) * (size_t)s->n + 1) * sizeof(uint64_t));
    if (!arr) {
        free(cur);
        return -1;
    }
    memset(cur, 0, ((size_t)ci->n + 1) * sizeof(uint32_t));
    for (uint64_t q; (q = ccd_cindex_next_seq(ci, cur, upto)) && idx < count;) {
        uint64_t *row = idx >= skip ? arr + (size_t)(idx - skip) * (size_t)s->n : NULL;
        if (!arrivals(ci, cur, q, row)) continue;
        if (idx++ < skip) continue;
        if (!s->seq_lo) s->seq_lo = q;
        s->seq_hi = q;
    }
    s->nseq = count - skip;
    free(cur);
    *out = arr;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One collective's row: lateness, the last one, its margin, the waits. */
static void account_row(ccd_strag_t *s, const uint64_t *row, uint64_t *late, uint64_t *margin,
                        int32_t *last_of)
{
    int32_t last = 0;
    uint64_t tmin = row[0], t2 = 0;
    for (int32_t k = 1; k < s->n; k++) {
        if (row[k] < tmin) tmin = row[k];
        if (row[k] > row[last]) last = k;
    }
    for (int32_t k = 0; k < s->n; k++) {
        if (k != last && row[k] > t2) t2 = row[k];
        late[k] = row[k] - tmin;
        s->m[k].waited += row[last] - row[k];
        s->m[last].cost += row[last] - row[k];
    }
    *margin = row[last] - t2;
    *last_of = last;
    s->m[last].last++;
}

/* Member k's lateness figures from column values v[0..n) (sorted here). */
static void late_figures(ccd_strag_member_t *m, uint64_t *v, uint32_t n)
{
    uint64_t sum = 0;
    qsort(v, n, sizeof(*v), cmp_u64);
    for (uint32_t i = 0; i < n; i++)
        sum += v[i];
    m->late_mean = n ? sum / n : 0;
    m->late_p50 = n ? v[n / 2] : 0;
    m->late_max = n ? v[n - 1] : 0;
}

static void figures(ccd_strag_t *s, const uint64_t *arr, uint64_t *late, uint64_t *margin,
                    int32_t *last_of, uint64_t *col)
{
    for (uint32_t i = 0; i < s->nseq; i++)
        account_row(s, arr + (size_t)i * (size_t)s->n, late + (size_t)i * (size_t)s->n, &margin[i],
                    &last_of[i]);
    for (int32_t k = 0; k < s->n; k++) {
        uint32_t nm = 0;
        for (uint32_t i = 0; i < s->nseq; i++)
            col[i] = late[(size_t)i * (size_t)s->n + (size_t)k];
        late_figures(&s->m[k], col, s->nseq);
        for (uint32_t i = 0; i < s->nseq; i++)
            if (last_of[i] == k) col[nm++] = margin[i];
        qsort(col, nm, sizeof(*col), cmp_u64);
        s->m[k].margin_p50 = nm ? col[nm / 2] : 0;
        s->m[k].margin_max = nm ? col[nm - 1] : 0;
    }
}

/* The rule of straggler.h. */
static void name_straggler(ccd_strag_t *s)
{
    s->straggler = -1;
    for (int32_t k = 0; k < s->n; k++) {
        const ccd_strag_member_t *m = &s->m[k];
        if (m->last < CCD_STRAG_MIN_COLLS ||
            (uint64_t)m->last * 100 < (uint64_t)CCD_STRAG_PCT * s->nseq ||
            m->margin_p50 < CCD_STRAG_MIN_NS)
            continue;
        s->straggler = k;
        s->likely = (uint64_t)m->last * 100 >= (uint64_t)CCD_STRAG_LIKELY * s->nseq;
    }
}

int ccd_strag_compute(const ccd_cindex_t *ci, uint64_t upto, uint32_t last_n, ccd_strag_t *s)
{
    memset(s, 0, sizeof(*s));
    s->straggler = -1;
    s->m = calloc((size_t)ci->nrecords + 1, sizeof(*s->m));
    if (!s->m) return -1;
    for (int32_t k = 0; k < ci->n; k++)
        if (ci->m[k].r)
            s->m[s->n++] = (ccd_strag_member_t){.crank = ci->m[k].crank, .world = ci->m[k].world};
    uint64_t *arr = NULL;
    if (s->n < 2) return 0;
    if (window(ci, upto, last_n, s, &arr)) goto oom;
    size_t cells = (size_t)s->nseq * (size_t)s->n + 1;
    uint64_t *late = malloc(cells * sizeof(uint64_t));
    uint64_t *margin = malloc(((size_t)s->nseq + 1) * sizeof(uint64_t));
    uint64_t *col = malloc(((size_t)s->nseq + 1) * sizeof(uint64_t));
    int32_t *last_of = malloc(((size_t)s->nseq + 1) * sizeof(int32_t));
    int ok = late && margin && col && last_of;
    if (ok) figures(s, arr, late, margin, last_of, col);
    free(late);
    free(margin);
    free(col);
    free(last_of);
    free(arr);
    if (!ok) goto oom;
    name_straggler(s);
    return 0;
oom:
    ccd_strag_free(s);
    return -1;
}

void ccd_strag_free(ccd_strag_t *s)
{
    free(s->m);
    s->m = NULL;
    s->n = 0;
}

void ccd_strag_verdict(const ccd_strag_t *s, const char *comm, char *buf, size_t len)
{
    char dur[32], cost[32];
    if (s->straggler >= 0) {
        const ccd_strag_member_t *m = &s->m[s->straggler];
        ccd_fmt_dur(dur, sizeof(dur), m->margin_p50);
        ccd_fmt_dur(cost, sizeof(cost), m->cost);
        snprintf(buf, len,
                 "straggler (%s): rank %d on %s: last to arrive at %u of %u collectives, a median "
                 "%s after the next-to-last rank; it cost the others %s of waiting",
                 s->likely ? "likely" : "uncertain", m->world, comm, m->last, s->nseq, dur, cost);
        return;
    }
    if (s->nseq < CCD_STRAG_MIN_COLLS) {
        snprintf(buf, len,
                 "no straggler on %s: %u collective(s) every member arrived at, %d needed", comm,
                 s->nseq, CCD_STRAG_MIN_COLLS);
        return;
    }
    int32_t most = 0;
    for (int32_t k = 1; k < s->n; k++)
        if (s->m[k].last > s->m[most].last) most = k;
    ccd_fmt_dur(dur, sizeof(dur), s->m[most].margin_p50);
    snprintf(buf, len,
             "no straggler on %s: the rank most often last, rank %d, was last at %u of %u "
             "collectives by a median %s (the rule: %d %% of them, by %d ms or more)",
             comm, s->m[most].world, s->m[most].last, s->nseq, dur, CCD_STRAG_PCT,
             (int)(CCD_STRAG_MIN_NS / 1000000));
}

json_t *ccd_strag_json(const ccd_strag_t *s, const char *comm)
{
    char verdict[400];
    ccd_strag_verdict(s, comm, verdict, sizeof(verdict));
    json_t *ranks = json_array();
    for (int32_t k = 0; ranks && k < s->n; k++) {
        const ccd_strag_member_t *m = &s->m[k];
        json_array_append_new(
            ranks, json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f}", "rank", m->world,
                             "comm_rank", m->crank, "times_last", m->last, "late_mean_ms",
                             (double)m->late_mean / 1e6, "late_p50_ms", (double)m->late_p50 / 1e6,
                             "late_max_ms", (double)m->late_max / 1e6, "margin_p50_ms",
                             (double)m->margin_p50 / 1e6, "wait_cost_ms", (double)m->cost / 1e6,
                             "waited_ms", (double)m->waited / 1e6));
    }
    json_t *who = s->straggler >= 0 ? json_integer(s->m[s->straggler].world) : json_null();
    return json_pack("{s:i, s:I, s:I, s:o, s:s, s:s, s:o}", "collectives", s->nseq, "seq_first",
                     (json_int_t)s->seq_lo, "seq_last", (json_int_t)s->seq_hi, "straggler", who,
                     "confidence",
                     s->straggler < 0 ? "none"
                     : s->likely      ? "likely"
                                      : "uncertain",
                     "verdict", verdict, "ranks", ranks);
}

void ccd_strag_print(const ccd_strag_t *s, const char *comm, const char *indent, FILE *out)
{
    char verdict[400];
    fprintf(out, "%s%6s %9s %10s %10s %10s %10s %11s %11s\n", indent, "rank", "comm rank", "last",
            "late mean", "late p50", "late max", "wait cost", "waited");
    for (int32_t k = 0; k < s->n; k++) {
        const ccd_strag_member_t *m = &s->m[k];
        char last[24], d[5][32];
        uint64_t v[5] = {m->late_mean, m->late_p50, m->late_max, m->cost, m->waited};
        for (int i = 0; i < 5; i++)
            ccd_fmt_dur(d[i], sizeof(d[i]), v[i]);
        snprintf(last, sizeof(last), "%u/%u", m->last, s->nseq);
        fprintf(out, "%s%6d %9d %10s %10s %10s %10s %11s %11s%s\n", indent, m->world, m->crank,
                last, d[0], d[1], d[2], d[3], d[4], k == s->straggler ? "  <- straggler" : "");
    }
    ccd_strag_verdict(s, comm, verdict, sizeof(verdict));
    fprintf(out, "%s", indent);
    ccd_put_safe(out, verdict);
    fputc('\n', out);
}
