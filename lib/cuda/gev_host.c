/* gev_host.c - events of a host-memory NCCL (the host NCCL extension, see gev.h). */
#include <stdatomic.h>

#include "cuda/gev.h"
#include "base/log.h"

/* Set by the first communicator, read by every thread after: one per process (per NCCL). */
static const ccomm_host_nccl_v1_t *_Atomic g_host;

static cc_status_t take(int device, void **ev)
{
    (void)device;
    if (g_host->event_create(ev) != 0) {
        cc_log_error(CC_SUBSYS_NCCL, "host nccl: event_create failed");
        return CC_ERR_NO_MEMORY;
    }
    return CC_OK;
}

static void give(void *ev)
{
    if (ev) g_host->event_destroy(ev);
}

static cc_status_t record(void *ev, void *stream, ncclComm_t comm)
{
    (void)stream;
    if (g_host->event_record(ev, comm) != 0) {
        cc_log_error(CC_SUBSYS_NCCL, "host nccl: event_record on comm %p failed", (void *)comm);
        return CC_ERR_INTERNAL;
    }
    return CC_OK;
}

static int query(void *ev)
{
    int r = g_host->event_query(ev);
    return r > 0 ? 1 : r == 0 ? 0 : -1;
}

static uint64_t time_ns(void *ev)
{
    return g_host->event_time_ns(ev);
}

static const cc__gev_ops_t g_ops = {
    .name = "host",
    .take = take,
    .give = give,
    .record = record,
    .query = query,
    .time_ns = time_ns,
};

const cc__gev_ops_t *cc__gev_host(const ccomm_host_nccl_v1_t *h)
{
    const ccomm_host_nccl_v1_t *none = NULL;
    atomic_compare_exchange_strong(&g_host, &none, h);
    return &g_ops;
}
