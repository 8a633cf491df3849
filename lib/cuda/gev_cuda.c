/*
 * gev_cuda.c - CUDA events with host times (see gev.h).
 *
 * Every event is created with timing on (the time is what we want) and is
 * kept in a per-device free list: creating an event costs microseconds,
 * taking one from the list a lock and two stores. The clock: the tracker
 * records a reference event on a private stream, waits for it, and notes
 * the host time; an op's event time is that plus cudaEventElapsedTime. The
 * wait's latency (a few microseconds) is the error of the absolute times;
 * differences between events of one device are exact to 0.5 us.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/clock.h"
#include "cuda/cudart.h"
#include "cuda/gev.h"
#include "base/log.h"

#define MAX_DEVICES  64
#define REF_EVERY_NS (5ull * 1000000000ull) /* float ms: ~0.5 us precision over 5 s */

typedef struct cuda_ev {
    void *ev;
    int device;
    struct cuda_ev *next;
} cuda_ev_t;

struct dev {
    pthread_mutex_t lock; /* the free list */
    cuda_ev_t *free;
    /* Reference (tracker thread only). */
    void *ref, *stream;
    uint64_t ref_ns, taken_ns;
};

static struct dev g_dev[MAX_DEVICES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_devs(void)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        pthread_mutex_init(&g_dev[i].lock, NULL);
}

static cc_status_t take(int device, void **out)
{
    if (device < 0 || device >= MAX_DEVICES) {
        cc_log_error(CC_SUBSYS_CUDA, "cuda device %d is out of range 0..%d", device,
                     MAX_DEVICES - 1);
        return CC_ERR_INVALID_ARG;
    }
    pthread_once(&g_once, init_devs);
    struct dev *d = &g_dev[device];
    pthread_mutex_lock(&d->lock);
    cuda_ev_t *e = d->free;
    if (e) d->free = e->next;
    pthread_mutex_unlock(&d->lock);
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e) return CC_ERR_NO_MEMORY;
        e->device = device;
        /* The caller's thread has the device current (the engine set it). */
        cc_status_t st =
            cc__cuda_check(cc__cudart->EventCreateWithFlags(&e->ev, 0), "cudaEventCreateWithFlags");
        if (st != CC_OK) {
            free(e);
            return st;
        }
    }
    *out = e;
    return CC_OK;
}

static void give(void *p)
{
    cuda_ev_t *e = p;
    if (!e) return;
    struct dev *d = &g_dev[e->device];
    pthread_mutex_lock(&d->lock);
    e->next = d->free;
    d->free = e;
    pthread_mutex_unlock(&d->lock);
}

static cc_status_t record(void *p, void *stream, ncclComm_t comm)
{
    (void)comm;
    cuda_ev_t *e = p;
    return cc__cuda_check(cc__cudart->EventRecord(e->ev, stream), "cudaEventRecord");
}

static int query(void *p)
{
    cuda_ev_t *e = p;
    int err = cc__cudart->EventQuery(e->ev);
    if (err == CC__CUDA_SUCCESS) return 1;
    if (err == CC__CUDA_NOT_READY) return 0;
    cc__cuda_check(err, "cudaEventQuery");
    return -1;
}

/* Take a fresh reference for the device (tracker thread; the device is current). */
static int refresh(struct dev *d, uint64_t now)
{
    if (!d->stream &&
        cc__cuda_check(cc__cudart->StreamCreateWithFlags(&d->stream, CC__CUDA_STREAM_NON_BLOCKING),
                       "cudaStreamCreateWithFlags (clock reference)") != CC_OK)
        return -1;
    if (!d->ref &&
        cc__cuda_check(cc__cudart->EventCreateWithFlags(&d->ref, 0), "cudaEventCreate") != CC_OK)
        return -1;
    if (cc__cuda_check(cc__cudart->EventRecord(d->ref, d->stream), "cudaEventRecord (reference)") ||
        cc__cuda_check(cc__cudart->EventSynchronize(d->ref), "cudaEventSynchronize (reference)"))
        return -1;
    d->ref_ns = cc__now_ns();
    d->taken_ns = now;
    return 0;
}

static uint64_t time_ns(void *p)
{
    cuda_ev_t *e = p;
    struct dev *d = &g_dev[e->device];
    uint64_t now = cc__now_ns();
    if ((!d->ref_ns || now - d->taken_ns > REF_EVERY_NS) && refresh(d, now) != 0) return 0;
    float ms = 0;
    /* Negative when the event completed before the reference was taken. */
    if (cc__cudart->EventElapsedTime(&ms, d->ref, e->ev) != CC__CUDA_SUCCESS) return 0;
    int64_t t = (int64_t)d->ref_ns + (int64_t)((double)ms * 1e6);
    return t > 0 && (uint64_t)t <= now ? (uint64_t)t : now;
}

const cc__gev_ops_t cc__gev_cuda = {
    .name = "cuda",
    .take = take,
    .give = give,
    .record = record,
    .query = query,
    .time_ns = time_ns,
};
