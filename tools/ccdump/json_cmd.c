/*
 * json_cmd.c - `ccdump json`: the PyTorch-compatible JSON of each rank's
 * record. A ring is converted with the recorder's own dump builder (the same
 * document the process would have written; frames are symbolised when the
 * ring was written on this host); a JSON dump is passed through. One file
 * per rank, or one merged document written piece by piece (a thousand
 * ranks' documents are never all in memory at once).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccdump.h"
#include "load.h"
#include "recorder/dump.h"

static const char help[] =
    "usage: ccdump json FILE|DIR... -o DIR [--merged FILE]\n"
    "Write each rank's record as a flight recorder JSON dump in PyTorch's format\n"
    "(version 2.10, with ccomm's keys under \"ccomm\"; docs/recorder-format.md), named\n"
    "DIR/rank<r>.json. Rings are converted (stack frames symbolised when the ring was\n"
    "written on this host); JSON dumps are copied as they are. One record per rank:\n"
    "the richest of its files.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR   the directory to write (created)\n"
    "  --merged FILE      (also) one document: {\"ccdump_merged\": \"1.0\", \"job_id\",\n"
    "                     \"world_size\", \"ranks\": {\"<rank>\": <dump>, ...}}\n"
    "  -p, --prefix PREFIX  PyTorch dumps in directories: files named PREFIX<rank>\n"
    "                       (default: inferred from the names, as PyTorch's analyzer does)\n";

json_t *ccd_rank_doc(const ccd_rank_t *r, char *err, size_t errlen)
{
    if (r->src != CCD_SRC_RING) {
        char why[400] = "";
        int kind = ccd_sniff(r->path, why, sizeof(why));
        json_t *j = kind == CCD_KIND_JSON || kind == CCD_KIND_PICKLE
                        ? ccd_read_doc(r->path, kind, why, sizeof(why))
                        : NULL;
        if (!j) snprintf(err, errlen, "%s: %s", r->path, why);
        return j;
    }
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    json_t *j = NULL;
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    if (cc__fr_reader_open(r->path, &rd, err, errlen) == CC_OK &&
        cc__fr_reader_snapshot(rd, &s, err, errlen) == CC_OK) {
        j = cc__fr_json(s, strcmp(host, s->hdr.host) ? 0 : CC__FR_JSON_FRAMES);
        if (!j) snprintf(err, errlen, "out of memory");
    }
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(rd);
    return j;
}

static int write_each(const ccd_job_t *job, const char *dir, FILE *err)
{
    int bad = 0;
    if (mkdir(dir, 0755) && errno != EEXIST) {
        fprintf(err, "ccdump: cannot create %s: %s\n", dir, strerror(errno));
        return 2;
    }
    for (int32_t w = 0; w < job->world_size; w++) {
        const ccd_rank_t *r = job->rank[w];
        char why[512] = "", path[PATH_MAX];
        if (!r) continue;
        json_t *j = ccd_rank_doc(r, why, sizeof(why));
        snprintf(path, sizeof(path), "%s/rank%d.json", dir, w);
        if (!j || cc__fr_json_write(j, path) != CC_OK) {
            fprintf(err, "ccdump: rank %d: %s\n", w, j ? "cannot write the file" : why);
            bad = 1;
        }
        json_decref(j);
    }
    return bad ? 2 : 0;
}

static int write_merged(const ccd_job_t *job, const char *path, FILE *err)
{
    FILE *f = fopen(path, "w");
    int first = 1, bad = 0;
    if (!f) {
        fprintf(err, "ccdump: cannot create %s: %s\n", path, strerror(errno));
        return 2;
    }
    json_t *job_id = json_string(job->job_id);
    fprintf(f, "{\"ccdump_merged\": \"1.0\", \"job_id\": ");
    json_dumpf(job_id, f, JSON_ENCODE_ANY);
    json_decref(job_id);
    fprintf(f, ", \"world_size\": %d, \"ranks\": {", job->world_size);
    for (int32_t w = 0; w < job->world_size; w++) {
        char why[512] = "";
        if (!job->rank[w]) continue;
        json_t *j = ccd_rank_doc(job->rank[w], why, sizeof(why));
        if (!j) {
            fprintf(err, "ccdump: rank %d: %s\n", w, why);
            bad = 1;
            continue;
        }
        fprintf(f, "%s\n\"%d\": ", first ? "" : ",", w);
        json_dumpf(j, f, JSON_COMPACT);
        json_decref(j);
        first = 0;
    }
    fprintf(f, "\n}}\n");
    if (fclose(f)) {
        fprintf(err, "ccdump: cannot write %s: %s\n", path, strerror(errno));
        return 2;
    }
    return bad ? 2 : 0;
}

int ccdump_json(int argc, char **argv, FILE *out, FILE *err)
{
    const char *dir = NULL, *merged = NULL;
    char **files;
    int nfiles;
    const char *prefix = NULL;
    const ccd_opt_t opts[] = {{"--output", "-o", CCD_OPT_STR, &dir},
                              {"--merged", NULL, CCD_OPT_STR, &merged},
                              {"--prefix", "-p", CCD_OPT_STR, &prefix},
                              {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    if (!dir && !merged) {
        fprintf(err, "ccdump json: give -o DIR, --merged FILE, or both\n");
        return 2;
    }
    ccd_job_t *job = ccd_load_inputs_p(files, nfiles, prefix, err);
    if (!job) return 2;
    rc = dir ? write_each(job, dir, err) : 0;
    if (merged && write_merged(job, merged, err)) rc = 2;
    ccd_job_free(job);
    return rc;
}
