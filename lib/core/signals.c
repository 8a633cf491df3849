/*
 * signals.c - the dump signal and the fatal-signal path.
 *
 * The dump signal (CCOMM_DUMP_SIGNAL, SIGUSR2 by default) only pokes the
 * watchdog, which writes the dump off the signal context.
 *
 * A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) marks the
 * flight recorder's ring header with the signal, logs one line, runs the
 * abort hooks that declared themselves signal-safe on every live comm, and
 * then hands the signal on: to the handler that was there before ours, or
 * to the default action (core dump / termination). Everything here is
 * async-signal-safe: no locks, no allocation, no stdio.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "recorder/recorder.h"
#include "core/watchdog.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFATAL ((int)(sizeof(fatal_signals) / sizeof(fatal_signals[0])))
static struct sigaction g_old[NFATAL];
static struct sigaction g_old_dump;
static int g_dump_signo;
static volatile sig_atomic_t g_in_fatal;

static void on_dump_signal(int signo)
{
    (void)signo;
    cc__watchdog_signal_dump();
}

static void run_signal_safe_abort_hooks(int signo)
{
    for (cc_comm_t *c = cc__registry_first_unlocked(); c; c = c->reg_next) {
        if (c->magic != CC__COMM_MAGIC) continue;
        cc_abort_info_t info = {
            .comm = c,
            .comm_id = c->id,
            .comm_name = c->name,
            .rank = c->rank,
            .size = c->size,
            .reason = CC_ERR_ABORTED,
            .message = "fatal signal",
            .op = NULL,
            .signal = signo,
        };
        cc__hooks_run_abort(&c->hooks, &info, 1);
    }
}

static void on_fatal(int signo, siginfo_t *si, void *ctx)
{
    int idx = 0;
    while (idx < NFATAL && fatal_signals[idx] != signo) idx++;
    if (!g_in_fatal) {
        g_in_fatal = 1;
        cc__recorder_mark_signal(signo);
        char msg[96] = "fatal signal ";
        size_t n = strlen(msg);
        const char *name = signo == SIGSEGV ? "SIGSEGV" : signo == SIGBUS ? "SIGBUS"
                         : signo == SIGFPE  ? "SIGFPE"  : signo == SIGILL ? "SIGILL" : "SIGABRT";
        for (const char *p = name; *p && n < sizeof(msg) - 40; p++) msg[n++] = *p;
        const char *tail = ": flight recorder marked; ending the process";
        for (const char *p = tail; *p && n < sizeof(msg) - 1; p++) msg[n++] = *p;
        msg[n] = '\0';
        cc__log_signal_safe(msg);
        run_signal_safe_abort_hooks(signo);
    }
    /* Hand on: the previous handler if there was one, else the default action. */
    struct sigaction *old = idx < NFATAL ? &g_old[idx] : NULL;
    if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(signo, si, ctx);
        return;
    }
    if (old && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN && old->sa_handler) {
        old->sa_handler(signo);
        return;
    }
    signal(signo, SIG_DFL);
    raise(signo); /* delivered when we return (it is blocked in its handler) */
}

/* CCOMM_DUMP_SIGNAL, one of config_table.h's names (config.c checked it): its number, or 0. */
static int dump_signo(const char *name)
{
    static const struct {
        const char *name;
        int signo;
    } names[] = {{"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGHUP", SIGHUP},
                 {"SIGPWR", SIGPWR},   {"SIGURG", SIGURG}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(name, names[i].name)) return names[i].signo;
    return 0; /* NONE */
}

void cc__signals_install(void)
{
    static int installed;
    if (installed) return;
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    g_dump_signo = dump_signo(cc__cfg()->dump_signal);
    if (g_dump_signo) {
        sa.sa_handler = on_dump_signal;
        sa.sa_flags = SA_RESTART;
        sigaction(g_dump_signo, &sa, &g_old_dump);
    }
    sa.sa_handler = NULL;
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (int i = 0; i < NFATAL; i++) sigaction(fatal_signals[i], &sa, &g_old[i]);
}
