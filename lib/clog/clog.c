/*
 * clog.c - clog loggers: open, flush, close; the process's own logger
 * (CCOMM_CLOG); the flush at exit.
 *
 * Every open logger is on a list so that an atexit handler can drain it and
 * write its END line. At exit the logger is drained but not freed: a thread
 * still running ops may still push records into it, which must stay safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "clog/clog_internal.h"
#include "base/config.h"
#include "base/fsutil.h"
#include "base/log.h"

static pthread_mutex_t g_open_lock = PTHREAD_MUTEX_INITIALIZER;
static cc_clog_t *g_open; /* open loggers (next_open) */
static int g_atexit_done; /* the exit handler is registered */
static cc_clog_t *g_auto; /* the CCOMM_CLOG logger */

/* The magic is cleared first thing at close, so a stale handle fails here. */
int cc__clog_valid(const cc_clog_t *c)
{
    return c && atomic_load(&((cc_clog_t *)c)->magic) == CC__CLOG_MAGIC;
}

cc_status_t cc_clog_parse_events(const char *text, unsigned *mask)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {{"ALL", CC_CLOG_ALL}, {"LIFECYCLE", CC_CLOG_LIFECYCLE},
                 {"Q", CC_CLOG_Q},     {"S", CC_CLOG_S},
                 {"E", CC_CLOG_E},     {"W", CC_CLOG_W},
                 {"A", CC_CLOG_A}};
    char buf[128];
    if (!text || !mask || !*text || strlen(text) >= sizeof(buf)) {
        cc_log_error(CC_SUBSYS_CLOG, "clog events \"%s\": %s", text ? text : "(null)",
                     !text || !*text ? "empty"
                     : !mask         ? "mask is NULL"
                                     : "too long");
        return CC_ERR_INVALID_ARG;
    }
    /* strtok_r writes into its input: work on a copy of the caller's text. */
    memcpy(buf, text, strlen(text) + 1);
    unsigned m = 0;
    int ntok = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        /* "Q, E" is as good as "Q,E": trim the spaces around each name. */
        while (*tok == ' ')
            tok++;
        for (char *e = tok + strlen(tok); e > tok && e[-1] == ' ';)
            *--e = '\0';
        size_t i = 0;
        while (i < sizeof(names) / sizeof(names[0]) && strcasecmp(tok, names[i].name))
            i++;
        if (i == sizeof(names) / sizeof(names[0])) {
            cc_log_error(CC_SUBSYS_CLOG,
                         "clog events \"%s\": unknown event \"%s\" (want ALL, "
                         "LIFECYCLE or Q, S, E, W, A)",
                         text, tok);
            return CC_ERR_INVALID_ARG;
        }
        m |= names[i].bits;
        ntok++;
    }
    if (!ntok) {
        cc_log_error(CC_SUBSYS_CLOG, "clog events \"%s\": no event named", text);
        return CC_ERR_INVALID_ARG;
    }
    *mask = m;
    return CC_OK;
}

/*
 * Strict on purpose: an unknown %-sequence or an unknown rank is an error,
 * not a literal, because a typo would otherwise make every rank write the
 * same file.
 */
cc_status_t cc__clog_expand_path(const char *pat, int rank, char *out, size_t outlen)
{
    char host[256];
    size_t o = 0;
    for (const char *p = pat; *p; p++) {
        /* Each step appends one piece: a plain byte or an expansion. */
        char tmp[280];
        const char *piece = tmp;
        if (*p != '%') {
            tmp[0] = *p;
            tmp[1] = '\0';
        } else if (p[1] == 'r' && rank < 0) {
            cc_log_error(CC_SUBSYS_CLOG, "clog path \"%s\": %%r is used but the rank is unknown",
                         pat);
            return CC_ERR_INVALID_ARG;
        } else if (p[1] == 'r' || p[1] == 'p') {
            snprintf(tmp, sizeof(tmp), "%d", p[1] == 'r' ? rank : (int)getpid());
            p++;
        } else if (p[1] == 'h') {
            if (gethostname(host, sizeof(host) - 1) != 0) strcpy(host, "unknown");
            host[sizeof(host) - 1] = '\0';
            piece = host;
            p++;
        } else if (p[1] == '%') {
            piece = "%";
            p++;
        } else {
            cc_log_error(CC_SUBSYS_CLOG,
                         "clog path \"%s\": unknown \"%%%.1s\" (use %%r, %%p, %%h or %%%%)", pat,
                         p[1] ? p + 1 : "");
            return CC_ERR_INVALID_ARG;
        }
        size_t n = strlen(piece);
        if (o + n + 1 > outlen) {
            cc_log_error(CC_SUBSYS_CLOG, "clog path \"%s\": longer than %zu bytes once expanded",
                         pat, outlen - 1);
            return CC_ERR_INVALID_ARG;
        }
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return CC_OK;
}

/* Check and complete the caller's config (struct_size lets it be older or newer). */
static cc_status_t take_config(const cc_clog_config_t *in, cc_clog_config_t *out)
{
    cc_clog_config_t def = CC_CLOG_CONFIG_INIT;
    *out = def;
    if (in) {
        if (in->struct_size < offsetof(cc_clog_config_t, rank)) {
            cc_log_error(CC_SUBSYS_CLOG,
                         "cc_clog_open: config->struct_size %zu is too small "
                         "(use CC_CLOG_CONFIG_INIT)",
                         in->struct_size);
            return CC_ERR_INVALID_ARG;
        }
        /* An older caller's struct is a prefix of ours; a newer one's fields past ours are
         * unknown here and ignored. */
        memcpy(out, in, in->struct_size < sizeof(*out) ? in->struct_size : sizeof(*out));
    }
    uint32_t n = out->ring_records ? out->ring_records : CC__CLOG_DEFAULT_RING;
    if (out->events & ~CC_CLOG_ALL || n < 2 || (n & (n - 1)) || n > (1u << 24) ||
        out->flush_timeout_ms < 0 || out->rank < -1) {
        cc_log_error(CC_SUBSYS_CLOG,
                     "cc_clog_open: bad config: events 0x%x (at most 0x%x), "
                     "ring_records %u (a power of two, 2 .. 16M), flush_timeout_ms %lld (>= 0), "
                     "rank %d (>= -1)",
                     out->events, CC_CLOG_ALL, n, (long long)out->flush_timeout_ms, out->rank);
        return CC_ERR_INVALID_ARG;
    }
    /* 0 means "the default" for both, so a zeroed struct works too. */
    out->ring_records = n;
    if (!out->flush_timeout_ms) out->flush_timeout_ms = CC__CLOG_DEFAULT_FLUSH_MS;
    return CC_OK;
}

/* Create the file and write the header; the base time is taken here. */
static cc_status_t open_file(cc_clog_t *c)
{
    /* CCOMM_CLOG=logs/rank%r.log should just work: make the directory like the dumps do. */
    if (cc__mkdirs_for(c->path, 0755, CC_SUBSYS_CLOG) != CC_OK) return CC_ERR_INVALID_ARG;
    /* Often in a shared directory (/tmp): a link or a file planted there by
     * another user must not be followed or truncated. */
    char why[PATH_MAX + 100];
    c->fd = cc__open_own(c->path, 0, 0600, why, sizeof(why));
    if (c->fd < 0) {
        int e = errno;
        cc_log_error(CC_SUBSYS_CLOG, "clog: cannot open the clog file: %s", why);
        /* A path the user can fix is a bad argument; anything else is the system's. */
        return e == ENOENT || e == ENOTDIR || e == EACCES || e == EISDIR || e == EROFS ||
                       e == ENAMETOOLONG || e == ELOOP || e == EPERM
                   ? CC_ERR_INVALID_ARG
                   : CC_ERR_SYSTEM;
    }
    /* The two clocks read back to back: every offset is monotonic time since
     * base_mono_ns, and base_real_ns puts it on the wall clock once. */
    c->base_real_ns = cc__realtime_ns();
    c->base_mono_ns = cc__now_ns();
    /* The header is written here, before the writer exists, so it is always line 1. */
    c->buflen = cc__clog_fmt_header(c, c->buf, CC__CLOG_BUF_SIZE);
    ssize_t w = write(c->fd, c->buf, c->buflen);
    if (w != (ssize_t)c->buflen) {
        cc_log_error(CC_SUBSYS_CLOG, "clog %s: cannot write the header: %s", c->path,
                     w < 0 ? strerror(errno) : "short write");
        return CC_ERR_SYSTEM;
    }
    c->buflen = 0;
    return CC_OK;
}

/* Free what open made; the writer is not running. */
static void free_clog(cc_clog_t *c)
{
    if (c->fd >= 0) close(c->fd);
    cc__clog_ring_fini(&c->ring);
    cc__clog_fmt_free(c->fmt);
    pthread_cond_destroy(&c->progress);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->att_lock);
    free(c->buf);
    free(c->path);
    free(c);
}

static void at_exit(void);

/* Put c on the open list (and make sure exit drains it). */
static void track(cc_clog_t *c)
{
    pthread_mutex_lock(&g_open_lock);
    c->next_open = g_open;
    g_open = c;
    /* Registered once, on first use, so a process without clog has no exit handler. */
    if (!g_atexit_done) g_atexit_done = atexit(at_exit) == 0;
    pthread_mutex_unlock(&g_open_lock);
}

/* Off the open list, so the exit handler never touches a freed logger. */
static void untrack(cc_clog_t *c)
{
    pthread_mutex_lock(&g_open_lock);
    cc_clog_t **pp = &g_open;
    while (*pp && *pp != c)
        pp = &(*pp)->next_open;
    if (*pp) *pp = c->next_open;
    pthread_mutex_unlock(&g_open_lock);
}

/* Exit: write every open logger out (bounded), but free nothing. */
static void at_exit(void)
{
    /* Hooks stay registered: a thread still running ops pushes into a ring no one
     * drains, which costs nothing and is safe because nothing is freed. */
    pthread_mutex_lock(&g_open_lock);
    for (cc_clog_t *c = g_open; c; c = c->next_open)
        cc__clog_writer_stop(c);
    pthread_mutex_unlock(&g_open_lock);
}

/* Everything that can fail, in order; the caller frees what was made. */
static cc_status_t open_parts(cc_clog_t *c, const char *path, const cc_clog_config_t *conf)
{
    char full[4096];
    CC_CHECK(cc__clog_expand_path(path, conf->rank, full, sizeof(full)));
    c->path = strdup(full);
    c->buf = malloc(CC__CLOG_BUF_SIZE);
    c->fmt = cc__clog_fmt_new();
    if (!c->path || !c->buf || !c->fmt || cc__clog_ring_init(&c->ring, conf->ring_records) != 0) {
        cc_log_error(CC_SUBSYS_CLOG, "clog \"%s\": out of memory for a ring of %u records", full,
                     conf->ring_records);
        return CC_ERR_NO_MEMORY;
    }
    CC_CHECK(open_file(c));
    return cc__clog_writer_start(c);
}

cc_status_t cc_clog_open(const char *path, const cc_clog_config_t *config, cc_clog_t **clog)
{
    if (!path || !*path || !clog) {
        cc_log_error(CC_SUBSYS_CLOG, "cc_clog_open: %s is %s", !clog ? "clog (the output)" : "path",
                     !clog || !path ? "NULL" : "empty");
        return CC_ERR_INVALID_ARG;
    }
    cc_clog_config_t conf;
    CC_CHECK(take_config(config, &conf));
    cc_clog_t *c = calloc(1, sizeof(*c));
    if (!c) return CC_ERR_NO_MEMORY;
    c->fd = -1;
    c->pid = getpid();
    c->events = conf.events;
    c->rank = conf.rank;
    c->flush_timeout_ms = conf.flush_timeout_ms;
    /* Timed waits on the monotonic clock: a wall-clock step must not stretch a flush bound. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->wake, &ca);
    pthread_cond_init(&c->progress, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->att_lock, NULL);
    cc_status_t st = open_parts(c, path, &conf);
    if (st != CC_OK) {
        free_clog(c);
        return st;
    }
    /* Valid only once complete: no API call can see a half-made logger. */
    atomic_store(&c->magic, CC__CLOG_MAGIC);
    track(c);
    cc_log_info(CC_SUBSYS_CLOG, "clog %s: open, events 0x%x, ring of %u records", c->path,
                c->events, conf.ring_records);
    *clog = c;
    return CC_OK;
}

cc_status_t cc_clog_flush(cc_clog_t *c, int64_t timeout_ms)
{
    if (!cc__clog_valid(c)) {
        cc_log_error(CC_SUBSYS_CLOG, "cc_clog_flush: clog %p is not an open logger", (void *)c);
        return CC_ERR_INVALID_ARG;
    }
    return cc__clog_writer_flush(c, timeout_ms);
}

/* Read without the magic check: a counter, and callers may ask after close began. */
uint64_t cc_clog_dropped(const cc_clog_t *c)
{
    return c ? atomic_load(&((cc_clog_t *)c)->ring.dropped) : 0;
}

const char *cc_clog_path(const cc_clog_t *c)
{
    return c ? c->path : NULL;
}

cc_status_t cc_clog_close(cc_clog_t *c)
{
    if (!c) return CC_OK;
    uint32_t magic = CC__CLOG_MAGIC;
    /* The exchange makes a second (or racing) close an error, not a double free. */
    if (!atomic_compare_exchange_strong(&c->magic, &magic, 0)) {
        cc_log_error(CC_SUBSYS_CLOG, "cc_clog_close: clog %p is not an open logger", (void *)c);
        return CC_ERR_INVALID_ARG;
    }
    /* Hooks first (none runs once detach returns), then the writer drains what they left. */
    cc__clog_detach_all(c);
    untrack(c);
    cc__clog_writer_stop(c);
    /* The write error was logged when it happened; the status repeats it. */
    cc_status_t st = c->io_error ? CC_ERR_SYSTEM : CC_OK;
    cc_log_info(CC_SUBSYS_CLOG, "clog %s: closed, %llu records dropped", c->path,
                (unsigned long long)atomic_load(&c->ring.dropped));
    free_clog(c);
    return st;
}

cc_status_t cc__clog_auto_open(int world_rank)
{
    const struct cc__config *cfg = cc__cfg();
    /* Once per process: the core calls this for its first world only. */
    if (!cfg->clog || !*cfg->clog || g_auto) return CC_OK;
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    /* config.c checked the list; bits 1..5 are Q, S, E, W, A (config_table.h). */
    _Static_assert(CC_CLOG_Q == 1 && CC_CLOG_S == 2 && CC_CLOG_E == 4 && CC_CLOG_W == 8 &&
                       CC_CLOG_A == 16 && CC_CLOG_ALL == 31,
                   "CC__CHOICES_CLOG_EVENTS lists the events in CC_CLOG_* bit order");
    conf.events = (unsigned)(cfg->clog_events >> 1) & CC_CLOG_ALL;
    if (!conf.events) {
        cc_log_error(CC_SUBSYS_CLOG, "CCOMM_CLOG_EVENTS excludes every event; no clog is written");
        return CC_ERR_INVALID_ARG;
    }
    conf.rank = world_rank;
    cc_clog_t *c;
    CC_CHECK(cc_clog_open(cfg->clog, &conf, &c));
    /* All comms, before the world's COMM_INIT completes: its new_comm line comes from there. */
    cc_status_t st = cc_clog_attach(c, NULL);
    /* Without hooks the file would only ever hold its header: give it up. */
    if (st != CC_OK) {
        cc_clog_close(c);
        return st;
    }
    g_auto = c;
    return CC_OK;
}

void cc__clog_auto_close(void)
{
    cc_clog_t *c = g_auto;
    g_auto = NULL;
    cc_clog_close(c);
}

cc_clog_t *cc__clog_auto(void)
{
    return g_auto;
}
