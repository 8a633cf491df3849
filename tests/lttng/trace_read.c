/* trace_read.c - babeltrace2 text output reader (see trace_read.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_read.h"

static int parse_line(const char *line, tr_event_t *e)
{
    const char *p = strstr(line, " ccomm:");
    if (!p) return 0;
    p += 7;
    const char *end = strchr(p, ':');
    if (!end || (size_t)(end - p) >= sizeof(e->name)) return 0;
    memcpy(e->name, p, (size_t)(end - p));
    e->name[end - p] = '\0';
    e->text = strdup(end + 1);
    if (!e->text) return -1;
    const char *v = strstr(e->text, "{ vpid = ");
    e->vpid = v ? strtol(v + 9, NULL, 10) : -1;
    return 1;
}

int tr_read(const char *path, tr_trace_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    out->ev = NULL;
    out->n = 0;
    size_t cap = 0;
    char *line = NULL;
    size_t llen = 0;
    int rc = 0;
    while (getline(&line, &llen, f) > 0) {
        tr_event_t e = {0};
        int got = parse_line(line, &e);
        if (got < 0) rc = -1;
        if (got <= 0) continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 256;
            tr_event_t *grown = realloc(out->ev, cap * sizeof(*grown));
            if (!grown) {
                free(e.text);
                rc = -1;
                break;
            }
            out->ev = grown;
        }
        out->ev[out->n++] = e;
    }
    free(line);
    fclose(f);
    return rc;
}

void tr_free(tr_trace_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->ev[i].text);
    free(t->ev);
    t->ev = NULL;
    t->n = 0;
}

/* Where the value of `key` starts: the key must follow "{ " or ", ". */
static const char *find_value(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        if (p - text < 2 || !(p[-2] == '{' || p[-2] == ',') || p[-1] != ' ') continue;
        if (strncmp(p + klen, " = ", 3) == 0) return p + klen + 3;
    }
    return NULL;
}

int tr_field(const tr_event_t *e, const char *key, char *buf, size_t len)
{
    const char *v = find_value(e->text, key);
    if (!v || len == 0) return 0;
    const char *start = v, *stop;
    if (v[0] == '(' && v[1] == ' ' && v[2] == '"') { /* enum: ( "label" : container = n ) */
        start = v + 3;
        stop = strchr(start, '"');
    } else if (v[0] == '"') {
        start = v + 1;
        stop = strchr(start, '"');
    } else {
        stop = start + strcspn(start, ", }\n");
    }
    if (!stop) return 0;
    size_t n = (size_t)(stop - start);
    if (n >= len) n = len - 1;
    memcpy(buf, start, n);
    buf[n] = '\0';
    return 1;
}

uint64_t tr_u64(const tr_event_t *e, const char *key, uint64_t dflt)
{
    char buf[64], *end;
    if (!tr_field(e, key, buf, sizeof(buf))) return dflt;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 0);
    return (errno || end == buf || *end) ? dflt : (uint64_t)v;
}

int64_t tr_i64(const tr_event_t *e, const char *key, int64_t dflt)
{
    char buf[64], *end;
    if (!tr_field(e, key, buf, sizeof(buf))) return dflt;
    errno = 0;
    long long v = strtoll(buf, &end, 0);
    return (errno || end == buf || *end) ? dflt : (int64_t)v;
}

int tr_is(const tr_event_t *e, const char *key, const char *want)
{
    char buf[512];
    return tr_field(e, key, buf, sizeof(buf)) && strcmp(buf, want) == 0;
}
