/*
 * gputime_cupti.c - kernel times from CUPTI activity records (see
 * gputime.h), CUPTI opened with dlopen (CCOMM_CUPTI_LIB).
 *
 * Around each op's NCCL calls the op_id is pushed as a CUSTOM0 external
 * correlation id; CUPTI then emits, for every API call made meanwhile
 * (NCCL's kernel launches), an external-correlation record tying the
 * call's correlation id to our op_id, and later a kernel record with that
 * correlation id and the kernel's start and end. CUPTI emits those only
 * with the driver and runtime API records on, so both are (their records
 * are skipped). Records arrive in buffers
 * on CUPTI's thread (flushed every 100 ms, and on demand before a dump
 * asked for with cc_recorder_dump): each buffer is read twice, correlations
 * first. Small direct-mapped tables (correlation id -> op_id, op_id ->
 * record id and the range so far) join them; a kernel record that comes in
 * a buffer before its correlation (kernel records come from the device's
 * buffers, correlations from the host's) waits in a third, keyed by its
 * correlation id, until the correlation arrives. A slot overwritten by a
 * newer op loses that op's times, never mixes them up (keys are checked).
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
struct pend_slot {
    _Atomic uint64_t corr; /* correlation id + 1 (0 = empty) */
    _Atomic uint64_t start, end; /* monotonic ns */
};
static struct op_slot g_ops[MAP_SIZE];
static struct corr_slot g_corr[MAP_SIZE];
static struct pend_slot g_pend[MAP_SIZE];
/* What CUPTI delivered, for the log line of each asked-for flush. */
static _Atomic uint64_t g_n_kernels, g_n_corr, g_n_timed;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, BUF_SIZE);
    *size = *buf ? BUF_SIZE : 0;
    *max_records = 0;
}

/* A kernel of op op_id ran from start to end (monotonic ns): grow the op's range, report it. */
static void add_kernel(uint64_t op_id, uint64_t start, uint64_t end)
{
    struct op_slot *o = &g_ops[op_id % MAP_SIZE];
    uint64_t rec = atomic_load(&o->rec_id);
    if (atomic_load(&o->op_id) != op_id || !rec || !start) return;
    uint64_t s = atomic_load(&o->start), e = atomic_load(&o->end);
    if (!s || start < s) atomic_store(&o->start, s = start);
    if (end > e) atomic_store(&o->end, e = end);
    atomic_fetch_add(&g_n_timed, 1);
    cc__gputime_report(rec, s, e, "cupti");
}

static void on_kernel(const CUpti_ActivityKernel10 *k, int64_t offset)
{
    atomic_fetch_add(&g_n_kernels, 1);
    if (!k->start) return;
    uint64_t key = (uint64_t)k->correlationId + 1;
    uint64_t start = (uint64_t)((int64_t)k->start - offset);
    uint64_t end = (uint64_t)((int64_t)k->end - offset);
    struct corr_slot *c = &g_corr[k->correlationId % MAP_SIZE];
    if (atomic_load(&c->corr) == key) {
        add_kernel(atomic_load(&c->op_id), start, end);
        return;
    }
    /* Its correlation has not come yet: keep it for when it does. */
    struct pend_slot *p = &g_pend[k->correlationId % MAP_SIZE];
    atomic_store(&p->corr, 0);
    atomic_store(&p->start, start);
    atomic_store(&p->end, end);
    atomic_store(&p->corr, key);
}

static void on_correlation(uint32_t corr, uint64_t op_id)
{
    uint64_t key = (uint64_t)corr + 1;
    atomic_fetch_add(&g_n_corr, 1);
    struct corr_slot *c = &g_corr[corr % MAP_SIZE];
    atomic_store(&c->op_id, op_id);
    atomic_store(&c->corr, key);
    struct pend_slot *p = &g_pend[corr % MAP_SIZE];
    if (atomic_load(&p->corr) != key) return;
    uint64_t start = atomic_load(&p->start), end = atomic_load(&p->end);
    if (atomic_exchange(&p->corr, 0) == key) add_kernel(op_id, start, end);
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
                on_correlation(e->correlationId, e->externalId);
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
    /* CUPTI writes an external correlation only before an API record: without the API
     * kinds on, no launch is ever tied to an op (seen on an H200: 15 kernel records, 0
     * correlations). NCCL launches through the driver API or the runtime's. */
    if (r == CUPTI_SUCCESS) r = C.Enable(CUPTI_ACTIVITY_KIND_DRIVER);
    if (r == CUPTI_SUCCESS) r = C.Enable(CUPTI_ACTIVITY_KIND_RUNTIME);
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

/* Before an asked-for dump: every buffer, full or not, delivered now (on this thread). */
void cc__cupti_flush(void)
{
    if (!C.FlushAll) return;
    CUptiResult r = C.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cc_log_info(CC_SUBSYS_CUDA,
                "CUPTI flush (result %d): so far %llu kernel records, %llu correlations of "
                "ccomm ops, %llu kernels timed",
                (int)r, (unsigned long long)atomic_load(&g_n_kernels),
                (unsigned long long)atomic_load(&g_n_corr),
                (unsigned long long)atomic_load(&g_n_timed));
}
