/*
 * diagnose.c - `ccdump diagnose`: load, index, run the diagnosis passes
 * (diag.h), print the report (text or JSON) ending with the verdict.
 */
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
#include "diag.h"
#include "load.h"

static const char help[] =
    "usage: ccdump diagnose FILE|DIR... [--json] [--min-wait SECONDS]\n"
    "Explain a hung or failed job from its flight recorder rings and dumps.\n"
    "\n"
    "For each communicator: the first collective (by coll_seq) that not every member\n"
    "completed, the ranks that wait in it and the ranks that never entered it (with\n"
    "what each did last), and mismatched calls (op, count, dtype, reduction, root) at\n"
    "one coll_seq. Point-to-point sends without a matching receive and the reverse\n"
    "(by p2p_seq per pair and direction). Ranks with no record, ranks whose ring\n"
    "records a fatal signal, killed or stopped processes (rings of this host: their\n"
    "process is looked up in /proc), deadlocks across communicators and p2p, and\n"
    "stragglers (ranks that enter collectives last, by a clear margin, most of the\n"
    "time). The last line is the verdict: the most likely culprit rank(s), why, and\n"
    "how sure (certain / likely / uncertain).\n"
    "\n"
    "options:\n"
    "  --json              the same findings as one JSON document\n"
    "  --min-wait SECONDS  an unfinished op younger than this at the end of the record\n"
    "                      is in flight, not waiting (default 1)\n"
    "  -p, --prefix PREFIX  PyTorch dumps in directories: files named PREFIX<rank>\n"
    "                       (default: inferred from the names, as PyTorch's analyzer does)\n"
    "\n"
    "Exit status: 0 no problem found, 1 problem found, 2 unusable input.\n";

static void job_json(const ccd_diag_t *d)
{
    const ccd_job_t *job = d->job;
    json_t *notes = json_array();
    int32_t have = 0;
    for (uint32_t i = 0; notes && i < job->notes.n; i++)
        json_array_append_new(notes, json_string(job->notes.v[i]));
    for (int32_t w = 0; w < job->world_size; w++)
        have += job->rank[w] != NULL;
    json_object_set_new(d->report, "job",
                        json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:o*}", "job_id",
                                  job->job_id, "world_size", job->world_size, "ranks_with_records",
                                  have, "files", (int)job->nfiles, "unusable_files", (int)job->nbad,
                                  "duplicates", (int)job->ndup, "record_end_ns",
                                  (json_int_t)job->t_ref, "record_start_ns",
                                  (json_int_t)job->t_min, "notes", notes));
    json_object_set_new(d->report, "ccdump_report", json_string("1.0"));
}

int ccdump_diagnose(int argc, char **argv, FILE *out, FILE *err)
{
    int as_json = 0;
    double min_wait = 1.0;
    char **files;
    int nfiles;
    const char *prefix = NULL;
    const ccd_opt_t opts[] = {{"--json", NULL, CCD_OPT_FLAG, &as_json},
                              {"--min-wait", NULL, CCD_OPT_DOUBLE, &min_wait},
                              {"--prefix", "-p", CCD_OPT_STR, &prefix},
                              {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    ccd_job_t *job = ccd_load_inputs_p(files, nfiles, prefix, err);
    if (!job) return 2;
    ccd_index_t *ix = ccd_index_build(job);
    ccd_diag_opts_t o = {(uint64_t)(min_wait * 1e9)};
    ccd_diag_t *d = ix ? ccd_diagnose(job, ix, &o) : NULL;
    if (!d) {
        fprintf(err, "ccdump: out of memory diagnosing %d rank(s)\n", job->world_size);
        rc = 2;
    } else {
        job_json(d);
        if (as_json) {
            json_dumpf(d->report, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
            fputc('\n', out);
        } else {
            ccd_diag_print_text(d, out);
        }
        rc = ccd_diag_status(d);
    }
    ccd_diag_free(d);
    ccd_index_free(ix);
    ccd_job_free(job);
    return rc;
}
