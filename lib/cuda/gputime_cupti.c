/*
 * gputime_cupti.c - kernel times from CUPTI activity records (see
 * gputime.h), CUPTI opened with dlopen (CCOMM_CUPTI_LIB).
 *
 * Around each op's NCCL calls the op_id is pushed as a CUSTOM0 external
 * correlation id; CUPTI then emits, for every API call made meanwhile
 * (NCCL's kernel launches), an external-correlation record tying the
 * call's correlation id to our op_id, and later a kernel record with that
 * correlation id and the kernel's start and end. Records arrive in buffers
 * on CUPTI's thread (flushed every 100 ms): each buffer is read twice,
 * correlations first. Two small direct-mapped tables (correlation id ->
 * op_id, op_id -> record id and the range so far) join them; a slot
 * overwritten by a newer op loses that op's times, never mixes them up
 * (keys are checked).
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/config.h"
#include "cuda/gputime.h"
#include "base/log.h"

#define MAP_SIZE 8192u
#define BUF_SIZE (1u << 20)

static struct {
    __typeof__(cuptiActivityRegisterCallbacks) *RegisterCallbacks;
    __typeof__(cuptiActivityEnable) *Enable;
    __typeof__(cuptiActivityGetNextRecord) *GetNextRecord;
    __typeof__(cuptiActivityPushExternalCorrelationId) *Push;
    __typeof__(cuptiActivityPopExternalCorrelationId) *Pop;
    __typeof__(cuptiActivityFlushAll) *FlushAll;
    __typeof__(cuptiActivityFlushPeriod) *FlushPeriod; /* optional */
    __typeof__(cuptiGetTimestamp) *GetTimestamp;
} C;

struct op_slot {
    _Atomic uint64_t op_id;
    _Atomic uint64_t rec_id;
    _Atomic uint64_t start, end; /* range so far (reset by push, grown on CUPTI's thread) */
};
struct corr_slot {
    _Atomic uint64_t corr; /* correlation id + 1 (0 = empty) */
    _Atomic uint64_t op_id;
};
static struct op_slot g_ops[MAP_SIZE];
static struct corr_slot g_corr[MAP_SIZE];

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, BUF_SIZE);
    *size = *buf ? BUF_SIZE : 0;
    *max_records = 0;
}

static void on_kernel(const CUpti_ActivityKernel10 *k, int64_t offset)
{
    struct corr_slot *c = &g_corr[k->correlationId % MAP_SIZE];
    if (atomic_load(&c->corr) != (uint64_t)k->correlationId + 1) return;
    uint64_t op_id = atomic_load(&c->op_id);
    struct op_slot *o = &g_ops[op_id % MAP_SIZE];
    uint64_t rec = atomic_load(&o->rec_id);
    if (atomic_load(&o->op_id) != op_id || !rec || !k->start) return;
    uint64_t s = atomic_load(&o->start), e = atomic_load(&o->end);
    if (!s || k->start < s) atomic_store(&o->start, s = k->start);
    if (k->end > e) atomic_store(&o->end, e = k->end);
    cc__gputime_report(rec, (uint64_t)((int64_t)s - offset), (uint64_t)((int64_t)e - offset),
                       "cupti");
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    uint64_t ts = 0;
    C.GetTimestamp(&ts);
    int64_t offset = (int64_t)ts - (int64_t)cc__now_ns(); /* CUPTI time - monotonic */
    for (int pass = 0; pass < 2; pass++) {
        CUpti_Activity *r = NULL;
        while (C.GetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
            if (pass == 0 && r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
                const CUpti_ActivityExternalCorrelation *e = (const void *)r;
                if (e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) continue;
                struct corr_slot *c = &g_corr[e->correlationId % MAP_SIZE];
                atomic_store(&c->op_id, e->externalId);
                atomic_store(&c->corr, (uint64_t)e->correlationId + 1);
            } else if (pass == 1 && r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
                on_kernel((const CUpti_ActivityKernel10 *)(const void *)r, offset);
            }
        }
    }
    free(buf);
}

static int load(void)
{
    const char *name = cc__cfg()->cupti_lib;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        cc_log_warn(CC_SUBSYS_CUDA, "cannot open CUPTI %s (CCOMM_CUPTI_LIB): %s", name,
                    e ? e : "?");
        return -1;
    }
#define GET(f, s) (*(void **)&C.f = dlsym(h, s))
    int ok = GET(RegisterCallbacks, "cuptiActivityRegisterCallbacks") &&
             GET(Enable, "cuptiActivityEnable") &&
             GET(GetNextRecord, "cuptiActivityGetNextRecord") &&
             GET(Push, "cuptiActivityPushExternalCorrelationId") &&
             GET(Pop, "cuptiActivityPopExternalCorrelationId") &&
             GET(FlushAll, "cuptiActivityFlushAll") && GET(GetTimestamp, "cuptiGetTimestamp");
    GET(FlushPeriod, "cuptiActivityFlushPeriod");
#undef GET
    if (!ok) {
        cc_log_warn(CC_SUBSYS_CUDA, "CUPTI %s lacks the activity API ccomm uses", name);
        return -1;
    }
    return 0;
}

int cc__cupti_start(void)
{
    if (load() != 0) return -1;
    CUptiResult r = C.RegisterCallbacks(buffer_requested, buffer_completed);
    if (r == CUPTI_SUCCESS) r = C.Enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    if (r == CUPTI_SUCCESS) r = C.Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        cc_log_warn(CC_SUBSYS_CUDA, "CUPTI activity setup failed: error %d", (int)r);
        return -1;
    }
    if (C.FlushPeriod) C.FlushPeriod(100); /* records reach the recorder within ~100 ms */
    cc_log_info(CC_SUBSYS_CUDA, "gpu timing from CUPTI activity records");
    return 0;
}

void cc__cupti_push(uint64_t op_id, uint64_t rec_id)
{
    struct op_slot *o = &g_ops[op_id % MAP_SIZE];
    atomic_store(&o->rec_id, 0); /* a reader never pairs the new id with the old record */
    atomic_store(&o->op_id, op_id);
    atomic_store(&o->start, 0);
    atomic_store(&o->end, 0);
    atomic_store(&o->rec_id, rec_id);
    C.Push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, op_id);
}

void cc__cupti_pop(void)
{
    uint64_t id = 0;
    C.Pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

void cc__cupti_flush(void)
{
    if (C.FlushAll) C.FlushAll(0);
}
