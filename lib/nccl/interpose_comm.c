/*
 * interpose_comm.c - the interposer's communicators: setup, the map from
 * real communicators to shadows, NCCL's lifecycle entry points, and the
 * shadow engine's table (see interpose.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "cuda/cudart.h"
#include "cuda/gputime.h"
#include "cuda/shim.h"
#include "nccl/interpose.h"
#include "base/log.h"

#define MAP_SLOTS 4096 /* live communicators a process may have (open addressing) */

static ix_state_t g_state;
static int g_ok;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* map writers, world */
static _Atomic(ix_comm_t *) g_map[MAP_SLOTS];
static ix_comm_t g_tomb; /* a removed entry (keeps probe chains intact) */

static void setup(void)
{
    const cc_core_t *core = cc_plugin_core_get();
    if (cc__shim_init(core) != CC_OK) return;
    if (cc__nccl_lib_open(cc__cfg()->nccl_lib, (const void *)&ix_engine, &g_state.lib) != CC_OK)
        return;
    g_ok = 1;
    if (g_state.lib->host) {
        g_state.gev = cc__gev_host(g_state.lib->host);
    } else {
        cc__cudart = cc__cudart_dl();
        if (cc__cudart && cc__cuda_usable())
            g_state.gev = &cc__gev_cuda;
        else
            cc_log_warn(CC_SUBSYS_NCCL,
                        "nccl interposer: no CUDA runtime usable here, so GPU "
                        "ops cannot be followed: NCCL calls pass through unrecorded");
    }
    cc__gputime_init((const void *)&ix_engine);
}

const ix_state_t *ix_state(void)
{
    pthread_once(&g_once, setup);
    return g_ok ? &g_state : NULL;
}

struct cc__world *ix_world(void)
{
    pthread_mutex_lock(&g_lock);
    if (!g_state.world && cc__core->world_attach(&g_state.world) != CC_OK) g_state.world = NULL;
    struct cc__world *w = g_state.world;
    pthread_mutex_unlock(&g_lock);
    return w;
}

static size_t slot_of(ncclComm_t nc)
{
    uint64_t h = (uint64_t)(uintptr_t)nc * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 52) % MAP_SLOTS;
}

ix_comm_t *ix_lookup(ncclComm_t nc)
{
    if (!nc) return NULL;
    for (size_t i = slot_of(nc), n = 0; n < MAP_SLOTS; i = (i + 1) % MAP_SLOTS, n++) {
        ix_comm_t *e = atomic_load_explicit(&g_map[i], memory_order_acquire);
        if (!e) return NULL;
        if (e != &g_tomb && e->nc == nc) return e;
    }
    return NULL;
}

static int map_put(ix_comm_t *ix)
{
    pthread_mutex_lock(&g_lock);
    int ok = 0;
    for (size_t i = slot_of(ix->nc), n = 0; n < MAP_SLOTS; i = (i + 1) % MAP_SLOTS, n++) {
        ix_comm_t *e = atomic_load(&g_map[i]);
        if (!e || e == &g_tomb) {
            atomic_store_explicit(&g_map[i], ix, memory_order_release);
            ok = 1;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

static void map_remove(ix_comm_t *ix)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = slot_of(ix->nc), n = 0; n < MAP_SLOTS; i = (i + 1) % MAP_SLOTS, n++) {
        ix_comm_t *e = atomic_load(&g_map[i]);
        if (!e) break;
        if (e == ix) {
            atomic_store(&g_map[i], &g_tomb);
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

/* Members' world ranks through the store, when the world has the other ranks. */
static int *members(const ix_comm_t *ix, struct cc__world *w)
{
    int wrank = 0, wsize = 1;
    cc__core->world_info(w, &wrank, &wsize);
    int *wr = malloc((size_t)ix->size * sizeof(int));
    if (!wr) return NULL;
    for (int r = 0; r < ix->size; r++)
        wr[r] = r == ix->rank ? wrank : -1;
    if (wsize < ix->size) return wr; /* no shared store: only our own rank is known */
    char key[64], val[16];
    snprintf(key, sizeof(key), "ncclx/%016llx/%d", (unsigned long long)ix->id, ix->rank);
    int n = snprintf(val, sizeof(val), "%d", wrank);
    if (cc__core->store_set(NULL, w, key, val, (size_t)n) != CC_OK) return wr;
    int64_t wait_ms = cc__cfg()->connect_timeout * 1000;
    for (int r = 0; r < ix->size; r++) {
        if (r == ix->rank) continue;
        void *v = NULL;
        size_t len = 0;
        snprintf(key, sizeof(key), "ncclx/%016llx/%d", (unsigned long long)ix->id, r);
        if (cc__core->store_get(NULL, w, key, &v, &len, wait_ms) == CC_OK) wr[r] = atoi(v);
        free(v);
    }
    return wr;
}

void ix_adopt(ncclComm_t nc, uint64_t id, uint64_t parent_id)
{
    const ix_state_t *s = ix_state();
    if (!s || !s->gev || !nc) return;
    ix_comm_t *ix = calloc(1, sizeof(*ix));
    if (!ix) return;
    ix->nc = nc;
    ix->id = id;
    if (s->lib->CommUserRank) s->lib->CommUserRank(nc, &ix->rank);
    if (s->lib->CommCount) s->lib->CommCount(nc, &ix->size);
    if (s->lib->CommCuDevice) s->lib->CommCuDevice(nc, &ix->device);
    struct cc__world *w = ix_world();
    /* A non-blocking init may not know its rank and size yet: such a comm is not followed. */
    const char *why = !w ? "no ccomm job" : ix->size <= 0 ? "rank and size not known yet" : NULL;
    int *wr = why ? NULL : members(ix, w);
    char name[48];
    snprintf(name, sizeof(name), "nccl.%08llx", (unsigned long long)(id & 0xffffffffu));
    cc_status_t st = wr ? cc__core->comm_create_external(w, id, parent_id, name, ix->rank, ix->size,
                                                         wr, ix->device, 0, &ix_engine, ix, &ix->cc)
                        : CC_ERR_NOT_SUPPORTED;
    if (st == CC_OK && !map_put(ix)) why = "too many communicators";
    if (st != CC_OK || why) {
        cc_log_warn(CC_SUBSYS_NCCL,
                    "nccl interposer: communicator %p (rank %d of %d) passes "
                    "through unrecorded: %s",
                    (void *)nc, ix->rank, ix->size, why ? why : cc_status_name(st));
        if (ix->cc) cc_comm_destroy(ix->cc);
        free(ix);
    }
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* ---- NCCL's lifecycle entry points ------------------------------------------- */

IX_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    ix_world(); /* the launcher's job first: ccomm's services belong to it */
    ncclResult_t r = s->lib->CommInitRank(comm, nranks, id, rank);
    if (r == ncclSuccess) ix_adopt(*comm, hash_bytes(&id, sizeof(id), 0), 0);
    return r;
}

IX_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config)
{
    const ix_state_t *s = ix_state();
    if (!s || !s->lib->CommInitRankConfig) return ncclSystemError;
    ix_world();
    ncclResult_t r = s->lib->CommInitRankConfig(comm, nranks, id, rank, config);
    /* A non-blocking init (ncclInProgress) is adopted too: NCCL queues calls until it is ready. */
    if (r == ncclSuccess || r == ncclInProgress) ix_adopt(*comm, hash_bytes(&id, sizeof(id), 0), 0);
    return r;
}

IX_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    const ix_state_t *s = ix_state();
    if (!s || !s->lib->CommInitAll) return ncclSystemError;
    ix_world();
    ncclResult_t r = s->lib->CommInitAll(comms, ndev, devlist);
    /* One process holds every rank: the id only has to be unique here. */
    static _Atomic uint64_t calls;
    uint64_t k = atomic_fetch_add(&calls, 1);
    pid_t pid = getpid();
    for (int i = 0; r == ncclSuccess && i < ndev; i++)
        ix_adopt(comms[i], hash_bytes(&pid, sizeof(pid), k + 1), 0);
    return r;
}

IX_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
    const ix_state_t *s = ix_state();
    if (!s || !s->lib->CommSplit) return ncclSystemError;
    ix_comm_t *p = ix_lookup(comm);
    ncclResult_t r = s->lib->CommSplit(comm, color, key, newcomm, config);
    if (!p) return r;
    /* Every member of the parent splits, in the same order: the count names the child. */
    uint64_t k = ++p->splits, src[3] = {p->id, k, (uint64_t)(int64_t)color};
    if ((r == ncclSuccess || r == ncclInProgress) && newcomm && *newcomm)
        ix_adopt(*newcomm, hash_bytes(src, sizeof(src), 0), p->id);
    return r;
}

IX_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    const ix_state_t *s = ix_state();
    if (!s || !s->lib->CommFinalize) return ncclSystemError;
    ix_comm_t *ix = ix_lookup(comm);
    if (ix && atomic_load(&ix->aborted) != CC_OK) return ncclSuccess; /* already gone */
    return s->lib->CommFinalize(comm);
}

/* Drop the shadow: its pending ops end, COMM_DESTROY passes the door, the map forgets it. */
static void forget(ix_comm_t *ix)
{
    map_remove(ix);
    cc_comm_destroy(ix->cc); /* drains (the GPU finishes or the op times out) */
    free(ix);
}

IX_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    ix_comm_t *ix = ix_lookup(comm);
    if (!ix) return s->lib->CommDestroy(comm);
    int gone = atomic_load(&ix->aborted) != CC_OK;
    ncclResult_t r = ncclSuccess;
    if (!gone) {
        int64_t t = cc__cfg()->timeout; /* seconds; saturated: a huge one means no deadline */
        cc__tracker_drain(&ix->owner,
                          cc__deadline_after_ms(t > INT64_MAX / 1000 ? INT64_MAX : t * 1000));
        /* The real teardown happens once: here, or in an abort that won the race. */
        int expected = CC_OK;
        if (atomic_compare_exchange_strong(&ix->aborted, &expected, (int)CC_ERR_INVALID_USAGE))
            r = s->lib->CommDestroy(comm);
    }
    forget(ix);
    return r;
}

IX_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    ix_comm_t *ix = ix_lookup(comm);
    if (!ix) return s->lib->CommAbort(comm);
    /* Through the shadow: the ABORT chain records it, the engine aborts the real one once. */
    cc_comm_abort(ix->cc);
    forget(ix);
    return ncclSuccess;
}

IX_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    const ix_state_t *s = ix_state();
    if (!s) return ncclSystemError;
    ix_comm_t *ix = ix_lookup(comm);
    if (ix && atomic_load(&ix->aborted) != CC_OK) {
        /* ccomm aborted it (a timeout): the program sees a remote error, as after a failure. */
        if (!err) return ncclInvalidArgument;
        *err = ncclRemoteError;
        return ncclSuccess;
    }
    return s->lib->CommGetAsyncError(comm, err);
}

/* ---- the shadow engine ------------------------------------------------------- */

static cc_status_t poll_error(void *arg, char *why, size_t len)
{
    ix_comm_t *ix = arg;
    const ix_state_t *s = ix_state();
    atomic_fetch_add(&ix->busy, 1);
    ncclResult_t r = ncclSuccess;
    if (atomic_load(&ix->aborted) == CC_OK) s->lib->CommGetAsyncError(ix->nc, &r);
    atomic_fetch_sub(&ix->busy, 1);
    if (r == ncclSuccess || r == ncclInProgress) return CC_OK;
    snprintf(why, len, "ncclCommGetAsyncError: %s", cc__nccl_errstr(s->lib, r));
    return cc__nccl_status(r);
}

static cc_status_t ix_create(struct cc_comm *comm, void **state)
{
    cc_plugin_comm_t info;
    cc__core->comm_info(comm, &info);
    ix_comm_t *ix = info.engine_arg;
    /* The name is borrowed until the comm is destroyed, which outlives the owner's use. */
    ix->owner = (cc__track_owner_t){
        .comm = comm, .name = info.name, .poll_error = poll_error, .poll_arg = ix};
    *state = ix;
    return CC_OK;
}

static cc_status_t ix_drain(void *state, uint64_t deadline_ns)
{
    return cc__tracker_drain(&((ix_comm_t *)state)->owner, deadline_ns);
}

/* The shadow failed (timeout, async error) or the program aborted: abort the real one, once. */
static void ix_abort(void *state, cc_status_t reason)
{
    ix_comm_t *ix = state;
    int expected = CC_OK;
    if (!atomic_compare_exchange_strong(&ix->aborted, &expected, (int)reason)) return;
    cc__tracker_abort(&ix->owner, reason);
    for (int i = 0; i < 2000 && atomic_load(&ix->busy) > 0; i++)
        usleep(1000);
    ncclResult_t r = ix_state()->lib->CommAbort(ix->nc);
    cc_log_warn(CC_SUBSYS_NCCL, "nccl interposer: aborted nccl communicator %p (%s): %s",
                (void *)ix->nc, cc_status_name(reason),
                r == ncclSuccess ? "done" : cc__nccl_errstr(ix_state()->lib, r));
}

static void ix_destroy(void *state)
{
    (void)state; /* the interposer frees its ix_comm_t (forget) */
}

static const char *ix_transport(void *state)
{
    (void)state;
    return "nccl";
}

cc_status_t cc__ix_submit(void *state, cc__op_t *op);

const cc_engine_v1_t ix_engine = {
    .version = CC_ENGINE_VERSION_1,
    .name = "nccl",
    .comm_create = ix_create,
    .submit = cc__ix_submit,
    .drain = ix_drain,
    .comm_abort = ix_abort,
    .comm_destroy = ix_destroy,
    .transport = ix_transport,
};
