/*
 * comm.c - communicator objects: creation once the identity is known,
 * destroy, abort, failure, getters, and the registry of live comms.
 *
 * A destroyed communicator keeps its small shell (magic set to
 * CC__COMM_DEAD) so that a later call with the stale handle is detected by
 * the magic check instead of reading freed memory. Everything else is freed,
 * and so is the shell once CC__COMM_SHELLS_MAX more comms have died: a job
 * that makes and drops groups all day stays flat, and the stale handles met
 * in practice (a second destroy, a call right after it) are still caught.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "base/config.h"
#include "core/door.h"
#include "base/log.h"
#include "base/solo.h"
#include "core/plugin.h"

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static cc_comm_t *g_reg_head;
/* Shells of the last destroyed comms, a ring: g_grave_n of them, the oldest at
 * g_grave_next once the ring is full. */
static cc_comm_t *g_grave[CC__COMM_SHELLS_MAX];
static size_t g_grave_next, g_grave_n;

/* Keep a dead comm's shell for the magic check; free the oldest beyond the bound. */
static void bury(cc_comm_t *comm)
{
    pthread_mutex_lock(&g_reg_lock);
    cc_comm_t *old = g_grave[g_grave_next];
    g_grave[g_grave_next] = comm;
    g_grave_next = (g_grave_next + 1) % CC__COMM_SHELLS_MAX;
    if (g_grave_n < CC__COMM_SHELLS_MAX) g_grave_n++;
    pthread_mutex_unlock(&g_reg_lock);
    free(old);
}

size_t cc__comm_shells(void)
{
    pthread_mutex_lock(&g_reg_lock);
    size_t n = g_grave_n;
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}

void cc__registry_add(cc_comm_t *comm)
{
    pthread_mutex_lock(&g_reg_lock);
    comm->reg_next = g_reg_head;
    g_reg_head = comm;
    pthread_mutex_unlock(&g_reg_lock);
}

void cc__registry_remove(cc_comm_t *comm)
{
    pthread_mutex_lock(&g_reg_lock);
    for (cc_comm_t **p = &g_reg_head; *p; p = &(*p)->reg_next)
        if (*p == comm) {
            *p = comm->reg_next;
            break;
        }
    pthread_mutex_unlock(&g_reg_lock);
}

int cc__registry_pin(cc_comm_t **out, int max)
{
    int n = 0;
    pthread_mutex_lock(&g_reg_lock);
    for (cc_comm_t *c = g_reg_head; c && n < max; c = c->reg_next) {
        atomic_fetch_add(&c->pins, 1);
        out[n++] = c;
    }
    pthread_mutex_unlock(&g_reg_lock);
    return n;
}

void cc__registry_unpin(cc_comm_t *comm)
{
    atomic_fetch_sub(&comm->pins, 1);
}

cc_comm_t *cc__registry_first_unlocked(void)
{
    return __atomic_load_n(&g_reg_head, __ATOMIC_ACQUIRE);
}

int cc__comm_valid(const cc_comm_t *comm)
{
    return comm && comm->magic == CC__COMM_MAGIC;
}

uint64_t cc__hash64(const void *data, size_t len, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= ((const unsigned char *)data)[i];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

/* why, and the rank the failed op waited for when its engine knows: "timed out; rank 0 was
 * waiting for rank 2 (comm rank 2, world rank 2)". Kept in the comm, as hooks may keep the
 * pointer; written once, by the one caller that runs the abort chain. */
static const char *fail_message(cc_comm_t *comm, cc_status_t status, const cc__op_t *op,
                                const char *why)
{
    int p = op ? op->waited_peer : -1;
    if ((status != CC_ERR_TIMEOUT && status != CC_ERR_PEER_LOST) || p < 0 || p >= comm->size)
        return why;
    snprintf(comm->fail_why, sizeof(comm->fail_why),
             "%s; rank %d was waiting for rank %d (comm rank %d, world rank %d)",
             why ? why : cc_status_str(status), comm->rank, p, p,
             comm->world_ranks ? comm->world_ranks[p] : p);
    return comm->fail_why;
}

void cc__comm_fail(cc_comm_t *comm, cc_status_t status, const cc__op_t *op, const char *why)
{
    int expected = CC_OK;
    atomic_compare_exchange_strong(&comm->error, &expected, (int)status);
    if (atomic_exchange(&comm->abort_ran, 1)) return;
    why = fail_message(comm, status, op, why);
    if (status == CC_ERR_ABORTED)
        cc_log_info(CC_SUBSYS_CORE, "communicator %s (id %016llx) aborted: %s", comm->name,
                    (unsigned long long)comm->id, why);
    else
        cc_log_error(CC_SUBSYS_CORE, "communicator %s (id %016llx, rank %d of %d) fails with %s: "
                     "%s%s%s; aborting it", comm->name, (unsigned long long)comm->id, comm->rank,
                     comm->size, cc_status_name(status), why, op ? " in " : "",
                     op ? cc_op_type_name(op->info.type) : "");
    cc_abort_info_t info = {
        .comm = comm,
        .comm_id = comm->id,
        .comm_name = comm->name,
        .rank = comm->rank,
        .size = comm->size,
        .reason = status,
        .message = why ? why : cc_status_str(status),
        .op = op ? &op->info : NULL,
        .signal = 0,
    };
    cc__hooks_run_abort(&comm->hooks, &info, 0);
    if (comm->engine && comm->engine_state) comm->engine->comm_abort(comm->engine_state, status);
}

cc_status_t cc__comm_config_check(const cc_comm_config_t *config, const char *fn)
{
    if (!config) return CC_OK;
    if (config->struct_size < sizeof(cc_comm_config_t) || config->struct_size > 4096) {
        cc_log_error(CC_SUBSYS_INIT,
                     "%s: config->struct_size is %zu, expected %zu (start from "
                     "CC_COMM_CONFIG_INIT)",
                     fn, config->struct_size, sizeof(cc_comm_config_t));
        return CC_ERR_INVALID_ARG;
    }
    if (config->timeout_ms < 0) {
        cc_log_error(CC_SUBSYS_INIT, "%s: config->timeout_ms is %lld, must be >= 0", fn,
                     (long long)config->timeout_ms);
        return CC_ERR_INVALID_ARG;
    }
    if (config->device < CC_DEVICE_CPU) {
        cc_log_error(CC_SUBSYS_INIT,
                     "%s: config->device is %d, must be CC_DEVICE_CPU (-1) or a "
                     "CUDA device ordinal",
                     fn, config->device);
        return CC_ERR_INVALID_ARG;
    }
    const char *e = config->engine, *t = config->transport;
    if (e && strcmp(e, "auto") && strcmp(e, "native") && strcmp(e, "nccl")) {
        cc_log_error(CC_SUBSYS_INIT, "%s: config->engine \"%s\" is not auto, native or nccl", fn,
                     e);
        return CC_ERR_INVALID_ARG;
    }
    if (t && strcmp(t, "auto") && strcmp(t, "tcp")) {
        cc_log_error(CC_SUBSYS_INIT, "%s: config->transport \"%s\" is not auto or tcp", fn, t);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

static cc_status_t engine_create(cc_comm_t *comm, void *arg)
{
    (void)arg;
    return comm->engine->comm_create(comm, &comm->engine_state);
}

static cc_status_t pick_engine(cc_comm_t *comm, const cc_comm_config_t *config)
{
    if (comm->engine) return CC_OK; /* an external communicator brought its own */
    const char *want = config && config->engine ? config->engine : "auto";
    if (strcmp(want, "auto") && strcmp(want, "native") && strcmp(want, "nccl")) {
        cc_log_error(CC_SUBSYS_INIT, "config->engine \"%s\" is not auto, native or nccl", want);
        return CC_ERR_INVALID_ARG;
    }
    if (comm->device == CC_DEVICE_CPU && !strcmp(want, "nccl")) {
        cc_log_error(CC_SUBSYS_INIT, "communicator %s asks for engine nccl on the CPU: NCCL needs "
                     "a CUDA device (set config->device)", comm->name);
        return CC_ERR_INVALID_ARG;
    }
    if (comm->device == CC_DEVICE_CPU) {
        comm->engine = &cc__native_engine;
        return CC_OK;
    }
    /* Device communicators run in the CUDA plugin; the core never links CUDA. */
    return cc__plugin_engine(want, comm->device, &comm->engine);
}

static void comm_free_parts(cc_comm_t *comm)
{
    free(comm->world_ranks);
    free(comm->send_seq);
    free(comm->recv_seq);
    comm->world_ranks = NULL;
    comm->send_seq = comm->recv_seq = NULL;
    if (comm->store) cc__store_close(comm->store);
    comm->store = NULL;
    cc__hooks_drop_owner(&comm->hooks, comm);
}

int64_t cc__env_timeout_ms(void)
{
    int64_t s = cc__cfg()->timeout;
    if (s > INT64_MAX / 1000) return INT64_MAX; /* no deadline, as INT64_MAX ms is */
    return s < 0 ? -1 : s * 1000;
}

static cc_status_t comm_fill(cc_comm_t *c, const cc_comm_config_t *config)
{
    const struct cc__config *cfg = cc__cfg();
    c->timeout_ms = config && config->timeout_ms > 0 ? config->timeout_ms : cc__env_timeout_ms();
    if (c->timeout_ms <= 0) {
        /* Every op would time out at once. */
        cc_log_error(CC_SUBSYS_INIT, "communicator %s: CCOMM_TIMEOUT is %lld s, must be > 0",
                     c->name, (long long)cfg->timeout);
        return CC_ERR_INVALID_ARG;
    }
    c->device = config ? config->device : CC_DEVICE_CPU;
    const char *tr = config && config->transport ? config->transport : cfg->transport;
    if (strcmp(tr, "auto") && strcmp(tr, "tcp")) {
        cc_log_error(CC_SUBSYS_INIT, "transport \"%s\" is not auto or tcp", tr);
        return CC_ERR_INVALID_ARG;
    }
    snprintf(c->transport_req, sizeof(c->transport_req), "%s", tr);
    c->send_seq = calloc((size_t)c->size, sizeof(uint64_t));
    c->recv_seq = calloc((size_t)c->size, sizeof(uint64_t));
    if (!c->send_seq || !c->recv_seq) return CC_ERR_NO_MEMORY;
    char prefix[40];
    snprintf(prefix, sizeof(prefix), "c%016llx/", (unsigned long long)c->id);
    CC_CHECK(cc__store_view(c->world->store, prefix, &c->store));
    return pick_engine(c, config);
}

cc_status_t cc__comm_create(cc__world_t *world, uint64_t id, uint64_t parent_id, const char *name,
                            int rank, int size, int *world_ranks,
                            const cc_comm_config_t *config, const cc_comm_t *parent,
                            cc_comm_t **out)
{
    (void)parent;
    return cc__comm_create_ex(world, id, parent_id, name, rank, size, world_ranks, config, NULL,
                              NULL, out);
}

cc_status_t cc__comm_create_ex(cc__world_t *world, uint64_t id, uint64_t parent_id,
                               const char *name, int rank, int size, int *world_ranks,
                               const cc_comm_config_t *config, const cc_engine_v1_t *engine,
                               void *engine_arg, cc_comm_t **out)
{
    cc__solo_init(); /* before this comm's first op (base/solo.h) */
    cc_comm_t *c = calloc(1, sizeof(*c));
    if (!c) {
        free(world_ranks);
        return CC_ERR_NO_MEMORY;
    }
    c->magic = CC__COMM_MAGIC;
    c->id = id;
    c->parent_id = parent_id;
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->rank = rank;
    c->size = size;
    c->world_ranks = world_ranks;
    c->world = world;
    c->engine = engine;
    c->engine_arg = engine_arg;
    atomic_fetch_add(&world->refs, 1);
    cc_status_t st = comm_fill(c, config);
    if (st == CC_OK) st = cc__door_lifecycle(c, CC_OP_COMM_INIT, parent_id, engine_create, NULL);
    if (st != CC_OK) {
        comm_free_parts(c);
        cc__world_release(c->world);
        c->magic = CC__COMM_DEAD;
        bury(c);
        return st;
    }
    cc__registry_add(c);
    cc_log_info(CC_SUBSYS_INIT, "communicator %s (id %016llx) ready: rank %d of %d, engine %s, "
                "transport %s", c->name, (unsigned long long)c->id, rank, size, c->engine->name,
                c->engine->transport ? c->engine->transport(c->engine_state) : "?");
    *out = c;
    return CC_OK;
}

static cc_status_t check(const cc_comm_t *comm, const char *fn)
{
    if (cc__comm_valid(comm)) return CC_OK;
    cc_log_error(CC_SUBSYS_CORE, "%s: comm %p is not a valid communicator (%s)", fn,
                 (const void *)comm,
                 !comm ? "NULL" : comm->magic == CC__COMM_DEAD ? "destroyed" : "bad magic");
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc_comm_destroy(cc_comm_t *comm)
{
    CC_CHECK(check(comm, "cc_comm_destroy"));
    CC_CHECK(cc__door_reentry(comm, CC_OP_COMM_DESTROY)); /* it would wait for that hook's op */
    cc_status_t st = comm->engine->drain(comm->engine_state, cc__deadline_after_ms(comm->timeout_ms));
    if (st != CC_OK) cc__comm_fail(comm, st, NULL, "pending ops did not finish before destroy");
    cc__door_lifecycle(comm, CC_OP_COMM_DESTROY, comm->parent_id, NULL, NULL);
    cc__registry_remove(comm);
    while (atomic_load(&comm->pins)) usleep(1000); /* the watchdog is looking at it */
    comm->magic = CC__COMM_DEAD;
    comm->engine->comm_destroy(comm->engine_state);
    comm->engine_state = NULL;
    comm_free_parts(comm);
    cc__world_release(comm->world);
    comm->world = NULL;
    bury(comm);
    return st;
}

static cc_status_t do_abort(cc_comm_t *comm, void *arg)
{
    (void)arg;
    cc__comm_fail(comm, CC_ERR_ABORTED, NULL, "cc_comm_abort was called");
    return CC_OK;
}

cc_status_t cc_comm_abort(cc_comm_t *comm)
{
    CC_CHECK(check(comm, "cc_comm_abort"));
    if (atomic_load(&comm->abort_ran)) return CC_OK;
    if (cc__hooks_running(&comm->hooks)) {
        /* From one of the comm's hooks: the door's chains would run that hook again. */
        cc__comm_fail(comm, CC_ERR_ABORTED, NULL, "cc_comm_abort was called from a hook");
        return CC_OK;
    }
    return cc__door_lifecycle(comm, CC_OP_COMM_ABORT, 0, do_abort, NULL);
}

cc_status_t cc_comm_get_error(const cc_comm_t *comm)
{
    CC_CHECK(check(comm, "cc_comm_get_error"));
    return (cc_status_t)atomic_load(&comm->error);
}

int cc_comm_rank(const cc_comm_t *comm)
{
    return cc__comm_valid(comm) ? comm->rank : -1;
}

int cc_comm_size(const cc_comm_t *comm)
{
    return cc__comm_valid(comm) ? comm->size : -1;
}

uint64_t cc_comm_id(const cc_comm_t *comm)
{
    return cc__comm_valid(comm) ? comm->id : 0;
}

const char *cc_comm_name(const cc_comm_t *comm)
{
    return cc__comm_valid(comm) ? comm->name : NULL;
}

int cc_comm_device(const cc_comm_t *comm)
{
    return cc__comm_valid(comm) ? comm->device : CC_DEVICE_CPU;
}

int cc_comm_world_rank(const cc_comm_t *comm, int rank)
{
    if (!cc__comm_valid(comm) || rank < 0 || rank >= comm->size) return -1;
    return comm->world_ranks[rank];
}
