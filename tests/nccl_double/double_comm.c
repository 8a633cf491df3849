/*
 * double_comm.c - the NCCL test double's communicators: unique ids, init,
 * split, destroy, abort, errors, the worker thread that plays the stream,
 * and the host events of ccommHostNccl_v1 (see nccl_double.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl_double.h"

#define API       __attribute__((visibility("default")))
#define ID_PREFIX "ccdbl "

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int dbl_valid(const struct ncclComm *c)
{
    return c && c->magic == DBL_MAGIC;
}

void dbl_unref(struct ncclComm *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1) return;
    c->magic = 0;
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->idle);
    free(c);
}

static ncclResult_t result_of(cc_status_t st)
{
    if (st == CC_OK) return ncclSuccess;
    if (CC_STATUS_IS_CALL_ERROR(st)) return ncclInvalidArgument;
    if (CC_STATUS_IS_PEER_ERROR(st) || st == CC_ERR_TIMEOUT) return ncclRemoteError;
    return ncclSystemError;
}

/* The stream: run tasks in order; after a failure the rest are skipped, as on a broken GPU. */
static void *worker_main(void *arg)
{
    struct ncclComm *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->head && !c->stopping)
            pthread_cond_wait(&c->wake, &c->lock);
        if (!c->head) break;
        dbl_task_t *t = c->head;
        c->head = t->next;
        if (!c->head) c->tail = NULL;
        pthread_mutex_unlock(&c->lock);
        if (atomic_load(&c->async_error) == ncclSuccess) {
            cc_status_t st = dbl_run(c, &t->call);
            if (st != CC_OK) {
                snprintf(c->last_error, sizeof(c->last_error), "nccl double: task %llu failed: %s",
                         (unsigned long long)atomic_load(&c->completed) + 1, cc_status_name(st));
                atomic_store(&c->async_error, (int)result_of(st));
                atomic_store(&c->failed_at, atomic_load(&c->completed) + 1);
            }
        }
        for (dbl_call_t *m = t->call.next; m;) {
            dbl_call_t *n = m->next;
            free(m);
            m = n;
        }
        free(t);
        uint64_t k = atomic_load(&c->completed) + 1;
        atomic_store(&c->times[k % DBL_TIMES], now_ns());
        atomic_store(&c->completed, k);
        pthread_mutex_lock(&c->lock);
        if (k == atomic_load(&c->enqueued)) pthread_cond_broadcast(&c->idle);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

ncclResult_t dbl_enqueue(struct ncclComm *c, dbl_task_t *t)
{
    pthread_mutex_lock(&c->lock);
    if (c->stopping) {
        pthread_mutex_unlock(&c->lock);
        free(t);
        return ncclInvalidUsage;
    }
    t->next = NULL;
    if (c->tail)
        c->tail->next = t;
    else
        c->head = t;
    c->tail = t;
    atomic_fetch_add(&c->enqueued, 1);
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    return ncclSuccess;
}

static ncclResult_t wrap(cc_comm_t *cc, int rank, int nranks, struct ncclComm **out)
{
    struct ncclComm *c = calloc(1, sizeof(*c));
    if (!c) return ncclSystemError;
    c->magic = DBL_MAGIC;
    c->cc = cc;
    c->rank = rank;
    c->nranks = nranks;
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    pthread_cond_init(&c->idle, NULL);
    if (pthread_create(&c->worker, NULL, worker_main, c) != 0) {
        dbl_unref(c);
        return ncclSystemError;
    }
    *out = c;
    return ncclSuccess;
}

API ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return ncclInvalidArgument;
    *version = 22800; /* the API it stands in for */
    return ncclSuccess;
}

API const char *ncclGetErrorString(ncclResult_t r)
{
    static const char *const names[] = {"no error",
                                        "unhandled cuda error",
                                        "system error",
                                        "internal error",
                                        "invalid argument",
                                        "invalid usage",
                                        "remote process exited or there was a network error",
                                        "operation in progress"};
    return (unsigned)r < 8 ? names[r] : "unknown result";
}

API const char *ncclGetLastError(ncclComm_t comm)
{
    return dbl_valid(comm) ? comm->last_error : "";
}

/* A free port on loopback for rank 0's store. */
API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    if (!id) return ncclInvalidArgument;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0) close(fd);
        return ncclSystemError;
    }
    close(fd);
    memset(id, 0, sizeof(*id));
    snprintf(id->internal, sizeof(id->internal), ID_PREFIX "127.0.0.1:%d", ntohs(a.sin_port));
    return ncclSuccess;
}

static int64_t own_timeout_ms(void)
{
    const char *v = getenv("NCCL_DOUBLE_TIMEOUT_MS");
    return v && *v ? atoll(v) : 120000;
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks ||
        strncmp(id.internal, ID_PREFIX, strlen(ID_PREFIX)) != 0)
        return ncclInvalidArgument;
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.name = "nccl-double";
    cfg.timeout_ms = own_timeout_ms();
    cc_comm_t *cc = NULL;
    cc_status_t st = cc_comm_init(&cc, rank, nranks, id.internal + strlen(ID_PREFIX), &cfg);
    if (st != CC_OK) return result_of(st);
    ncclResult_t r = wrap(cc, rank, nranks, comm);
    if (r != ncclSuccess) cc_comm_destroy(cc);
    return r;
}

API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                        ncclConfig_t *config)
{
    (void)config;
    return ncclCommInitRank(comm, nranks, id, rank);
}

/* A reference while waiting: an abort on another thread (ccomm's timeout) must not free the
 * comm under a program thread that waits for its stream. */
API ncclResult_t ncclDoubleSync(ncclComm_t c)
{
    if (!dbl_valid(c)) return ncclInvalidArgument;
    atomic_fetch_add(&c->refs, 1);
    pthread_mutex_lock(&c->lock);
    while (atomic_load(&c->completed) != atomic_load(&c->enqueued) && !c->stopping)
        pthread_cond_wait(&c->idle, &c->lock);
    pthread_mutex_unlock(&c->lock);
    ncclResult_t r = (ncclResult_t)atomic_load(&c->async_error);
    dbl_unref(c);
    return r;
}

API ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *out,
                               ncclConfig_t *config)
{
    (void)config;
    if (!dbl_valid(c) || !out) return ncclInvalidArgument;
    *out = NULL;
    ncclDoubleSync(c); /* the ccomm comm is per-communicator serial: the stream must be idle */
    cc_comm_t *child = NULL;
    cc_status_t st = cc_comm_split(c->cc, color < 0 ? CC_SPLIT_NOCOLOR : color, key, NULL, &child);
    if (st != CC_OK) return result_of(st);
    if (!child) return ncclSuccess;
    ncclResult_t r = wrap(child, cc_comm_rank(child), cc_comm_size(child), out);
    if (r != ncclSuccess) cc_comm_destroy(child);
    return r;
}

static void stop(struct ncclComm *c)
{
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->worker, NULL);
    c->magic = DBL_MAGIC + 1; /* dead for the API; events may still hold it */
}

API ncclResult_t ncclCommFinalize(ncclComm_t c)
{
    if (!dbl_valid(c)) return ncclInvalidArgument;
    return ncclDoubleSync(c);
}

API ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    if (!dbl_valid(c)) return ncclInvalidArgument;
    ncclDoubleSync(c);
    stop(c);
    cc_comm_destroy(c->cc);
    dbl_unref(c);
    return ncclSuccess;
}

API ncclResult_t ncclCommAbort(ncclComm_t c)
{
    if (!dbl_valid(c)) return ncclInvalidArgument;
    atomic_store(&c->async_error, (int)ncclRemoteError);
    uint64_t none = 0;
    atomic_compare_exchange_strong(&c->failed_at, &none, atomic_load(&c->completed) + 1);
    snprintf(c->last_error, sizeof(c->last_error), "nccl double: communicator aborted");
    cc_comm_abort(c->cc); /* the worker's ccomm op returns; queued tasks are skipped */
    stop(c);
    cc_comm_destroy(c->cc);
    dbl_unref(c);
    return ncclSuccess;
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *err)
{
    if (!dbl_valid(c) || !err) return ncclInvalidArgument;
    *err = (ncclResult_t)atomic_load(&c->async_error);
    return ncclSuccess;
}

API ncclResult_t ncclCommCount(const ncclComm_t c, int *n)
{
    if (!dbl_valid(c) || !n) return ncclInvalidArgument;
    *n = c->nranks;
    return ncclSuccess;
}

API ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r)
{
    if (!dbl_valid(c) || !r) return ncclInvalidArgument;
    *r = c->rank;
    return ncclSuccess;
}

API ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d)
{
    if (!dbl_valid(c) || !d) return ncclInvalidArgument;
    *d = 0;
    return ncclSuccess;
}

/* ---- host events (ccommHostNccl_v1) ------------------------------------- */

typedef struct dbl_ev {
    struct ncclComm *c; /* NULL: never recorded (complete) */
    uint64_t ticket;    /* complete when c->completed >= ticket */
    uint64_t t_record;
} dbl_ev_t;

static int ev_create(void **out)
{
    dbl_ev_t *e = calloc(1, sizeof(*e));
    *out = e;
    return e ? 0 : -1;
}

static void ev_destroy(void *p)
{
    dbl_ev_t *e = p;
    if (e && e->c) dbl_unref(e->c);
    free(e);
}

static int ev_record(void *p, ncclComm_t c)
{
    dbl_ev_t *e = p;
    if (!c || (c->magic != DBL_MAGIC)) return -1;
    atomic_fetch_add(&c->refs, 1);
    if (e->c) dbl_unref(e->c);
    e->c = c;
    e->ticket = atomic_load(&c->enqueued);
    e->t_record = now_ns();
    return 0;
}

static int ev_query(void *p)
{
    dbl_ev_t *e = p;
    if (!e->c) return 1;
    uint64_t failed = atomic_load(&e->c->failed_at);
    /* A task before the event failed: the event reports it, as a faulted stream would. */
    if (failed && failed <= e->ticket) return -1;
    return atomic_load(&e->c->completed) >= e->ticket ? 1 : 0;
}

static uint64_t ev_time(void *p)
{
    dbl_ev_t *e = p;
    if (!e->c || !e->ticket) return e->t_record;
    uint64_t t = atomic_load(&e->c->times[e->ticket % DBL_TIMES]);
    return t > e->t_record ? t : e->t_record;
}

API const ccomm_host_nccl_v1_t ccommHostNccl_v1 = {
    .version = 1,
    .event_create = ev_create,
    .event_destroy = ev_destroy,
    .event_record = ev_record,
    .event_query = ev_query,
    .event_time_ns = ev_time,
};
