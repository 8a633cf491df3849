/*
 * top.c - `ccdump top`: a live view of a running job. Every interval the
 * rings are read again (read-only mappings and seqlock snapshots through
 * the recorder's reader: the writers are never blocked or written to), so
 * rings that appear, disappear or whose process died are simply what the
 * next refresh finds. On a terminal: clear and redraw per refresh, keys in
 * raw mode (termios), restored on every way out (q, SIGINT, SIGTERM,
 * SIGHUP); --once and --json print one snapshot.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ccdump.h"
#include "load.h"
#include "recorder/paths.h"
#include "top.h"

static const char help[] =
    "usage: ccdump top [DIR|FILE...] [--interval S] [--once] [--json] [--comm NAME] [--last N]\n"
    "A live view of a running job from its flight recorder rings, read again every\n"
    "interval (read-only: the job is never blocked or disturbed). Without an input,\n"
    "the newest job directory in the per-user ring directory (CCOMM_RECORDER_DIR,\n"
    "default /dev/shm/ccomm-<uid>). Per communicator:\n"
    "  - each rank's last collective enqueued / started / completed (seq), how far\n"
    "    it is behind the leader (highlighted), the op it is in now and for how long;\n"
    "  - stragglers over the last N collectives every member arrived at: per rank\n"
    "    how late it arrives (its call minus the earliest call: mean, p50, max), how\n"
    "    often it is last, the wait it cost the others and what it waited; a rank\n"
    "    is named the straggler when it was last at 60 % or more of at least 5 of\n"
    "    them, by a median 5 ms or more over the next-to-last (likely from 80 %);\n"
    "  - bus bandwidth per op type over the last N collectives.\n"
    "\n"
    "options:\n"
    "  --interval S  seconds between refreshes (default 1; > 0)\n"
    "  --once        print one snapshot as text and exit\n"
    "  --json        print one snapshot as JSON and exit\n"
    "  --comm NAME   only this communicator (name or id)\n"
    "  --last N      the window of collectives (default 100; >= 1)\n"
    "keys (when stdin is a terminal): q quit, n / p next / previous communicator,\n"
    "f freeze / unfreeze, ? this help.\n"
    "Exit status: 0; 2 bad usage or no ring found; 128 + the signal that ended it.\n";

typedef struct top {
    char **paths; /* the inputs, or NULL: the newest job in the default directory */
    int npaths;
    const char *comm;
    double interval;
    unsigned long last;
    int once, json, keys, color;
    ccd_job_t *job;
    ccd_top_view_t view;
    int have_view, sel, frozen, show_help;
    char where[4200]; /* what was read, for the header and the "no ring" message */
    char *notes;      /* what the loader said about unreadable files (this refresh) */
    size_t notes_len;
    uint64_t now;
} top_t;

static volatile sig_atomic_t got_signal;
static struct termios saved_tty;

static void on_signal(int s)
{
    got_signal = s;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The newest job directory under base (base itself when it holds none). */
static void newest_job_dir(const char *base, char *out, size_t len)
{
    DIR *d = opendir(base);
    struct dirent *de;
    struct timespec best = {0, 0};
    snprintf(out, len, "%s", base);
    while (d && (de = readdir(d))) {
        char path[4096];
        struct stat st;
        if (de->d_name[0] == '.' ||
            snprintf(path, sizeof(path), "%s/%s", base, de->d_name) >= (int)sizeof(path) ||
            lstat(path, &st) || !S_ISDIR(st.st_mode))
            continue;
        if (st.st_mtim.tv_sec > best.tv_sec ||
            (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec)) {
            best = st.st_mtim;
            snprintf(out, len, "%s", path);
        }
    }
    if (d) closedir(d);
}

/* Read the rings again; the loader's complaints are kept for the footer. */
static void reload(top_t *t)
{
    char dir[4096], *one = dir;
    char **paths = t->paths;
    int n = t->npaths;
    if (!paths) {
        char base[4000];
        if (cc__fr_base_dir(base, sizeof(base))) snprintf(base, sizeof(base), "/dev/shm");
        newest_job_dir(base, dir, sizeof(dir));
        paths = &one, n = 1;
    }
    int o = 0;
    for (int i = 0; i < n && o < (int)sizeof(t->where) - 1; i++)
        o += snprintf(t->where + o, sizeof(t->where) - (size_t)o, "%s%s", i ? " " : "", paths[i]);
    free(t->notes);
    t->notes = NULL;
    FILE *err = open_memstream(&t->notes, &t->notes_len);
    ccd_job_free(t->job);
    t->job = err ? ccd_load_inputs(paths, n, err) : NULL;
    if (err) fclose(err);
    if (t->have_view) ccd_top_free(&t->view);
    t->now = now_ns();
    t->have_view = t->job && !ccd_top_build(&t->view, t->job, t->comm, (uint32_t)t->last, t->now);
    if (t->have_view && t->sel >= (int)t->view.nc) t->sel = 0;
}

static void header(const top_t *t, FILE *out)
{
    int32_t n = 0, running = 0;
    for (int32_t w = 0; t->job && w < t->job->world_size; w++) {
        const ccd_rank_t *r = t->job->rank[w];
        n += r != NULL;
        running += r && r->alive == 1;
    }
    time_t secs = (time_t)(t->now / 1000000000ull);
    struct tm tm;
    char clock[16] = "";
    if (localtime_r(&secs, &tm)) strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
    fputs("ccdump top  job ", out);
    ccd_put_safe(out, t->job ? t->job->job_id : "-");
    fprintf(out, "  %d rank(s), %d running  %s  window: last %lu collectives%s\n", n, running,
            clock, t->last, t->frozen ? "  [frozen]" : "");
    fputs("rings: ", out);
    ccd_put_safe(out, t->where);
    fputs("\n\n", out);
}

static void draw(top_t *t, FILE *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = t->keys ? open_memstream(&buf, &len) : out;
    if (!f) return;
    if (t->color) fputs("\033[H\033[2J", f);
    header(t, f);
    if (t->show_help) {
        fputs(help, f);
        fputs("\n(any key: back)\n", f);
    } else if (!t->have_view) {
        fputs("no ring found now: ", f);
        ccd_put_safe(f, t->where);
        fputs(" (waiting for one)\n", f);
    } else {
        if (t->keys && t->view.nc > 1) fprintf(f, "[%d/%u] ", t->sel + 1, t->view.nc);
        ccd_top_text(&t->view, t->keys ? t->sel : -1, t->color, f);
    }
    if (t->notes_len) fprintf(f, "\nunreadable now: %s", t->notes);
    if (t->keys)
        fputs("\nq quit  n/p communicator  f freeze  ? help\n", f);
    else if (!t->once)
        fputs("\n", f);
    if (f != out) {
        fclose(f);
        fwrite(buf, 1, len, out);
        free(buf);
    }
    fflush(out);
}

/* Raw keys, no echo, no suspend key (a stopped top would leave the terminal raw). */
static int tty_raw(void)
{
    if (tcgetattr(STDIN_FILENO, &saved_tty)) return -1;
    struct termios raw = saved_tty;
    raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    raw.c_cc[VSUSP] = _POSIX_VDISABLE;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)) return -1;
    fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen, no cursor */
    return 0;
}

static void tty_restore(FILE *out)
{
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
    fputs("\033[?25h\033[?1049l", out);
    fflush(out);
}

/* One key; returns 1 to quit. */
static int key(top_t *t, char c)
{
    if (t->show_help) {
        t->show_help = 0;
        return 0;
    }
    int nc = t->have_view ? (int)t->view.nc : 0;
    switch (c) {
    case 'q':
    case 'Q':
        return 1;
    case 'n':
        if (nc) t->sel = (t->sel + 1) % nc;
        break;
    case 'p':
        if (nc) t->sel = (t->sel + nc - 1) % nc;
        break;
    case 'f':
        t->frozen = !t->frozen;
        break;
    case '?':
    case 'h':
        t->show_help = 1;
        break;
    default:
        break;
    }
    return 0;
}

/* Wait one interval, or until a key; returns 1 to quit. */
static int wait_tick(top_t *t, uint64_t deadline, FILE *out)
{
    for (;;) {
        uint64_t now = now_ns();
        if (got_signal || now >= deadline) return 0;
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int ms = (int)((deadline - now) / 1000000ull) + 1;
        int n = poll(&p, t->keys ? 1 : 0, ms);
        if (n <= 0 || !(p.revents & POLLIN)) continue;
        char c;
        if (read(STDIN_FILENO, &c, 1) != 1) {
            t->keys = 0; /* stdin closed: no keys from now on */
            continue;
        }
        if (key(t, c)) return 1;
        draw(t, out);
    }
}

static int loop(top_t *t, FILE *out)
{
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(&sa.sa_mask);
    got_signal = 0;
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]); /* no SA_RESTART: poll returns at once */
    if (t->keys && tty_raw()) t->keys = 0;
    int quit = 0;
    while (!quit && !got_signal) {
        if (!t->frozen) reload(t);
        draw(t, out);
        quit = wait_tick(t, now_ns() + (uint64_t)(t->interval * 1e9), out);
    }
    if (t->keys) tty_restore(out);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    return got_signal ? 128 + got_signal : 0;
}

/* --once / --json: one snapshot; 2 when no ring was found. */
static int snapshot(top_t *t, FILE *out, FILE *err)
{
    reload(t);
    if (t->notes_len) fputs(t->notes, err);
    if (!t->job) {
        fputs("ccdump top: no ring found in ", err);
        ccd_put_safe(err, t->where);
        fputc('\n', err);
        return 2;
    }
    if (!t->have_view) {
        fputs("ccdump top: out of memory\n", err);
        return 2;
    }
    if (!t->json) {
        draw(t, out);
        return 0;
    }
    json_t *j = ccd_top_json(&t->view);
    json_object_set_new(j, "rings", json_string(t->where));
    json_dumpf(j, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(j);
    return 0;
}

static int run_top(top_t *t, FILE *out, FILE *err)
{
    if (t->once || t->json) return snapshot(t, out, err);
    reload(t); /* the first refresh says whether there is anything to show */
    if (!t->job) {
        fputs(t->notes ? t->notes : "", err);
        fputs("ccdump top: no ring found in ", err);
        ccd_put_safe(err, t->where);
        fputc('\n', err);
        return 2;
    }
    return loop(t, out);
}

int ccdump_top(int argc, char **argv, FILE *out, FILE *err)
{
    top_t t = {.interval = 1.0, .last = 100};
    char **files;
    int nfiles;
    const ccd_opt_t opts[] = {
        {"--interval", NULL, CCD_OPT_DOUBLE, &t.interval}, {"--once", NULL, CCD_OPT_FLAG, &t.once},
        {"--json", NULL, CCD_OPT_FLAG, &t.json},           {"--comm", NULL, CCD_OPT_STR, &t.comm},
        {"--last", NULL, CCD_OPT_UINT, &t.last},           {NULL, NULL, 0, NULL}};
    int rc = ccd_parse_args_any(argc, argv, opts, &files, &nfiles, err);
    if (rc == 1) fputs(help, out);
    if (rc) return rc == 1 ? 0 : 2;
    if (!(t.interval > 0) || t.interval > 86400) {
        fprintf(err,
                "ccdump top: --interval: bad value %g (seconds, more than 0 and at most 86400)\n",
                t.interval);
        return 2;
    }
    if (t.last < 1 || t.last > (1ul << 24)) {
        fprintf(err, "ccdump top: --last: bad value %lu (a number of collectives, 1 to %lu)\n",
                t.last, 1ul << 24);
        return 2;
    }
    t.paths = nfiles ? files : NULL;
    t.npaths = nfiles;
    /* Keys and redraws only for a person at a terminal (stdout must be stdin's terminal too). */
    t.keys = !t.once && !t.json && out == stdout && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    t.color = t.keys;
    rc = run_top(&t, out, err);
    if (t.have_view) ccd_top_free(&t.view);
    ccd_job_free(t.job);
    free(t.notes);
    return rc;
}
