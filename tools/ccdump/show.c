/*
 * show.c - `ccdump show`: a readable table per rank and communicator. Times
 * are seconds after the earliest op of the job (every rank on its own
 * realtime clock), so rows of different ranks compare directly.
 */
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
#include "load.h"

static const char help[] =
    "usage: ccdump show FILE|DIR... [--rank R[,R-R..]] [--comm NAME] [--last N | --all]\n"
    "A table per rank and communicator: every recorded op with its sequence number,\n"
    "counts, state, status, enqueue time (seconds after the job's first op) and\n"
    "duration. Each rank starts with its process: host, pid, the file read, and its\n"
    "fate (exited normally, running, stopped, killed, fatal signal).\n"
    "\n"
    "options:\n"
    "  --rank LIST   only these world ranks (e.g. 0,3,8-15)\n"
    "  --comm NAME   only this communicator (its name, e.g. world, or its id)\n"
    "  --last N      the last N ops per rank and communicator (default 20)\n"
    "  --all         every op\n"
    "  -p, --prefix PREFIX  PyTorch dumps in directories: files named PREFIX<rank>\n"
    "                       (default: inferred from the names, as PyTorch's analyzer does)\n";

typedef struct show_opts {
    int32_t *ranks;
    uint32_t nranks;
    const char *comm;
    unsigned long last;
    int all;
} show_opts_t;

static const char *fate(const ccd_rank_t *r)
{
    if (r->fatal_signal) return "died of a fatal signal";
    if (r->closed == 1) return "exited normally";
    if (r->alive == 1) return r->stopped ? "stopped (SIGSTOP or a debugger)" : "running";
    if (r->alive == 0) return "gone without a normal exit (killed)";
    return "fate unknown (a dump, or a ring of another host)";
}

static const char *source(int src)
{
    return src == CCD_SRC_RING ? "ring" : src == CCD_SRC_CCOMM_JSON ? "ccomm dump" : "PyTorch dump";
}

static void rank_header(const ccd_job_t *job, const ccd_rank_t *r, FILE *out)
{
    fprintf(out, "rank %d  host ", r->rank);
    ccd_put_safe(out, r->host[0] ? r->host : "?");
    fprintf(out, "  pid %d  %s, %s", r->pid, source(r->src), fate(r));
    if (r->fatal_signal)
        fprintf(out, " (SIG%s at +%.6f s)",
                sigabbrev_np(r->fatal_signal) ? sigabbrev_np(r->fatal_signal) : "?",
                r->t_fatal > job->t_min ? (double)(r->t_fatal - job->t_min) / 1e9 : 0.0);
    fprintf(out, "\n  %u entries (records up to %llu", r->n, (unsigned long long)r->records_issued);
    if (r->n && r->e[0].record_id > 1) fprintf(out, "; older ones overwritten");
    if (r->ntorn || r->ncorrupt) fprintf(out, "; %u torn, %u corrupt slots", r->ntorn, r->ncorrupt);
    fprintf(out, "), %u file(s): ", r->nsources);
    ccd_put_safe(out, r->path);
    fputc('\n', out);
}

static void entry_row(const ccd_job_t *job, const ccd_entry_t *e, FILE *out)
{
    char count[48], dur[32] = "-", peer[16] = "-";
    if (e->dtype != CCD_NONE8 || e->in_count || e->out_count)
        snprintf(count, sizeof(count), "%llu/%llu %s", (unsigned long long)e->in_count,
                 (unsigned long long)e->out_count, ccd_dtype_name(job, e->dtype));
    else
        snprintf(count, sizeof(count), "-");
    uint64_t from = e->t_start ? e->t_start : e->t_enq;
    if (e->t_end && from && e->t_end >= from) ccd_fmt_dur(dur, sizeof(dur), e->t_end - from);
    else if (!e->t_end) snprintf(dur, sizeof(dur), "(open)");
    if (e->peer >= 0) snprintf(peer, sizeof(peer), "%d", e->peer);
    else if (e->root >= 0) snprintf(peer, sizeof(peer), "r%d", e->root);
    double t = e->t_enq >= job->t_min ? (double)(e->t_enq - job->t_min) / 1e9 : 0.0;
    fprintf(out, "    %8llu %7llu %6llu  %-18.18s %-22.22s %-5s %-5s %-10s %-16s %11.6f %10s\n",
            (unsigned long long)e->record_id, (unsigned long long)e->op_id,
            (unsigned long long)e->seq, ccd_op_name(job, e->op), count, ccd_redop_name(e->redop),
            peer, ccd_state_name(e->state), cc_status_name((cc_status_t)e->status), t, dur);
}

static void comm_table(const ccd_job_t *job, const ccd_rank_t *r, uint32_t k, const show_opts_t *o,
                       FILE *out)
{
    const ccd_rcomm_t *rc = &r->comms[k];
    const ccd_comm_t *c = &job->comms[rc->g];
    uint32_t n = 0, shown = 0;
    for (uint32_t i = 0; i < r->n; i++)
        n += r->e[i].comm == k;
    fprintf(out, "  communicator ");
    ccd_put_safe(out, c->name[0] ? c->name : "?");
    fprintf(out, " (id %s, rank %d of %d): last enqueued / started / completed collective "
                 "%llu / %llu / %llu%s%s\n",
            c->key, rc->rank, c->size, (unsigned long long)rc->last_enq,
            (unsigned long long)rc->last_start, (unsigned long long)rc->last_done,
            rc->aborted ? ", aborted: " : "", rc->aborted ? cc_status_name(rc->abort_reason) : "");
    if (c->parent_id) { /* the job's history: which comm this one was made from */
        int p = ccd_comm_by_id(job, c->parent_id);
        fprintf(out, "    made from ");
        ccd_put_safe(out, p >= 0 && job->comms[p].name[0] ? job->comms[p].name : "?");
        fprintf(out, " (id %llu)\n", (unsigned long long)c->parent_id);
    }
    if (!n) return;
    uint32_t skip = !o->all && n > o->last ? n - (uint32_t)o->last : 0;
    if (skip) fprintf(out, "    (%u older ops not shown: --all)\n", skip);
    fprintf(out, "    %8s %7s %6s  %-18s %-22s %-5s %-5s %-10s %-16s %11s %10s\n", "record", "op_id",
            "seq", "op", "in/out count", "redop", "peer", "state", "status", "enqueued(s)",
            "duration");
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->e[i].comm != k || shown++ < skip) continue;
        entry_row(job, &r->e[i], out);
    }
}

static void show_job(const ccd_job_t *job, const show_opts_t *o, FILE *out)
{
    fprintf(out, "job ");
    ccd_put_safe(out, job->job_id[0] ? job->job_id : "?");
    fprintf(out, ", world size %d; times are seconds after the first op of the job\n\n",
            job->world_size);
    for (int32_t w = 0; w < job->world_size; w++) {
        const ccd_rank_t *r = job->rank[w];
        int want = !o->ranks;
        for (uint32_t i = 0; o->ranks && i < o->nranks; i++)
            want |= o->ranks[i] == w;
        if (!want) continue;
        if (!r) {
            fprintf(out, "rank %d: no ring or dump found\n\n", w);
            continue;
        }
        rank_header(job, r, out);
        for (uint32_t k = 0; k < r->ncomms; k++)
            if (ccd_comm_is(&job->comms[r->comms[k].g], o->comm)) comm_table(job, r, k, o, out);
        fputc('\n', out);
    }
}

int ccdump_show(int argc, char **argv, FILE *out, FILE *err)
{
    show_opts_t o = {NULL, 0, NULL, 20, 0};
    const char *ranks = NULL;
    char **files;
    int nfiles;
    const char *prefix = NULL;
    const ccd_opt_t opts[] = {{"--rank", NULL, CCD_OPT_STR, &ranks},
                              {"--comm", NULL, CCD_OPT_STR, &o.comm},
                              {"--last", NULL, CCD_OPT_UINT, &o.last},
                              {"--all", NULL, CCD_OPT_FLAG, &o.all},
                              {"--prefix", "-p", CCD_OPT_STR, &prefix},
                              {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    if (ranks && ccd_parse_rank_list(ranks, &o.ranks, &o.nranks)) {
        fprintf(err, "ccdump: --rank: bad rank list \"%s\"\n", ranks);
        return 2;
    }
    ccd_job_t *job = ccd_load_inputs_p(files, nfiles, prefix, err);
    if (!job) {
        free(o.ranks);
        return 2;
    }
    show_job(job, &o, out);
    free(o.ranks);
    ccd_job_free(job);
    return 0;
}
