/*
 * provider.c - libccomm-lttng.so: the `ccomm` tracepoint provider and its
 * subscriber on the hook chains.
 *
 * The plugin holds the probes, the tracepoint definitions and every call
 * site, so the core needs no LTTng header or library. The core attaches it
 * (lib/base/lttng.c) by calling cc_lttng_provider_attach_v1 with the hook
 * calls to subscribe with; the plugin answers with the sites table that
 * the transport and the dumper emit through.
 *
 * With no session recording an event, a hook costs its call and one load
 * of LTTng's enable word; nothing else runs. Lifecycle ops (init, split,
 * destroy, abort) become comm_* events at POST, when their result is known;
 * every other op becomes op_enqueue (PRE), op_start (START), op_end (POST).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "ccomm_tp.h"

#include <pthread.h>
#include <time.h>

#include "base/lttng.h"

#define CCOMM_TP_EXPORT __attribute__((visibility("default")))

/* 1 for the lifecycle op types, from the class column of CC_OP_TYPE_MAP. */
#define CCOMM_TP_LIFE_COLL              0
#define CCOMM_TP_LIFE_P2P               0
#define CCOMM_TP_LIFE_LIFE              1
#define CCOMM_TP_LIFE_RMA               0
#define CCOMM_TP_LIFE_ROW(name, s, cls) [CC_OP_##name] = CCOMM_TP_LIFE_##cls,
static const unsigned char g_lifecycle[CC_OP_TYPE_COUNT] = {CC_OP_TYPE_MAP(CCOMM_TP_LIFE_ROW)};

/* Window create and destroy have no comm_* tracepoint: they trace as ops (enqueue, start, end). */
static int is_lifecycle(cc_op_type_t type)
{
    return (unsigned)type < CC_OP_TYPE_COUNT && g_lifecycle[type] && type != CC_OP_WIN_CREATE &&
           type != CC_OP_WIN_DESTROY;
}

/* ---- the subscriber on the hook chains -------------------------------------- */

static cc_status_t on_pre(const cc_op_info_t *op, void *user)
{
    (void)user;
    if (lttng_ust_tracepoint_enabled(ccomm, op_enqueue) && !is_lifecycle(op->type))
        lttng_ust_do_tracepoint(ccomm, op_enqueue, op);
    return CC_OK;
}

static void on_start(const cc_op_info_t *op, void *user)
{
    (void)user;
    if (lttng_ust_tracepoint_enabled(ccomm, op_start) && !is_lifecycle(op->type))
        lttng_ust_do_tracepoint(ccomm, op_start, op);
}

static void on_post(const cc_op_info_t *op, void *user)
{
    (void)user;
    switch (op->type) {
    case CC_OP_COMM_INIT:
        lttng_ust_tracepoint(ccomm, comm_init, op);
        break;
    case CC_OP_COMM_SPLIT:
        lttng_ust_tracepoint(ccomm, comm_split, op);
        break;
    case CC_OP_COMM_DESTROY:
        lttng_ust_tracepoint(ccomm, comm_destroy, op);
        break;
    case CC_OP_COMM_ABORT:
        lttng_ust_tracepoint(ccomm, comm_abort, op);
        break;
    default:
        lttng_ust_tracepoint(ccomm, op_end, op);
        break;
    }
}

/* A timeout is announced here, whichever thread noticed it: every timed-out
 * op ends in cc__comm_fail, which runs this chain with the op. */
static void on_abort(const cc_abort_info_t *info, void *user)
{
    (void)user;
    if (lttng_ust_tracepoint_enabled(ccomm, watchdog_timeout) && info->reason == CC_ERR_TIMEOUT &&
        info->op) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        lttng_ust_do_tracepoint(ccomm, watchdog_timeout, info->op,
                                ccomm_tp_span(info->op->t_enqueue_ns, now));
    }
    lttng_ust_tracepoint(ccomm, abort, info);
}

/* ---- the sites below the door ------------------------------------------------ */

static void site_xfer_begin(uint64_t comm_id, int dir, int peer, uint32_t tag, size_t bytes,
                            const char *transport)
{
    lttng_ust_tracepoint(ccomm, xfer_begin, comm_id, dir, peer, tag, bytes, transport);
}

static void site_xfer_end(uint64_t comm_id, int dir, int peer, uint32_t tag, size_t bytes,
                          const char *transport, cc_status_t status)
{
    lttng_ust_tracepoint(ccomm, xfer_end, comm_id, dir, peer, tag, bytes, transport, status);
}

static void site_recorder_dump(const char *reason, const char *path, cc_status_t status)
{
    lttng_ust_tracepoint(ccomm, recorder_dump, reason, path, status);
}

/* The enable words are LTTng's own: the sites read what tracepoint() reads. */
static const cc__lttng_sites_v1_t g_sites = {
    .struct_size = sizeof(cc__lttng_sites_v1_t),
    .xfer_begin_on = &lttng_ust_tracepoint_ccomm___xfer_begin.state,
    .xfer_end_on = &lttng_ust_tracepoint_ccomm___xfer_end.state,
    .recorder_dump_on = &lttng_ust_tracepoint_ccomm___recorder_dump.state,
    .xfer_begin = site_xfer_begin,
    .xfer_end = site_xfer_end,
    .recorder_dump = site_recorder_dump,
};

/* ---- attach and detach ------------------------------------------------------- */

enum { H_PRE, H_START, H_POST, H_ABORT, H_COUNT };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cc__lttng_core_v1_t g_core;        /* copy of the core's table while attached */
static cc_hook_handle_t g_hooks[H_COUNT]; /* 0 = not added */
static int g_attached;

/* Remove whatever hooks are on (g_lock held). */
static void remove_hooks(void)
{
    for (int i = H_COUNT - 1; i >= 0; i--) {
        if (g_hooks[i]) g_core.hook_remove(g_hooks[i]);
        g_hooks[i] = 0;
    }
}

static cc_status_t add_hooks(void)
{
    cc_status_t st = g_core.hook_add_pre(NULL, on_pre, NULL, 0, &g_hooks[H_PRE]);
    if (st == CC_OK) st = g_core.hook_add_start(NULL, on_start, NULL, 0, &g_hooks[H_START]);
    if (st == CC_OK) st = g_core.hook_add_post(NULL, on_post, NULL, 0, &g_hooks[H_POST]);
    if (st == CC_OK) st = g_core.hook_add_abort(NULL, on_abort, NULL, 0, &g_hooks[H_ABORT]);
    if (st != CC_OK) remove_hooks();
    return st;
}

/*
 * Subscribe to every communicator's chains (the same hooks for all, now and
 * later) and hand back the sites. Attaching twice keeps one subscription.
 * Returns CC_OK, CC_ERR_INVALID_ARG (a NULL or too small table), or the
 * status of a failed cc_hook_add_* (then nothing stays subscribed).
 */
CCOMM_TP_EXPORT cc_status_t cc_lttng_provider_attach_v1(const cc__lttng_core_v1_t *core,
                                                        const cc__lttng_sites_v1_t **sites)
{
    if (!core || !sites || core->struct_size < sizeof(*core)) return CC_ERR_INVALID_ARG;
    pthread_mutex_lock(&g_lock);
    cc_status_t st = CC_OK;
    if (!g_attached) {
        g_core = *core;
        st = add_hooks();
        g_attached = st == CC_OK;
    }
    pthread_mutex_unlock(&g_lock);
    if (st == CC_OK) *sites = &g_sites;
    return st;
}

/* Remove the hooks; the sites table stays valid (the core may still hold it). */
CCOMM_TP_EXPORT void cc_lttng_provider_detach_v1(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_attached) remove_hooks();
    g_attached = 0;
    pthread_mutex_unlock(&g_lock);
}
