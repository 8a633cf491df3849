/*
 * log.c - the logger: level and subsystem filter, one line per message with
 * time, host, pid, rank and communicator, written with one write(2) so lines
 * of concurrent threads and processes do not interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/tls.h"

_Atomic int cc__log_level = CC_LOG_LEVEL_WARN;
_Atomic uint32_t cc__log_mask = CC_SUBSYS_ALL;

static _Atomic int g_fd = 2; /* the log file, or 2; back to 2 for good once the file fails */
static char g_path[4096];    /* the log file's name (expanded), for the notice of that */
static _Atomic int g_rank = -1;
static char g_host[64];
static _Atomic uint64_t g_errors;
static __thread const char *t_comm CC__TLS_HOT;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"NONE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
static const char *const subsys_names[] = {
#define CC__SUBSYS_NAME(name) #name,
    CC__SUBSYS_MAP(CC__SUBSYS_NAME)
#undef CC__SUBSYS_NAME
};
#define NSUBSYS ((int)(sizeof(subsys_names) / sizeof(subsys_names[0])))

/* CCOMM_LOG_SUBSYS's bits (config_table.h: bit i + 1 is subsystem i) as a subsystem mask. */
static uint32_t subsys_mask(uint64_t listed)
{
    uint32_t mask = 0;
    for (int i = 0; i < NSUBSYS; i++)
        if (listed & (2ull << i)) mask |= 1u << i;
    return mask == (1u << NSUBSYS) - 1 ? CC_SUBSYS_ALL : mask;
}

/* Expand %h %p %r in a path. */
static void expand_path(const char *pat, char *out, size_t outlen)
{
    size_t o = 0;
    for (const char *p = pat; *p && o + 1 < outlen; p++) {
        if (p[0] == '%' && p[1]) {
            int n = 0;
            switch (p[1]) {
            case 'h': n = snprintf(out + o, outlen - o, "%s", g_host); break;
            case 'p': n = snprintf(out + o, outlen - o, "%d", (int)getpid()); break;
            case 'r': n = snprintf(out + o, outlen - o, "%d", g_rank); break;
            case '%': n = snprintf(out + o, outlen - o, "%%"); break;
            default: n = snprintf(out + o, outlen - o, "%%%c", p[1]); break;
            }
            if (n < 0) break;
            o += (size_t)n < outlen - o ? (size_t)n : outlen - o - 1;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

static void open_file(void)
{
    const char *pat = cc__cfg()->log_file;
    if (!pat || !*pat) return;
    char path[sizeof(g_path)], why[sizeof(g_path) + 100];
    expand_path(pat, path, sizeof(path));
    /* Logs often go to /tmp: never through a link or into a file planted
     * there by another user. */
    int fd = cc__open_own(path, 1, 0600, why, sizeof(why));
    if (fd < 0) {
        fprintf(stderr, "ccomm: warning: CCOMM_LOG_FILE: %s; logging to stderr\n", why);
        return;
    }
    int old = atomic_exchange(&g_fd, fd);
    if (old != 2) close(old);
    snprintf(g_path, sizeof(g_path), "%s", path);
}

static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;

static void read_host(void)
{
    if (gethostname(g_host, sizeof(g_host) - 1) != 0) strcpy(g_host, "?");
}

void cc__log_init(void)
{
    const struct cc__config *cfg = cc__cfg();
    pthread_once(&g_host_once, read_host);
    pthread_mutex_lock(&g_init_lock);
    int lvl = CC_LOG_LEVEL_WARN; /* config.c gives one of level_names */
    for (int i = 0; i <= CC_LOG_LEVEL_TRACE; i++)
        if (!strcmp(cfg->log_level, level_names[i])) lvl = i;
    cc__log_level = lvl;
    cc__log_mask = subsys_mask(cfg->log_subsys);
    open_file();
    pthread_mutex_unlock(&g_init_lock);
}

void cc__log_set_rank(int rank)
{
    int had = g_rank;
    g_rank = rank;
    /* %r in the file name can only be expanded once the rank is known. */
    if (had != rank && strstr(cc__cfg()->log_file, "%r")) {
        pthread_mutex_lock(&g_init_lock);
        open_file();
        pthread_mutex_unlock(&g_init_lock);
    }
}

void cc__log_set_comm(const char *name)
{
    t_comm = name;
}

void cc__log_count_error(void)
{
    atomic_fetch_add_explicit(&g_errors, 1, memory_order_relaxed);
}

uint64_t cc__log_error_count(void)
{
    return atomic_load(&g_errors);
}

static int prefix(char *buf, size_t len, int level, uint32_t subsys)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    const char *sub = "?";
    for (int i = 0; i < NSUBSYS; i++)
        if (subsys == 1u << i) sub = subsys_names[i];
    return snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %s:%d:%d [%s] %s %s: ",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    ts.tv_nsec / 1000, g_host[0] ? g_host : "?", (int)getpid(), g_rank,
                    t_comm ? t_comm : "-", level_names[level], sub);
}

/* The calling thread's last error message (cc_last_error), without the line prefix. */
static __thread char t_last_error[512];

const char *cc_last_error(void)
{
    return t_last_error;
}

void cc__log_verror(uint32_t subsys, const char *fmt, va_list ap)
{
    cc__log_count_error();
    va_list keep;
    va_copy(keep, ap);
    if (vsnprintf(t_last_error, sizeof(t_last_error), fmt, keep) < 0) t_last_error[0] = '\0';
    va_end(keep);
    if (cc__log_on(CC_LOG_LEVEL_ERROR, subsys)) cc__log_vwrite(CC_LOG_LEVEL_ERROR, subsys, fmt, ap);
}

void cc__log_error(uint32_t subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cc__log_verror(subsys, fmt, ap);
    va_end(ap);
}

void cc__log_write(int level, uint32_t subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cc__log_vwrite(level, subsys, fmt, ap);
    va_end(ap);
}

/*
 * One line to the log. When the file stops taking lines (a full disk, a
 * quota, an I/O error) every later error would be lost unseen: say so once
 * on stderr and log there from then on. The file's descriptor is left open
 * because another thread may be writing to it right now; closed, its number
 * could be reused and that thread's line land in an unrelated file.
 */
static void write_line(const char *line, size_t len)
{
    int fd = atomic_load_explicit(&g_fd, memory_order_relaxed);
    ssize_t w = write(fd, line, len);
    if (w == (ssize_t)len || fd == 2) return;
    const char *cause = w < 0 ? strerror(errno) : "short write";
    int expected = fd;
    if (atomic_compare_exchange_strong(&g_fd, &expected, 2)) {
        char note[sizeof(g_path) + 200];
        int n = snprintf(note, sizeof(note),
                         "ccomm: warning: CCOMM_LOG_FILE \"%s\": cannot write: %s; logging to "
                         "stderr from now on\n",
                         g_path, cause);
        if (n > 0) w = write(2, note, (size_t)n < sizeof(note) ? (size_t)n : sizeof(note) - 1);
    }
    w = write(2, line, len);
    (void)w;
}

void cc__log_vwrite(int level, uint32_t subsys, const char *fmt, va_list ap)
{
    char line[2048];
    int n = prefix(line, sizeof(line), level, subsys);
    if (n < 0) return;
    if ((size_t)n >= sizeof(line)) n = (int)sizeof(line) - 1;
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    if (m < 0) m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof(line) - 2) {
        len = sizeof(line) - 5;
        memcpy(line + len, "...", 3);
        len += 3;
    }
    line[len++] = '\n';
    write_line(line, len);
}

/* Async-signal-safe integer formatting. */
static size_t fmt_int(char *p, long v)
{
    char tmp[24];
    size_t n = 0, o = 0;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do tmp[n++] = (char)('0' + u % 10); while ((u /= 10) && n < sizeof(tmp));
    if (v < 0) p[o++] = '-';
    while (n) p[o++] = tmp[--n];
    return o;
}

void cc__log_signal_safe(const char *msg)
{
    char line[512];
    size_t o = 0;
    const char *head = "ccomm: ";
    for (const char *s = head; *s; s++) line[o++] = *s;
    for (const char *s = g_host; *s && o < 100; s++) line[o++] = *s;
    line[o++] = ':';
    o += fmt_int(line + o, (long)getpid());
    line[o++] = ':';
    o += fmt_int(line + o, g_rank);
    line[o++] = ' ';
    for (const char *s = msg; s && *s && o < sizeof(line) - 2; s++) line[o++] = *s;
    line[o++] = '\n';
    /* Async-signal-safe: no notice here, but the line is not lost either. */
    int fd = atomic_load_explicit(&g_fd, memory_order_relaxed);
    ssize_t w = write(fd, line, o);
    if (w != (ssize_t)o && fd != 2) w = write(2, line, o);
    (void)w;
}
