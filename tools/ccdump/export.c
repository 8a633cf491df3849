/*
 * export.c - `ccdump export --torch DIR`: each rank's record as the pickle
 * PyTorch's flight recorder writes (REFERENCE.md), so that PyTorch's
 * analyzer (fr_trace / torchfrtrace, which loads pickles only) reads ccomm
 * jobs. The record's JSON dump (a ring is converted as `ccdump json` does)
 * has its entries translated to what PyTorch would have recorded
 * (export_torch.c: names, sizes, numbers; entries the analyzer could not
 * take are left out and listed), then written with PyTorch's types: ints as
 * ints (pg_status too), process_group a tuple, pg_config ranks the string
 * "[0, 1]", frames a list of {name, filename, line}, unknown discovery times
 * None, "entries" always present. ccomm's own keys stay under "ccomm" (the
 * analyzer ignores them; ccdump reads them back), with the process's fate
 * as the ring told it (a dump alone cannot say a process was killed).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ccdump.h"
#include "load.h"
#include "export.h"
#include "pickle.h"

#define DEFAULT_PREFIX "nccl_trace_rank_"

static const char help[] =
    "usage: ccdump export --torch DIR [-p PREFIX] FILE|DIR...\n"
    "Write each rank's record as a pickle that PyTorch's flight recorder analyzer\n"
    "reads (PyTorch 2.5+: python -m torch.distributed.flight_recorder.fr_trace DIR, or\n"
    "torchfrtrace; it reads pickles only): DIR/<PREFIX><rank>, one file per rank.\n"
    "Inputs are ccomm rings, ccomm JSON dumps and PyTorch / torchcomms dumps (JSON or\n"
    "pickle). Entries are written as PyTorch would have recorded them: its op names\n"
    "(\"ccomm:barrier\" is \"nccl:all_reduce_barrier\"), sizes and per-group numbers\n"
    "(a grouped send/recv is a batch with a \"nccl:coalesced\" end). Entries the\n"
    "analyzer could not take are left out, named on stderr and listed in the file's\n"
    "ccomm.left_out. ccomm's own keys stay under \"ccomm\" (the analyzer ignores\n"
    "them; ccdump reads them back, with the same diagnosis as the rings).\n"
    "\n"
    "options:\n"
    "  --torch DIR          the directory to write (created)\n"
    "  -p, --prefix PREFIX  the file name prefix (default " DEFAULT_PREFIX ";\n"
    "                       torchcomms writes comm_lib_trace_rank_)\n"
    "  --in-prefix PREFIX   in input directories, PyTorch dumps are the files named\n"
    "                       PREFIX<rank> (default: inferred from the names)\n";

static void put_key(ccd_pkw_t *w, const char *k)
{
    ccd_pkw_str(w, k, strlen(k));
}

/* An int from a JSON integer, real or decimal string; dflt otherwise. */
static int64_t as_int(const json_t *v, int64_t dflt)
{
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) > -9e18 && json_real_value(v) < 9e18)
        return (int64_t)json_real_value(v);
    const char *s = json_string_value(v);
    char *end;
    if (!s || !*s) return dflt;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    return *end || errno ? dflt : (int64_t)x;
}

static void put_str_or(ccd_pkw_t *w, const json_t *v, const char *dflt)
{
    const char *s = json_string_value(v);
    if (s)
        ccd_pkw_str(w, s, json_string_length(v));
    else
        put_key(w, dflt);
}

/* [[int, ...], ...] with every size an int. */
static void put_sizes(ccd_pkw_t *w, const json_t *v)
{
    size_t i, j;
    json_t *t, *d;
    ccd_pkw_mark(w);
    json_array_foreach(v, i, t)
    {
        ccd_pkw_mark(w);
        json_array_foreach(t, j, d) ccd_pkw_int(w, as_int(d, 0));
        ccd_pkw_list_end(w);
    }
    ccd_pkw_list_end(w);
}

static void put_frames(ccd_pkw_t *w, const json_t *v)
{
    size_t i;
    json_t *f;
    ccd_pkw_mark(w);
    json_array_foreach(v, i, f)
    {
        ccd_pkw_mark(w);
        put_key(w, "name");
        put_str_or(w, json_object_get(f, "name"), "");
        put_key(w, "filename");
        put_str_or(w, json_object_get(f, "filename"), "");
        put_key(w, "line");
        ccd_pkw_int(w, as_int(json_object_get(f, "line"), 0));
        ccd_pkw_dict_end(w);
    }
    ccd_pkw_list_end(w);
}

/* The keys of one entry PyTorch writes, in its order, with its types. */
static const char *const int_keys[] = {"record_id",  "pg_id", "collective_seq_id",
                                       "p2p_seq_id", "op_id", "time_created_ns",
                                       "timeout_ms"};

static int known_key(const char *k)
{
    static const char *const other[] = {"process_group",
                                        "thread_id",
                                        "thread_name",
                                        "profiling_name",
                                        "duration_ms",
                                        "input_sizes",
                                        "input_dtypes",
                                        "output_sizes",
                                        "output_dtypes",
                                        "state",
                                        "time_discovered_started_ns",
                                        "time_discovered_completed_ns",
                                        "retired",
                                        "is_p2p",
                                        "frames"};
    for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++)
        if (!strcmp(k, int_keys[i])) return 1;
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (!strcmp(k, other[i])) return 1;
    return 0;
}

static int put_times(ccd_pkw_t *w, const json_t *e)
{
    static const char *const t[] = {"time_discovered_started_ns", "time_discovered_completed_ns"};
    for (int i = 0; i < 2; i++) {
        int64_t v = as_int(json_object_get(e, t[i]), 0);
        put_key(w, t[i]);
        if (v > 0)
            ccd_pkw_int(w, v);
        else
            ccd_pkw_none(w); /* PyTorch's pickle: None when not known */
    }
    return 0;
}

/* input_sizes, input_dtypes, output_sizes, output_dtypes: lists, [] when absent. */
static int put_tensors(ccd_pkw_t *w, const json_t *e)
{
    json_t *x;
    static const char *const lists[] = {"input_sizes", "input_dtypes", "output_sizes",
                                        "output_dtypes"};
    for (int i = 0; i < 4; i++) {
        put_key(w, lists[i]);
        x = json_object_get(e, lists[i]);
        if (i % 2 == 0) {
            put_sizes(w, x);
        } else if (json_is_array(x)) {
            if (ccd_pkw_json(w, x)) return -1;
        } else {
            ccd_pkw_mark(w);
            ccd_pkw_list_end(w);
        }
    }
    return 0;
}

static int put_entry(ccd_pkw_t *w, const json_t *e)
{
    const json_t *pg = json_object_get(e, "process_group"), *x;
    const char *k;
    ccd_pkw_mark(w);
    for (size_t i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
        put_key(w, int_keys[i]);
        ccd_pkw_int(w, as_int(json_object_get(e, int_keys[i]), i == 1 ? -1 : 0));
    }
    put_key(w, "process_group");
    ccd_pkw_mark(w);
    put_str_or(w, json_array_get(pg, 0), "");
    put_str_or(w, json_array_get(pg, 1), "");
    ccd_pkw_tuple_end(w);
    put_key(w, "thread_id");
    if (json_is_integer(json_object_get(e, "thread_id"))) {
        char tid[24];
        snprintf(tid, sizeof(tid), "%lld", (long long)as_int(json_object_get(e, "thread_id"), 0));
        put_key(w, tid);
    } else {
        put_str_or(w, json_object_get(e, "thread_id"), "");
    }
    put_key(w, "thread_name");
    put_str_or(w, json_object_get(e, "thread_name"), "");
    put_key(w, "profiling_name");
    put_str_or(w, json_object_get(e, "profiling_name"), "");
    if ((x = json_object_get(e, "duration_ms")) && json_is_number(x)) {
        put_key(w, "duration_ms");
        ccd_pkw_float(w, json_number_value(x));
    }
    if (put_tensors(w, e)) return -1;
    put_key(w, "state");
    put_str_or(w, json_object_get(e, "state"), "scheduled");
    put_times(w, e);
    put_key(w, "retired");
    ccd_pkw_bool(w, json_is_true(json_object_get(e, "retired")));
    put_key(w, "is_p2p");
    ccd_pkw_bool(w, json_is_true(json_object_get(e, "is_p2p")));
    put_key(w, "frames");
    put_frames(w, json_object_get(e, "frames"));
    json_object_foreach((json_t *)e, k, x)
    {
        if (known_key(k)) continue;
        put_key(w, k);
        if (ccd_pkw_json(w, x)) return -1;
    }
    ccd_pkw_dict_end(w);
    return 0;
}

/* pg_config: {name: {name, desc, ranks}}, ranks as PyTorch's string "[0, 1]". */
static int put_pg_config(ccd_pkw_t *w, const json_t *cfg, json_t *left)
{
    const char *k;
    json_t *pg;
    ccd_pkw_mark(w);
    json_object_foreach((json_t *)cfg, k, pg)
    {
        char *ranks = json_is_object(pg) ? ccd_torch_ranks(json_object_get(pg, "ranks")) : NULL;
        const char *desc = json_string_value(json_object_get(pg, "desc"));
        if (!ranks) { /* the analyzer's literal_eval of it would fail */
            json_array_append_new(left, json_pack("{s:s, s:s}", "process_group", k, "why",
                                                  "its ranks are not a list of ranks"));
            continue;
        }
        put_key(w, k);
        ccd_pkw_mark(w);
        put_key(w, "name");
        put_key(w, k);
        put_key(w, "desc");
        put_key(w, desc ? desc : "");
        put_key(w, "ranks");
        put_key(w, ranks);
        ccd_pkw_dict_end(w);
        free(ranks);
    }
    ccd_pkw_dict_end(w);
    return 0;
}

/* pg_status: {pg_id: {last_*_collective: int}} (PyTorch's JSON writes strings). */
static void put_pg_status(ccd_pkw_t *w, const json_t *st)
{
    const char *k, *k2;
    json_t *v, *x;
    ccd_pkw_mark(w);
    json_object_foreach((json_t *)st, k, v)
    {
        put_key(w, k);
        ccd_pkw_mark(w);
        json_object_foreach(v, k2, x)
        {
            put_key(w, k2);
            ccd_pkw_int(w, as_int(x, 0));
        }
        ccd_pkw_dict_end(w);
    }
    ccd_pkw_dict_end(w);
}

/*
 * The top-level "ccomm" of the pickle: the dump's, plus what the ring knew
 * of the process (running, stopped, gone: only a ring read on its host can
 * tell, and ccdump reading the export must reach the same verdict) and the
 * entries left out. A PyTorch dump gets one only for the latter, without
 * "format_version", so that ccdump still reads it as PyTorch's.
 */
static json_t *ccomm_top(const ccd_rank_t *r, const json_t *doc, json_t *left)
{
    const json_t *cc = json_object_get(doc, "ccomm");
    json_t *o = json_is_object(cc) ? json_copy((json_t *)cc) : json_object();
    if (!o) return NULL;
    /* The record ends where it ended for ccdump reading the ring: its last dump, or
     * the moment it was read while the process still ran. */
    if (r->src == CCD_SRC_RING)
        json_object_set_new(o, "dump_time_ns",
                            json_integer((json_int_t)(r->alive == 1 ? r->t_taken : r->t_dump)));
    if (r->alive >= 0)
        json_object_set_new(o, "process",
                            json_pack("{s:b, s:b, s:I}", "alive", r->alive == 1, "stopped",
                                      r->stopped == 1, "seen_ns", (json_int_t)r->t_taken));
    if (json_array_size(left)) json_object_set(o, "left_out", left);
    if (!json_object_size(o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The pickle of one rank's dump document, its entries as PyTorch would have them. */
static int put_doc(ccd_pkw_t *w, const ccd_rank_t *r, const json_t *doc, json_t *entries,
                   json_t *left)
{
    const char *k;
    json_t *x;
    size_t i;
    ccd_pkw_start(w);
    ccd_pkw_mark(w);
    put_key(w, "version");
    put_str_or(w, json_object_get(doc, "version"), "2.10");
    put_key(w, "pg_config");
    if (put_pg_config(w, json_object_get(doc, "pg_config"), left)) return -1;
    put_key(w, "pg_status");
    put_pg_status(w, json_object_get(doc, "pg_status"));
    put_key(w, "entries"); /* PyTorch's analyzer needs the key, even with no entry */
    ccd_pkw_mark(w);
    json_array_foreach(entries, i, x) if (put_entry(w, x)) return -1;
    ccd_pkw_list_end(w);
    json_object_foreach((json_t *)doc, k, x)
    {
        static const char *const done[] = {"version", "pg_config", "pg_status", "entries", "ccomm"};
        int skip = 0;
        for (size_t j = 0; j < 5; j++)
            skip |= !strcmp(k, done[j]);
        if (skip) continue;
        put_key(w, k);
        if (ccd_pkw_json(w, x)) return -1;
    }
    json_t *cc = ccomm_top(r, doc, left);
    if (cc) {
        put_key(w, "ccomm");
        int rc = ccd_pkw_json(w, cc);
        json_decref(cc);
        if (rc) return -1;
    }
    ccd_pkw_dict_end(w);
    ccd_pkw_stop(w);
    return w->oom ? -1 : 0;
}

/* Say what was left out of rank r's export (a few lines; the file lists them all). */
static void report_left(const ccd_rank_t *r, const json_t *left, FILE *err)
{
    size_t i, n = json_array_size(left);
    json_t *o;
    json_array_foreach((json_t *)left, i, o)
    {
        if (i == 5) {
            fprintf(err, "ccdump export: rank %d: and %zu more left out\n", r->rank, n - 5);
            break;
        }
        json_t *rid = json_object_get(o, "record_id");
        const char *pg = json_string_value(json_object_get(o, "process_group"));
        if (pg) {
            fprintf(err, "ccdump export: rank %d: process group \"%.40s\" left out: %s\n", r->rank,
                    pg, json_string_value(json_object_get(o, "why")));
            continue;
        }
        fprintf(err, "ccdump export: rank %d: entry %lld", r->rank,
                (long long)json_integer_value(json_object_get(o, "index")));
        if (json_is_integer(rid))
            fprintf(err, " (record %lld)", (long long)json_integer_value(rid));
        fprintf(err, " left out: %s%s\n", json_string_value(json_object_get(o, "why")),
                json_object_get(o, "entry") ? " (kept under ccomm.left_out)" : "");
    }
    if (n)
        fprintf(err,
                "ccdump export: rank %d: %zu of its entries and process groups left out (listed "
                "in the file's ccomm.left_out)\n",
                r->rank, n);
}

/* Write the buffer to path through a temporary file: a reader sees all of it or none. */
static int write_atomic(const char *path, const ccd_pkw_t *w, uint64_t mtime_ns, FILE *err)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(w->buf, 1, w->len, f) != w->len || fclose(f)) {
        fprintf(err, "ccdump: %s: cannot write: %s\n", tmp, strerror(errno));
        if (f) unlink(tmp);
        return -1;
    }
    if (rename(tmp, path)) {
        fprintf(err, "ccdump: %s: cannot rename into place: %s\n", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* A PyTorch dump's record ends when its file was written: the copy keeps that time. */
    struct timespec t[2] = {{0, UTIME_OMIT},
                            {(time_t)(mtime_ns / 1000000000u), (long)(mtime_ns % 1000000000u)}};
    if (mtime_ns && utimensat(AT_FDCWD, path, t, 0))
        fprintf(err, "ccdump: %s: cannot keep the dump's time: %s\n", path, strerror(errno));
    return 0;
}

static int export_rank(const ccd_rank_t *r, const char *dir, const char *prefix, FILE *err)
{
    char why[512] = "", path[PATH_MAX];
    json_t *doc = ccd_rank_doc(r, why, sizeof(why));
    if (!doc) {
        fprintf(err, "ccdump: rank %d: %s\n", r->rank, why);
        return -1;
    }
    ccd_pkw_t w = {0};
    json_t *entries = NULL, *left = NULL;
    int rc = ccd_torch_entries(r, doc, &entries, &left);
    if (!rc) rc = put_doc(&w, r, doc, entries, left);
    if (!rc) report_left(r, left, err);
    json_decref(doc);
    json_decref(entries);
    json_decref(left);
    if (rc) fprintf(err, "ccdump: rank %d: out of memory or a document nested too deep\n", r->rank);
    if (snprintf(path, sizeof(path), "%s/%s%d", dir, prefix, r->rank) >= (int)sizeof(path)) {
        fprintf(err, "ccdump: %s: path too long\n", dir);
        rc = -1;
    }
    if (!rc) rc = write_atomic(path, &w, r->src == CCD_SRC_TORCH_JSON ? r->t_taken : 0, err);
    ccd_pkw_free(&w);
    return rc;
}

int ccdump_export(int argc, char **argv, FILE *out, FILE *err)
{
    const char *dir = NULL, *prefix = DEFAULT_PREFIX, *in_prefix = NULL;
    char **files;
    int nfiles, bad = 0;
    const ccd_opt_t opts[] = {{"--torch", NULL, CCD_OPT_STR, &dir},
                              {"--prefix", "-p", CCD_OPT_STR, &prefix},
                              {"--in-prefix", NULL, CCD_OPT_STR, &in_prefix},
                              {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    if (!dir) {
        fprintf(err, "ccdump export: give --torch DIR (the only format it writes)\n");
        return 2;
    }
    if (strchr(prefix, '/') || !*prefix) {
        fprintf(err, "ccdump export: -p \"%s\": a file name prefix (no '/', not empty)\n", prefix);
        return 2;
    }
    if (mkdir(dir, 0755) && errno != EEXIST) {
        fprintf(err, "ccdump: cannot create %s: %s\n", dir, strerror(errno));
        return 2;
    }
    ccd_job_t *job = ccd_load_inputs_p(files, nfiles, in_prefix, err);
    if (!job) return 2;
    for (int32_t r = 0; r < job->world_size; r++)
        if (job->rank[r]) bad |= export_rank(job->rank[r], dir, prefix, err) != 0;
    ccd_job_free(job);
    return bad ? 2 : 0;
}
