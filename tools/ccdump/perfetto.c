/*
 * perfetto.c - `ccdump perfetto`: a Chrome JSON trace for the Perfetto UI
 * (and chrome://tracing):
 *  - one process per rank ("rank 3 (host:pid)", sorted by rank);
 *  - one track per communicator; ops that overlap on one communicator
 *    (non-blocking ops) go to extra tracks of that communicator, so complete
 *    slices on one track never overlap and always nest;
 *  - complete slices ("X") from enqueue to end; ops still open at the end of
 *    the record end there, marked open;
 *  - flow arrows (v2: bind_id with flow_out / flow_in on the slices) join
 *    the slices of one collective across ranks in time order, and each send
 *    to its receive;
 *  - instant markers for timeouts, aborts and fatal signals;
 *  - a "bytes in flight" counter per rank.
 * Times are microseconds after the job's first op, every rank on its own
 * realtime clock (converted from its monotonic clock with the bases in its
 * ring header). Written as a stream: the trace is never held in memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
#include "index.h"
#include "load.h"
#include "perfetto.h"

static const char help[] =
    "usage: ccdump perfetto FILE|DIR... -o TRACE.json [--rank LIST] [--last N]\n"
    "Write a Chrome JSON trace of the record for https://ui.perfetto.dev (or\n"
    "chrome://tracing): a process per rank, a track per communicator (extra tracks\n"
    "for overlapping non-blocking ops), a slice per op from enqueue to end (ops still\n"
    "open run to the end of the record), arrows joining each collective across ranks\n"
    "and each send to its receive, markers for timeouts, aborts and fatal signals, and\n"
    "a bytes-in-flight counter per rank. Ranks' clocks are aligned on the realtime\n"
    "bases in their ring headers (across hosts, as good as the hosts' clock sync).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the trace to write (- for standard output)\n"
    "  --rank LIST        only these ranks (e.g. 0-7,12)\n"
    "  --last N           only each rank's last N ops (big jobs: the UI holds 2-4x the\n"
    "                     trace in memory and struggles past ~1 GB of JSON)\n"
    "  -p, --prefix PREFIX  PyTorch dumps in directories: files named PREFIX<rank>\n"
    "                       (default: inferred from the names, as PyTorch's analyzer does)\n";

int ccdump_perfetto(int argc, char **argv, FILE *out, FILE *err)
{
    const char *path = NULL, *ranks = NULL;
    unsigned long last = 0;
    char **files;
    int nfiles;
    const char *prefix = NULL;
    const ccd_opt_t opts[] = {{"--output", "-o", CCD_OPT_STR, &path},
                              {"--rank", NULL, CCD_OPT_STR, &ranks},
                              {"--last", NULL, CCD_OPT_UINT, &last},
                              {"--prefix", "-p", CCD_OPT_STR, &prefix},
                              {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    if (!path) {
        fprintf(err, "ccdump perfetto: -o FILE is required\n");
        return 2;
    }
    ccd_pf_sel_t sel = {NULL, 0, (uint32_t)last};
    if (ranks && ccd_parse_rank_list(ranks, &sel.ranks, &sel.nranks)) {
        fprintf(err, "ccdump: --rank: bad rank list \"%s\"\n", ranks);
        return 2;
    }
    ccd_job_t *job = ccd_load_inputs_p(files, nfiles, prefix, err);
    ccd_index_t *ix = job ? ccd_index_build(job) : NULL;
    FILE *f = !ix ? NULL : strcmp(path, "-") ? fopen(path, "w") : out;
    if (ix && !f) fprintf(err, "ccdump: cannot create %s: %s\n", path, strerror(errno));
    rc = 2;
    if (f) {
        uint64_t n = ccd_perfetto_write(job, ix, &sel, f, err);
        int bad = f != out ? fclose(f) != 0 : fflush(f) != 0;
        if (bad) fprintf(err, "ccdump: cannot write %s: %s\n", path, strerror(errno));
        if (n > 1000000)
            fprintf(err, "ccdump: note: %llu events: the Perfetto UI may struggle; try --last or "
                         "--rank\n", (unsigned long long)n);
        rc = n == UINT64_MAX || bad ? 2 : 0;
    }
    free(sel.ranks);
    ccd_index_free(ix);
    ccd_job_free(job);
    return rc;
}
