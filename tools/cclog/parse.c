/*
 * parse.c - one clog line against the grammar of docs/clog-format.md.
 *
 * A line is split at '|' into fields (in place), the first field says the
 * kind, and each kind has a fixed list of fields in a fixed order. Numbers
 * are checked for range, text fields for escapes, so that whatever comes
 * out can be trusted by the commands.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define MAX_FIELDS 12

/* Print at most 40 bytes of untrusted text, with non-printables as '?'. */
static void quote(char *dst, size_t len, const char *s)
{
    size_t o = 0;
    for (; *s && o + 4 < len && o < 40; s++)
        dst[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    if (*s && o + 4 < len) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return n > 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
    size_t n = strlen(s);
    if (!all_digits(s, n) || n > 20) return -1;
    errno = 0;
    unsigned long long x = strtoull(s, NULL, 10);
    if (errno) return -1;
    *v = x;
    return 0;
}

static int parse_i64(const char *s, int64_t *v)
{
    size_t n = strlen(s), neg = s[0] == '-';
    if (!all_digits(s + neg, n - neg) || n - neg > 19) return -1;
    errno = 0;
    long long x = strtoll(s, NULL, 10);
    if (errno) return -1;
    *v = x;
    return 0;
}

static int parse_hex(const char *s, uint64_t *v)
{
    size_t n = strlen(s);
    if (n == 0 || n > 16 || strspn(s, "0123456789abcdefABCDEF") != n) return -1;
    *v = strtoull(s, NULL, 16);
    return 0;
}

/* "[+-]S.UUUUUU" -> µs; sign: 0 none allowed, 1 required. At most 12 digits of seconds. */
static int parse_fixed6(const char *s, int sign, int64_t *us)
{
    int neg = 0;
    if (sign) {
        if (*s != '+' && *s != '-') return -1;
        neg = *s++ == '-';
    }
    const char *dot = strchr(s, '.');
    if (!dot || !all_digits(s, (size_t)(dot - s)) || dot - s > 12) return -1;
    if (strlen(dot + 1) != 6 || !all_digits(dot + 1, 6)) return -1;
    int64_t v = strtoll(s, NULL, 10) * 1000000 + strtoll(dot + 1, NULL, 10);
    *us = neg ? -v : v;
    return 0;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Decode %XX in place. Raw control or non-ASCII bytes, bad escapes and %00 are errors. */
static int decode(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 || ch >= 0x7f) return -1;
        if (ch == '%') {
            int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
            if (lo < 0 || (hi | lo) == 0) return -1;
            *o++ = (char)(hi << 4 | lo);
            p += 2;
        } else {
            *o++ = (char)ch;
        }
    }
    *o = '\0';
    return 0;
}

/* [a-z0-9_]+ (op, dtype, red_op names) or, if dash, "-". */
static int is_name(const char *s, int dash)
{
    if (dash && !strcmp(s, "-")) return 1;
    size_t n = strlen(s);
    return n > 0 && n < 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* Status names: [A-Z_]+, short enough for cl_entry_t.status. */
static int is_status(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 24 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == n;
}

/* "?" or ranges "0-3,8" optionally ending in "..." (cut by the writer). */
static int is_ranks(const char *s)
{
    if (!strcmp(s, "?")) return 1;
    size_t n = strlen(s);
    if (n >= 3 && !strcmp(s + n - 3, "...")) n -= 3;
    if (!n || strspn(s, "0123456789,-") < n) return 0;
    for (size_t i = 0; i < n; i++) /* no empty item, no "--", no dangling separator */
        if ((s[i] == ',' || s[i] == '-') &&
            (i == 0 || i + 1 == n || s[i - 1] == ',' || s[i - 1] == '-'))
            return 0;
    return 1;
}

struct fields {
    char *f[MAX_FIELDS];
    int n;
};

/* "key=value" in field i -> value; on error the message names the field. */
static int kv(struct fields *fs, int i, const char *key, char **val, char *err, size_t errlen)
{
    size_t k = strlen(key);
    if (i >= fs->n)
        return fail(err, errlen, "field %d: expected \"%s=\", the line ends", i + 1, key);
    if (strncmp(fs->f[i], key, k) || fs->f[i][k] != '=') {
        char q[64];
        quote(q, sizeof(q), fs->f[i]);
        return fail(err, errlen, "field %d: expected \"%s=...\", found \"%s\"", i + 1, key, q);
    }
    *val = fs->f[i] + k + 1;
    return 0;
}

/* Typed key=value readers: each reports "field N: bad key value". */
enum vt { V_U64, V_I64, V_HEX, V_TEXT, V_NAME, V_NAME_DASH, V_STATUS, V_DUR };

static int field(struct fields *fs, int i, const char *key, enum vt t, void *out, char *err,
                 size_t errlen)
{
    char *v = NULL; /* kv() sets it when it returns 0 (gcc -O3 cannot tell) */
    if (kv(fs, i, key, &v, err, errlen)) return -1;
    int ok;
    switch (t) {
    case V_U64:
        ok = !parse_u64(v, out);
        break;
    case V_I64:
        ok = !parse_i64(v, out);
        break;
    case V_HEX:
        ok = !parse_hex(v, out);
        break;
    case V_DUR:
        ok = !parse_fixed6(v, 0, out);
        break;
    case V_TEXT:
        ok = !decode(v);
        *(const char **)out = v;
        break;
    case V_NAME:
        ok = is_name(v, 0);
        *(const char **)out = v;
        break;
    case V_NAME_DASH:
        ok = is_name(v, 1);
        *(const char **)out = v;
        break;
    case V_STATUS:
        ok = is_status(v);
        *(const char **)out = v;
        break;
    default:
        ok = 0;
    }
    if (ok) return 0;
    char q[64];
    quote(q, sizeof(q), v);
    return fail(err, errlen, "field %d: bad %s value \"%s\"", i + 1, key, q);
}

/* The last field: the offset; and the field count must match exactly. */
static int offset_last(struct fields *fs, int want, cl_line_t *l, char *err, size_t errlen)
{
    /* Name the kind as the grammar does: "a Q line", "a new_comm line". */
    const char *what = fs->f[0][0] == 'C' && fs->n > 1 ? fs->f[1] : fs->f[0];
    if (fs->n != want)
        return fail(err, errlen, "%d fields, a%s %s line has %d", fs->n,
                    strchr("AEIOUSaeiou", what[0]) ? "n" : "", what, want);
    if (parse_fixed6(fs->f[want - 1], 1, &l->off_us)) {
        char q[64];
        quote(q, sizeof(q), fs->f[want - 1]);
        return fail(err, errlen, "field %d: bad offset \"%s\" (want +S.UUUUUU)", want, q);
    }
    return 0;
}

static int parse_header(struct fields *fs, cl_line_t *l, char *err, size_t errlen)
{
    l->kind = CL_HEADER;
    l->off_us = CL_NO_TIME;
    if (fs->n < 2 || strcmp(fs->f[1], "1")) {
        char q[64];
        quote(q, sizeof(q), fs->n < 2 ? "" : fs->f[1]);
        return fail(err, errlen, "clog version \"%s\" is not supported (this cclog reads 1)", q);
    }
    l->version = 1;
    if (fs->n != 7) return fail(err, errlen, "%d fields, the V line has 7", fs->n);
    char *v;
    if (kv(fs, 2, "base_timestamp", &v, err, errlen)) return -1;
    if (parse_fixed6(v, 0, &l->base_us)) return fail(err, errlen, "field 3: bad base_timestamp");
    if (field(fs, 3, "rank", V_I64, &l->rank, err, errlen) ||
        field(fs, 4, "pid", V_I64, &l->pid, err, errlen) ||
        field(fs, 5, "host", V_TEXT, &l->host, err, errlen))
        return -1;
    char *ev;
    if (kv(fs, 6, "events", &ev, err, errlen)) return -1;
    /* "-" or distinct letters in the order Q S E W A. */
    if (strcmp(ev, "-")) {
        const char *o = "QSEWA";
        for (const char *p = ev; *p; p++) {
            const char *at = strchr(o, *p);
            if (!at) return fail(err, errlen, "field 7: bad events value");
            o = at + 1;
        }
        if (!*ev) return fail(err, errlen, "field 7: bad events value");
    }
    l->events = ev;
    return 0;
}

static int parse_comm_line(struct fields *fs, cl_line_t *l, char *err, size_t errlen)
{
    const char *k = fs->f[0];
    if (!strcmp(k, "new_comm")) {
        l->kind = CL_NEW_COMM;
        if (field(fs, 1, "comm", V_TEXT, &l->comm, err, errlen) ||
            field(fs, 2, "id", V_HEX, &l->comm_id, err, errlen) ||
            field(fs, 3, "rank", V_I64, &l->comm_rank, err, errlen) ||
            field(fs, 4, "size", V_I64, &l->comm_size, err, errlen))
            return -1;
        return offset_last(fs, 6, l, err, errlen);
    }
    if (!strcmp(k, "split")) {
        l->kind = CL_SPLIT;
        char *r;
        if (field(fs, 1, "parent", V_TEXT, &l->parent, err, errlen) ||
            field(fs, 2, "child", V_TEXT, &l->comm, err, errlen) ||
            field(fs, 3, "parent_id", V_HEX, &l->parent_id, err, errlen) ||
            field(fs, 4, "child_id", V_HEX, &l->comm_id, err, errlen) ||
            kv(fs, 5, "ranks", &r, err, errlen))
            return -1;
        if (!is_ranks(r)) return fail(err, errlen, "field 6: bad ranks list");
        l->ranks = r;
        return offset_last(fs, 7, l, err, errlen);
    }
    l->kind = CL_END_COMM;
    if (field(fs, 1, "comm", V_TEXT, &l->comm, err, errlen) ||
        field(fs, 2, "id", V_HEX, &l->comm_id, err, errlen))
        return -1;
    return offset_last(fs, 4, l, err, errlen);
}

static int parse_sig(struct fields *fs, cl_line_t *l, char *err, size_t errlen)
{
    l->kind = CL_SIG;
    l->off_us = CL_NO_TIME;
    if (fs->n != 10) return fail(err, errlen, "%d fields, a sig line has 10", fs->n);
    if (!is_name(fs->f[2], 0)) return fail(err, errlen, "field 3: bad op name");
    l->op = fs->f[2];
    if (field(fs, 3, "in_count", V_U64, &l->in_count, err, errlen) ||
        field(fs, 4, "out_count", V_U64, &l->out_count, err, errlen) ||
        field(fs, 5, "dtype", V_NAME_DASH, &l->dtype, err, errlen) ||
        field(fs, 6, "red_op", V_NAME_DASH, &l->red_op, err, errlen) ||
        field(fs, 7, "root", V_I64, &l->root, err, errlen) ||
        field(fs, 8, "peer", V_I64, &l->peer, err, errlen) ||
        field(fs, 9, "comm", V_TEXT, &l->comm, err, errlen))
        return -1;
    return 0;
}

static int parse_event(struct fields *fs, cl_line_t *l, char *err, size_t errlen)
{
    l->kind = CL_EVENT;
    l->ev = fs->f[1][0];
    if (field(fs, 2, "op_id", V_U64, &l->op_id, err, errlen) ||
        field(fs, 3, "seq", V_U64, &l->seq, err, errlen))
        return -1;
    if (l->ev == 'E') {
        if (field(fs, 4, "status", V_STATUS, &l->status, err, errlen) ||
            field(fs, 5, "dur", V_DUR, &l->dur_us, err, errlen))
            return -1;
        return offset_last(fs, 7, l, err, errlen);
    }
    if (l->ev == 'A') {
        if (field(fs, 4, "comm", V_TEXT, &l->comm, err, errlen) ||
            field(fs, 5, "reason", V_STATUS, &l->status, err, errlen) ||
            field(fs, 6, "msg", V_TEXT, &l->msg, err, errlen))
            return -1;
        return offset_last(fs, 8, l, err, errlen);
    }
    return offset_last(fs, 5, l, err, errlen);
}

/* "C<n>|..." lines: a sig, or an event of signature n (C0: an abort without an op). */
static int parse_c(struct fields *fs, cl_line_t *l, char *err, size_t errlen)
{
    uint64_t n;
    if (parse_u64(fs->f[0] + 1, &n) || n > UINT32_MAX || (fs->f[0][1] == '0' && fs->f[0][2]))
        return fail(err, errlen, "field 1: bad signature number");
    l->sig = (uint32_t)n;
    if (fs->n < 2) return fail(err, errlen, "a C line needs an event");
    const char *ev = fs->f[1];
    if (!strcmp(ev, "sig")) {
        if (!n) return fail(err, errlen, "C0 is not a signature");
        return parse_sig(fs, l, err, errlen);
    }
    if (strlen(ev) != 1 || !strchr("QSEWA", ev[0])) {
        char q[64];
        quote(q, sizeof(q), ev);
        return fail(err, errlen, "field 2: unknown event \"%s\" (want sig, Q, S, E, W or A)", q);
    }
    if (!n && ev[0] != 'A') return fail(err, errlen, "C0 is only for A lines");
    return parse_event(fs, l, err, errlen);
}

int cl_parse_line(char *line, cl_line_t *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof(*l));
    struct fields fs = {{0}, 0};
    for (char *p = line;;) {
        if (fs.n == MAX_FIELDS) return fail(err, errlen, "more than %d fields", MAX_FIELDS);
        fs.f[fs.n++] = p;
        char *bar = strchr(p, '|');
        if (!bar) break;
        *bar = '\0';
        p = bar + 1;
    }
    const char *k = fs.f[0];
    if (!strcmp(k, "V")) return parse_header(&fs, l, err, errlen);
    if (!strcmp(k, "new_comm") || !strcmp(k, "split") || !strcmp(k, "end_comm"))
        return parse_comm_line(&fs, l, err, errlen);
    if (k[0] == 'C') return parse_c(&fs, l, err, errlen);
    if (!strcmp(k, "DROP")) {
        l->kind = CL_DROP;
        if (field(&fs, 1, "count", V_U64, &l->count, err, errlen) ||
            field(&fs, 2, "total", V_U64, &l->total, err, errlen))
            return -1;
        return offset_last(&fs, 4, l, err, errlen);
    }
    if (!strcmp(k, "END")) {
        l->kind = CL_END;
        if (field(&fs, 1, "dropped", V_U64, &l->total, err, errlen)) return -1;
        return offset_last(&fs, 3, l, err, errlen);
    }
    char q[64];
    quote(q, sizeof(q), k);
    return fail(err, errlen, "unknown line kind \"%s\"", q);
}

/* A decoded string for the dump: quoted, with '"', '\\' and non-printables escaped. */
static void dump_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(out, "\\x%02x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

void cl_fmt_time(int64_t us, char *buf, size_t len)
{
    uint64_t a = us < 0 ? 0 - (uint64_t)us : (uint64_t)us;
    snprintf(buf, len, "%s%" PRIu64 ".%06" PRIu64, us < 0 ? "-" : "", a / 1000000, a % 1000000);
}

void cl_fmt_offset(int64_t us, char *buf, size_t len)
{
    uint64_t a = us < 0 ? 0 - (uint64_t)us : (uint64_t)us;
    snprintf(buf, len, "%c%" PRIu64 ".%06" PRIu64, us < 0 ? '-' : '+', a / 1000000, a % 1000000);
}

void cl_line_dump(const cl_line_t *l, FILE *out)
{
    char t[32] = "", d[32];
    if (l->off_us != CL_NO_TIME) cl_fmt_offset(l->off_us, t, sizeof(t));
    switch (l->kind) {
    case CL_HEADER:
        cl_fmt_time(l->base_us, d, sizeof(d));
        fprintf(out, "header version=%d base=%s rank=%" PRId64 " pid=%" PRId64 " host=", l->version,
                d, l->rank, l->pid);
        dump_str(out, l->host);
        fprintf(out, " events=%s", l->events);
        break;
    case CL_NEW_COMM:
        fprintf(out, "new_comm comm=");
        dump_str(out, l->comm);
        fprintf(out, " id=%016" PRIx64 " rank=%" PRId64 " size=%" PRId64 " t=%s", l->comm_id,
                l->comm_rank, l->comm_size, t);
        break;
    case CL_SPLIT:
        fprintf(out, "split parent=");
        dump_str(out, l->parent);
        fprintf(out, " child=");
        dump_str(out, l->comm);
        fprintf(out, " parent_id=%016" PRIx64 " child_id=%016" PRIx64 " ranks=%s t=%s",
                l->parent_id, l->comm_id, l->ranks, t);
        break;
    case CL_END_COMM:
        fprintf(out, "end_comm comm=");
        dump_str(out, l->comm);
        fprintf(out, " id=%016" PRIx64 " t=%s", l->comm_id, t);
        break;
    case CL_SIG:
        fprintf(out,
                "sig C%u op=%s in=%" PRIu64 " out=%" PRIu64 " dtype=%s red_op=%s root=%" PRId64
                " peer=%" PRId64 " comm=",
                l->sig, l->op, l->in_count, l->out_count, l->dtype, l->red_op, l->root, l->peer);
        dump_str(out, l->comm);
        break;
    case CL_EVENT:
        fprintf(out, "event C%u %c op_id=%" PRIu64 " seq=%" PRIu64, l->sig, l->ev, l->op_id,
                l->seq);
        if (l->ev == 'E') {
            cl_fmt_time(l->dur_us, d, sizeof(d));
            fprintf(out, " status=%s dur=%s", l->status, d);
        } else if (l->ev == 'A') {
            fprintf(out, " comm=");
            dump_str(out, l->comm);
            fprintf(out, " reason=%s msg=", l->status);
            dump_str(out, l->msg);
        }
        fprintf(out, " t=%s", t);
        break;
    case CL_DROP:
        fprintf(out, "drop count=%" PRIu64 " total=%" PRIu64 " t=%s", l->count, l->total, t);
        break;
    case CL_END:
        fprintf(out, "end dropped=%" PRIu64 " t=%s", l->total, t);
        break;
    }
    fputc('\n', out);
}
