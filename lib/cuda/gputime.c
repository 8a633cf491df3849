/*
 * gputime.c - which source gives GPU kernel times, the issuing thread's
 * current op, and the GPU clock (see gputime.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "cuda/gputime.h"
#include "base/log.h"
#include "cuda/shim.h"

static enum cc__gputime_mode g_mode = CC__GPUTIME_EVENTS;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const void *g_self;
static _Atomic int64_t g_offset; /* globaltimer - monotonic */
static _Atomic int g_offset_set; /* measured (else estimated at each use) */

/* The op between enter and leave on this thread. */
static __thread uint64_t t_op_id, t_rec_id;

static void start_profiler(void)
{
    Dl_info me;
    if (!dladdr(g_self, &me) || !me.dli_fname) {
        cc_log_warn(CC_SUBSYS_CUDA, "CCOMM_GPU_TIMING=nccl-profiler: cannot find this plugin's "
                                    "path; using events");
        return;
    }
    /* NCCL reads it when a communicator is created; an operator's own choice stays. */
    if (setenv("NCCL_PROFILER_PLUGIN", me.dli_fname, 0) != 0) {
        cc_log_warn(CC_SUBSYS_CUDA, "cannot set NCCL_PROFILER_PLUGIN; using events");
        return;
    }
    g_mode = CC__GPUTIME_PROFILER;
    cc_log_info(CC_SUBSYS_CUDA, "gpu timing from ccomm's nccl profiler plugin (%s)", me.dli_fname);
}

static void init_once(void)
{
    const char *want = cc__cfg()->gpu_timing;
    if (!strcmp(want, "cupti")) {
        if (cc__cupti_start() == 0) {
            g_mode = CC__GPUTIME_CUPTI;
            if (cc__core) cc__core->recorder_gpu_flush(cc__cupti_flush);
        } else
            cc_log_warn(CC_SUBSYS_CUDA, "CCOMM_GPU_TIMING=cupti unavailable; using events");
    } else if (!strcmp(want, "nccl-profiler")) {
        start_profiler();
    } /* else events: config.c admits no other value */
}

void cc__gputime_init(const void *self)
{
    g_self = self;
    pthread_once(&g_once, init_once);
}

enum cc__gputime_mode cc__gputime_mode(void)
{
    return g_mode;
}

void cc__gputime_enter(const cc__op_t *op)
{
    t_op_id = op->info.op_id;
    /* The recorder's token for the op, through the core: the op holds no recorder field. */
    t_rec_id = cc__core ? cc__core->recorder_id(op) : 0;
    if (g_mode == CC__GPUTIME_CUPTI) cc__cupti_push(op->info.op_id, t_rec_id);
}

void cc__gputime_leave(void)
{
    if (g_mode == CC__GPUTIME_CUPTI) cc__cupti_pop();
    t_op_id = t_rec_id = 0;
}

void cc__gputime_current(uint64_t *op_id, uint64_t *rec_id)
{
    *op_id = t_op_id;
    *rec_id = t_rec_id;
}

void cc__gputime_set_offset(int64_t globaltimer_minus_monotonic)
{
    atomic_store(&g_offset, globaltimer_minus_monotonic);
    atomic_store(&g_offset_set, 1);
}

uint64_t cc__gputime_from_globaltimer(uint64_t t)
{
    int64_t off = atomic_load(&g_offset);
    if (!atomic_load(&g_offset_set)) off = (int64_t)(cc__realtime_ns() - cc__now_ns());
    return t ? (uint64_t)((int64_t)t - off) : 0;
}

void cc__gputime_report(uint64_t rec_id, uint64_t t_start_ns, uint64_t t_end_ns, const char *detail)
{
    if (rec_id && cc__core) cc__core->recorder_gpu(rec_id, t_start_ns, t_end_ns, detail);
}
