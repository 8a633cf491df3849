/* perfetto_check.c - the trace checker of perfetto_check.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_check.h"

#define EPS 0.002 /* us: ts and dur are printed with 3 decimals each */

typedef struct slice {
    long long pid, tid;
    double ts, end;
} slice_t;

typedef struct flow {
    long long id;
    int starts, ends;
} flow_t;

static char why[300];

static const char *failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return why;
}

static int by_track(const void *a, const void *b)
{
    const slice_t *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the enclosing one first */
}

/* Slices on one track must nest: a stack of open ends. */
static const char *check_nesting(slice_t *s, size_t n)
{
    double *stack = malloc((n + 1) * sizeof(double));
    size_t sp = 0;
    qsort(s, n, sizeof(*s), by_track);
    for (size_t i = 0; i < n; i++) {
        if (i && (s[i].pid != s[i - 1].pid || s[i].tid != s[i - 1].tid)) sp = 0;
        while (sp && stack[sp - 1] <= s[i].ts + EPS)
            sp--;
        if (sp && s[i].end > stack[sp - 1] + EPS) {
            failf("pid %lld tid %lld: slice at %.3f-%.3f overlaps one ending at %.3f", s[i].pid,
                  s[i].tid, s[i].ts, s[i].end, stack[sp - 1]);
            free(stack);
            return why;
        }
        stack[sp++] = s[i].end;
    }
    free(stack);
    return NULL;
}

static flow_t *flow_of(flow_t **v, size_t *n, long long id)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].id == id) return &(*v)[i];
    *v = realloc(*v, (*n + 1) * sizeof(flow_t));
    (*v)[*n] = (flow_t){id, 0, 0};
    return &(*v)[(*n)++];
}

/* One event's own checks; slices and flows are gathered for the global ones. */
static const char *check_event(json_t *e, size_t k, slice_t *sl, size_t *nsl, flow_t **fl, size_t *nfl,
                               ccd_trace_facts_t *f)
{
    const char *ph = json_string_value(json_object_get(e, "ph"));
    json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
    const char *name = json_string_value(json_object_get(e, "name"));
    if (!ph || strlen(ph) != 1 || !json_is_number(ts) || !json_is_integer(json_object_get(e, "pid")) ||
        !json_is_integer(json_object_get(e, "tid")))
        return failf("event %zu lacks ph, ts, pid or tid", k);
    long long pid = json_integer_value(json_object_get(e, "pid")), tid = json_integer_value(json_object_get(e, "tid"));
    switch (ph[0]) {
    case 'X':
        if (!json_is_number(dur) || json_number_value(dur) < 0)
            return failf("complete event %zu has no dur", k);
        sl[(*nsl)++] = (slice_t){pid, tid, json_number_value(ts), json_number_value(ts) + json_number_value(dur)};
        f->open_slices += json_object_get(json_object_get(e, "args"), "open") != NULL;
        if (json_object_get(e, "bind_id")) {
            int out = json_is_true(json_object_get(e, "flow_out")), in = json_is_true(json_object_get(e, "flow_in"));
            if (!json_is_integer(json_object_get(e, "bind_id")) || (!out && !in))
                return failf("event %zu: bind_id without a direction", k);
            flow_t *w = flow_of(fl, nfl, json_integer_value(json_object_get(e, "bind_id")));
            w->starts += out && !in;
            w->ends += in && !out;
        }
        break;
    case 'i': case 'I': {
        const char *s = json_string_value(json_object_get(e, "s"));
        if (s && strcmp(s, "g") && strcmp(s, "p") && strcmp(s, "t"))
            return failf("instant %zu has scope %s", k, s);
        f->timeouts += name && !strncmp(name, "timeout:", 8);
        f->aborts += name && !strncmp(name, "abort:", 6);
        break;
    }
    case 'C': {
        const char *key;
        json_t *v;
        if (!json_is_object(json_object_get(e, "args")))
            return failf("counter %zu has no args", k);
        json_object_foreach(json_object_get(e, "args"), key, v) if (!json_is_number(v))
            return failf("counter %zu: %s is not a number", k, key);
        f->counters++;
        break;
    }
    case 'M': {
        const char *n = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (name && (!strcmp(name, "process_name") || !strcmp(name, "thread_name")) && !n)
            return failf("metadata %zu has no args.name", k);
        f->overlap_tracks += name && !strcmp(name, "thread_name") && strstr(n, "(overlap");
        break;
    }
    case 'B': case 'E': case 's': case 't': case 'f': case 'b': case 'e': case 'n':
        break; /* ccdump writes none of these; the checks below cover X flows */
    default:
        return failf("event %zu has phase %s", k, ph);
    }
    return NULL;
}

/* Every pid with events has a process_name. */
static const char *check_names(json_t *events, ccd_trace_facts_t *f)
{
    size_t n = json_array_size(events), nn = 0, i;
    long long *named = malloc((n + 1) * sizeof(long long));
    json_t *e;
    const char *bad = NULL;
    json_array_foreach(events, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!strcmp(json_string_value(json_object_get(e, "ph")), "M") && name &&
            !strcmp(name, "process_name"))
            named[nn++] = json_integer_value(json_object_get(e, "pid"));
    }
    f->processes = (int)nn;
    json_array_foreach(events, i, e)
    {
        long long pid = json_integer_value(json_object_get(e, "pid"));
        size_t k = 0;
        while (k < nn && named[k] != pid)
            k++;
        if (k == nn && !bad) bad = failf("pid %lld has no process_name", pid);
    }
    free(named);
    return bad;
}

const char *ccd_check_trace(json_t *trace, ccd_trace_facts_t *f)
{
    json_t *events = json_object_get(trace, "traceEvents"), *e;
    size_t n = json_array_size(events), nsl = 0, nfl = 0, k;
    const char *bad = json_is_array(events) ? NULL : "no traceEvents array";
    slice_t *sl = malloc((n + 1) * sizeof(slice_t));
    flow_t *fl = NULL;
    memset(f, 0, sizeof(*f));
    json_array_foreach(events, k, e) if (!bad) bad = check_event(e, k, sl, &nsl, &fl, &nfl, f);
    if (!bad) bad = check_nesting(sl, nsl);
    for (size_t i = 0; !bad && i < nfl; i++)
        if (fl[i].starts != 1 || fl[i].ends != 1)
            bad = failf("flow %lld has %d starts and %d ends", fl[i].id, fl[i].starts, fl[i].ends);
    f->flows = (int)nfl;
    if (!bad) bad = check_names(events, f);
    free(sl);
    free(fl);
    return bad;
}
