/*
 * tracker.c - the GPU op tracker thread (see tracker.h).
 *
 * Issuing threads append to an inbox under a mutex (a few stores; the
 * condition variable is signalled only when the tracker sleeps); the
 * tracker moves the inbox to its own list, which only it touches, and
 * walks that list in submission order. Ops of one stream end in order, so
 * the walk usually stops mattering after the first op still running, but
 * every op is looked at: ops on other streams may overtake, and each op's
 * deadline must be checked.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "cuda/cudart.h"
#include "base/log.h"
#include "cuda/shim.h"
#include "cuda/tracker.h"

#define ERROR_POLL_NS 10000000ull /* owner error polls: every 10 ms */

typedef struct track {
    cc__op_t *op;
    int owned;
    int started;
    int device;
    const cc__gev_ops_t *gev;
    void *ev_start, *ev_end;
    cc__track_owner_t *owner;
    struct track *next;
} track_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    track_t *in_head, *in_tail; /* inbox (under lock) */
    int sleeping;               /* the tracker waits on `wake` */
    int started;
    pthread_t thread;
    track_t *head, *tail; /* tracker thread only */
    int cur_device;       /* tracker thread only: device current on it (-1 none) */
} T = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0, NULL, NULL, -1};

/* A copied op and its tracking node in one allocation (one malloc per blocking GPU op). */
typedef struct copy {
    track_t t;
    cc__op_t op;
} copy_t;

#define COPY_OF(op_ptr) ((copy_t *)(void *)((char *)(op_ptr) - offsetof(copy_t, op)))

cc__op_t *cc__tracker_copy_op(const cc__op_t *op)
{
    copy_t *c = malloc(sizeof(*c));
    if (!c) {
        cc_log_error(CC_SUBSYS_CUDA, "out of memory tracking %s (op %llu)",
                     cc_op_type_name(op->info.type), (unsigned long long)op->info.op_id);
        return NULL;
    }
    memcpy(&c->op, op, sizeof(c->op));
    return &c->op;
}

void cc__tracker_free_copy(cc__op_t *op)
{
    if (op) free(COPY_OF(op));
}

/* End one op: POST through the core, events back, the owner's count last. */
static void finish(track_t *t, cc_status_t st, uint64_t t_ns)
{
    cc__track_owner_t *owner = t->owner;
    cc__op_finished_at(t->op, st, t_ns);
    t->gev->give(t->ev_start);
    t->gev->give(t->ev_end);
    if (t->owned) free(COPY_OF(t->op)); /* the node is inside it */
    else free(t);
    /* After this the owner may be freed by its drain. */
    atomic_fetch_sub_explicit(&owner->inflight, 1, memory_order_release);
}

static void use_device(const track_t *t)
{
    if (t->gev != &cc__gev_cuda || t->device == T.cur_device) return;
    if (cc__cudart->SetDevice(t->device) == CC__CUDA_SUCCESS) T.cur_device = t->device;
}

static void poll_owner(cc__track_owner_t *o, uint64_t now)
{
    if (!o->poll_error || now < o->next_poll_ns || atomic_load(&o->abort_reason) != CC_OK) return;
    o->next_poll_ns = now + ERROR_POLL_NS;
    char why[256] = "";
    cc_status_t st = o->poll_error(o->poll_arg, why, sizeof(why));
    if (st == CC_OK) return;
    cc_log_error(CC_SUBSYS_CUDA, "communicator %s: asynchronous error %s: %s", o->name,
                 cc_status_name(st), why);
    /* Fails the comm: ABORT chain, engine abort (which aborts this owner). */
    cc__core_comm_fail(o->comm, st, why);
}

/* An event reported a failure: the owner's asynchronous error says which, if it knows. */
static cc_status_t failure(cc__track_owner_t *o)
{
    char why[256] = "";
    cc_status_t st = o->poll_error ? o->poll_error(o->poll_arg, why, sizeof(why)) : CC_OK;
    return st != CC_OK ? st : CC_ERR_INTERNAL;
}

/*
 * Streams run in order: once an op of a stream is found unfinished, later
 * ops of the same owner and stream cannot have started or ended, and their
 * events are not queried (only their deadlines are checked). This keeps a
 * walk to about one query per stream however many ops are queued.
 */
#define BLOCKED_MAX 32
struct walk {
    int n;
    struct {
        const cc__track_owner_t *owner;
        const void *stream;
    } blocked[BLOCKED_MAX];
};

static int is_blocked(const struct walk *w, const track_t *t)
{
    for (int i = 0; i < w->n; i++)
        if (w->blocked[i].owner == t->owner && w->blocked[i].stream == t->op->stream) return 1;
    return 0;
}

static void block(struct walk *w, const track_t *t)
{
    if (w->n < BLOCKED_MAX && !is_blocked(w, t)) {
        w->blocked[w->n].owner = t->owner;
        w->blocked[w->n].stream = t->op->stream;
        w->n++;
    }
}

static int past_deadline(track_t *t, uint64_t now)
{
    if (now < t->op->deadline_ns) return 0;
    cc_log_error(CC_SUBSYS_CUDA,
                 "communicator %s: %s (op %llu, seq %llu) did not %s on the "
                 "GPU within %lld ms",
                 t->owner->name, cc_op_type_name(t->op->info.type),
                 (unsigned long long)t->op->info.op_id, (unsigned long long)t->op->info.coll_seq,
                 t->started ? "finish" : "start", (long long)t->op->info.timeout_ms);
    finish(t, CC_ERR_TIMEOUT, 0);
    return 1;
}

/* Look at one op; returns 1 when it ended (and was freed). */
static int step(track_t *t, uint64_t now, struct walk *w)
{
    cc_status_t reason = (cc_status_t)atomic_load(&t->owner->abort_reason);
    if (reason != CC_OK) {
        finish(t, reason, 0);
        return 1;
    }
    if (is_blocked(w, t)) return past_deadline(t, now);
    use_device(t);
    if (!t->started) {
        int q = t->gev->query(t->ev_start);
        if (q < 0) {
            finish(t, failure(t->owner), 0);
            return 1;
        }
        if (q == 1) {
            t->started = 1;
            /* GPU times converted to the host clock may land a hair before the enqueue. */
            uint64_t t0 = t->gev->time_ns(t->ev_start);
            cc__op_started_at(t->op, t0 > t->op->info.t_enqueue_ns ? t0 : t->op->info.t_enqueue_ns);
        }
    }
    int q = t->started ? t->gev->query(t->ev_end) : 0;
    if (q < 0) {
        finish(t, failure(t->owner), 0);
        return 1;
    }
    if (q > 0) {
        /* The stream got past the op; an asynchronous error (NCCL's, or a native wait that
         * gave up) means it got there without doing the work. */
        char why[256];
        cc__track_owner_t *o = t->owner;
        cc_status_t st = o->poll_error ? o->poll_error(o->poll_arg, why, sizeof(why)) : CC_OK;
        uint64_t t1 = t->gev->time_ns(t->ev_end);
        finish(t, st, t1 > t->op->info.t_start_ns ? t1 : t->op->info.t_start_ns);
        return 1;
    }
    if (past_deadline(t, now)) return 1;
    block(w, t);
    poll_owner(t->owner, now);
    return 0;
}

/*
 * Take what was pushed. With nothing to watch the tracker keeps polling for
 * LINGER_NS before it sleeps on the condition variable: ops issued in a
 * stream of calls then find it awake, and pushing them costs no wake-up
 * system call.
 */
#define LINGER_NS 2000000ull

static void take_inbox(const struct timespec *nap)
{
    uint64_t idle_since = 0;
    pthread_mutex_lock(&T.lock);
    while (!T.in_head && !T.head) {
        uint64_t now = cc__now_ns();
        if (!idle_since) idle_since = now;
        if (now - idle_since < LINGER_NS) {
            pthread_mutex_unlock(&T.lock);
            nanosleep(nap, NULL);
            pthread_mutex_lock(&T.lock);
            continue;
        }
        T.sleeping = 1;
        pthread_cond_wait(&T.wake, &T.lock);
        T.sleeping = 0;
        idle_since = 0;
    }
    if (T.in_head) {
        if (T.tail)
            T.tail->next = T.in_head;
        else
            T.head = T.in_head;
        T.tail = T.in_tail;
        T.in_head = T.in_tail = NULL;
    }
    pthread_mutex_unlock(&T.lock);
}

static void *tracker_main(void *arg)
{
    (void)arg;
    cc__log_set_comm("gpu-tracker");
    int64_t poll_us = cc__cfg()->gpu_poll_us;
    struct timespec nap = {0, (long)(poll_us > 0 && poll_us < 1000000 ? poll_us : 50) * 1000};
    for (;;) {
        take_inbox(&nap);
        uint64_t now = cc__now_ns();
        struct walk w = {.n = 0};
        track_t **link = &T.head, *last = NULL;
        while (*link) {
            track_t *t = *link, *next = t->next; /* step() frees t when the op ends */
            if (step(t, now, &w)) {
                *link = next;
            } else {
                last = t;
                link = &t->next;
            }
        }
        T.tail = last;
        if (T.head) nanosleep(&nap, NULL);
    }
    return NULL;
}

cc_status_t cc__tracker_push(cc__track_owner_t *owner, cc__op_t *op, int owned,
                             const cc__gev_ops_t *gev, int device, void *ev_start, void *ev_end)
{
    track_t *t = owned ? &COPY_OF(op)->t : calloc(1, sizeof(*t));
    if (!t) return CC_ERR_NO_MEMORY;
    *t = (track_t){.op = op,
                   .owned = owned,
                   .device = device,
                   .gev = gev,
                   .ev_start = ev_start,
                   .ev_end = ev_end,
                   .owner = owner};
    atomic_fetch_add_explicit(&owner->inflight, 1, memory_order_relaxed);
    pthread_mutex_lock(&T.lock);
    if (!T.started) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&T.thread, &attr, tracker_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            pthread_mutex_unlock(&T.lock);
            atomic_fetch_sub(&owner->inflight, 1);
            if (!owned) free(t);
            cc_log_error(CC_SUBSYS_CUDA, "cannot start the gpu op tracker thread (error %d)", rc);
            return CC_ERR_SYSTEM;
        }
        T.started = 1;
    }
    if (T.in_tail)
        T.in_tail->next = t;
    else
        T.in_head = t;
    T.in_tail = t;
    if (T.sleeping) pthread_cond_signal(&T.wake);
    pthread_mutex_unlock(&T.lock);
    return CC_OK;
}

void cc__tracker_abort(cc__track_owner_t *owner, cc_status_t reason)
{
    int expected = CC_OK;
    atomic_compare_exchange_strong(&owner->abort_reason, &expected, (int)reason);
}

cc_status_t cc__tracker_drain(cc__track_owner_t *owner, uint64_t deadline_ns)
{
    while (atomic_load_explicit(&owner->inflight, memory_order_acquire) > 0) {
        if (cc__now_ns() >= deadline_ns) {
            cc_log_error(CC_SUBSYS_CUDA,
                         "communicator %s: %d gpu ops still in flight at the "
                         "deadline",
                         owner->name, atomic_load(&owner->inflight));
            return CC_ERR_TIMEOUT;
        }
        usleep(1000);
    }
    return CC_OK;
}
