/*
 * nccl_engine.c - the NCCL engine's table: create (unique id through the
 * store, or ncclCommSplit), submit (events around the NCCL calls, then the
 * tracker), drain, abort (ncclCommAbort), destroy. See nccl_engine.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "cuda/cudart.h"
#include "cuda/gpu_submit.h"
#include "cuda/shim.h"
#include "base/log.h"
#include "nccl/nccl_engine.h"

/* A thread about to use x->nc: CC_OK, or the abort's reason (nc is gone). */
static cc_status_t enter(cc__ncclx_t *x)
{
    atomic_fetch_add(&x->busy, 1);
    cc_status_t r = (cc_status_t)atomic_load(&x->aborted);
    if (r != CC_OK) atomic_fetch_sub(&x->busy, 1);
    return r;
}

static void leave(cc__ncclx_t *x)
{
    atomic_fetch_sub(&x->busy, 1);
}

/* The tracker's error poll: NCCL's asynchronous error (a failed kernel, a lost peer). */
static cc_status_t poll_error(void *arg, char *why, size_t len)
{
    cc__ncclx_t *x = arg;
    if (enter(x) != CC_OK) return CC_OK; /* aborted: the abort speaks for itself */
    ncclResult_t r = ncclSuccess;
    ncclResult_t q = x->lib->CommGetAsyncError(x->nc, &r);
    const char *last = r != ncclSuccess && x->lib->GetLastError ? x->lib->GetLastError(x->nc) : "";
    leave(x);
    if (q != ncclSuccess) r = q;
    if (r == ncclSuccess || r == ncclInProgress) return CC_OK;
    snprintf(why, len, "ncclCommGetAsyncError: %s%s%s", cc__nccl_errstr(x->lib, r),
             last && *last ? ": " : "", last ? last : "");
    return cc__nccl_status(r);
}

/* The comm's device current on this thread (not for a host-memory NCCL). */
static cc_status_t set_device(const cc__ncclx_t *x, int *prev)
{
    *prev = -1;
    return x->lib->host ? CC_OK : cc__cuda_use_device(x->device, prev);
}

/* Rank 0's unique id through the comm's store; every rank arrives before NCCL's init. */
static cc_status_t init_nccl(cc__ncclx_t *x)
{
    int64_t wait_ms = cc__cfg()->connect_timeout * 1000;
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (x->rank == 0) {
        CC_CHECK(cc__ncclx_err(x, x->lib->GetUniqueId(&id), "ncclGetUniqueId"));
        CC_CHECK(cc__core->store_set(x->comm, NULL, "nccl/uid", &id, sizeof(id)));
    } else {
        void *v = NULL;
        size_t len = 0;
        CC_CHECK(cc__core->store_get(x->comm, NULL, "nccl/uid", &v, &len, wait_ms));
        if (len != sizeof(id)) {
            cc_log_error(CC_SUBSYS_NCCL,
                         "communicator %s: nccl unique id in the store has %zu "
                         "bytes, not %zu",
                         x->name, len, sizeof(id));
            free(v);
            return CC_ERR_PROTOCOL;
        }
        memcpy(&id, v, sizeof(id));
        free(v);
    }
    /* ncclCommInitRank blocks until every rank calls it: meet first, under our deadline. */
    char me = 1, *all = malloc((size_t)x->size);
    if (!all) return CC_ERR_NO_MEMORY;
    cc_status_t st = cc__core->store_allgather(x->comm, "nccl/arrived", &me, all, 1, wait_ms);
    free(all);
    CC_CHECK(st);
    return cc__ncclx_err(x, x->lib->CommInitRank(&x->nc, x->size, id, x->rank), "ncclCommInitRank");
}

static void free_x(cc__ncclx_t *x)
{
    if (x->barrier_buf) cc__cudart->Free(x->barrier_buf);
    free(x);
}

static cc_status_t create_parts(cc__ncclx_t *x, void *split_nc)
{
    if (!x->lib->host) {
        if (!cc__cuda_usable()) {
            cc_log_error(CC_SUBSYS_CUDA, "communicator %s: no CUDA device (device %d asked)",
                         x->name, x->device);
            return CC_ERR_NOT_SUPPORTED;
        }
        CC_CHECK(cc__cuda_check(cc__cudart->SetDevice(x->device), "cudaSetDevice"));
        CC_CHECK(cc__cuda_check(cc__cudart->Malloc(&x->barrier_buf, sizeof(int32_t)),
                                "cudaMalloc (barrier word)"));
    }
    if (split_nc)
        x->nc = split_nc;
    else
        CC_CHECK(init_nccl(x));
    return CC_OK;
}

static cc_status_t ncclx_create(struct cc_comm *comm, void **state)
{
    cc_plugin_comm_t info;
    cc__core->comm_info(comm, &info);
    cc__ncclx_t *x = calloc(1, sizeof(*x));
    if (!x) return CC_ERR_NO_MEMORY;
    x->comm = comm;
    snprintf(x->name, sizeof(x->name), "%s", info.name);
    x->rank = info.rank;
    x->size = info.size;
    x->device = info.device;
    cc_status_t st =
        cc__nccl_lib_open(cc__cfg()->nccl_lib, (const void *)&cc__nccl_engine, &x->lib);
    if (st == CC_OK) {
        x->gev = x->lib->host ? cc__gev_host(x->lib->host) : &cc__gev_cuda;
        st = create_parts(x, info.engine_arg);
    }
    if (st != CC_OK) {
        /* A communicator ncclCommSplit made for us is ours to end. */
        if (info.engine_arg && x->lib) x->lib->CommDestroy((ncclComm_t)info.engine_arg);
        free_x(x);
        return st;
    }
    x->owner =
        (cc__track_owner_t){.comm = comm, .name = x->name, .poll_error = poll_error, .poll_arg = x};
    *state = x;
    return CC_OK;
}

/* The row's NCCL calls (the submit helper puts events around them). */
static cc_status_t issue_row(void *ctx, cc__op_t *t, void *stream)
{
    cc__ncclx_t *x = ctx;
    const cc__nccl_row_t *row = cc__nccl_row(t->info.type);
    t->info.algorithm = row->algorithm;
    t->info.transport = "nccl";
    return row->issue(x, t, stream);
}

static cc_status_t ncclx_submit(void *state, cc__op_t *op)
{
    cc__ncclx_t *x = state;
    if (!cc__nccl_row(op->info.type)) {
        cc_log_error(CC_SUBSYS_NCCL, "communicator %s: the nccl engine cannot run %s yet", x->name,
                     cc_op_type_name(op->info.type));
        return cc__gpu_refuse(op, CC_ERR_NOT_SUPPORTED);
    }
    cc_status_t st = enter(x);
    if (st != CC_OK) return cc__gpu_refuse(op, st);
    int prev = -1;
    st = set_device(x, &prev);
    if (st == CC_OK) {
        cc__gpu_sub_t sub = {.gev = x->gev,
                             .device = x->device,
                             .nc = x->nc,
                             .owner = &x->owner,
                             .issue = issue_row,
                             .ctx = x};
        st = cc__gpu_submit(&sub, op);
    } else {
        st = cc__gpu_refuse(op, st);
    }
    cc__cuda_restore_device(prev);
    leave(x);
    return st;
}

static cc_status_t ncclx_drain(void *state, uint64_t deadline_ns)
{
    return cc__tracker_drain(&((cc__ncclx_t *)state)->owner, deadline_ns);
}

static void ncclx_abort(void *state, cc_status_t reason)
{
    cc__ncclx_t *x = state;
    int expected = CC_OK;
    if (!atomic_compare_exchange_strong(&x->aborted, &expected, (int)reason)) return;
    cc__tracker_abort(&x->owner, reason);
    /* Threads inside NCCL calls leave first (briefly); ncclCommAbort unblocks the rest. */
    for (int i = 0; i < 2000 && atomic_load(&x->busy) > 0; i++)
        usleep(1000);
    ncclResult_t r = x->lib->CommAbort(x->nc);
    if (r != ncclSuccess)
        cc_log_warn(CC_SUBSYS_NCCL, "communicator %s: ncclCommAbort: %s", x->name,
                    cc__nccl_errstr(x->lib, r));
    else
        cc_log_info(CC_SUBSYS_NCCL, "communicator %s: ncclCommAbort done (%s)", x->name,
                    cc_status_name(reason));
}

static void ncclx_destroy(void *state)
{
    cc__ncclx_t *x = state;
    if (!x) return;
    if (atomic_load(&x->aborted) == CC_OK) {
        ncclResult_t r = x->lib->CommFinalize ? x->lib->CommFinalize(x->nc) : ncclSuccess;
        if (r == ncclSuccess || r == ncclInProgress) r = x->lib->CommDestroy(x->nc);
        if (r != ncclSuccess)
            cc_log_warn(CC_SUBSYS_NCCL, "communicator %s: ncclCommDestroy: %s", x->name,
                        cc__nccl_errstr(x->lib, r));
    }
    free_x(x);
}

static const char *ncclx_transport(void *state)
{
    (void)state;
    return "nccl";
}

static cc_status_t ncclx_split(void *state, int color, int key, void **child)
{
    cc__ncclx_t *x = state;
    *child = NULL;
    if (!x->lib->CommSplit) {
        cc_log_error(CC_SUBSYS_NCCL, "nccl library %s has no ncclCommSplit (NCCL 2.18+)",
                     x->lib->path);
        return CC_ERR_NOT_SUPPORTED;
    }
    CC_CHECK(enter(x));
    int prev = -1;
    cc_status_t st = set_device(x, &prev);
    ncclComm_t nc = NULL;
    if (st == CC_OK)
        st = cc__ncclx_err(
            x, x->lib->CommSplit(x->nc, color < 0 ? NCCL_SPLIT_NOCOLOR_ABI : color, key, &nc, NULL),
            "ncclCommSplit");
    cc__cuda_restore_device(prev);
    leave(x);
    if (st == CC_OK) *child = nc;
    return st;
}

const cc_engine_v2_t cc__nccl_engine = {
    .v1 = {.version = CC_ENGINE_VERSION_2,
           .name = "nccl",
           .comm_create = ncclx_create,
           .submit = ncclx_submit,
           .drain = ncclx_drain,
           .comm_abort = ncclx_abort,
           .comm_destroy = ncclx_destroy,
           .transport = ncclx_transport},
    .split = ncclx_split,
};
