/*
 * nccl_profiler.c - ccomm's NCCL profiler plugin (ncclProfiler_v5, NCCL
 * 2.28's profiler interface), exported by the object that holds this file
 * so NCCL_PROFILER_PLUGIN can name it (gputime.c sets it).
 *
 * A Coll or P2p event starts on the thread that issues the op, inside the
 * op's NCCL call (blocking communicators, NCCL's default), so the op that
 * cc__gputime_enter marked on that thread is the event's op. Its KernelCh
 * children carry the GPU globaltimer at each channel's start and stop: the
 * op's kernel time is the earliest start and the latest stop, reported to
 * the op's recorder entry with NCCL's algorithm and protocol at each
 * channel's stop (the last report has the whole range). Handles are freed
 * when the op event and all its channels stopped.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "cuda/gputime.h"
#include "nccl/nccl_abi.h"

/* Event types (ncclProfileColl, ...) and the state we read. */
#define PROF_COLL                 0x2u
#define PROF_P2P                  0x4u
#define PROF_KERNEL_CH            0x40u
#define PROF_STATE_KERNEL_CH_STOP 22

typedef void (*prof_logger_t)(int level, unsigned long flags, const char *file, int line,
                              const char *fmt, ...);

/* ncclProfilerEventDescr_v5_t, field for field. */
typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            bool graphCaptured;
            int groupDepth;
        } groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
        } p2pApi;
        struct {
            void *stream;
        } kernelLaunch;
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
            void *parentGroup;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer;
            int nSteps;
            int chunkSize;
            int isSend;
        } proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct {
            int64_t id;
            void *data;
        } netPlugin;
    };
} prof_descr_t;

/* ncclProfilerEventStateArgs_v5_t. */
typedef union {
    struct {
        size_t transSize;
    } proxyStep;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
    struct {
        void *data;
    } netPlugin;
    struct {
        uint64_t pTimer;
    } kernelCh;
} prof_state_args_t;

/* Our handles; `type` first so either kind can be told apart. */
typedef struct op_ev {
    uint64_t type;
    uint64_t rec_id;
    _Atomic uint64_t start; /* earliest channel start (globaltimer), 0 none */
    _Atomic uint64_t stop;  /* latest channel stop */
    _Atomic int refs;       /* the op event + its open channels */
    char detail[16];        /* "RING/LL128" */
} op_ev_t;

typedef struct ch_ev {
    uint64_t type;
    op_ev_t *op;
} ch_ev_t;

static void unref(op_ev_t *o)
{
    if (atomic_fetch_sub(&o->refs, 1) == 1) free(o);
}

static ncclResult_t prof_init(void **context, uint64_t comm_id, int *mask, const char *comm_name,
                              int nnodes, int nranks, int rank, prof_logger_t logfn)
{
    (void)comm_id, (void)comm_name, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
    *mask = (int)(PROF_COLL | PROF_P2P | PROF_KERNEL_CH);
    *context = (void *)mask; /* not used; NCCL wants non-NULL */
    return ncclSuccess;
}

static void min_store(_Atomic uint64_t *w, uint64_t v)
{
    uint64_t cur = atomic_load(w);
    while ((cur == 0 || v < cur) && !atomic_compare_exchange_weak(w, &cur, v)) {
    }
}

static void max_store(_Atomic uint64_t *w, uint64_t v)
{
    uint64_t cur = atomic_load(w);
    while (v > cur && !atomic_compare_exchange_weak(w, &cur, v)) {
    }
}

static ncclResult_t start_op(void **handle, const prof_descr_t *d)
{
    uint64_t op_id, rec_id;
    cc__gputime_current(&op_id, &rec_id);
    if (!rec_id) return ncclSuccess; /* not one of ours (or not recorded) */
    op_ev_t *o = calloc(1, sizeof(*o));
    if (!o) return ncclSuccess;
    o->type = d->type;
    o->rec_id = rec_id;
    atomic_init(&o->refs, 1);
    if (d->type == PROF_COLL)
        snprintf(o->detail, sizeof(o->detail), "%.7s/%.7s", d->coll.algo ? d->coll.algo : "?",
                 d->coll.proto ? d->coll.proto : "?");
    else
        snprintf(o->detail, sizeof(o->detail), "P2P");
    *handle = o;
    return ncclSuccess;
}

static ncclResult_t prof_start(void *context, void **handle, prof_descr_t *d)
{
    (void)context;
    *handle = NULL;
    if (d->type == PROF_COLL || d->type == PROF_P2P) return start_op(handle, d);
    if (d->type != PROF_KERNEL_CH || !d->parentObj) return ncclSuccess;
    op_ev_t *o = d->parentObj;
    if (o->type != PROF_COLL && o->type != PROF_P2P) return ncclSuccess;
    ch_ev_t *c = calloc(1, sizeof(*c));
    if (!c) return ncclSuccess;
    c->type = PROF_KERNEL_CH;
    c->op = o;
    atomic_fetch_add(&o->refs, 1);
    min_store(&o->start, d->kernelCh.pTimer);
    *handle = c;
    return ncclSuccess;
}

static ncclResult_t prof_state(void *handle, int state, prof_state_args_t *args)
{
    if (!handle || state != PROF_STATE_KERNEL_CH_STOP || !args) return ncclSuccess;
    ch_ev_t *c = handle;
    if (c->type != PROF_KERNEL_CH) return ncclSuccess;
    op_ev_t *o = c->op;
    max_store(&o->stop, args->kernelCh.pTimer);
    cc__gputime_report(o->rec_id, cc__gputime_from_globaltimer(atomic_load(&o->start)),
                       cc__gputime_from_globaltimer(atomic_load(&o->stop)), o->detail);
    return ncclSuccess;
}

static ncclResult_t prof_stop(void *handle)
{
    if (!handle) return ncclSuccess;
    uint64_t type = *(uint64_t *)handle;
    if (type == PROF_KERNEL_CH) {
        ch_ev_t *c = handle;
        unref(c->op);
        free(c);
    } else {
        unref(handle);
    }
    return ncclSuccess;
}

static ncclResult_t prof_finalize(void *context)
{
    (void)context;
    return ncclSuccess;
}

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **, uint64_t, int *, const char *, int, int, int, prof_logger_t);
    ncclResult_t (*startEvent)(void *, void **, prof_descr_t *);
    ncclResult_t (*stopEvent)(void *);
    ncclResult_t (*recordEventState)(void *, int, prof_state_args_t *);
    ncclResult_t (*finalize)(void *);
} prof_v5_t;

__attribute__((visibility("default"))) const prof_v5_t ncclProfiler_v5 = {
    "ccomm", prof_init, prof_start, prof_stop, prof_state, prof_finalize,
};
