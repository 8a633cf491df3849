/*
 * clog_writer.c - the clog writer thread: takes records from the ring,
 * formats them and writes them to the file.
 *
 * The op path never wakes the writer (that would be a system call); the
 * writer polls instead, every 1 ms while records flow, backing off to
 * 10 ms when idle. Not more often: each wake-up is a context switch taken
 * from the ranks where they share the cores (100 µs cost 70-200 ns of CPU
 * per op in bench/obs_tax.sh); the ring (131072 records) holds 40 ms of
 * records at 3 M/s. Where the ranks keep every CPU busy, the woken writer
 * may wait several ms for one (6 ms seen with `perf sched`), and the ring
 * must cover that wait, not just the poll. Whoever wants the file current
 * (cc_clog_flush, the abort hook, close, exit) is off the op path: it posts
 * a flush target, signals the writer and waits, bounded, on the `progress`
 * condition for `written` to reach the target. `written` only moves after write(2) returned, so a
 * finished flush means the lines are in the kernel's hands.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "clog/clog_internal.h"
#include "base/log.h"

#define WRITER_MIN_SLEEP_US 1000u
#define WRITER_MAX_SLEEP_US 10000u
#define WRITER_STALL_US     50u /* retry delay while a producer finishes publishing */

/* Write the buffer out; on failure the lines are lost and the error logged once. */
static void write_buf(cc_clog_t *c)
{
    size_t off = 0;
    while (off < c->buflen) {
        ssize_t w = write(c->fd, c->buf + off, c->buflen - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!c->io_error)
                cc_log_error(CC_SUBSYS_CLOG, "clog %s: write failed: %s; %zu bytes of lines lost",
                             c->path, w < 0 ? strerror(errno) : "wrote nothing", c->buflen - off);
            c->io_error = 1;
            break;
        }
        off += (size_t)w;
    }
    c->buflen = 0;
    /* Everything taken so far is now written (or lost to an I/O error, which was logged). */
    atomic_store_explicit(&c->written, c->ring.head, memory_order_release);
}

/* A DROP line when records were refused since the last one. */
static void report_drops(cc_clog_t *c)
{
    uint64_t total = atomic_load_explicit(&c->ring.dropped, memory_order_relaxed);
    if (total == c->drops_reported) return;
    c->buflen += cc__clog_fmt_drop(c, total - c->drops_reported, total, cc__now_ns(),
                                   c->buf + c->buflen, CC__CLOG_BUF_SIZE - c->buflen);
    c->drops_reported = total;
}

/* Take and format everything published; returns the records taken. */
static size_t writer_pass(cc_clog_t *c)
{
    struct cc__clog_rec *r;
    size_t n = 0;
    /* Stops at the first slot not yet published: order in the file is ring order. Each
     * record is formatted where it lies, then its slot handed back. */
    while ((r = cc__clog_ring_peek(&c->ring))) {
        /* One record makes at most a sig line and a line of CC__CLOG_LINE_MAX. */
        if (CC__CLOG_BUF_SIZE - c->buflen < CC__CLOG_LINE_MAX + 1024) write_buf(c);
        c->buflen +=
            cc__clog_fmt_rec(c->fmt, c, r, c->buf + c->buflen, CC__CLOG_BUF_SIZE - c->buflen);
        cc__clog_ring_release(&c->ring);
        n++;
    }
    /* A DROP line is short, but needs room too. */
    if (CC__CLOG_BUF_SIZE - c->buflen < 1024) write_buf(c);
    report_drops(c);
    /* Written every pass, not when full: the file must be current within a poll. */
    write_buf(c);
    return n;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

/*
 * Close or exit: drain until the ring is empty or the flush timeout passes.
 * Records still held by a producer then, or pushed meanwhile and not taken,
 * are lost: they count as dropped so the file says so. Then the END line.
 */
static void writer_final(cc_clog_t *c)
{
    uint64_t deadline = cc__now_ns() + (uint64_t)c->flush_timeout_ms * 1000000ull;
    for (;;) {
        writer_pass(c);
        uint64_t claimed = cc__clog_ring_claimed(&c->ring);
        if (c->ring.head == claimed) break;
        if (cc__now_ns() >= deadline) {
            cc_log_warn(CC_SUBSYS_CLOG,
                        "clog %s: %llu records not written within %lld ms at close; counted as "
                        "dropped",
                        c->path, (unsigned long long)(claimed - c->ring.head),
                        (long long)c->flush_timeout_ms);
            atomic_fetch_add(&c->ring.dropped, claimed - c->ring.head);
            break;
        }
        sleep_us(WRITER_STALL_US);
    }
    report_drops(c);
    c->buflen += cc__clog_fmt_end(c, c->drops_reported, cc__now_ns(), c->buf + c->buflen,
                                  CC__CLOG_BUF_SIZE - c->buflen);
    write_buf(c);
}

/* Wait on `wake` for at most us microseconds (CLOCK_MONOTONIC). Lock held. */
static void wait_us(cc_clog_t *c, unsigned us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)us * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
    }
    pthread_cond_timedwait(&c->wake, &c->lock, &ts);
}

/* What the writer cost, once at the end (info): where the ranks share the CPUs, this CPU
 * time comes out of theirs (docs/performance.md, "What clog costs"). */
static void report_cpu(const cc_clog_t *c)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return;
    double ns = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
    uint64_t n = c->ring.head;
    cc_log_info(CC_SUBSYS_CLOG,
                "clog %s: the writer took %llu records in %.2f ms of CPU (%.0f ns a record)",
                c->path, (unsigned long long)n, ns / 1e6, n ? ns / (double)n : 0.0);
}

static void *writer_main(void *arg)
{
    cc_clog_t *c = arg;
    unsigned nap = WRITER_MIN_SLEEP_US;
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        /* The lock guards the flags only; records are taken and written without it. */
        int paused = c->paused;
        pthread_mutex_unlock(&c->lock);
        size_t n = paused ? 0 : writer_pass(c);
        pthread_mutex_lock(&c->lock);
        /* Flushers recheck `written` themselves; waking them all is simplest. */
        pthread_cond_broadcast(&c->progress);
        if (c->stop) break;
        nap = n ? WRITER_MIN_SLEEP_US
                : (nap * 2 > WRITER_MAX_SLEEP_US ? WRITER_MAX_SLEEP_US : nap * 2);
        /* A flusher waits for a record a producer is still publishing: poll soon. */
        if (!c->paused && c->flush_target > atomic_load(&c->written)) nap = WRITER_STALL_US;
        wait_us(c, nap);
    }
    pthread_mutex_unlock(&c->lock);
    writer_final(c);
    report_cpu(c);
    pthread_mutex_lock(&c->lock);
    c->finished = 1;
    pthread_cond_broadcast(&c->progress);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

cc_status_t cc__clog_writer_start(cc_clog_t *c)
{
    int e = pthread_create(&c->thread, NULL, writer_main, c);
    if (e) {
        cc_log_error(CC_SUBSYS_CLOG, "clog %s: cannot start the writer thread: %s", c->path,
                     strerror(e));
        return CC_ERR_SYSTEM;
    }
    c->thread_started = 1;
    return CC_OK;
}

void cc__clog_writer_stop(cc_clog_t *c)
{
    /* In a forked child the writer thread does not exist (and the file is the
     * parent's): nothing to drain, nothing to join. */
    if (getpid() != c->pid) return;
    pthread_mutex_lock(&c->lock);
    /* Only the first stop joins: exit and a later close may both ask. */
    int join = c->thread_started && !c->stop;
    c->stop = 1;
    c->paused = 0;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    if (join) pthread_join(c->thread, NULL);
}

cc_status_t cc__clog_writer_flush(cc_clog_t *c, int64_t timeout_ms)
{
    if (timeout_ms < 0) timeout_ms = c->flush_timeout_ms;
    /* No writer in a forked child: waiting would only burn the timeout. */
    if (getpid() != c->pid) return CC_ERR_TIMEOUT;
    /* Everything claimed before this call; later records are not waited for. */
    uint64_t target = cc__clog_ring_claimed(&c->ring);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(timeout_ms / 1000);
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    cc_status_t st = CC_OK;
    pthread_mutex_lock(&c->lock);
    /* Concurrent flushers share one target: the furthest. */
    if (target > c->flush_target) c->flush_target = target;
    pthread_cond_signal(&c->wake);
    while (atomic_load(&c->written) < target) {
        if (c->finished || pthread_cond_timedwait(&c->progress, &c->lock, &ts) == ETIMEDOUT) {
            st = atomic_load(&c->written) < target ? CC_ERR_TIMEOUT : CC_OK;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

void cc__clog_pause(cc_clog_t *c, int paused)
{
    pthread_mutex_lock(&c->lock);
    c->paused = paused;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}
