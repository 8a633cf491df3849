/*
 * diag_text.c - the readable diagnosis: what was read, the ranks worth
 * looking at, each communicator that is not simply healthy, the waits and
 * deadlocks, every finding, notes about the input, and last the one
 * verdict line. Long lists are cut (the --json report has everything).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diag.h"


static void put_time(FILE *out, uint64_t ns)
{
    time_t s = (time_t)(ns / 1000000000ull);
    struct tm tm;
    char buf[64];
    gmtime_r(&s, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(out, "%s.%03u UTC", buf, (unsigned)(ns / 1000000ull % 1000));
}

/* A JSON array of ints as "0-3, 5". */
static void json_ranks(const json_t *a, char *buf, size_t len)
{
    size_t n = json_array_size(a);
    int32_t *v = malloc((n + 1) * sizeof(int32_t));
    if (!v) {
        snprintf(buf, len, "?");
        return;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(a, i));
    ccd_fmt_ranks(buf, len, v, (uint32_t)n);
    free(v);
}

static void header(const ccd_diag_t *d, FILE *out)
{
    const ccd_job_t *job = d->job;
    int32_t have = 0;
    for (int32_t w = 0; w < job->world_size; w++)
        have += job->rank[w] != NULL;
    fprintf(out, "ccdump diagnose: job ");
    ccd_put_safe(out, job->job_id[0] ? job->job_id : "?");
    fprintf(out, ", world size %d: records of %d rank(s) from %u file(s)", job->world_size, have,
            job->nfiles);
    if (job->ndup) fprintf(out, " (%u duplicate(s) set aside)", job->ndup);
    if (job->nbad) fprintf(out, ", %u unusable", job->nbad);
    fprintf(out, "\nrecord ends at ");
    put_time(out, job->t_ref);
    json_t *fe = json_object_get(d->report, "first_error");
    if (fe) {
        fprintf(out, "; first error: rank %d, %s, %s", (int)json_integer_value(json_object_get(fe, "rank")),
                json_string_value(json_object_get(fe, "status")),
                json_string_value(json_object_get(fe, "text")));
        fprintf(out, " (%.2f s before the end)",
                json_real_value(json_object_get(fe, "seconds_before_record_end")));
    }
    fprintf(out, "\n");
}

/* What rank w was doing: "in X (state, age)" or "last: X (state, age)"; the key
 * leaves the age out, so that ranks doing the same thing compare equal. */
static void rank_doing(const ccd_diag_t *d, int32_t w, char *buf, size_t len, int with_age)
{
    const ccd_rank_t *r = d->job->rank[w];
    const ccd_entry_t *e = !r ? NULL : d->blocked[w] >= 0 ? &r->e[d->blocked[w]] : ccd_last_op(r);
    char what[160], age[80] = "";
    const char *sig = r && r->fatal_signal ? sigabbrev_np(r->fatal_signal) : NULL;
    if (!e) {
        snprintf(buf, len, "%s", r ? "no op recorded" : "no ring or dump found");
        return;
    }
    ccd_describe_op(d, r, e, what, sizeof(what));
    if (with_age) ccd_describe_age(d, ccd_entry_last_time(e), age, sizeof(age));
    snprintf(buf, len, "%s%s%s%s %s (%s%s%s)", r->fatal_signal ? "SIG" : "", sig ? sig : "",
             r->fatal_signal ? "; " : "", d->blocked[w] >= 0 ? "in" : "last:", what,
             ccd_state_name(e->state), with_age ? ", " : "", age);
}

static void rank_line(const ccd_diag_t *d, int32_t w, FILE *out)
{
    const ccd_rank_t *r = d->job->rank[w];
    char where[96] = "", doing[400];
    if (r) snprintf(where, sizeof(where), "%s:%d", r->host, r->pid);
    rank_doing(d, w, doing, sizeof(doing), 1);
    fprintf(out, "  %-6d %-8s ", w, ccd_proc_name(d->proc[w]));
    ccd_put_safe(out, where);
    fprintf(out, "%*s", (int)(strlen(where) < 22 ? 22 - strlen(where) : 1), "");
    ccd_put_safe(out, doing);
    fputc('\n', out);
}

#define GROUPS 24

typedef struct group {
    char key[440];
    int32_t *ranks;
    uint32_t n;
} group_t;

/* Big jobs: ranks with the same process state doing the same thing are one line. */
static void ranks_grouped(const ccd_diag_t *d, FILE *out)
{
    group_t *g = calloc(GROUPS, sizeof(group_t));
    int ng = 0;
    uint32_t other = 0;
    char key[440], doing[400], list[160];
    for (int32_t w = 0; g && w < d->job->world_size; w++) {
        rank_doing(d, w, doing, sizeof(doing), 0);
        snprintf(key, sizeof(key), "%s|%s", ccd_proc_name(d->proc[w]), doing);
        int i = 0;
        while (i < ng && strcmp(g[i].key, key))
            i++;
        if (i == ng && ng < GROUPS && (g[ng].ranks = malloc((size_t)d->job->world_size * 4)))
            snprintf(g[ng++].key, sizeof(g[0].key), "%s", key);
        if (i < ng) g[i].ranks[g[i].n++] = w;
        else other++;
    }
    for (int i = 0; i < ng; i++) {
        ccd_fmt_ranks(list, sizeof(list), g[i].ranks, g[i].n);
        rank_doing(d, g[i].ranks[0], doing, sizeof(doing), 1);
        fprintf(out, "  %s (%u rank%s): %s, ", list, g[i].n, g[i].n > 1 ? "s" : "",
                ccd_proc_name(d->proc[g[i].ranks[0]]));
        ccd_put_safe(out, doing);
        fprintf(out, "%s\n", g[i].n > 1 ? " [first of them]" : "");
        free(g[i].ranks);
    }
    if (other) fprintf(out, "  ... %u rank(s) in other states (see --json)\n", other);
    free(g);
}

static void ranks(const ccd_diag_t *d, FILE *out)
{
    fprintf(out, "\nranks (process, host:pid, what it was doing)\n");
    if (d->job->world_size > 16) {
        ranks_grouped(d, out);
        return;
    }
    for (int32_t w = 0; w < d->job->world_size; w++)
        rank_line(d, w, out);
}

static void incomplete(const json_t *inc, FILE *out)
{
    char buf[200];
    fprintf(out, "    first incomplete: #%lld %s %lld x %s\n",
            (long long)json_integer_value(json_object_get(inc, "seq")),
            json_string_value(json_object_get(inc, "op")) ? json_string_value(json_object_get(inc, "op")) : "?",
            (long long)json_integer_value(json_object_get(inc, "count")),
            json_string_value(json_object_get(inc, "dtype")) ? json_string_value(json_object_get(inc, "dtype")) : "?");
    static const char *const lists[][2] = {{"completed_ranks", "completed it"},
                                           {"in_it_ranks", "in it (waiting or gave up)"},
                                           {"not_entered_ranks", "never entered it"},
                                           {"no_record_ranks", "no record"}};
    for (size_t i = 0; i < 4; i++) {
        const json_t *a = json_object_get(inc, lists[i][0]);
        if (!json_array_size(a)) continue;
        json_ranks(a, buf, sizeof(buf));
        fprintf(out, "      %-28s rank%s %s\n", lists[i][1], json_array_size(a) > 1 ? "s" : "", buf);
    }
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(inc, "not_entered"), i, m) {
        if (i >= 8) break;
        json_t *last = json_object_get(m, "blocked_in");
        if (json_is_null(last)) last = json_object_get(m, "last_op");
        fprintf(out, "        rank %lld (%s): %s %s (%s)\n", (long long)json_integer_value(json_object_get(m, "rank")),
                json_string_value(json_object_get(m, "process")),
                json_is_null(json_object_get(m, "blocked_in")) ? "last op" : "blocked in",
                last ? json_string_value(json_object_get(last, "text")) : "none",
                last ? json_string_value(json_object_get(last, "state")) : "-");
    }
}

static int comm_healthy(const json_t *c)
{
    const json_t *p2p = json_object_get(c, "p2p");
    return json_is_null(json_object_get(c, "first_incomplete")) &&
           !json_array_size(json_object_get(c, "mismatches")) &&
           !json_array_size(json_object_get(c, "stragglers")) &&
           !json_integer_value(json_object_get(p2p, "unmatched_pending")) &&
           !json_integer_value(json_object_get(p2p, "unmatched_completed")) &&
           !json_array_size(json_object_get(p2p, "size_mismatches"));
}

static void comm_section(const json_t *c, FILE *out)
{
    const json_t *inc = json_object_get(c, "first_incomplete"), *p2p = json_object_get(c, "p2p");
    size_t nm = json_array_size(json_object_get(c, "mismatches"));
    size_t ns = json_array_size(json_object_get(c, "stragglers"));
    int np = (int)json_integer_value(json_object_get(p2p, "unmatched_pending")) +
             (int)json_integer_value(json_object_get(p2p, "unmatched_completed")) +
             (int)json_array_size(json_object_get(p2p, "size_mismatches"));
    char members[200];
    json_ranks(json_object_get(c, "members"), members, sizeof(members));
    long long done = (long long)json_integer_value(json_object_get(c, "completed_by_all_through"));
    fprintf(out, "  %s (id %s, %lld ranks: %s): ", json_string_value(json_object_get(c, "name")),
            json_string_value(json_object_get(c, "id")),
            (long long)json_integer_value(json_object_get(c, "size")), members);
    if (done) fprintf(out, "collectives #1..#%lld completed by every member", done);
    else fprintf(out, "no collective completed by every member");
    fprintf(out, "%s\n", comm_healthy(c) ? "; healthy" : "");
    if (!json_is_null(inc) && inc) incomplete(inc, out);
    if (nm) fprintf(out, "    %zu collective(s) with mismatched calls (see findings)\n", nm);
    if (ns) fprintf(out, "    %zu straggler(s) (see findings)\n", ns);
    if (np) fprintf(out, "    point-to-point: %d unmatched pending, %d unmatched completed, %zu size mismatch(es)\n",
                    (int)json_integer_value(json_object_get(p2p, "unmatched_pending")),
                    (int)json_integer_value(json_object_get(p2p, "unmatched_completed")),
                    json_array_size(json_object_get(p2p, "size_mismatches")));
}

/* Every communicator with something to say; past 8, healthy ones are only counted. */
static void comms(const ccd_diag_t *d, FILE *out)
{
    const json_t *all = json_object_get(d->report, "communicators");
    size_t i, quiet = 0, n = json_array_size(all);
    json_t *c;
    fprintf(out, "\ncommunicators\n");
    json_array_foreach(all, i, c)
    {
        if (n > 8 && comm_healthy(c)) {
            quiet++;
            continue;
        }
        comm_section(c, out);
    }
    if (quiet) fprintf(out, "  ... and %zu healthy communicator(s) (see --json)\n", quiet);
}

static void findings(const ccd_diag_t *d, FILE *out)
{
    fprintf(out, "\nfindings (most likely explanation first)\n");
    if (!d->nf) fprintf(out, "  none\n");
    for (uint32_t i = 0; i < d->nf && i < 40; i++) {
        const ccd_finding_t *f = &d->f[i];
        fprintf(out, "  %u. [%s] %s%s: ", i + 1, ccd_conf_name(f->conf), ccd_fkind_name(f->kind),
                f->secondary ? " (probably a consequence)" : "");
        ccd_put_safe(out, f->text);
        fputc('\n', out);
    }
    if (d->nf > 40) fprintf(out, "  ... %u more (see --json)\n", d->nf - 40);
}

static void notes(const ccd_diag_t *d, FILE *out)
{
    const ccd_names_t *n = &d->job->notes;
    if (!n->n) return;
    fprintf(out, "\nnotes on the input\n");
    for (uint32_t i = 0; i < n->n && i < 20; i++) {
        fprintf(out, "  ");
        ccd_put_safe(out, n->v[i]);
        fputc('\n', out);
    }
    if (n->n > 20) fprintf(out, "  ... %u more\n", n->n - 20);
}

void ccd_diag_print_text(const ccd_diag_t *d, FILE *out)
{
    header(d, out);
    ranks(d, out);
    comms(d, out);
    size_t nd = json_array_size(json_object_get(d->report, "deadlocks"));
    fprintf(out, "\nwaits: %u (rank -> rank it waits for), deadlock cycles: %zu\n", d->nw, nd);
    findings(d, out);
    notes(d, out);
    fprintf(out, "\nverdict (%s): ", ccd_conf_name(d->verdict.conf));
    ccd_put_safe(out, d->verdict.text);
    fputc('\n', out);
}
