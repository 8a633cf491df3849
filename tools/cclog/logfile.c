/*
 * logfile.c - a whole clog file: the header, the signature table, the rules
 * between lines, and the entries the commands work on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ccomm/types.h"
#include "parse.h"

cl_log_t *cl_log_new(const char *path, FILE *errs, int keep)
{
    cl_log_t *log = calloc(1, sizeof(*log));
    if (!log || !(log->path = strdup(path))) {
        free(log);
        return NULL;
    }
    log->errs = errs;
    log->keep = keep;
    log->rank = -1;
    log->last_us = CL_NO_TIME;
    return log;
}

static void entry_free(cl_entry_t *e)
{
    free(e->text);
    free(e->comm);
    free(e->msg);
    memset(e, 0, sizeof(*e));
}

void cl_log_free(cl_log_t *log)
{
    if (!log) return;
    for (size_t i = 0; i < log->nentries; i++)
        entry_free(&log->entries[i]);
    for (uint32_t i = 0; i < log->nsig; i++) {
        free(log->sigs[i].op);
        free(log->sigs[i].dtype);
        free(log->sigs[i].red_op);
        free(log->sigs[i].comm);
    }
    entry_free(&log->scratch);
    free(log->sigs);
    free(log->entries);
    free(log->host);
    free(log->path);
    free(log);
}

const cl_sig_t *cl_log_sig(const cl_log_t *log, uint32_t n)
{
    return n >= 1 && n <= log->nsig ? &log->sigs[n - 1] : NULL;
}

static void report(cl_log_t *log, const char *what, const char *msg)
{
    if (log->errs) fprintf(log->errs, "%s:%d: %s%s\n", log->path, log->lineno, what, msg);
}

/* The first line must be the header; anything else makes the file unusable. */
static int take_header(cl_log_t *log, const cl_line_t *l, int ok, const char *err)
{
    if (!ok || l->kind != CL_HEADER) {
        report(log, "not a clog file: ", ok ? "the first line is not a V|1 header" : err);
        log->unusable = 1;
        return -1;
    }
    log->host = strdup(l->host);
    if (!log->host) {
        report(log, "", "out of memory");
        log->unusable = 1;
        return -1;
    }
    log->have_header = 1;
    log->base_us = l->base_us;
    log->rank = l->rank;
    log->pid = l->pid;
    for (int i = 0; i < 5; i++)
        if (strchr(l->events, "QSEWA"[i])) log->events |= 1u << i;
    return 0;
}

/* Define C<n>: in order, once. Returns an error message or NULL. */
static const char *add_sig(cl_log_t *log, const cl_line_t *l)
{
    static char msg[96];
    if (l->sig != log->nsig + 1) {
        snprintf(msg, sizeof(msg), "C%u defined %s (the next new signature is C%u)", l->sig,
                 l->sig <= log->nsig ? "again" : "out of order", log->nsig + 1);
        return msg;
    }
    if (log->nsig == log->capsig) { /* doubling: 40k signatures, not 40k copies */
        uint32_t cap = log->capsig ? 2 * log->capsig : 64;
        cl_sig_t *n = cap > log->capsig ? realloc(log->sigs, (size_t)cap * sizeof(*n)) : NULL;
        if (!n) return "out of memory";
        log->sigs = n;
        log->capsig = cap;
    }
    cl_sig_t *s = &log->sigs[log->nsig];
    memset(s, 0, sizeof(*s));
    s->op = strdup(l->op);
    s->dtype = strdup(l->dtype);
    s->red_op = strdup(l->red_op);
    s->comm = strdup(l->comm);
    s->in_count = l->in_count;
    s->out_count = l->out_count;
    s->root = l->root;
    s->peer = l->peer;
    cc_dtype_t d;
    s->elem_size = cc_dtype_parse(l->dtype, &d) == CC_OK ? cc_dtype_size(d) : 0;
    log->nsig++;
    if (!s->op || !s->dtype || !s->red_op || !s->comm) return "out of memory";
    return NULL;
}

/* The rules between lines; fills e from l. Returns an error message or NULL. */
static const char *take_line(cl_log_t *log, const cl_line_t *l, cl_entry_t *e)
{
    e->kind = l->kind;
    e->lineno = log->lineno;
    e->t_us = l->off_us == CL_NO_TIME ? CL_NO_TIME : log->base_us + l->off_us;
    switch (l->kind) {
    case CL_HEADER:
        return "a second V header";
    case CL_SIG:
        e->sig = l->sig;
        return add_sig(log, l);
    case CL_EVENT:
        if (l->sig > log->nsig) return "event of a signature with no sig line before it";
        e->ev = l->ev;
        e->sig = l->sig;
        e->op_id = l->op_id;
        e->seq = l->seq;
        e->dur_us = l->dur_us;
        if (l->status) snprintf(e->status, sizeof(e->status), "%s", l->status);
        if (l->ev == 'A' && (!(e->comm = strdup(l->comm)) || !(e->msg = strdup(l->msg))))
            return "out of memory";
        break;
    case CL_NEW_COMM:
    case CL_END_COMM:
    case CL_SPLIT:
        if (!(e->comm = strdup(l->comm))) return "out of memory";
        break;
    case CL_DROP:
        e->count = l->count;
        log->dropped += l->count;
        break;
    case CL_END:
        log->end_seen = 1;
        break;
    }
    if (e->t_us != CL_NO_TIME && (log->last_us == CL_NO_TIME || e->t_us > log->last_us))
        log->last_us = e->t_us;
    return NULL;
}

static int keep_entry(cl_log_t *log, cl_entry_t *e, const cl_entry_t **out)
{
    if (log->nentries == log->capentries) {
        size_t ncap = log->capentries ? log->capentries * 2 : 256;
        cl_entry_t *n = realloc(log->entries, ncap * sizeof(*n));
        if (!n) return -1;
        log->entries = n;
        log->capentries = ncap;
    }
    log->entries[log->nentries] = *e;
    *out = &log->entries[log->nentries++];
    return 0;
}

/* Hand a good entry out: kept in the array, or in the scratch slot. 0 or -1 (no memory). */
static int deliver(cl_log_t *log, cl_entry_t *e, const cl_entry_t **entry)
{
    if (!log->keep) {
        entry_free(&log->scratch);
        log->scratch = *e;
        *entry = &log->scratch;
        return 0;
    }
    if (keep_entry(log, e, entry) == 0) return 0;
    entry_free(e);
    report(log, "", "out of memory");
    log->nerrors++;
    return -1;
}

/* A bad line: an error, or only a note when it is the cut last line of the file. */
static void reject(cl_log_t *log, int last, const char *why)
{
    if (last) {
        report(log, "truncated last line ignored: ", why);
        log->truncated = 1;
    } else {
        report(log, "", why);
        log->nerrors++;
    }
}

int cl_log_feed(cl_log_t *log, char *line, size_t len, int last, const cl_entry_t **entry)
{
    *entry = NULL;
    log->lineno++;
    if (log->unusable) return -1;
    char err[256] = "";
    cl_line_t l;
    cl_entry_t e;
    memset(&e, 0, sizeof(e));
    /* The copy is taken before parsing: the parser splits and decodes in place. */
    char *text = log->keep ? malloc(len + 1) : NULL;
    if (text) memcpy(text, line, len + 1);
    int ok = memchr(line, '\0', len) ? (snprintf(err, sizeof(err), "NUL byte in the line"), 0)
                                     : cl_parse_line(line, &l, err, sizeof(err)) == 0;
    if (!log->have_header) {
        if (take_header(log, &l, ok, err)) {
            free(text);
            return -1;
        }
        /* The header is kept too (merge prints it), at the base time. */
        e = (cl_entry_t){
            .text = text, .lineno = log->lineno, .kind = CL_HEADER, .t_us = log->base_us};
        deliver(log, &e, entry);
        return 0;
    }
    const char *why = ok ? take_line(log, &l, &e) : err;
    if (!why && log->keep && !text) why = "out of memory";
    if (why) {
        entry_free(&e);
        free(text);
        reject(log, last, why);
        return 0;
    }
    if (last) {
        report(log, "", "the last line has no newline (the file may be cut short)");
        log->truncated = 1;
    }
    e.text = text;
    deliver(log, &e, entry);
    return 0;
}

long cl_read_line(FILE *f, char **buf, size_t *cap, int *nl, int *toolong)
{
    size_t len = 0;
    int ch;
    *nl = 0;
    *toolong = 0;
    while ((ch = getc(f)) != EOF) {
        if (ch == '\n') {
            *nl = 1;
            break;
        }
        if (len >= CL_LINE_MAX) {
            *toolong = 1;
            continue;
        }
        if (len + 2 > *cap) {
            size_t ncap = *cap ? *cap * 2 : 256;
            char *n = realloc(*buf, ncap);
            if (!n) return -2;
            *buf = n;
            *cap = ncap;
        }
        (*buf)[len++] = (char)ch;
    }
    if (ch == EOF && len == 0 && !*toolong) return -1;
    if (!*buf && !(*buf = malloc(1))) return -2;
    (*buf)[len] = '\0';
    return (long)len;
}

cl_log_t *cl_log_load(const char *path, FILE *errs)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errs) fprintf(errs, "%s: cannot open: %s\n", path, strerror(errno));
        return NULL;
    }
    cl_log_t *log = cl_log_new(path, errs, 1);
    char *buf = NULL;
    size_t cap = 0;
    long n = 0;
    int nl, toolong;
    while (log && (n = cl_read_line(f, &buf, &cap, &nl, &toolong)) >= 0) {
        const cl_entry_t *e;
        if (toolong) {
            log->lineno++;
            report(log,
                   log->have_header ? "" : "not a clog file: ", "line longer than 1 MiB, skipped");
            log->nerrors++;
            if (!log->have_header) log->unusable = 1;
            if (log->unusable) break;
            continue;
        }
        if (cl_log_feed(log, buf, (size_t)n, !nl, &e) < 0) break;
    }
    if (log && n == -2) {
        report(log, "", "out of memory; the rest of the file is not read");
        log->unusable = 1;
    }
    if (log && !log->have_header && !log->unusable) {
        if (errs) fprintf(errs, "%s: not a clog file: empty\n", path);
        log->unusable = 1;
    }
    if (!log && errs) fprintf(errs, "%s: out of memory\n", path);
    free(buf);
    fclose(f);
    return log;
}
