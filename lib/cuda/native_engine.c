/*
 * native_engine.c - the native CUDA engine's table (create: IPC regions and
 * the abort/fault words; submit; drain; abort; destroy; windows, in
 * cuda_window.c) and the round
 * building blocks its algorithms use (see cuda_native.h).
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "cuda/cuda_native.h"
#include "cuda/cudart.h"
#include "cuda/gpu_submit.h"
#include "cuda/gputime.h"
#include "kernels/kernels_cuda.h"
#include "base/log.h"
#include "cuda/shim.h"

#define WAIT_GRACE_NS (5ull * 1000000000ull) /* GPU-side backstop after the op's deadline */

size_t cc__cnat_esize(const cc__op_t *op)
{
    return op->info.dtype < CC_DTYPE_COUNT ? cc_dtype_size(op->info.dtype) : 1;
}

/* ---- rounds ------------------------------------------------------------------------ */

static uint64_t deadline_gt(const cc__cnat_t *x)
{
    if (!x->gt_offset || !x->cur) return 0; /* no GPU clock: the host's abort ends waits */
    if (x->cur->deadline_ns > UINT64_MAX - WAIT_GRACE_NS) return 0; /* no deadline */
    return (uint64_t)((int64_t)(x->cur->deadline_ns + WAIT_GRACE_NS) + x->gt_offset);
}

cc_status_t cc__cnat_signal(cc__cnat_t *x, int kind, uint64_t seq, void *stream)
{
    uint64_t *w[CC__IPC_MAX_RANKS];
    for (int r = 0; r < x->size; r++)
        w[r] = cc__ipc_flag(&x->ipc, r, kind, x->rank);
    return cc__cuda_signal(w, x->size, seq, stream);
}

cc_status_t cc__cnat_wait(cc__cnat_t *x, int kind, uint64_t seq, void *stream)
{
    return cc__cuda_wait(cc__ipc_flag(&x->ipc, x->rank, kind, 0), x->size, seq, x->abort_d,
                         x->fault_d, deadline_gt(x), stream);
}

cc_status_t cc__cnat_signal_one(cc__cnat_t *x, int to, int kind, uint64_t seq, void *stream)
{
    uint64_t *w = cc__ipc_flag(&x->ipc, to, kind, x->rank);
    return cc__cuda_signal(&w, 1, seq, stream);
}

cc_status_t cc__cnat_wait_one(cc__cnat_t *x, int from, int kind, uint64_t seq, void *stream)
{
    return cc__cuda_wait(cc__ipc_flag(&x->ipc, x->rank, kind, from), 1, seq, x->abort_d, x->fault_d,
                         deadline_gt(x), stream);
}

cc_status_t cc__cnat_wait_word(cc__cnat_t *x, const uint64_t *word, uint64_t value, void *stream)
{
    return cc__cuda_wait(word, 1, value, x->abort_d, x->fault_d, deadline_gt(x), stream);
}

cc_status_t cc__cnat_round(cc__cnat_t *x, void *stream, uint64_t *seq)
{
    *seq = ++x->seq;
    /* The slot of this parity was last used two rounds ago: every peer must be done with it. */
    if (*seq > 2) CC_CHECK(cc__cnat_wait(x, CC__IPC_DONE, *seq - 2, stream));
    return CC_OK;
}

cc_status_t cc__cnat_done(cc__cnat_t *x, uint64_t seq, void *stream)
{
    return cc__cnat_signal(x, CC__IPC_DONE, seq, stream);
}

/* ---- the table ---------------------------------------------------------------------- */

static cc_status_t store_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    cc__cnat_t *x = ctx;
    char name[32];
    snprintf(name, sizeof(name), "cuda_ipc/%u", x->exchanges++);
    return cc__core->store_allgather(x->comm, name, mine, all, len,
                                     cc__cfg()->connect_timeout * 1000);
}

/* A host word the GPU reads (abort) or writes (fault): pinned, mapped, zeroed. */
static cc_status_t mapped_word(int **host, int **dev)
{
    CC_CHECK(cc__cuda_check(cudaHostAlloc((void **)host, sizeof(int), cudaHostAllocMapped),
                            "cudaHostAlloc (mapped word)"));
    **host = 0;
    return cc__cuda_check(cudaHostGetDevicePointer((void **)dev, *host, 0),
                          "cudaHostGetDevicePointer");
}

static void free_x(cc__cnat_t *x)
{
    if (x->ipc.base) cc__cuda_ipc_close(&x->ipc);
    if (x->abort_h) cudaFreeHost(x->abort_h);
    if (x->fault_h) cudaFreeHost(x->fault_h);
    free(x);
}

static cc_status_t poll_error(void *arg, char *why, size_t len)
{
    cc__cnat_t *x = arg;
    int f = __atomic_load_n(x->fault_h, __ATOMIC_ACQUIRE);
    if (!f) return CC_OK;
    snprintf(why, len, "a wait on the GPU %s",
             f == 2 ? "passed its op's deadline" : "was ended by the engine's abort");
    return f == 2 ? CC_ERR_TIMEOUT : CC_ERR_ABORTED;
}

static cc_status_t create_parts(cc__cnat_t *x)
{
    CC_CHECK(cc__cuda_check(cc__cudart->SetDevice(x->device), "cudaSetDevice"));
    CC_CHECK(mapped_word(&x->abort_h, &x->abort_d));
    CC_CHECK(mapped_word(&x->fault_h, &x->fault_d));
    if (cc__cuda_globaltimer_offset(&x->gt_offset) == CC_OK)
        cc__gputime_set_offset(x->gt_offset);
    else
        x->gt_offset = 0;
    return cc__cuda_ipc_open(&x->ipc, x->rank, x->size, x->device,
                             (size_t)cc__cfg()->cuda_ipc_bytes, store_allgather, x);
}

static cc_status_t cnat_create(struct cc_comm *comm, void **state)
{
    cc_plugin_comm_t info;
    cc__core->comm_info(comm, &info);
    cc__cnat_t *x = calloc(1, sizeof(*x));
    if (!x) return CC_ERR_NO_MEMORY;
    x->comm = comm;
    snprintf(x->name, sizeof(x->name), "%s", info.name);
    x->rank = info.rank, x->size = info.size, x->device = info.device;
    cc_status_t st = create_parts(x);
    if (st != CC_OK) {
        free_x(x);
        return st;
    }
    x->owner =
        (cc__track_owner_t){.comm = comm, .name = x->name, .poll_error = poll_error, .poll_arg = x};
    *state = x;
    return CC_OK;
}

static const struct {
    cc_op_type_t type;
    cc__cnat_algo_fn fn;
} rows[] = {
    {CC_OP_ALLREDUCE, cc__cnat_allreduce},
    {CC_OP_REDUCE, cc__cnat_reduce},
    {CC_OP_REDUCE_SCATTER, cc__cnat_reduce_scatter},
    {CC_OP_ALLGATHER, cc__cnat_allgather},
    {CC_OP_ALLGATHER_BYTES, cc__cnat_allgather},
    {CC_OP_BROADCAST, cc__cnat_broadcast},
    {CC_OP_BROADCAST_BYTES, cc__cnat_broadcast},
    {CC_OP_ALLTOALL, cc__cnat_alltoall},
    {CC_OP_BARRIER, cc__cnat_barrier},
    {CC_OP_MONITORED_BARRIER, cc__cnat_barrier},
};

static cc__cnat_algo_fn algo_of(cc_op_type_t type)
{
    if (cc__cwin_is_op(type)) return cc__cwin_issue;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].type == type) return rows[i].fn;
    return NULL;
}

static cc_status_t issue(void *ctx, cc__op_t *t, void *stream)
{
    cc__cnat_t *x = ctx;
    t->info.transport = "cuda_ipc";
    x->cur = t;
    cc_status_t st = algo_of(t->info.type)(x, t, stream);
    x->cur = NULL;
    return st;
}

static cc_status_t settle(void *ctx, cc__op_t *t, void *stream)
{
    return cc__cwin_flush(ctx, t, stream);
}

static cc_status_t cnat_submit(void *state, cc__op_t *op)
{
    cc__cnat_t *x = state;
    if (!algo_of(op->info.type)) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "communicator %s: the native cuda engine has no %s (use "
                     "engine nccl)",
                     x->name, cc_op_type_name(op->info.type));
        return cc__gpu_refuse(op, CC_ERR_NOT_SUPPORTED);
    }
    cc_status_t reason = (cc_status_t)atomic_load(&x->aborted);
    if (reason != CC_OK) return cc__gpu_refuse(op, reason);
    int prev = -1;
    cc_status_t st = cc__cuda_use_device(x->device, &prev);
    if (st == CC_OK && cc__cwin_is_op(op->info.type)) st = cc__cwin_check(x, op);
    if (st != CC_OK) {
        cc__cuda_restore_device(prev);
        return cc__gpu_refuse(op, st);
    }
    cc__gpu_sub_t sub = {
        .gev = &cc__gev_cuda,
        .device = x->device,
        .owner = &x->owner,
        .issue = issue,
        .settle = op->info.type == CC_OP_WIN_FLUSH ? settle : NULL,
        .ctx = x};
    st = cc__gpu_submit(&sub, op);
    cc__cuda_restore_device(prev);
    return st;
}

static cc_status_t cnat_drain(void *state, uint64_t deadline_ns)
{
    return cc__tracker_drain(&((cc__cnat_t *)state)->owner, deadline_ns);
}

static void cnat_abort(void *state, cc_status_t reason)
{
    cc__cnat_t *x = state;
    int expected = CC_OK;
    if (!atomic_compare_exchange_strong(&x->aborted, &expected, (int)reason)) return;
    /* Spinning wait kernels see it within microseconds and let their streams drain. */
    __atomic_store_n(x->abort_h, 1, __ATOMIC_RELEASE);
    cc__tracker_abort(&x->owner, reason);
}

static void cnat_destroy(void *state)
{
    cc__cnat_t *x = state;
    if (!x) return;
    int prev = -1;
    int ok = cc__cuda_use_device(x->device, &prev) == CC_OK;
    if (ok) cudaDeviceSynchronize(); /* no kernel may still use the regions */
    free_x(x);
    if (ok) cc__cuda_restore_device(prev);
}

static const char *cnat_transport(void *state)
{
    (void)state;
    return "cuda_ipc";
}

const cc_engine_v3_t cc__cuda_native_engine = {
    .v2 = {.v1 = {.version = CC_ENGINE_VERSION_3,
                  .name = "native",
                  .comm_create = cnat_create,
                  .submit = cnat_submit,
                  .drain = cnat_drain,
                  .comm_abort = cnat_abort,
                  .comm_destroy = cnat_destroy,
                  .transport = cnat_transport}},
    .win_create = cc__cwin_create,
    .win_destroy = cc__cwin_destroy,
};
