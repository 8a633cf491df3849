/*
 * load.c - finding and loading the inputs: files named on the command line
 * are read whatever their name (the content decides: ring magic, JSON,
 * pickle); directories are searched a few levels deep for the names ccomm
 * and PyTorch give their files. A file that cannot be used is reported with
 * its reason and the others still count.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "pickle.h"

#define MAX_DEPTH 4 /* dumps/<job>/rank<r>.json is two below the dump directory */

int ccd_sniff(const char *path, char *err, size_t errlen)
{
    unsigned char b[16];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return CCD_KIND_UNKNOWN;
    }
    ssize_t n = read(fd, b, sizeof(b));
    close(fd);
    if (n >= 8 && !memcmp(b, CC__FR_MAGIC, 8)) return CCD_KIND_RING;
    ssize_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t'))
        i++;
    if (i < n && (b[i] == '{' || b[i] == '[')) return CCD_KIND_JSON;
    /* PROTO first: the reader names a protocol it does not read. */
    if (n >= 1 && b[0] == 0x80) return CCD_KIND_PICKLE;
    snprintf(err, errlen,
             n <= 0 ? "empty file" : "neither a ccomm ring file nor a JSON dump, nor a pickle");
    return CCD_KIND_UNKNOWN;
}

json_t *ccd_json_parse(const char *buf, size_t len, const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        snprintf(err, errlen, "%s:%d:%d: invalid JSON: %s", path ? path : "-", je.line, je.column,
                 je.text);
    return doc;
}

/* The whole file in memory (bounded), or NULL with err set. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot read: %s", fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > CCD_JSON_MAX_BYTES) {
        snprintf(err, errlen, "%lld bytes: too large for a flight recorder dump (limit %llu)",
                 (long long)st.st_size, CCD_JSON_MAX_BYTES);
        close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf) snprintf(err, errlen, "out of memory");
    *len = got;
    return buf;
}

/* One document into the job, dated by its file when it does not say when it was taken. */
static int add_doc(ccd_job_t *job, json_t *doc, const char *name, uint64_t mtime, char *err,
                   size_t errlen)
{
    ccd_rank_t *r = NULL;
    int rc = ccd_load_json_doc(job, doc, name, &r, err, errlen);
    if (rc != CCD_LOAD_OK) return rc;
    /* A dump that does not say when it was taken (PyTorch's, older ccomm ones)
     * was written when its file was: ops still open then had waited until then. */
    if (!json_object_get(json_object_get(doc, "ccomm"), "dump_time_ns") && mtime > r->t_dump)
        r->t_dump = r->t_taken = mtime;
    if (!ccd_job_add(job, r)) return CCD_LOAD_OK;
    ccd_rank_free(r);
    snprintf(err, errlen, "out of memory");
    return CCD_LOAD_OOM;
}

/* `ccdump json --merged` output: {"ccdump_merged", "ranks": {"<rank>": dump}}. */
static int add_merged(ccd_job_t *job, json_t *doc, const char *path, uint64_t mtime, char *err,
                      size_t errlen)
{
    const char *key;
    json_t *d;
    int n = 0;
    json_object_foreach(json_object_get(doc, "ranks"), key, d)
    {
        char name[PATH_MAX];
        /* The rank goes last in the name: PyTorch's documents have no "rank" key. */
        snprintf(name, sizeof(name), "%s#%.12s", path, key);
        int rc = add_doc(job, d, name, mtime, err, errlen);
        if (rc == CCD_LOAD_OOM) return rc;
        if (rc != CCD_LOAD_OK) ccd_note(job, "%s: unusable: %s", name, err);
        n += rc == CCD_LOAD_OK;
    }
    if (!n) snprintf(err, errlen, "a merged document without a usable rank");
    return n ? CCD_LOAD_OK : CCD_LOAD_BAD;
}

json_t *ccd_read_doc(const char *path, int kind, char *err, size_t errlen)
{
    size_t len = 0;
    char *buf = read_file(path, &len, err, errlen);
    if (!buf) return NULL;
    json_t *doc = kind == CCD_KIND_PICKLE
                      ? ccd_pickle_parse((const unsigned char *)buf, len, err, errlen)
                      : ccd_json_parse(buf, len, path, err, errlen);
    free(buf);
    return doc;
}

/* A JSON or pickle dump (or a merged document) into the job. */
static int load_doc_file(ccd_job_t *job, const char *path, int kind, char *err, size_t errlen)
{
    json_t *doc = ccd_read_doc(path, kind, err, errlen);
    if (!doc) return CCD_LOAD_BAD;
    struct stat st;
    uint64_t mtime = 0;
    if (!stat(path, &st))
        mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    int rc = json_object_get(doc, "ccdump_merged") ? add_merged(job, doc, path, mtime, err, errlen)
                                                   : add_doc(job, doc, path, mtime, err, errlen);
    json_decref(doc);
    return rc;
}

int ccd_load_json(ccd_job_t *job, const char *path, char *err, size_t errlen)
{
    return load_doc_file(job, path, CCD_KIND_JSON, err, errlen);
}

int ccd_load_pickle(ccd_job_t *job, const char *path, char *err, size_t errlen)
{
    return load_doc_file(job, path, CCD_KIND_PICKLE, err, errlen);
}

/* ---- is the process still there? ------------------------------------------ */

static uint64_t boot_time_ns(void)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    unsigned long long bt = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %llu", &bt) == 1) break;
    if (f) fclose(f);
    return (uint64_t)bt * 1000000000ull;
}

void ccd_probe_process(ccd_rank_t *r)
{
    char host[64] = "", path[64], buf[1024];
    if (r->closed == 1) {
        r->alive = 0; /* the ring says the process exited or closed it */
        return;
    }
    if (gethostname(host, sizeof(host) - 1) || strcmp(host, r->host) || r->pid <= 0) return;
    snprintf(path, sizeof(path), "/proc/%d/stat", r->pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything: parse after it */
    char state = 0;
    unsigned long long start = 0;
    if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                             "%*s %*s %*s %llu",
                     &state, &start) != 2) {
        r->alive = 0;
        return;
    }
    /* A process younger than the ring is another one that got the pid. */
    uint64_t born = boot_time_ns() + start * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
    if (state == 'Z' || state == 'X' || (r->t_opened && born > r->t_opened + 2000000000ull)) {
        r->alive = 0;
        return;
    }
    r->alive = 1;
    r->stopped = state == 'T' || state == 't';
}

/* ---- finding the files ---------------------------------------------------- */

typedef struct flist {
    char **v;
    int n, cap;
} flist_t;

static int flist_add(flist_t *l, const char *path)
{
    if (l->n == l->cap) {
        int c = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, (size_t)c * sizeof(*v));
        if (!v) return -1;
        l->v = v;
        l->cap = c;
    }
    return (l->v[l->n] = strdup(path)) ? (l->n++, 0) : -1;
}

/* A directory walk: the files to load, and PyTorch-style "<prefix><rank>" candidates. */
typedef struct walk {
    flist_t *l;
    flist_t bare;       /* names ending in a rank, prefix not yet known */
    const char *prefix; /* -p, or NULL */
    int tmp;            /* half-written dumps seen */
} walk_t;

/* The names ccomm and PyTorch give their files; ".tmp." files are half-written dumps. */
static int wanted_name(const char *name, const char *prefix)
{
    size_t n = strlen(name);
    if (strstr(name, ".tmp.")) return 0;
    if (n > 5 && !strcmp(name + n - 5, ".ccfr")) return 1;
    if (n > 5 && !strcmp(name + n - 5, ".json")) return 1;
    if (prefix) return strstr(name, prefix) && ccd_name_rank(name, prefix) >= 0;
    return strstr(name, "_rank_") && n && name[n - 1] >= '0' && name[n - 1] <= '9';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(walk_t *w, const char *dir, int depth, FILE *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(err, "ccdump: %s: cannot read the directory: %s\n", dir, strerror(errno));
        return 0;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path)) continue;
        struct stat st;
        if (lstat(path, &st)) continue; /* links are not followed inside directories */
        if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
            rc = walk(w, path, depth + 1, err);
        else if (S_ISREG(st.st_mode) && wanted_name(de->d_name, w->prefix))
            rc = flist_add(w->l, path);
        else if (S_ISREG(st.st_mode) && !w->prefix && ccd_bare_prefix(de->d_name))
            rc = flist_add(&w->bare, path);
        else if (S_ISREG(st.st_mode) && strstr(de->d_name, ".json.tmp."))
            w->tmp++;
    }
    closedir(d);
    return rc;
}

/*
 * PyTorch's analyzer infers the prefix when every file name ending in a rank
 * has the same one: those are loaded; with several, none (-p chooses).
 */
static int take_bare(walk_t *w, const char *dir, FILE *err)
{
    const char *first = NULL, *other = NULL;
    size_t plen = 0;
    int rc = 0;
    for (int i = 0; i < w->bare.n && !other; i++) {
        const char *b = strrchr(w->bare.v[i], '/') + 1; /* walk() made path = dir/name */
        size_t k = ccd_bare_prefix(b);
        if (!first)
            first = b, plen = k;
        else if (k != plen || strncmp(first, b, k))
            other = b;
    }
    if (other)
        fprintf(err,
                "ccdump: %s: files named <prefix><rank> with several prefixes (\"%.*s\", "
                "\"%.*s\"): skipped; give -p PREFIX to read them\n",
                dir, (int)plen, first, (int)ccd_bare_prefix(other), other);
    for (int i = 0; i < w->bare.n && !rc; i++)
        rc = other ? 0 : flist_add(w->l, w->bare.v[i]);
    ccd_free_inputs(w->bare.v, w->bare.n);
    memset(&w->bare, 0, sizeof(w->bare));
    return rc;
}

char **ccd_find_inputs_p(char **paths, int n, const char *prefix, FILE *err, int *count)
{
    flist_t l = {0};
    walk_t w = {.l = &l, .prefix = prefix};
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        struct stat st;
        if (stat(paths[i], &st)) {
            fprintf(err, "ccdump: %s: %s\n", paths[i], strerror(errno));
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc = flist_add(&l, paths[i]);
            continue;
        }
        int first = l.n;
        rc = walk(&w, paths[i], 1, err);
        if (!rc) rc = take_bare(&w, paths[i], err);
        if (l.n > first) qsort(l.v + first, (size_t)(l.n - first), sizeof(char *), cmp_str);
    }
    ccd_free_inputs(w.bare.v, w.bare.n);
    if (w.tmp)
        fprintf(err,
                "ccdump: note: %d half-written dump(s) (*.json.tmp.<pid>) skipped: their "
                "process ended while writing them\n",
                w.tmp);
    if (rc) {
        fprintf(err, "ccdump: out of memory listing the inputs\n");
        ccd_free_inputs(l.v, l.n);
        *count = -1;
        return NULL;
    }
    *count = l.n;
    return l.v;
}

char **ccd_find_inputs(char **paths, int n, FILE *err, int *count)
{
    return ccd_find_inputs_p(paths, n, NULL, err, count);
}

void ccd_free_inputs(char **files, int count)
{
    for (int i = 0; files && i < count; i++)
        free(files[i]);
    free(files);
}

/* Load one file; unusable files are reported and counted. -1 only when out of memory. */
static int load_one(ccd_job_t *job, const char *path, FILE *err)
{
    char why[512] = "";
    ccd_rank_t *r = NULL;
    int rc = CCD_LOAD_BAD;
    int kind = ccd_sniff(path, why, sizeof(why));
    job->nfiles++;
    if (kind == CCD_KIND_RING) rc = ccd_load_ring(job, path, &r, why, sizeof(why));
    if (kind == CCD_KIND_JSON || kind == CCD_KIND_PICKLE) {
        rc = load_doc_file(job, path, kind, why, sizeof(why));
        if (rc == CCD_LOAD_OK) return 0;
    }
    if (rc == CCD_LOAD_OK) {
        if (r->src == CCD_SRC_RING) ccd_probe_process(r);
        if (!ccd_job_add(job, r)) return 0;
        ccd_rank_free(r);
        rc = CCD_LOAD_OOM;
    }
    fprintf(err, "ccdump: %s: %s\n", path, why);
    ccd_note(job, "%s: unusable: %s", path, why);
    job->nbad++;
    return rc == CCD_LOAD_OOM ? -1 : 0;
}

ccd_job_t *ccd_load_inputs(char **paths, int n, FILE *err)
{
    return ccd_load_inputs_p(paths, n, NULL, err);
}

ccd_job_t *ccd_load_inputs_p(char **paths, int n, const char *prefix, FILE *err)
{
    int count = -1;
    char **files = ccd_find_inputs_p(paths, n, prefix, err, &count);
    if (!count) {
        fprintf(err, "ccdump: no ring file or dump found in the input\n");
        return NULL;
    }
    ccd_job_t *job = files ? ccd_job_new() : NULL;
    if (job) job->prefix = prefix;
    int rc = job ? 0 : -1;
    for (int i = 0; i < count && !rc; i++)
        rc = load_one(job, files[i], err);
    ccd_free_inputs(files, count);
    if (!rc && job) rc = ccd_job_finish(job);
    if (rc) {
        fprintf(err, "ccdump: out of memory loading the inputs\n");
        ccd_job_free(job);
        return NULL;
    }
    int32_t kept = 0;
    for (int32_t w = 0; w < job->world_size; w++)
        kept += job->rank[w] != NULL;
    if (!kept) {
        fprintf(err, "ccdump: no usable ring file or dump among %u file(s)\n", job->nfiles);
        /* The other notes (skipped half-written dumps, ...); each unusable file
         * was named as it was read (load_one). */
        for (uint32_t i = 0; i < job->notes.n; i++)
            if (!strstr(job->notes.v[i], ": unusable: ")) fprintf(err, "ccdump: %s\n", job->notes.v[i]);
        ccd_job_free(job);
        return NULL;
    }
    return job;
}
