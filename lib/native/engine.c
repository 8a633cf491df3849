/*
 * engine.c - the native engine's table: create (connect the net), submit
 * (inline or through the worker), drain, abort, destroy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/comm.h"
#include "base/config.h"
#include "transport/ifname.h"
#include "base/log.h"
#include "native/native.h"
#include "native/window.h"
#include "transport/arena.h"

static cc_status_t store_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    cc__native_t *nc = ctx;
    char name[32]; /* the net may exchange several times: each round gets its own keys */
    snprintf(name, sizeof(name), "net/%u", nc->exchanges++);
    return cc__store_allgather(nc->comm->store, name, nc->rank, nc->size, mine, all, len,
                               cc__cfg()->connect_timeout * 1000);
}

static void native_destroy(void *state);

static cc_status_t native_create(struct cc_comm *comm, void **state)
{
    CC_CHECK(cc__native_check_forced()); /* a bad CCOMM_ALGO_* fails every rank alike */
    size_t seg;
    int seg_auto;
    if (cc__pipeline_setting(cc__cfg()->pipeline_chunk, comm->size, &seg, &seg_auto) < 0) {
        cc_log_error(CC_SUBSYS_COLL,
                     "CCOMM_PIPELINE_CHUNK=%s is neither auto nor a size (256K, 1M, 0) of at "
                     "most 1T",
                     cc__cfg()->pipeline_chunk);
        return CC_ERR_INVALID_ARG;
    }
    cc__native_t *nc = calloc(1, sizeof(*nc));
    if (!nc) return CC_ERR_NO_MEMORY;
    nc->comm = comm;
    nc->rank = comm->rank;
    nc->size = comm->size;
    pthread_mutex_init(&nc->lock, NULL);
    pthread_cond_init(&nc->wake, NULL);
    pthread_cond_init(&nc->idle, NULL);
    const struct cc__config *cfg = cc__cfg();
    cc__net_config_t nconf = {
        .rank = comm->rank,
        .size = comm->size,
        .comm_id = comm->id,
        .job_id = comm->world->job_id,
        .transport = comm->transport_req,
        .socket_addr = cfg->socket_addr,
        .connect_timeout_ms = cfg->connect_timeout * 1000,
        .allgather = store_allgather,
        .allgather_ctx = nc,
    };
    /* The address peers dial: CCOMM_SOCKET_ADDR, else CCOMM_SOCKET_IFNAME's interface, else
     * the one this rank reaches the store from. */
    char local[64] = "", ifname[64];
    cc_status_t st = CC_OK;
    if (!nconf.socket_addr[0] && cfg->socket_ifname[0]) {
        st = cc__ifname_pick(cfg->socket_ifname, local, sizeof(local), ifname, sizeof(ifname));
        if (st == CC_OK)
            cc_log_info(CC_SUBSYS_NET,
                        "net: rank %d listens on %s (interface %s, "
                        "CCOMM_SOCKET_IFNAME=%s)",
                        comm->rank, local, ifname, cfg->socket_ifname);
        else
            st = CC_ERR_INVALID_ARG;
        nconf.socket_addr = local;
    }
    if (!nconf.socket_addr[0] && cc__store_local_addr(comm->store, local, sizeof(local)) == CC_OK)
        nconf.socket_addr = local;
    if (st == CC_OK) st = cc__net_create(&nconf, &nc->net);
    if (st != CC_OK) {
        pthread_cond_destroy(&nc->idle);
        pthread_cond_destroy(&nc->wake);
        pthread_mutex_destroy(&nc->lock);
        free(nc);
        return st;
    }
    int nshm = 0, ntcp = 0;
    for (int r = 0; r < nc->size; r++) {
        if (r == nc->rank) continue;
        if (!strcmp(cc__net_transport(nc->net, r), "shm")) nshm++;
        else ntcp++;
    }
    nc->transport = nc->size == 1 ? "self" : !ntcp ? "shm" : !nshm ? "tcp" : "mixed";
    nc->tpm = nc->size == 1 ? CC__TPM_SELF : !ntcp ? CC__TPM_SHM : CC__TPM_NET;
    nc->seg_bytes = seg;
    nc->seg_auto = seg_auto;
    nc->desync_check = cfg->desync_check;
    st = cc__arena_create(nc->net, nc->comm->id, nc->comm->name, &nc->abort_reason, &nc->arena);
    if (st != CC_OK) {
        native_destroy(nc);
        return st;
    }
    *state = nc;
    return CC_OK;
}

static void *worker_main(void *arg)
{
    cc__native_t *nc = arg;
    cc__log_set_comm(nc->comm->name);
    pthread_mutex_lock(&nc->lock);
    for (;;) {
        while (!nc->head && !nc->stopping) pthread_cond_wait(&nc->wake, &nc->lock);
        if (!nc->head) break;
        cc__op_t *op = nc->head;
        nc->head = op->next;
        if (!nc->head) nc->tail = NULL;
        pthread_mutex_unlock(&nc->lock);
        cc_status_t reason = (cc_status_t)atomic_load(&nc->abort_reason);
        cc_status_t st = reason != CC_OK ? reason : cc__native_run(nc, op);
        cc__op_finished(op, st);
        pthread_mutex_lock(&nc->lock);
        if (atomic_fetch_sub(&nc->pending, 1) == 1) pthread_cond_broadcast(&nc->idle);
    }
    pthread_mutex_unlock(&nc->lock);
    return NULL;
}

static cc_status_t enqueue(cc__native_t *nc, cc__op_t *op)
{
    pthread_mutex_lock(&nc->lock);
    if (!nc->worker_started) {
        if (pthread_create(&nc->worker, NULL, worker_main, nc) != 0) {
            pthread_mutex_unlock(&nc->lock);
            cc_log_error(CC_SUBSYS_COLL, "cannot start the progress thread of communicator %s",
                         nc->comm->name);
            return CC_ERR_SYSTEM;
        }
        nc->worker_started = 1;
    }
    op->next = NULL;
    if (nc->tail) nc->tail->next = op;
    else nc->head = op;
    nc->tail = op;
    atomic_fetch_add(&nc->pending, 1);
    pthread_cond_signal(&nc->wake);
    pthread_mutex_unlock(&nc->lock);
    return CC_OK;
}

static void native_abort(void *state, cc_status_t reason);

int cc__native_runs_now(void *state)
{
    const cc__native_t *nc = state;
    return atomic_load(&nc->pending) == 0;
}

static cc_status_t native_submit(void *state, cc__op_t *op)
{
    cc__native_t *nc = state;
    if (!op->work && cc__native_runs_now(nc)) {
        op->caller_runs = 1; /* to its end, on this thread: no one waits on its done word */
        cc_status_t reason = (cc_status_t)atomic_load(&nc->abort_reason);
        cc_status_t st = reason != CC_OK ? reason : cc__native_run(nc, op);
        cc__op_finished(op, st);
        return st;
    }
    /* Queued behind others: the recorder shows it SCHEDULED from now, not at its START. */
    cc__op_record_pre(op);
    cc_status_t st = enqueue(nc, op);
    if (st != CC_OK && !op->work) cc__op_finished(op, st); /* a blocking op ends here */
    if (st != CC_OK || op->work) return st;
    /* A blocking op behind async ones: the worker runs it, in order. The
     * engine ends it by its deadline; the grace only guards against a bug. */
    if (cc__op_wait_engine(op) != CC_OK) {
        cc_log_error(CC_SUBSYS_COLL, "%s (op %llu) passed its deadline on the progress thread; "
                     "stopping the engine", cc_op_type_name(op->info.type),
                     (unsigned long long)op->info.op_id);
        /* The op lives in the caller's frame and the worker still holds it: returning now
         * would leave the worker writing into a frame that is gone. Stop the engine, so the
         * worker ends the op with the abort's status, and return once it has. */
        native_abort(nc, CC_ERR_TIMEOUT);
        while (cc__op_wait_done(op, cc__ns_add_sat(cc__now_ns(), CC__ENGINE_GRACE_NS)) != CC_OK)
            cc_log_error(CC_SUBSYS_COLL, "%s (op %llu) still held by the progress thread after "
                         "the abort", cc_op_type_name(op->info.type),
                         (unsigned long long)op->info.op_id);
    }
    return op->info.status;
}

static cc_status_t native_drain(void *state, uint64_t deadline_ns)
{
    cc__native_t *nc = state;
    pthread_mutex_lock(&nc->lock);
    while (atomic_load(&nc->pending) > 0) {
        uint64_t now = cc__now_ns();
        if (now >= deadline_ns) {
            pthread_mutex_unlock(&nc->lock);
            cc_log_error(CC_SUBSYS_COLL, "communicator %s: %d ops still pending at destroy",
                         nc->comm->name, atomic_load(&nc->pending));
            return CC_ERR_TIMEOUT;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&nc->idle, &nc->lock, &ts);
    }
    pthread_mutex_unlock(&nc->lock);
    return CC_OK;
}

static void native_abort(void *state, cc_status_t reason)
{
    cc__native_t *nc = state;
    int expected = CC_OK;
    if (!atomic_compare_exchange_strong(&nc->abort_reason, &expected, (int)reason)) return;
    cc__net_abort(nc->net, reason);
}

static void native_destroy(void *state)
{
    cc__native_t *nc = state;
    if (!nc) return;
    pthread_mutex_lock(&nc->lock);
    nc->stopping = 1;
    pthread_cond_signal(&nc->wake);
    int started = nc->worker_started;
    pthread_mutex_unlock(&nc->lock);
    if (started) pthread_join(nc->worker, NULL);
    cc__arena_destroy(nc->arena);
    cc__net_destroy(nc->net);
    pthread_cond_destroy(&nc->idle);
    pthread_cond_destroy(&nc->wake);
    pthread_mutex_destroy(&nc->lock);
    free(nc->scratch);
    free(nc->premul);
    free(nc->pack);
    free(nc->reqs);
    free(nc->reqp);
    free(nc);
}

static const char *native_transport(void *state)
{
    return ((cc__native_t *)state)->transport;
}

const cc_engine_v3_t cc__native_engine3 = {
    .v2 = {.v1 = {.version = CC_ENGINE_VERSION_3,
                  .name = "native",
                  .comm_create = native_create,
                  .submit = native_submit,
                  .drain = native_drain,
                  .comm_abort = native_abort,
                  .comm_destroy = native_destroy,
                  .transport = native_transport}},
    .win_create = cc__native_window_create,
    .win_destroy = cc__native_window_destroy,
};
