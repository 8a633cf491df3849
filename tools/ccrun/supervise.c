/*
 * supervise.c - ccrun's main loop while the ranks run: it forwards their
 * output, forwards signals to them, reaps them, and ends the job.
 *
 * How a job ends, and ccrun's exit status (the first cause wins):
 *   - every rank exits 0: status 0;
 *   - a rank exits non-zero or dies by a signal: ccrun names it, waits up to
 *     --grace for the others to end on their own (ccomm ranks see the peer
 *     loss and exit), then SIGTERM, then SIGKILL after --term-grace; status
 *     is that rank's exit status, or 128 + its signal;
 *   - SIGINT/SIGTERM/SIGHUP to ccrun: forwarded once, then the same grace,
 *     SIGTERM, SIGKILL; a second such signal kills at once; status 128 + signal;
 *   - --timeout expires: SIGTERM, then SIGKILL; status 124.
 * Everything happens on one thread, woken by poll(2) on a signalfd and the
 * ranks' pipes; there is no work in signal handlers.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ccrun.h"
#include "base/clock.h"

enum phase {
    PH_RUN,   /* nothing wrong so far */
    PH_GRACE, /* a rank failed or ccrun was signalled: the others may end on their own */
    PH_TERM,  /* SIGTERM sent: SIGKILL at the deadline */
    PH_KILL   /* SIGKILL sent: only reaping is left */
};

struct sup {
    struct ccrun_job *job;
    enum phase phase;
    uint64_t t_next;    /* end of the current phase (ns); UINT64_MAX = none */
    uint64_t t_timeout; /* --timeout deadline; UINT64_MAX = none */
    int exit_code;      /* -1 until the first cause */
    int signalled;      /* ccrun has signalled the ranks: their deaths are expected */
    int user_signals;   /* SIGINT/SIGTERM/SIGHUP received */
    int timed_out;
    uint64_t t_leftovers; /* when leftovers in the group were first SIGKILLed; 0 = not yet */
};

static const char *signame(int sig, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(sig);
    snprintf(buf, len, "SIG%s", abbrev ? abbrev : "?");
    return buf;
}

/* Does the job's process group still have members (ranks, or what they started)? */
static int group_alive(const struct ccrun_job *job)
{
    return job->pgid > 0 && kill(-job->pgid, 0) == 0;
}

void ccrun_signal_all(struct ccrun_job *job, int sig)
{
    /* The group, not only the ranks: a rank's `sleep 300 &` outlives its rank otherwise. */
    if (job->pgid > 0 && (job->nalive > 0 || group_alive(job))) kill(-job->pgid, sig);
}

static void enter_phase(struct sup *s, enum phase ph, int64_t ms)
{
    s->phase = ph;
    s->t_next = ms < 0 ? UINT64_MAX : cc__deadline_after_ms(ms);
}

static void send_term(struct sup *s)
{
    ccrun_signal_all(s->job, SIGTERM);
    s->signalled = 1;
    enter_phase(s, PH_TERM, s->job->opts->term_grace_ms);
}

static void rank_ended(struct sup *s, struct ccrun_rank *rk, int status)
{
    struct ccrun_job *job = s->job;
    const struct ccrun_opts *o = job->opts;
    char sb[32];
    rk->alive = 0;
    rk->status = status;
    job->nalive--;
    /* Its last words come before ccrun's note about it. */
    for (int i = 0; i < 2; i++)
        ccrun_out_drain(&rk->out[i], rk->rank, o->prefix, 1);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    if (!s->signalled) {
        if (WIFSIGNALED(status))
            ccrun_say("rank %d (pid %d) killed by signal %d (%s)%s", rk->rank, (int)rk->pid,
                      WTERMSIG(status), signame(WTERMSIG(status), sb, sizeof(sb)),
                      WCOREDUMP(status) ? ", core dumped" : "");
        else
            ccrun_say("rank %d (pid %d) exited with status %d", rk->rank, (int)rk->pid,
                      WEXITSTATUS(status));
    }
    if (s->exit_code >= 0) return;
    s->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (s->phase == PH_RUN && job->nalive > 0) {
        ccrun_say("waiting up to %.3g s (--grace) for the other %d rank%s to end",
                  o->grace_ms / 1e3, job->nalive, job->nalive == 1 ? "" : "s");
        enter_phase(s, PH_GRACE, o->grace_ms);
    }
}

static void reap(struct sup *s)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        for (int r = 0; r < s->job->opts->nranks; r++)
            if (s->job->ranks[r].pid == pid && s->job->ranks[r].alive)
                rank_ended(s, &s->job->ranks[r], status);
    }
}

/* Wait for every rank to end (after SIGKILL), without the loop. */
static void reap_blocking(struct sup *s)
{
    while (s->job->nalive > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno != EINTR) return;
        for (int r = 0; pid > 0 && r < s->job->opts->nranks; r++)
            if (s->job->ranks[r].pid == pid && s->job->ranks[r].alive)
                rank_ended(s, &s->job->ranks[r], status);
    }
}

/* SIGINT, SIGTERM, SIGHUP: the user wants the job to end. */
static void on_stop_signal(struct sup *s, int sig)
{
    char sb[32];
    struct ccrun_job *job = s->job;
    if (++s->user_signals > 1) {
        ccrun_say("received %s again; killing all ranks", signame(sig, sb, sizeof(sb)));
        ccrun_signal_all(job, SIGKILL);
        s->signalled = 1;
        enter_phase(s, PH_KILL, -1);
        return;
    }
    ccrun_say("received %s; forwarding it to %d rank%s", signame(sig, sb, sizeof(sb)), job->nalive,
              job->nalive == 1 ? "" : "s");
    ccrun_signal_all(job, sig);
    s->signalled = 1;
    if (s->exit_code < 0) s->exit_code = 128 + sig;
    if (s->phase <= PH_GRACE) enter_phase(s, PH_GRACE, job->opts->grace_ms);
}

static void on_signal(struct sup *s, int sig)
{
    switch (sig) {
    case SIGCHLD:
        reap(s);
        break;
    case SIGINT:
    case SIGTERM:
    case SIGHUP:
        on_stop_signal(s, sig);
        break;
    case SIGTSTP: /* Ctrl-Z: stop the ranks, then ccrun itself; SIGCONT resumes both */
        ccrun_signal_all(s->job, SIGTSTP);
        kill(getpid(), SIGSTOP);
        break;
    default:
        ccrun_signal_all(s->job, sig); /* SIGQUIT, SIGUSR1, SIGUSR2 (dumps), SIGCONT */
    }
}

static void read_signals(struct sup *s, int sigfd)
{
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        on_signal(s, (int)si.ssi_signo);
}

static void run_timers(struct sup *s)
{
    uint64_t now = cc__now_ns();
    const struct ccrun_opts *o = s->job->opts;
    if (now >= s->t_timeout && !s->timed_out) {
        s->timed_out = 1;
        ccrun_say("job timed out after %.3g s (--timeout); terminating %d rank%s",
                  o->timeout_ms / 1e3, s->job->nalive, s->job->nalive == 1 ? "" : "s");
        if (s->exit_code < 0) s->exit_code = CCRUN_EXIT_TIMEOUT;
        if (s->phase < PH_TERM) send_term(s);
    }
    if (now < s->t_next) return;
    if (s->phase == PH_GRACE) {
        ccrun_say("%d rank%s still running after the %.3g s grace period; sending SIGTERM",
                  s->job->nalive, s->job->nalive == 1 ? "" : "s", o->grace_ms / 1e3);
        send_term(s);
    } else if (s->phase == PH_TERM) {
        if (s->job->nalive > 0)
            ccrun_say("%d rank%s still running %.3g s after SIGTERM; sending SIGKILL",
                      s->job->nalive, s->job->nalive == 1 ? "" : "s", o->term_grace_ms / 1e3);
        else
            ccrun_say("processes the ranks started still run %.3g s after SIGTERM; sending SIGKILL "
                      "to process group %d",
                      o->term_grace_ms / 1e3, (int)s->job->pgid);
        ccrun_signal_all(s->job, SIGKILL);
        enter_phase(s, PH_KILL, -1);
    }
}

/*
 * Every rank has ended, but the job was being stopped (a signal, a failure, a
 * timeout) and processes the ranks started are left in its group, having
 * ignored what the ranks got: SIGTERM now, SIGKILL after --term-grace.
 * Returns 1 while ccrun must keep watching the group.
 */
static int watch_leftovers(struct sup *s)
{
    struct ccrun_job *job = s->job;
    if (!(s->signalled || s->exit_code > 0) || !group_alive(job)) return 0;
    if (s->phase < PH_TERM) {
        ccrun_say("all ranks ended; processes they started are still in the job's process group "
                  "%d: sending SIGTERM",
                  (int)job->pgid);
        send_term(s);
    } else if (s->phase == PH_KILL) {
        /* SIGKILL was sent; what is left a second later (zombies an init has yet to reap, or
         * processes in uninterruptible sleep) is not worth holding the exit status for. */
        if (!s->t_leftovers) s->t_leftovers = cc__deadline_after_ms(1000);
        if (cc__now_ns() >= s->t_leftovers) return 0;
    }
    return 1;
}

static int poll_timeout_ms(const struct sup *s)
{
    uint64_t timeout = s->timed_out ? UINT64_MAX : s->t_timeout;
    uint64_t next = s->t_next < timeout ? s->t_next : timeout;
    int cap = s->job->nalive > 0 ? -1 : 50; /* leftovers are not our children: no SIGCHLD */
    if (next == UINT64_MAX) return cap;
    uint64_t now = cc__now_ns();
    int ms = next <= now ? 0 : (int)((next - now) / 1000000u + 1);
    return cap >= 0 && ms > cap ? cap : ms;
}

int ccrun_supervise(struct ccrun_job *job, int sigfd)
{
    const struct ccrun_opts *o = job->opts;
    struct sup s = {job, PH_RUN, UINT64_MAX, UINT64_MAX, -1, 0, 0, 0, 0};
    if (o->timeout_ms > 0) s.t_timeout = cc__deadline_after_ms(o->timeout_ms);
    size_t cap = 1 + 2 * (size_t)o->nranks;
    struct pollfd *pfd = malloc(cap * sizeof(*pfd));
    struct ccrun_out **who = malloc(cap * sizeof(*who));
    int *rank_of = malloc(cap * sizeof(*rank_of));
    if (!pfd || !who || !rank_of) {
        ccrun_say("out of memory while supervising %d ranks; killing them", o->nranks);
        ccrun_signal_all(job, SIGKILL);
        free(pfd), free(who), free(rank_of);
        return CCRUN_EXIT_SETUP;
    }
    reap(&s); /* a rank may have ended before the loop started */
    while (job->nalive > 0 || watch_leftovers(&s)) {
        size_t k = 1;
        pfd[0] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        for (int r = 0; r < o->nranks; r++)
            for (int i = 0; i < 2; i++)
                if (job->ranks[r].out[i].fd >= 0) {
                    pfd[k] = (struct pollfd){.fd = job->ranks[r].out[i].fd, .events = POLLIN};
                    who[k] = &job->ranks[r].out[i], rank_of[k++] = r;
                }
        int n = poll(pfd, k, poll_timeout_ms(&s));
        if (n < 0 && errno != EINTR) {
            ccrun_say("poll failed: %s; killing all ranks", strerror(errno));
            ccrun_signal_all(job, SIGKILL);
            s.signalled = 1;
            reap_blocking(&s);
            break;
        }
        for (size_t i = 1; n > 0 && i < k; i++)
            if (pfd[i].revents) ccrun_out_drain(who[i], rank_of[i], o->prefix, 0);
        if (n > 0 && pfd[0].revents) read_signals(&s, sigfd);
        run_timers(&s);
    }
    free(pfd), free(who), free(rank_of);
    return s.exit_code < 0 ? 0 : s.exit_code;
}
