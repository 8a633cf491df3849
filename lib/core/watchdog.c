/*
 * watchdog.c - the process's watchdog thread: the hang path's engine room.
 *
 * It never runs on an op's path. It wakes every tick (or when poked) and:
 *  - writes a dump that was asked for locally (dump signal, comm abort);
 *  - on a timeout anywhere in the job, publishes "dump now" through the
 *    store so every rank writes its dump at about the same moment, even
 *    ranks stuck inside an op or in their own compute (this thread runs);
 *  - publishes this rank's heartbeat and, for a communicator whose ops have
 *    made no progress for several heartbeats, checks its peers' heartbeats:
 *    a peer that stopped beating (dead, or stopped with SIGSTOP) is named
 *    in the log and the communicator fails with CC_ERR_PEER_LOST.
 * Store calls use short timeouts so that a dead store cannot wedge it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lttng.h"
#include "recorder/recorder.h"
#include "core/watchdog.h"

#define TICK_MS 100
#define STORE_TIMEOUT_MS 2000

static struct {
    pthread_t thread;
    int started;
    int efd;                     /* eventfd: poke the thread (async-signal-safe write) */
    _Atomic int stop;
    _Atomic int local_dump;      /* a dump was asked for here */
    _Atomic uint64_t dumps_asked;  /* dumps asked for (local or job-wide) */
    _Atomic uint64_t dumps_done;   /* dumps finished (written or failed) */
    uint64_t last_dump_ns;         /* when the last dump was written (watchdog thread only) */
    _Atomic int publish_timeout; /* a timeout happened here: tell every rank */
    char reason[160];            /* why the local dump (set before local_dump) */
    cc__store_t *store;          /* own connection: never shares a lock with the op path */
    int rank, size;
    char job_id[128];
    char store_addr[300];        /* where `store` connects (the first world's store) */
    _Atomic int store_closing;   /* that store stops: no more store calls (set by its host) */
    _Atomic int store_idle;      /* the thread saw store_closing and makes no store call */
    int store_lost;              /* the connection broke (its host exited): no more store calls
                                    (watchdog thread only) */
    int64_t seen_gen;            /* last job-wide dump request handled */
    uint64_t *hb_value;          /* per world rank: last heartbeat seen */
    uint64_t *hb_changed_ns;     /* when it last changed */
    uint64_t beat;
    uint64_t last_beat_ns, last_poll_ns;
    cc_hook_handle_t abort_hook;
} wd = {.efd = -1};

void cc__watchdog_store_closing(void)
{
    if (!wd.started) return;
    atomic_store(&wd.store_closing, 1);
    cc__watchdog_poke();
    for (int waited = 0; !atomic_load(&wd.store_idle) && waited < 50 * TICK_MS; waited += 5)
        usleep(5000);
}

void cc__watchdog_poke(void)
{
    uint64_t one = 1;
    if (wd.efd >= 0) {
        ssize_t n = write(wd.efd, &one, sizeof(one));
        (void)n;
    }
}

void cc__watchdog_request_dump(const char *reason)
{
    if (!wd.started) return;
    snprintf(wd.reason, sizeof(wd.reason), "%s", reason);
    atomic_fetch_add(&wd.dumps_asked, 1);
    atomic_store(&wd.local_dump, 1);
    cc__watchdog_poke();
}

void cc__watchdog_signal_dump(void)
{
    atomic_fetch_add(&wd.dumps_asked, 1); /* lock-free: async-signal-safe */
    atomic_store(&wd.local_dump, 2); /* 2: reason is "dump signal" (no formatting in a handler) */
    cc__watchdog_poke();
}

/* The recorder names the file: rank<r>.json first, then rank<r>.<k>.json, never overwriting. */
static void write_dump(const char *why)
{
    /* This dump covers every request made before it reads `asked`, local ones
     * included: clear their flag first, or a second dump would start after
     * the process, its requests all counted as done, went on to exit. */
    atomic_store(&wd.local_dump, 0);
    uint64_t asked = atomic_load(&wd.dumps_asked);
    char path[4096];
    path[0] = '\0'; /* stays empty when the dump fails before a name is chosen */
    cc_status_t st = cc__recorder_dump_default(path, sizeof(path));
    cc__lttng_recorder_dump(why, path, st);
    if (st == CC_OK) cc_log_warn(CC_SUBSYS_WATCHDOG, "flight recorder dumped to %s (%s)", path, why);
    else cc_log_warn(CC_SUBSYS_WATCHDOG, "flight recorder dump failed (%s): %s", why, cc_status_name(st));
    atomic_store(&wd.dumps_done, asked);
    wd.last_dump_ns = cc__now_ns();
}

/*
 * Wait, bounded, until the dumps asked for so far are written: the thread
 * that saw a timeout returns its error only once its dump is on disk, and a
 * process leaving after an error does not cut its dump short.
 */
static void wait_dumps(uint64_t timeout_ms)
{
    if (!wd.started) return;
    uint64_t target = atomic_load(&wd.dumps_asked);
    for (uint64_t waited = 0; atomic_load(&wd.dumps_done) < target && waited < timeout_ms; waited += 10)
        usleep(10000);
}

static void wait_dumps_at_exit(void)
{
    wait_dumps(5000);
}

/*
 * A store call's status. A lost connection does not come back (the rank that
 * hosted the store has exited, or the store stopped): say once what this rank
 * no longer does, and make no more store calls, instead of one error line per
 * call and tick for as long as the process lives.
 */
static int store_call_ok(cc_status_t st)
{
    if (st == CC_ERR_PEER_LOST && !wd.store_lost) {
        wd.store_lost = 1;
        cc_log_warn(CC_SUBSYS_WATCHDOG, "watchdog: lost its connection to the store %s (the rank "
                    "that hosted it has probably exited): no more heartbeats, job-wide dump "
                    "requests or stall checks from this rank; its own dumps go on",
                    wd.store_addr);
    }
    return st == CC_OK;
}

/* Tell every rank of the job to dump: bump a generation and leave the reason. */
static void publish_dump_request(void)
{
    int64_t gen = 0;
    if (!store_call_ok(cc__store_add(wd.store, "dump/gen", 1, &gen))) return;
    char key[48];
    snprintf(key, sizeof(key), "dump/req/%lld", (long long)gen);
    cc__store_set(wd.store, key, wd.reason, strlen(wd.reason));
    wd.seen_gen = gen; /* our own request: we dump below */
}

static void poll_dump_requests(void)
{
    int64_t gen = 0;
    if (!store_call_ok(cc__store_add(wd.store, "dump/gen", 0, &gen)) || gen <= wd.seen_gen) return;
    char key[48];
    snprintf(key, sizeof(key), "dump/req/%lld", (long long)gen);
    void *val = NULL;
    size_t len = 0;
    char why[200] = "dump requested by another rank";
    if (cc__store_get(wd.store, key, &val, &len, 500) == CC_OK)
        snprintf(why, sizeof(why), "requested by the job: %.*s", (int)(len < 160 ? len : 160),
                 (char *)val);
    free(val);
    wd.seen_gen = gen;
    /* Several ranks time out at once and each asks the job to dump: one dump covers them. */
    if (wd.last_dump_ns && cc__now_ns() - wd.last_dump_ns < 3000000000ull) return;
    atomic_fetch_add(&wd.dumps_asked, 1);
    write_dump(why);
}

static void beat(uint64_t now)
{
    if (now - wd.last_beat_ns < (uint64_t)cc__cfg()->heartbeat_ms * 1000000ull) return;
    wd.last_beat_ns = now;
    char key[32], val[24];
    snprintf(key, sizeof(key), "hb/%d", wd.rank);
    int n = snprintf(val, sizeof(val), "%llu", (unsigned long long)++wd.beat);
    store_call_ok(cc__store_set(wd.store, key, val, (size_t)n));
}

/* Which members of a stalled comm stopped beating? Returns the first such world rank, or -1. */
static int silent_peer(const int *members, int n, uint64_t now, uint64_t limit_ns)
{
    char **keys = calloc((size_t)n, sizeof(char *));
    void **vals = calloc((size_t)n, sizeof(void *));
    size_t *lens = calloc((size_t)n, sizeof(size_t));
    int found = -1;
    if (!keys || !vals || !lens) goto out;
    for (int i = 0; i < n; i++) {
        keys[i] = malloc(24);
        if (!keys[i]) goto out;
        snprintf(keys[i], 24, "hb/%d", members[i]);
    }
    if (!store_call_ok(
            cc__store_multi_get(wd.store, (const char *const *)keys, (size_t)n, vals, lens, 200)))
        goto out;
    for (int i = 0; i < n; i++) {
        int w = members[i];
        uint64_t v = strtoull(vals[i], NULL, 10);
        free(vals[i]);
        if (v != wd.hb_value[w] || !wd.hb_changed_ns[w]) {
            wd.hb_value[w] = v;
            wd.hb_changed_ns[w] = now;
        } else if (found < 0 && now - wd.hb_changed_ns[w] > limit_ns) {
            found = w;
        }
    }
out:
    for (int i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
    free(vals);
    free(lens);
    return found;
}

/* Look at one stalled comm (pinned by the caller): fail it if a member went silent. */
static void check_comm(cc_comm_t *c, uint64_t now)
{
    uint64_t hb = (uint64_t)cc__cfg()->heartbeat_ms * 1000000ull, limit = 3 * hb + 2000000000ull;
    uint64_t issued = atomic_load(&c->ops_issued), done = atomic_load(&c->ops_done);
    /* An op stamp (cc__stamp_ns) may lead this clock by a microsecond: no wrap. */
    uint64_t last = atomic_load(&c->last_progress_ns);
    if (issued == done || last >= now || now - last < limit || atomic_load(&c->error) != CC_OK)
        return;
    int *members = malloc((size_t)c->size * sizeof(int)), n = 0;
    if (!members) return;
    for (int r = 0; r < c->size; r++)
        if (c->world_ranks[r] >= 0 && c->world_ranks[r] != wd.rank && c->world_ranks[r] < wd.size)
            members[n++] = c->world_ranks[r]; /* -1: unknown (an external comm) */
    int w = n ? silent_peer(members, n, now, limit) : -1;
    free(members);
    if (w < 0) return;
    char why[200];
    snprintf(why, sizeof(why), "rank %d (world) has sent no heartbeat for over %.1f s while "
             "communicator %s waited: it is stopped or dead", w, (double)limit / 1e9, c->name);
    cc__comm_fail(c, CC_ERR_PEER_LOST, NULL, why);
}

static void check_stalls(uint64_t now)
{
    if (now - wd.last_poll_ns < (uint64_t)cc__cfg()->heartbeat_ms * 1000000ull) return;
    wd.last_poll_ns = now;
    cc_comm_t *pinned[64];
    int n = cc__registry_pin(pinned, 64);
    for (int i = 0; i < n; i++) {
        check_comm(pinned[i], now);
        cc__registry_unpin(pinned[i]);
    }
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the app's threads */
    while (!atomic_load(&wd.stop)) {
        struct pollfd p = {wd.efd, POLLIN, 0};
        if (poll(&p, 1, TICK_MS) > 0) {
            uint64_t v;
            ssize_t r = read(wd.efd, &v, sizeof(v));
            (void)r;
        }
        if (atomic_load(&wd.stop)) break;
        int store_ok = !atomic_load(&wd.store_closing) && !wd.store_lost;
        if (!store_ok) atomic_store(&wd.store_idle, 1);
        if (store_ok && atomic_exchange(&wd.publish_timeout, 0)) publish_dump_request();
        int ld = atomic_exchange(&wd.local_dump, 0);
        if (ld) write_dump(ld == 2 ? "dump signal" : wd.reason);
        if (!store_ok) continue;
        uint64_t now = cc__now_ns();
        beat(now);
        poll_dump_requests();
        check_stalls(now);
    }
    return NULL;
}

/* Abort hook: a timeout asks the whole job to dump; any abort dumps here. */
static void on_abort(const cc_abort_info_t *info, void *user)
{
    (void)user;
    snprintf(wd.reason, sizeof(wd.reason), "communicator %s aborted on rank %d: %s (%s)",
             info->comm_name, wd.rank, cc_status_name(info->reason), info->message);
    if (info->reason == CC_ERR_TIMEOUT && cc__cfg()->dump_on_timeout)
        atomic_store(&wd.publish_timeout, 1);
    atomic_fetch_add(&wd.dumps_asked, 1);
    atomic_store(&wd.local_dump, 1);
    cc__watchdog_poke();
    /* The failing op returns once its dump is written (bounded): the caller may exit next. */
    if (info->signal == 0 && !(wd.started && pthread_equal(pthread_self(), wd.thread))) wait_dumps(5000);
    if (info->reason == CC_ERR_TIMEOUT && cc__cfg()->abort_on_timeout) {
        cc_log_error(CC_SUBSYS_WATCHDOG, "CCOMM_ABORT_ON_TIMEOUT=1: ending the process");
        abort();
    }
}

int cc__watchdog_uses_store(const char *store_addr)
{
    return wd.started && wd.store && strcmp(wd.store_addr, store_addr) == 0;
}

cc_status_t cc__watchdog_start(cc__world_t *world, int rank, int size)
{
    if (wd.started) return CC_OK;
    wd.rank = rank;
    wd.size = size;
    snprintf(wd.job_id, sizeof(wd.job_id), "%s", world->job_id);
    wd.hb_value = calloc((size_t)size, sizeof(uint64_t));
    wd.hb_changed_ns = calloc((size_t)size, sizeof(uint64_t));
    wd.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    /* The cause is written down where it happens: errno is stale after a store call. */
    char why[400];
    cc_status_t st;
    int rc;
    if (!wd.hb_value || !wd.hb_changed_ns || wd.efd < 0) {
        snprintf(why, sizeof(why), "%s", wd.efd < 0 ? strerror(errno) : "out of memory");
        goto fail;
    }
    /* Auxiliary: a rank that hosts the store must not wait at exit for its own watchdog. */
    st = cc__store_connect_aux(world->store_addr, world->job_key, STORE_TIMEOUT_MS, &wd.store);
    if (st != CC_OK) {
        snprintf(why, sizeof(why), "its connection to the store %s failed: %s", world->store_addr,
                 cc_status_name(st));
        goto fail;
    }
    snprintf(wd.store_addr, sizeof(wd.store_addr), "%s", world->store_addr);
    beat(cc__now_ns() + (uint64_t)cc__cfg()->heartbeat_ms * 1000000ull);
    cc__store_add(wd.store, "dump/gen", 0, &wd.seen_gen); /* requests before we joined are not ours */
    if ((st = cc_hook_add_abort(NULL, on_abort, NULL, 0, &wd.abort_hook)) != CC_OK) {
        snprintf(why, sizeof(why), "abort hook: %s", cc_status_name(st));
        goto fail;
    }
    if ((rc = pthread_create(&wd.thread, NULL, watchdog_main, NULL)) != 0) {
        snprintf(why, sizeof(why), "pthread_create: %s", strerror(rc));
        goto fail;
    }
    wd.started = 1;
    atexit(wait_dumps_at_exit);
    return CC_OK;
fail:
    cc_log_warn(CC_SUBSYS_WATCHDOG, "watchdog not started (%s): no coordinated dumps or heartbeats",
                why);
    if (wd.abort_hook) cc_hook_remove(wd.abort_hook);
    cc__store_close(wd.store);
    wd.store = NULL;
    return CC_ERR_SYSTEM;
}
