/*
 * plugin.c - loading the CUDA plugin, and the table of core services that
 * plugins reach the core through (see plugin.h).
 *
 * The plugin is opened once per process, on the first device communicator,
 * from CCOMM_CUDA_PLUGIN: a path, or a name looked up first next to the
 * object that holds this code (libccomm.so's folder), then by the dynamic
 * loader's usual search. A failure is logged with its cause each time a
 * device communicator asks (creating one is rare) and the communicator is
 * refused with CC_ERR_NOT_SUPPORTED; CPU communicators never load it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/build_id.h"
#include "base/config.h"
#include "core/door.h"
#include "base/log.h"
#include "core/plugin.h"
#include "recorder/recorder.h"
#include "core/services.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static const cc_plugin_t *g_plugin; /* set once loaded; the handle stays open */

/* ---- services ---------------------------------------------------------- */

static void svc_op_started(cc__op_t *op, uint64_t t_ns)
{
    cc__op_started_at(op, t_ns);
}

static void svc_op_finished(cc__op_t *op, cc_status_t status, uint64_t t_ns)
{
    cc__op_finished_at(op, status, t_ns);
}

static void svc_comm_info(const cc_comm_t *c, cc_plugin_comm_t *out)
{
    memset(out, 0, sizeof(*out));
    out->id = c->id;
    out->parent_id = c->parent_id;
    out->name = c->name;
    out->rank = c->rank;
    out->size = c->size;
    out->device = c->device;
    out->timeout_ms = c->timeout_ms;
    out->world_ranks = c->world_ranks;
    out->world_rank = c->world ? c->world->world_rank : -1;
    out->job_id = c->world ? c->world->job_id : "";
    out->engine_arg = c->engine_arg;
}

static void svc_comm_fail(cc_comm_t *comm, cc_status_t status, const char *why)
{
    cc__comm_fail(comm, status, NULL, why);
}

static cc_status_t svc_world_attach(cc__world_t **out)
{
    cc__cfg();
    cc__log_init();
    CC_CHECK(cc__config_check()); /* as at cc_comm_init: a bad CCOMM_* value stops here */
    char addr[300];
    int rank = 0, size = 1, may_host = 0;
    const char *who = "none";
    cc_status_t st = cc__launcher_find(&rank, &size, addr, sizeof(addr), &may_host, &who);
    if (st == CC_ERR_NOT_FOUND) {
        /* No launcher: this process is a job of its own (no cross-rank dumps). */
        rank = 0, size = 1, may_host = 1;
        snprintf(addr, sizeof(addr), "127.0.0.1:0");
        cc_log_info(CC_SUBSYS_INIT, "no launcher in the environment: attaching as a job of one");
    } else if (st != CC_OK) {
        return st;
    }
    cc__log_set_rank(rank);
    cc__world_t *w = NULL;
    CC_CHECK(cc__world_attach(rank, size, addr, may_host, &w));
    cc_log_info(CC_SUBSYS_INIT, "attached to job %s as rank %d of %d (launcher %s, store %s)",
                w->job_id, rank, size, who, w->store_addr);
    cc__services_start(w, rank, size);
    *out = w;
    return CC_OK;
}

static void svc_world_info(const cc__world_t *w, int *rank, int *size)
{
    *rank = w->world_rank;
    *size = w->world_size;
}

static cc_status_t svc_comm_create_external(cc__world_t *world, uint64_t id, uint64_t parent_id,
                                            const char *name, int rank, int size, int *world_ranks,
                                            int device, int64_t timeout_ms,
                                            const cc_engine_v1_t *engine, void *engine_arg,
                                            cc_comm_t **out)
{
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.name = name;
    cfg.device = device;
    cfg.timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    return cc__comm_create_ex(world, id, parent_id, name, rank, size, world_ranks, &cfg, engine,
                              engine_arg, out);
}

static cc__store_t *store_of(cc_comm_t *comm, cc__world_t *world)
{
    return comm ? comm->store : world ? world->store : NULL;
}

static cc_status_t svc_store_set(cc_comm_t *comm, cc__world_t *world, const char *key,
                                 const void *val, size_t len)
{
    cc__store_t *s = store_of(comm, world);
    return s ? cc__store_set(s, key, val, len) : CC_ERR_INVALID_ARG;
}

static cc_status_t svc_store_get(cc_comm_t *comm, cc__world_t *world, const char *key, void **val,
                                 size_t *len, int64_t timeout_ms)
{
    cc__store_t *s = store_of(comm, world);
    return s ? cc__store_get(s, key, val, len, timeout_ms) : CC_ERR_INVALID_ARG;
}

static cc_status_t svc_store_allgather(cc_comm_t *comm, const char *name, const void *mine,
                                       void *all, size_t len, int64_t timeout_ms)
{
    return cc__store_allgather(comm->store, name, comm->rank, comm->size, mine, all, len,
                               timeout_ms);
}

static int svc_log_level(void)
{
    return cc__log_level;
}

static uint32_t svc_log_mask(void)
{
    return cc__log_mask;
}

static uint64_t svc_recorder_id(const cc__op_t *op)
{
    return op->rec_id;
}

static const cc_core_t g_core = {
    .build_id = CC_BUILD_ID,
    .op_started = svc_op_started,
    .op_finished = svc_op_finished,
    .op_prepare = cc__op_prepare,
    .door_issue = cc__door_issue,
    .comm_info = svc_comm_info,
    .comm_fail = svc_comm_fail,
    .world_attach = svc_world_attach,
    .world_release = cc__world_release,
    .world_info = svc_world_info,
    .comm_create_external = svc_comm_create_external,
    .store_set = svc_store_set,
    .store_get = svc_store_get,
    .store_allgather = svc_store_allgather,
    .log_level = svc_log_level,
    .log_mask = svc_log_mask,
    .log_vwrite = cc__log_vwrite,
    .log_count_error = cc__log_count_error,
    .log_verror = cc__log_verror,
    .log_set_comm = cc__log_set_comm,
    .cfg = cc__cfg,
    .recorder_gpu = cc__recorder_gpu,
    .recorder_gpu_flush = cc__recorder_set_gpu_flush,
    .recorder_id = svc_recorder_id,
};

const cc_core_t *cc_plugin_core_get(void)
{
    return &g_core;
}

/* ---- loading ------------------------------------------------------------- */

/* A bare name is looked for next to libccomm first (installed side by side). */
static void *open_plugin(const char *name, char *err, size_t errlen)
{
    void *h = NULL;
    Dl_info me;
    if (!strchr(name, '/') && dladdr((void *)&cc_plugin_core_get, &me) && me.dli_fname) {
        const char *slash = strrchr(me.dli_fname, '/');
        if (slash) {
            char path[4096];
            snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - me.dli_fname), me.dli_fname,
                     name);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!h) h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "unknown dlopen error");
    }
    return h;
}

static cc_status_t load_plugin(void)
{
    const char *name = cc__cfg()->cuda_plugin;
    char err[512] = "";
    void *h = open_plugin(name, err, sizeof(err));
    if (!h) {
        cc_log_error(CC_SUBSYS_CUDA, "cannot load the CUDA plugin %s (CCOMM_CUDA_PLUGIN): %s", name,
                     err);
        return CC_ERR_NOT_SUPPORTED;
    }
    cc_plugin_init_fn init = (cc_plugin_init_fn)dlsym(h, CC_PLUGIN_INIT);
    if (!init) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "CUDA plugin %s has no %s: not a ccomm plugin of this build (core "
                     "build %s)",
                     name, CC_PLUGIN_INIT, CC_BUILD_ID);
        dlclose(h);
        return CC_ERR_NOT_SUPPORTED;
    }
    const cc_plugin_t *p = init(&g_core);
    if (!p || !p->engine) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "CUDA plugin %s refused this core (build %s); see the "
                     "message above",
                     name, CC_BUILD_ID);
        dlclose(h);
        return CC_ERR_NOT_SUPPORTED;
    }
    /* A plugin that checks nothing is no excuse: the core checks too. */
    if (!p->build_id || strcmp(p->build_id, CC_BUILD_ID)) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "CUDA plugin %s is of build %s, this core of build %s: plugins are "
                     "built with the core, rebuild it from the same tree",
                     name, p->build_id ? p->build_id : "(none)", CC_BUILD_ID);
        dlclose(h);
        return CC_ERR_NOT_SUPPORTED;
    }
    cc_log_info(CC_SUBSYS_CUDA, "CUDA plugin %s loaded (%s)", name, p->name);
    g_plugin = p; /* the handle stays open for the life of the process */
    return CC_OK;
}

cc_status_t cc__plugin_engine(const char *want, int device, const cc_engine_v1_t **out)
{
    pthread_mutex_lock(&g_lock);
    cc_status_t st = g_plugin ? CC_OK : load_plugin();
    pthread_mutex_unlock(&g_lock);
    CC_CHECK(st);
    const cc_engine_v1_t *e = NULL;
    CC_CHECK(g_plugin->engine(want, device, &e));
    if (!e || e->version < CC_ENGINE_VERSION_1 || e->version > CC_ENGINE_VERSION_3) {
        cc_log_error(CC_SUBSYS_CUDA, "CUDA plugin gave an engine of unknown version %u",
                     e ? e->version : 0);
        return CC_ERR_INTERNAL;
    }
    *out = e;
    return CC_OK;
}
